"""Sanity checks of the evaluation metrics with numbers that can be worked out by hand."""
import numpy as np
import pytest

from backend.maths import quat_np
from training import metrics


def random_quats(rng, shape):
    return quat_np.normalize(rng.normal(size=shape + (4,)))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_identical_inputs_give_zero(rng):
    rot = random_quats(rng, (3, 20, 5))
    pos = rng.normal(size=(3, 20, 5, 3))
    assert metrics.rotation_errors_deg(rot, rot) == pytest.approx((0.0, 0.0), abs=1e-5)
    assert metrics.mpjpe_cm(pos, pos) == 0.0
    assert metrics.l2q(rot, rot) == 0.0
    assert metrics.npss(rot, rot) == pytest.approx(0.0, abs=1e-12)


def test_known_rotation_error(rng):
    true = random_quats(rng, (10, 6))
    delta = quat_np.from_axis_angle(np.array([0.0, 0.0, 1.0]), np.deg2rad(10.0))
    mean, mean_sq = metrics.rotation_errors_deg(quat_np.mul(true, np.broadcast_to(delta, true.shape)), true)
    assert mean == pytest.approx(10.0, abs=1e-6)
    assert mean_sq == pytest.approx(100.0, abs=1e-4)
    # Sign does not matter for a rotation.
    assert metrics.rotation_errors_deg(-true, true)[0] == pytest.approx(0.0, abs=1e-5)


def test_mpjpe_345():
    true = np.zeros((4, 7, 3))
    assert metrics.mpjpe_cm(true + np.array([3.0, 4.0, 0.0]), true) == pytest.approx(5.0)


def test_l2q_sign_invariant_and_value(rng):
    q = random_quats(rng, (8, 5))
    flips = np.where(rng.random((8, 5, 1)) < 0.5, -1.0, 1.0)
    assert metrics.l2q(q * flips, q) == pytest.approx(0.0, abs=1e-12)
    # One joint off by a 180 deg turn about x, from identity: |(0,1,0,0) - (1,0,0,0)| = sqrt(2).
    true = np.tile([1.0, 0, 0, 0], (4, 3, 1))
    pred = true.copy()
    pred[:, 1] = [0.0, 1.0, 0.0, 0.0]
    assert metrics.l2q(pred, true) == pytest.approx(np.sqrt(2.0))


def smooth_motion(rng, b=4, t=40, j=5):
    """Smooth global quaternion tracks: a slow rotation per joint about a random axis."""
    axis = quat_np.normalize(rng.normal(size=(b, 1, j, 3)))
    ang = np.linspace(0, 2.0, t)[None, :, None] * rng.uniform(0.5, 1.5, size=(b, 1, j))
    return quat_np.fix_hemisphere(quat_np.from_axis_angle(axis, ang), axis=1)


def test_npss_grows_with_error(rng):
    true = smooth_motion(rng)
    shifted = np.roll(true, 3, axis=1)
    assert metrics.npss(shifted, true) > 0
    noise = rng.normal(size=true.shape)
    small = metrics.npss(quat_np.normalize(true + 0.01 * noise), true)
    large = metrics.npss(quat_np.normalize(true + 0.1 * noise), true)
    assert 0 < small < large


def test_npss_ignores_zero_features(rng):
    true = smooth_motion(rng)
    true[..., 0, :] = [1.0, 0.0, 0.0, 0.0]  # a joint that never rotates: x, y, z are all zero
    assert np.isfinite(metrics.npss(quat_np.normalize(true + 0.05 * rng.normal(size=true.shape)), true))


def test_npss_matches_reference_formula(rng):
    """The LaFAN1 benchmark's fast_npss, written out, on data without zero features."""
    true, pred = rng.normal(size=(3, 16, 8)), rng.normal(size=(3, 16, 8))
    gp, pp = np.real(np.fft.fft(true, axis=1)) ** 2, np.real(np.fft.fft(pred, axis=1)) ** 2
    gt_tot, pr_tot = gp.sum(1), pp.sum(1)
    emd = np.linalg.norm(np.cumsum(pp / pr_tot[:, None], 1) - np.cumsum(gp / gt_tot[:, None], 1), ord=1, axis=1)
    assert metrics.npss(pred, true) == pytest.approx(np.average(emd, weights=gt_tot), rel=1e-12)


def test_protocol_keys():
    assert metrics.protocol_keys(61, 15).tolist() == [0, 15, 30, 45, 60]
    assert metrics.protocol_keys(61, 30).tolist() == [0, 30, 60]
    k5 = metrics.protocol_keys(61, 5)
    assert k5[0] == 0 and k5[-1] == 60 and len(k5) == 13
    assert metrics.protocol_keys(20, 15).tolist() == [0, 15, 19]


def test_lerp_slerp_keeps_keys(rng):
    rot, pos = random_quats(rng, (2, 31, 4)), rng.normal(size=(2, 31, 4, 3))
    keys = metrics.protocol_keys(31, 7)
    out_rot, out_pos = metrics.lerp_slerp_inbetween(rot, pos, keys)
    assert np.array_equal(out_rot[:, keys], rot[:, keys])
    assert np.array_equal(out_pos[:, keys], pos[:, keys])
    assert np.allclose(np.linalg.norm(out_rot, axis=-1), 1.0)


def test_lerp_slerp_reproduces_constant_velocity(rng):
    f = 61
    t = np.arange(f)[None, :, None, None]
    start, vel = rng.normal(size=(3, 1, 4, 3)), rng.normal(size=(3, 1, 4, 3))
    pos = start + vel * t
    axis = quat_np.normalize(rng.normal(size=(3, 1, 4, 3)))
    rate = rng.uniform(0.01, 0.04, size=(3, 1, 4))  # rad per frame: < pi over the longest gap
    rot = quat_np.mul(random_quats(rng, (3, 1, 4)), quat_np.from_axis_angle(axis, rate * t[..., 0]))
    for k in (5, 15, 30):
        out_rot, out_pos = metrics.lerp_slerp_inbetween(rot, pos, metrics.protocol_keys(f, k))
        assert np.allclose(out_pos, pos, atol=1e-9)
        assert metrics.rotation_errors_deg(out_rot, rot)[0] < 1e-5
