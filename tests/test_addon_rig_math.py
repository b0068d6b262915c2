"""blender_addon.core.rig_math and blender_addon.core.gaps on their own: numpy only, checked against
backend.maths.quat_np and (where Blender defines the convention) against mathutils."""
from __future__ import annotations

import numpy as np
import pytest

import addon_helpers  # noqa: F401  (sets BLENDER_USER_RESOURCES before any bpy import)
from backend.humanoid import axes
from backend.maths import quat_np
from blender_addon.core import continuity, gaps, quat, rig_math

RNG = np.random.default_rng(7)


def random_quats(n):
    return rig_math.qnormalize(RNG.normal(size=(n, 4)))


def test_core_quat_is_the_backends_code_not_a_copy():
    """One quaternion implementation: the add-on's module hands out backend.maths.quat_np's functions themselves
    (and humanoid.axes' float64 conj and from_matrix), found as the bridge finds the backend."""
    from backend.humanoid import axes
    for name in ("normalize", "mul", "rotate", "to_matrix", "slerp", "left_matrix", "right_matrix"):
        assert getattr(quat, name) is getattr(quat_np, name), name
    assert quat.conj is axes.qconj and quat.from_matrix is axes.q_from_matrix
    assert rig_math.qmul is quat_np.mul


def test_quaternion_basics_match_backend():
    """core.quat is backend.maths.quat_np's arithmetic term for term: the same floats (computed here, on this
    machine, by both), whichever way the add-on reaches them."""
    a, b = random_quats(50), random_quats(50)
    v = RNG.normal(size=(50, 3))
    m = quat_np.to_matrix(a) + RNG.normal(scale=1e-7, size=(50, 3, 3)).astype(np.float32)  # float32 noise
    same = np.testing.assert_array_equal
    same(rig_math.qmul(a, b), quat_np.mul(a, b))
    same(quat.mul(a.astype(np.float32), b.astype(np.float32)), quat_np.mul(a.astype(np.float32), b.astype(np.float32)))
    same(rig_math.q_to_matrix(a), quat_np.to_matrix(a))
    same(rig_math.q_from_matrix(m), quat_np.from_matrix(m))
    same(rig_math.qconj(a), quat_np.inv(a))
    same(rig_math.qnormalize(3 * a), quat_np.normalize(3 * a, eps=1e-12))
    same(rig_math.qrotate(a, v), quat_np.rotate(a, v))
    same(rig_math.slerp(a, b, 0.3), quat_np.slerp(a, b, 0.3, eps=1e-8))
    same(rig_math.slerp(a, b, np.linspace(0, 1, 50)), quat_np.slerp(a, b, np.linspace(0, 1, 50), eps=1e-8))


@pytest.mark.parametrize("mode", rig_math.EULER_MODES)
def test_euler_matches_mathutils(mode):
    import bpy  # noqa: F401  (mathutils comes with bpy)
    from mathutils import Euler, Quaternion
    rng = np.random.default_rng(100 + rig_math.EULER_MODES.index(mode))  # (its own draws whichever tests ran before)
    e = rng.uniform(-3, 3, size=(20, 3))
    ours = rig_math.euler_to_quat(e, mode)
    for k in range(len(e)):
        ref = np.array(Euler(e[k], mode).to_quaternion())
        assert abs(abs(np.dot(ours[k], ref)) - 1) < 1e-6  # mathutils is float32
        # decomposition: a valid triple, and the one mathutils picks for the same compat
        compat = e[k] + rng.normal(scale=0.3, size=3)
        got = rig_math.quat_to_euler(ours[k], mode, compat)
        theirs = np.array(Quaternion(ours[k]).to_euler(mode, Euler(compat, mode)))
        assert abs(abs(np.dot(rig_math.euler_to_quat(got, mode), ours[k])) - 1) < 1e-12
        np.testing.assert_allclose(got, theirs, atol=1e-5)


def test_euler_sequence_has_no_flips_and_starts_at_the_key():
    # a spin of two full turns about Z plus wobble, in a gimbal-prone mode
    t = np.linspace(0, 4 * np.pi, 200)
    e = np.stack([0.3 * np.sin(t), 0.2 * np.cos(t), t], -1)
    q = rig_math.euler_to_quat(e, "XYZ")
    seq = rig_math.euler_sequence(q, "XYZ", e[0])
    assert np.abs(np.diff(seq, axis=0)).max() < 0.2
    np.testing.assert_allclose(seq, e, atol=1e-9)  # continuous from the start = the original curve
    shifted = rig_math.euler_sequence(q, "XYZ", e[0] + [0, 0, 2 * np.pi])  # a key at +360 degrees
    np.testing.assert_allclose(shifted[:, 2], e[:, 2] + 2 * np.pi, atol=1e-9)


@pytest.mark.parametrize("mode", ["QUATERNION", "AXIS_ANGLE", "ZXY"])
def test_channels_round_trip(mode):
    q = quat_np.fix_hemisphere(rig_math.qnormalize(np.cumsum(RNG.normal(scale=0.1, size=(30, 4)), 0) + [1, 0, 0, 0]))
    start = {"QUATERNION": q[0], "AXIS_ANGLE": rig_math.quat_to_axis_angle(q[0])}.get(mode)
    start = rig_math.quat_to_euler(q[0], mode) if start is None else start
    ch = rig_math.quat_to_channels(q, mode, start)
    back = rig_math.channels_to_quat(ch, mode)
    np.testing.assert_allclose(np.abs(np.sum(back * q, -1)), 1, atol=1e-12)


def test_two_euler_solutions_are_the_same_rotation():
    q = random_quats(100)
    for mode in rig_math.EULER_MODES:
        ang, alt = rig_math.both_solutions(q, mode[::-1])
        a, b = (rig_math.euler_to_quat(rig_math.to_axes(x, mode[::-1]), mode) for x in (ang, alt))
        np.testing.assert_allclose(np.abs(np.sum(a * b, -1)), 1, atol=1e-12)


def random_rig(n, local):
    m = np.tile(np.eye(4), (n, 1, 1))
    m[:, :3, :3] = rig_math.q_to_matrix(random_quats(n))
    m[:, :3, 3] = RNG.normal(scale=20, size=(n, 3))
    pm = np.tile(np.eye(4), (n, 1, 1))
    pm[1:] = m[:-1]
    return rig_math.RigFrames.from_rest(m, pm, np.full(n, local), cm_per_unit=100.0)


@pytest.mark.parametrize("local", [True, False])
def test_rig_conversion_round_trips_exactly(local):
    rig = random_rig(22, local)
    basis, loc = random_quats(40 * 22).reshape(40, 22, 4), RNG.normal(size=(40, 22, 3))
    rot, pos = rig_math.blender_to_bvh(rig, basis, loc)
    b2, l2 = rig_math.bvh_to_blender(rig, rot, pos)
    np.testing.assert_allclose(rig_math.align_hemisphere(b2, basis), basis, atol=1e-12)
    np.testing.assert_allclose(l2, loc, atol=1e-12)
    # at rest (identity basis, zero location) the BVH pose is identity rotations at the rest offsets
    rot0, pos0 = rig_math.blender_to_bvh(rig, np.tile([1.0, 0, 0, 0], (22, 1)), np.zeros((22, 3)))
    np.testing.assert_allclose(np.abs(rot0[:, 0]), 1, atol=1e-12)
    np.testing.assert_allclose(pos0, rig.bvh_offsets(), atol=1e-12)


def test_axis_change_is_blenders_bvh_importer_default():
    import bpy  # noqa: F401
    from bpy_extras.io_utils import axis_conversion
    blender = np.array(axis_conversion(from_forward="-Z", from_up="Y"))
    np.testing.assert_allclose(rig_math.q_to_matrix(rig_math.BVH_TO_BLENDER), blender, atol=1e-7)


def test_units_snap_to_powers_of_ten():
    sk = RNG.normal(scale=10, size=(22, 3))
    assert axes.cm_per_unit(sk * 1.07, sk) == 1.0  # another performer, same units
    assert axes.cm_per_unit(sk / 100 * 0.93, sk) == 100.0  # imported in metres
    assert axes.cm_per_unit(sk * 10, sk) == 0.1


def test_plan_per_bone_and_all_bones():
    sel = {"a": [1.0, 16.0, 31.0], "b": [1.0, 31.0], "c": []}
    p = gaps.plan(sel, ["a", "b", "c"], all_bones=False, max_gap=60)
    assert p.keys == [1, 16, 31] and p.gaps == {"a": [(1, 16), (16, 31)], "b": [(1, 31)]}
    assert p.written_frames("b").tolist() == list(range(2, 31))
    q = gaps.plan(sel, ["a", "b", "c"], all_bones=True, max_gap=60)
    assert q.gaps["c"] == [(1, 16), (16, 31)]


@pytest.mark.parametrize("sel, match", [
    ({"a": [1.0]}, "at least two keys"),
    ({"a": [1.0], "b": [5.0]}, "at least two keys"),
    ({"a": [1.0, 80.0]}, "up to 60 frames"),
    ({"a": [1.0, 2.0]}, "no frame between"),
    ({"a": [1.0, 7.5]}, "between frames"),
])
def test_plan_refusals(sel, match):
    with pytest.raises(gaps.PlanError, match=match):
        gaps.plan(sel, ["a", "b"], all_bones=False, max_gap=60)


def test_sampling_and_handles_follow_the_motion():
    assert gaps.sample_frames(1, 16, 5).tolist() == [6, 11]
    assert gaps.sample_frames(1, 4, 5).tolist() == [2]
    frames = np.arange(0, 21)
    v = (0.01 * frames ** 2)[:, None]
    at = np.array([5, 10, 15])
    s = gaps.slopes(v, frames, at)
    np.testing.assert_allclose(s[:, 0], 0.02 * at)  # exact for a quadratic
    hl, hr = gaps.bezier_handles(at, v[at, 0], s[:, 0], 0, 20)
    np.testing.assert_allclose(hl[:, 0], at - 5 / 3)
    np.testing.assert_allclose((hr[:, 1] - v[at, 0]) / (hr[:, 0] - at), s[:, 0])


# -- the vectorised continuity passes (issue 19) against the rule frame by frame -------------------
def _euler_frame_by_frame(q, mode, start):
    """The rule as the add-on applied it before issue 19: one frame after another, plain floats."""
    order = mode[::-1]
    ang, alt = rig_math.both_solutions(q, order)
    ref = [float(start[rig_math.AXIS_INDEX[ch]]) for ch in order]
    out = []
    for i in range(len(q)):
        best, dist = None, np.inf
        for cand in (ang[i], alt[i]):
            c = [x + 2 * np.pi * round((r - x) / (2 * np.pi)) for x, r in zip(cand.tolist(), ref, strict=True)]
            d = sum(abs(x - r) for x, r in zip(c, ref, strict=True))
            if d < dist:
                best, dist = c, d
        out.append(best)
        ref = best
    return rig_math.to_axes(np.array(out).reshape(-1, 3), order)


def _motions(rng):
    """Runs of rotations [F, B, 4]: random, spinning several turns, near gimbal lock, standing still."""
    t = np.arange(40)[:, None]
    axis = rng.normal(size=(5, 3))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    spin = 0.2 + 0.9 * rng.random(5)
    gimbal = rng.normal(scale=0.05, size=(40, 5, 3)) + [0, np.pi / 2, 0]
    yield rng.normal(size=(40, 5, 4))
    yield np.concatenate([np.cos(0.5 * spin * t)[..., None], np.sin(0.5 * spin * t)[..., None] * axis], -1)
    yield rig_math.euler_to_quat(gimbal, "XYZ")
    yield np.repeat(rng.normal(size=(1, 5, 4)), 40, axis=0)


@pytest.mark.parametrize("mode", rig_math.EULER_MODES)
def test_euler_sequence_over_many_bones_is_the_rule_frame_by_frame(mode):
    rng = np.random.default_rng(19)
    for q in _motions(rng):
        q = rig_math.qnormalize(q)
        start = rng.normal(scale=8.0, size=(q.shape[1], 3))  # keys turns away from the principal angles
        got = rig_math.euler_sequence(q, mode, start)
        assert got.shape == q.shape[:-1] + (3,)
        for b in range(q.shape[1]):
            want = _euler_frame_by_frame(np.ascontiguousarray(q[:, b]), mode, start[b])
            np.testing.assert_allclose(got[:, b], want, rtol=0, atol=1e-9)  # (float rounding of the angles)
            one = rig_math.euler_sequence(np.ascontiguousarray(q[:, b]), mode, start[b])  # a single bone, [F, 4]
            np.testing.assert_allclose(one, want, rtol=0, atol=1e-9)


def test_the_vectorised_chain_is_the_frame_by_frame_rule_exactly():
    """Given the same solutions, the chain (prefix-composed choices, cumulative turns) makes exactly
    the numbers of the rule frame by frame, ties included (a tie falls back to the rule)."""
    rng = np.random.default_rng(11)
    for trial in range(40):
        cands = rng.uniform(-np.pi, 2 * np.pi, size=(rng.integers(1, 60), 2, 4, 3))
        ref = rng.normal(scale=20.0, size=(4, 3))
        if trial % 4 == 0:  # exact ties: both solutions as far from the previous frame's
            cands[1:, 1] = 2 * cands[:-1, 0] - cands[1:, 0]
        want = continuity.steps(cands, ref)
        assert np.array_equal(continuity.nearest_chain(cands, ref), want)
        if trial % 4:
            assert np.array_equal(continuity.chain(cands, ref), want)  # (no fallback needed)


def test_euler_sequence_keeps_turning_through_wrap_around():
    """A spin about X by 0.5 rad a frame for 60 frames (almost 5 turns) from a key at +2 turns:
    the X channel climbs on through every +-180 degrees, as a user would key it."""
    angle = 0.5 * np.arange(60)
    q = np.stack([np.cos(0.5 * angle), np.sin(0.5 * angle), 0 * angle, 0 * angle], -1)
    for mode in rig_math.EULER_MODES:
        seq = rig_math.euler_sequence(q, mode, [4 * np.pi, 0.0, 0.0])
        np.testing.assert_allclose(seq[:, 0], angle + 4 * np.pi, atol=1e-9)
        np.testing.assert_allclose(seq[:, 1:], 0.0, atol=1e-9)


def test_quaternion_continuity_over_many_bones_is_the_rule_frame_by_frame():
    rng = np.random.default_rng(5)
    q = rng.normal(size=(50, 6, 4))
    q[20, 2] = 0.0  # a zero dot product: never flips
    start = rng.normal(size=(6, 4))
    got = rig_math.continuous(q, start)
    for b in range(6):
        prev, want = start[b], []
        for i in range(50):
            want.append(-q[i, b] if np.dot(q[i, b], prev) < 0 else q[i, b])
            prev = want[-1]
        assert np.array_equal(got[:, b], np.array(want))  # only signs change: exact
    assert (np.sum(got[1:] * got[:-1], -1) >= 0).all()


def test_bezier_handles_of_many_runs_are_those_of_each():
    rng = np.random.default_rng(3)
    at = np.array([[4, 21], [7, 24], [10, 27]])  # three keys in each of two gaps: (1, 13) and (18, 30)
    values, tangents = rng.normal(size=(3, 2, 4)), rng.normal(size=(3, 2, 4))
    hl, hr = gaps.bezier_handles(at, values, tangents, np.array([1, 18]), np.array([13, 30]))
    assert hl.shape == (3, 2, 4, 2)
    for g, (a, b) in enumerate([(1, 13), (18, 30)]):
        for c in range(4):
            one = gaps.bezier_handles(at[:, g], values[:, g, c], tangents[:, g, c], a, b)
            assert np.array_equal(hl[:, g, c], one[0]) and np.array_equal(hr[:, g, c], one[1])


def test_the_add_ons_axes_are_the_files_axes():
    """core/ keeps its own copy of Blender's axis turn (it leans on no door); a rig and a file must still be
    turned by the same rotation and the same quaternion helpers as backend.humanoid.axes."""
    np.testing.assert_array_equal(rig_math.BVH_TO_BLENDER, axes.BVH_TO_BLENDER)
    q = RNG.normal(size=(64, 4))
    np.testing.assert_array_equal(rig_math.qconj(q), axes.qconj(q))
    m = axes.q_to_matrix(q / np.linalg.norm(q, axis=-1, keepdims=True))
    np.testing.assert_allclose(rig_math.q_from_matrix(m), axes.q_from_matrix(m), rtol=0, atol=4e-16)
