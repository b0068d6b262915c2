"""Rotation math: quat_np and quat_torch agree, and both agree with textbook definitions."""
from __future__ import annotations

import inspect
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for plain `pytest`

from backend.maths import quat_np, quat_torch

ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
T = torch.from_numpy


def rand_quat(rng, *shape):
    return quat_np.normalize(rng.normal(size=shape + (4,)))


def same_up_to_sign(a, b):
    """Max component error between quaternions, taking the nearer of b and -b."""
    return np.minimum(np.abs(a - b).max(-1), np.abs(a + b).max(-1)).max()


def axis_matrix(axis, angle):
    c, s = np.cos(angle), np.sin(angle)
    return {"X": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
            "Y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
            "Z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])}[axis]


# ---------------------------------------------------------------- numpy/torch parity

def _parity_cases(rng):
    """name -> list of argument tuples (numpy); torch gets the same arrays as tensors."""
    q, a, b = rand_quat(rng, 7, 3), rand_quat(rng, 7, 3), rand_quat(rng, 7, 3)
    axis = rng.normal(size=(7, 3))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    seq = rand_quat(rng, 9, 5) * rng.choice([-1.0, 1.0], size=(9, 5, 1))
    parents = np.array([-1, 0, 1, 1, 0, 4])
    return {
        "normalize": [(rng.normal(size=(7, 3, 4)) * 5,)],
        "mul": [(a, b)],
        "inv": [(q,)],
        # same shapes, one vector for many quaternions, one quaternion for many vectors
        "rotate": [(q, rng.normal(size=(7, 3, 3))), (q, rng.normal(size=3)),
                   (q[:, :1], rng.normal(size=(7, 4, 3))), (q[0, 0], rng.normal(size=(5, 3)))],
        "from_axis_angle": [(axis, rng.uniform(-7, 7, size=7))],
        "from_euler": [(rng.uniform(-np.pi, np.pi, size=(11, 3)), o) for o in ORDERS],
        "to_euler": [(q, o) for o in ORDERS],
        "to_matrix": [(q,)],
        "from_matrix": [(quat_np.to_matrix(q),)],
        "to_6d": [(q,)],
        "from_6d": [(rng.normal(size=(7, 3, 6)),)],
        "fk": [(rand_quat(rng, 4, 6), rng.normal(size=(4, 6, 3)), parents)],
        "fix_hemisphere": [(seq, 0), (seq, 1)],
        "slerp": [(a, b, 0.3), (a, b, rng.uniform(0, 1, size=(7, 3))), (a, a, 0.5)],
        "angle_between": [(a, b)],
        "mul_parts": [(np.moveaxis(a, -1, 0), np.moveaxis(b, -1, 0))],
        "left_matrix": [(a,)],
        "right_matrix": [(b,)],
    }


def _public_functions(module):
    return {n for n, f in inspect.getmembers(module, inspect.isfunction)
            if not n.startswith("_") and f.__module__ == module.__name__}


def test_every_numpy_function_has_a_torch_twin_and_a_parity_case():
    cases = _parity_cases(np.random.default_rng(0))
    np_funcs = _public_functions(quat_np)
    assert np_funcs <= _public_functions(quat_torch), f"missing in quat_torch: {np_funcs - _public_functions(quat_torch)}"
    assert np_funcs == set(cases), f"parity cases missing for {np_funcs - set(cases)}"


@pytest.mark.parametrize("name", sorted(_parity_cases(np.random.default_rng(0))))
def test_numpy_torch_parity(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    for args in _parity_cases(rng)[name]:
        out_np = getattr(quat_np, name)(*args)
        targs = [T(np.asarray(x, dtype=np.float64)) if isinstance(x, np.ndarray) and x.dtype != np.int64 else x
                 for x in args]
        out_t = getattr(quat_torch, name)(*targs)
        outs_np = out_np if isinstance(out_np, tuple) else (out_np,)
        outs_t = out_t if isinstance(out_t, tuple) else (out_t,)
        for o_np, o_t in zip(outs_np, outs_t, strict=True):
            assert o_t.dtype == torch.float64
            assert o_t.shape == o_np.shape
            np.testing.assert_allclose(o_t.numpy(), o_np, atol=1e-10, rtol=0, err_msg=name)


def test_the_products_layouts_are_mul():
    """``mul_parts`` (component-major) and the product's matrices are ``mul``: the same floats for the first."""
    rng = np.random.default_rng(5)
    a, b = rand_quat(rng, 7, 3), rand_quat(rng, 7, 3)
    np.testing.assert_array_equal(np.moveaxis(quat_np.mul_parts(np.moveaxis(a, -1, 0), np.moveaxis(b, -1, 0)), 0, -1),
                                  quat_np.mul(a, b))
    np.testing.assert_allclose((quat_np.left_matrix(a) @ b[..., None])[..., 0], quat_np.mul(a, b), atol=1e-15)
    np.testing.assert_allclose((quat_np.right_matrix(b) @ a[..., None])[..., 0], quat_np.mul(a, b), atol=1e-15)


def test_torch_matrix_from_6d_matches_numpy():
    r = np.random.default_rng(1).normal(size=(50, 6))
    m = quat_torch.matrix_from_6d(T(r)).numpy()
    np.testing.assert_allclose(m, quat_np.to_matrix(quat_np.from_6d(r)), atol=1e-10)
    np.testing.assert_allclose(m @ np.swapaxes(m, -1, -2), np.broadcast_to(np.eye(3), m.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(m), 1.0, atol=1e-12)


# ---------------------------------------------------------------- Euler angles

@pytest.mark.parametrize("order", ORDERS)
def test_from_euler_is_the_product_of_axis_matrices(order):
    rng = np.random.default_rng(2)
    for e in rng.uniform(-np.pi, np.pi, size=(20, 3)):
        expected = axis_matrix(order[0], e[0]) @ axis_matrix(order[1], e[1]) @ axis_matrix(order[2], e[2])
        np.testing.assert_allclose(quat_np.to_matrix(quat_np.from_euler(e, order)), expected, atol=1e-12)


def test_bvh_zxy_quarter_turn_about_z_maps_x_to_y():
    q = quat_np.from_euler(np.radians([90.0, 0.0, 0.0]), "ZXY")
    np.testing.assert_allclose(quat_np.rotate(q, np.array([1.0, 0.0, 0.0])), [0.0, 1.0, 0.0], atol=1e-12)


@pytest.mark.parametrize("order", ORDERS)
def test_euler_round_trip_away_from_gimbal_lock(order):
    rng = np.random.default_rng(3)
    e = rng.uniform(-np.pi, np.pi, size=(500, 3))
    e[:, 1] = rng.uniform(-np.pi / 2 + 1e-3, np.pi / 2 - 1e-3, size=500)
    back = quat_np.to_euler(quat_np.from_euler(e, order), order)
    np.testing.assert_allclose(back, e, atol=1e-9)  # the unique solution comes back, not just the rotation


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("gap", [0.0, 1e-12, 1e-9, 1e-7, 1e-5, 4e-5, 1e-3])
def test_euler_round_trip_near_gimbal_lock(order, gap):
    rng = np.random.default_rng(4)
    e = rng.uniform(-np.pi, np.pi, size=(300, 3))
    e[:, 1] = (np.pi / 2 - gap) * rng.choice([-1.0, 1.0], size=300)
    q = quat_np.from_euler(e, order)
    for lib, qq in ((quat_np, q), (quat_torch, T(q))):
        back = lib.to_euler(qq, order)
        back = back.numpy() if isinstance(back, torch.Tensor) else back
        assert np.all(np.abs(back[:, 1]) <= np.pi / 2 + 1e-15)
        assert same_up_to_sign(quat_np.from_euler(back, order), q) < 1e-11
        if gap == 0.0:
            assert np.abs(back[:, 2]).max() < 1e-6  # at the lock the whole turn goes into the first angle


# ---------------------------------------------------------------- 6D, hemisphere, slerp

def test_6d_round_trip_and_projection():
    rng = np.random.default_rng(5)
    q = rand_quat(rng, 400)
    assert same_up_to_sign(quat_np.from_6d(quat_np.to_6d(q)), q) < 1e-12
    assert same_up_to_sign(quat_torch.from_6d(quat_torch.to_6d(T(q))).numpy(), q) < 1e-12
    r = rng.normal(size=(400, 6))  # not orthonormal: Gram-Schmidt keeps the first column's direction
    qr = quat_np.from_6d(r)
    np.testing.assert_allclose(np.linalg.norm(qr, axis=-1), 1.0, atol=1e-12)
    first = quat_np.to_matrix(qr)[..., :, 0]
    np.testing.assert_allclose(first, r[:, :3] / np.linalg.norm(r[:, :3], axis=-1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(quat_np.to_6d(quat_np.from_6d(quat_np.to_6d(qr))), quat_np.to_6d(qr), atol=1e-12)


@pytest.mark.parametrize("lib", [quat_np, quat_torch], ids=["numpy", "torch"])
def test_fix_hemisphere_removes_sign_flips(lib):
    rng = np.random.default_rng(6)
    angles = np.linspace(0.0, 3.0 * np.pi, 60)  # more than a full turn: w changes sign on its own
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    smooth = quat_np.from_axis_angle(axis, angles)[:, None, :] * np.ones((1, 3, 1))
    noisy = smooth * rng.choice([-1.0, 1.0], size=(60, 3, 1))
    fixed = lib.fix_hemisphere(noisy if lib is quat_np else T(noisy), 0)
    fixed = fixed.numpy() if isinstance(fixed, torch.Tensor) else fixed
    assert np.all(np.sum(fixed[1:] * fixed[:-1], -1) >= 0)
    assert np.all(np.isclose(fixed, noisy).all(-1) | np.isclose(fixed, -noisy).all(-1))
    sign = np.sign(np.sum(fixed[:1] * smooth[:1], -1, keepdims=True))
    np.testing.assert_allclose(fixed, smooth * sign, atol=1e-12)  # one consistent sign per joint
    # the same along axis 1 (joints first, time second)
    fixed_t = lib.fix_hemisphere(np.swapaxes(noisy, 0, 1) if lib is quat_np else T(np.swapaxes(noisy, 0, 1)), 1)
    fixed_t = fixed_t.numpy() if isinstance(fixed_t, torch.Tensor) else fixed_t
    np.testing.assert_allclose(np.swapaxes(fixed_t, 0, 1), fixed, atol=0)


def test_slerp_endpoints_and_midpoint():
    rng = np.random.default_rng(7)
    a, b = rand_quat(rng, 200), rand_quat(rng, 200)
    assert same_up_to_sign(quat_np.slerp(a, b, 0.0), a) < 1e-12
    assert same_up_to_sign(quat_np.slerp(a, b, 1.0), b) < 1e-12
    mid = quat_np.slerp(a, b, 0.5)
    half = 0.5 * quat_np.angle_between(a, b)
    np.testing.assert_allclose(quat_np.angle_between(a, mid), half, atol=1e-7)
    np.testing.assert_allclose(quat_np.angle_between(mid, b), half, atol=1e-7)
    assert np.all(quat_np.angle_between(a, b) <= np.pi + 1e-12)  # the shorter arc
    # a quarter of the way along: a quarter of the angle
    np.testing.assert_allclose(quat_np.angle_between(a, quat_np.slerp(a, b, 0.25)), 0.5 * half, atol=1e-7)
    # nearly identical inputs take the linear branch and stay unit length
    near = quat_np.normalize(a + 1e-9)
    np.testing.assert_allclose(np.linalg.norm(quat_np.slerp(a, near, 0.5), axis=-1), 1.0, atol=1e-12)


def test_inverse_and_rotate_agree_with_matrices():
    rng = np.random.default_rng(8)
    q, v = rand_quat(rng, 100), rng.normal(size=(100, 3))
    np.testing.assert_allclose(quat_np.rotate(q, v), np.einsum("nij,nj->ni", quat_np.to_matrix(q), v), atol=1e-12)
    np.testing.assert_allclose(quat_np.mul(q, quat_np.inv(q)), np.tile([1.0, 0, 0, 0], (100, 1)), atol=1e-12)
    np.testing.assert_allclose(quat_np.from_matrix(quat_np.to_matrix(q)), q * np.sign(q[:, :1]), atol=1e-12)


# ---------------------------------------------------------------- forward kinematics

@pytest.mark.parametrize("lib", [quat_np, quat_torch], ids=["numpy", "torch"])
def test_fk_on_a_three_joint_chain(lib):
    # root at (1, 2, 3) turned 90 deg about Z; joint 1 one unit along the root's X, turned 90 deg
    # about its X; joint 2 one unit along joint 1's Y.
    rz = quat_np.from_axis_angle(np.array([0.0, 0.0, 1.0]), np.pi / 2)
    rx = quat_np.from_axis_angle(np.array([1.0, 0.0, 0.0]), np.pi / 2)
    lrot = np.stack([rz, rx, [1.0, 0.0, 0.0, 0.0]])[None]
    lpos = np.array([[[1.0, 2.0, 3.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    parents = np.array([-1, 0, 1])
    if lib is quat_torch:
        grot, gpos = (x.numpy() for x in quat_torch.fk(T(lrot), T(lpos), parents))
    else:
        grot, gpos = quat_np.fk(lrot, lpos, parents)
    # by hand: Rz90 (1,0,0) = (0,1,0); Rz90 Rx90 (0,1,0) = Rz90 (0,0,1) = (0,0,1)
    np.testing.assert_allclose(gpos[0], [[1, 2, 3], [1, 3, 3], [1, 3, 4]], atol=1e-12)
    expected = axis_matrix("Z", np.pi / 2) @ axis_matrix("X", np.pi / 2)
    np.testing.assert_allclose(quat_np.to_matrix(grot[0, 2]), expected, atol=1e-12)
    np.testing.assert_allclose(quat_np.to_matrix(grot[0, 0]), axis_matrix("Z", np.pi / 2), atol=1e-12)


def test_a_segment_converts_to_the_same_poses_alone_and_beside_others():
    # the decode reply's poses: a matrix product may round a row by where it falls in it, so the
    # conversion is per row (the add-on caches decodes per segment); segments stacked or laid end to end
    from backend.motion.features import FeatureLayout, poses_from_features
    layout = FeatureLayout(position_joints=[0], rotation_joints=list(range(21)))
    rng = np.random.default_rng(1)
    for _ in range(40):
        feat = rng.normal(size=(3, 31, layout.dim))
        origin = rng.normal(size=(3, 1, 3))
        rot, pos = poses_from_features(feat, layout, origin, np.zeros((22, 3)), 22)
        for i in range(3):
            r1, p1 = poses_from_features(feat[i:i + 1], layout, origin[i:i + 1], np.zeros((22, 3)), 22)
            assert np.array_equal(rot[i:i + 1], r1) and np.array_equal(pos[i:i + 1], p1)
        rows = feat.reshape(-1, layout.dim)  # (end to end, one origin per row)
        r2, p2 = poses_from_features(rows, layout, np.repeat(origin[:, 0], 31, axis=0), np.zeros((22, 3)), 22)
        assert np.array_equal(r2, rot.reshape(r2.shape)) and np.array_equal(p2, pos.reshape(p2.shape))
        r3, _ = poses_from_features(rows[7:50], layout, np.repeat(origin[:, 0], 31, axis=0)[7:50], np.zeros((22, 3)), 22)
        assert np.array_equal(r3, r2[7:50])


def test_euler_angles_turn_into_the_product_of_their_three_axis_rotations_bit_for_bit():
    """``from_euler`` leaves the axis rotations' zero components out of ``mul``'s sums: the same numbers."""
    rng = np.random.default_rng(5)
    e = rng.uniform(-7, 7, size=(40, 6, 3))
    e[::5, :, 1] = 0.0
    axes = np.eye(3)
    for order in ("ZXY", "XYZ", "YZX", "ZYX", "XZY", "YXZ"):
        a, b, c = (quat_np.from_axis_angle(axes["XYZ".index(o)], e[..., i]) for i, o in enumerate(order))
        assert np.array_equal(quat_np.from_euler(e, order), quat_np.mul(quat_np.mul(a, b), c)), order
