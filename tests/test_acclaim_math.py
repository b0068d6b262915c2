"""core/acclaim_math without Blender: Blender's pose chain, written out in numpy (``P_j = P_parent R_parent^-1
R_j B_j``, a bone's head carried by its parent's pose), put every joint of a take where the clip's forward
kinematics puts it, turned by the axis conversion and scaled, for any rest orientation of the bones.  (The same
with bpy on the HDM05 take: tests/test_import_acclaim.py.)"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from backend.formats import asf as asf_io
from backend.maths import quat_np
from blender_addon.core import acclaim_math, quat

HDM = Path(__file__).resolve().parent / "fixtures" / "hdm05"
Y_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # axis_conversion(-Z forward, Y up)


def blender_heads(heads_rest, parents, rest, basis, location):
    """World heads ``[F, J, 3]`` as Blender's pose evaluates them (armature space, object at identity)."""
    f, j = basis.shape[:2]
    pose = np.zeros((f, j, 4))
    out = np.zeros((f, j, 3))
    for b in range(j):
        p = parents[b]
        local = quat.mul(rest[b], basis[:, b])  # R_j B_j
        moved = quat.rotate(rest[b], location[:, b])  # the location, in the bone's rest frame
        if p < 0:
            pose[:, b] = local
            out[:, b] = heads_rest[b] + moved
        else:
            to_parent = quat.conj(rest[p])
            pose[:, b] = quat.mul(pose[:, p], quat.mul(to_parent, local))
            offset = quat.rotate(to_parent, heads_rest[b] - heads_rest[p] + moved)
            out[:, b] = out[:, p] + quat.rotate(pose[:, p], offset)
    return out


def test_the_pose_channels_rebuild_the_takes_forward_kinematics_for_any_rest():
    clip = asf_io.read_asf_amc(HDM / "HDM_tr.asf", HDM / "HDM_tr_kickLFront1Reps_027_120.amc")
    skel = clip.skeleton
    rng = np.random.default_rng(3)
    rest = quat.normalize(rng.normal(size=(len(skel.names), 4)))  # any bone orientations at rest
    a, scale = acclaim_math.axis_quat(Y_UP), 2.5
    basis = acclaim_math.pose_rotations(clip.rotations, a, rest)
    location = acclaim_math.pose_locations(clip.positions, skel.offsets, a, rest, scale)
    heads = scale * acclaim_math.rest_heads(skel.offsets, skel.parents) @ Y_UP.T
    ours = blender_heads(heads, skel.parents, rest, basis, location)
    _, world = quat_np.fk(clip.rotations, clip.positions, skel.parents)
    assert np.abs(ours - scale * world @ Y_UP.T).max() < 1e-9 * np.abs(world).max()
    moved = np.abs(world - world[:1]).max()
    assert moved > 1.0  # (the take moves: a kick, in file units)


def test_channels_are_continuous_and_give_the_rotation_back():
    from blender_addon.core import rig_math
    rng = np.random.default_rng(0)
    q = quat.normalize(np.cumsum(rng.normal(scale=0.3, size=(50, 4)), 0) + [4.0, 0, 0, 0])
    q[::2] *= -1  # the same rotations, signs flipping
    for mode in ("QUATERNION", "XYZ", "ZXY"):
        ch = acclaim_math.channels(q, mode)
        back = rig_math.channels_to_quat(ch, mode)
        assert np.allclose(np.abs((back * q).sum(-1)), 1.0, atol=1e-9), mode
        assert np.abs(np.diff(ch, axis=0)).max() < 1.0, mode  # no sign flips, no 360 degree jumps


def test_a_zero_length_bone_gets_the_up_axis_the_mean_length_long():
    heads = np.zeros((3, 3))
    tails = acclaim_math.rest_tails(heads, np.array([[0.0, 0, 0], [2.0, 0, 0], [0, 0, 4.0]]))
    assert np.allclose(tails, [[0, 3.0, 0], [2.0, 0, 0], [0, 0, 4.0]])
