"""slider_math on its own (numpy only): the slider's per-edit maths for every bone and frame at once
equals the step-by-step path it replaces (``layer_math.compose``, ``rig_math.blender_to_bvh`` /
``bvh_to_blender``, ``layer_math.channels_near`` bone by bone) on quaternion, axis-angle and every Euler
order, Euler triples turns away from the principal angles included."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import ROOT  # noqa: F401  (puts the repository on sys.path)
from backend.maths import quat_np
from blender_addon.core import layer_math, rig_math, slider_math

RNG = np.random.default_rng(19)
MODES = ("QUATERNION", "AXIS_ANGLE") + rig_math.EULER_MODES


def unit(shape):
    return rig_math.qnormalize(RNG.normal(size=shape + (4,)))


def random_rig(j: int, cm: float = 1.0) -> rig_math.RigFrames:
    mats = np.zeros((j, 4, 4))
    mats[:, :3, :3] = quat_np.to_matrix(unit((j,)))
    mats[:, :3, 3], mats[:, 3, 3] = RNG.normal(size=(j, 3)), 1.0
    parents = np.concatenate([np.eye(4)[None], mats[:-1]])
    return rig_math.RigFrames.from_rest(mats, parents, RNG.random(j) < 0.7, cm)


def channel_values(q: np.ndarray, mode: str) -> np.ndarray:
    """Channel values of rotations ``q [F, J, 4]`` as a user's keys would hold them: Euler triples turns
    away from the principal angles, axis-angles with whole turns added, quaternions of either sign."""
    if mode == "QUATERNION":
        return q * RNG.choice([-1.0, 1.0], size=q.shape[:-1] + (1,))
    if mode == "AXIS_ANGLE":
        aa = rig_math.quat_to_axis_angle(q)
        aa[..., 0] += 2 * np.pi * RNG.integers(-2, 3, size=aa.shape[:-1])
        return aa
    return rig_math.quat_to_euler(q, mode) + 2 * np.pi * RNG.integers(-2, 3, size=q.shape[:-1] + (3,))


def old_path(rig, mode, base_rot, base_loc, n_rot, n_pos, e_rot, e_pos):
    """The step-by-step path: the original in the model's convention, composed, converted back, and each
    bone's channels nearest the original's, one bone at a time."""
    basis_o = rig_math.channels_to_quat(base_rot, mode)
    o_rot, o_pos = rig_math.blender_to_bvh(rig, basis_o, base_loc)
    basis, loc = rig_math.bvh_to_blender(rig, *layer_math.compose(o_rot, o_pos, n_rot, n_pos, e_rot, e_pos))
    rot = np.stack([layer_math.channels_near(basis[:, j], mode, base_rot[:, j]) for j in range(basis.shape[1])], 1)
    return rot, loc


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cm", [1.0, 100.0])
def test_vectorised_layer_equals_the_step_by_step_path(mode, cm):
    f, j = 40, 6
    rig = random_rig(j, cm)
    base_rot = channel_values(unit((f, j)), mode)
    base_loc = RNG.normal(size=(f, j, 3))
    n_rot, e_rot = unit((f, j)), unit((f, j))
    e_rot[:5] = n_rot[:5]  # frames the edit leaves alone
    n_pos, e_pos = RNG.normal(size=(f, j, 3)) * 10, RNG.normal(size=(f, j, 3)) * 10
    ref_rot, ref_loc = old_path(rig, mode, base_rot, base_loc, n_rot, n_pos, e_rot, e_pos)

    basis_o = rig_math.channels_to_quat(base_rot, mode)
    maps = slider_math.rotation_maps(basis_o, n_rot, slider_math.rest_turns(rig))
    rot = slider_math.channels_near(slider_math.layered_rotations(maps, e_rot), mode, base_rot)
    loc = slider_math.layered_locations(base_loc, slider_math.location_maps(rig), e_pos, n_pos)
    np.testing.assert_allclose(rot, ref_rot, atol=1e-9)
    np.testing.assert_allclose(loc, ref_loc, atol=1e-9)
    # no edit on a frame: the original's own channel values (to float rounding), the same turns
    np.testing.assert_allclose(rot[:5], base_rot[:5], atol=1e-9)


@pytest.mark.parametrize("mode", rig_math.EULER_MODES)
def test_euler_near_is_quat_to_euler_with_compat(mode):
    q = unit((60, 5))
    q[:4] = rig_math.euler_to_quat(np.array([[0.3, np.pi / 2, -0.2], [0.1, -np.pi / 2, 0.4], [np.pi, 0, 0],
                                      [0, 0, np.pi]])[:, None].repeat(5, 1), mode)  # gimbal lock, half turns
    ref = rig_math.quat_to_euler(q, mode) + RNG.normal(scale=2.0, size=q.shape[:-1] + (3,)) \
        + 2 * np.pi * RNG.integers(-3, 4, size=q.shape[:-1] + (3,))  # wrap-around: turns away
    ours = slider_math.euler_near(q, mode, ref)
    np.testing.assert_allclose(ours, rig_math.quat_to_euler(q, mode, compat=ref), atol=1e-12)
    back = rig_math.euler_to_quat(ours, mode)
    np.testing.assert_allclose(back * np.sign(np.sum(back * q, -1))[..., None], q, atol=1e-9)


def test_quaternion_matrices_multiply():
    a, b = unit((7, 3)), unit((7, 3))
    np.testing.assert_allclose(slider_math.left_matrix(a) @ b[..., None], quat_np.mul(a, b)[..., None], atol=1e-15)
    np.testing.assert_allclose(slider_math.right_matrix(b) @ a[..., None], quat_np.mul(a, b)[..., None], atol=1e-15)


def test_from_6d_is_from_matrix_of_the_gram_schmidt_frame():
    r = RNG.normal(size=(200, 6))
    q = rig_math.q_from_matrix(np.eye(3)[None].repeat(4, 0))
    pivots = np.array([[0.0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [1.0, 0, 0, 0]])
    r[:4] = quat_np.to_6d(rig_math.qmul(q, pivots))  # each pivot
    a = r[:, :3] / np.linalg.norm(r[:, :3], axis=-1, keepdims=True)
    b = r[:, 3:] - np.sum(a * r[:, 3:], -1, keepdims=True) * a
    b /= np.linalg.norm(b, axis=-1, keepdims=True)
    ref = quat_np.from_matrix(np.stack([a, b, np.cross(a, b)], -1))
    np.testing.assert_allclose(quat_np.from_6d(r), ref, atol=1e-14)
    assert (quat_np.from_6d(r)[:, 0] >= 0).all()


@pytest.mark.parametrize("lengths", [(31, 31, 31, 31), (31, 30, 31, 30), (5, 31, 4, 12)])
def test_segments_joined_at_once_equal_one_at_a_time(lengths):
    from blender_addon.core import latent_math
    parts = {s: (unit((m, 6)), RNG.normal(size=(m, 6, 3))) for s, m in enumerate(lengths)}
    items = [(0, (False, True)), (1, (True, True)), (2, (True, False)), (3, (True, True))]
    for (s, sides), (rot, pos) in zip(items, latent_math.segments_values(parts, items, len(lengths), True), strict=True):
        ref_r, ref_p = latent_math.segment_values(parts, s, len(lengths), True, sides)
        np.testing.assert_allclose(rot, ref_r, atol=1e-14)
        np.testing.assert_allclose(pos, ref_p, atol=1e-12)
    apart = latent_math.segments_values(parts, items[:2], len(lengths), False)
    assert all(np.array_equal(r, parts[s][0]) for (s, _), (r, _) in zip(items[:2], apart, strict=True))
