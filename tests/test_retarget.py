"""backend.humanoid.retarget and rest_pose on their own (numpy): rigs of other tools, bone axes and rolls,
chains with bones in between, A/T-pose rests.  What the model sees is the rig's world motion in its own
convention (checked by forward kinematics on both sides), and the way back returns the rig's channels."""
from __future__ import annotations

import json

import numpy as np
import pytest

import addon_helpers  # (sets BLENDER_USER_RESOURCES before any bpy import)
import retarget_loops
import rig_builders
from backend.humanoid import bone_map, rest_pose, retarget
from backend.maths import quat_np
from blender_addon.core import rig_math

CK = json.loads((addon_helpers.ROOT / "backend" / "checkpoints" / "inbetween.json").read_text())["skeleton"]
NAMES, PARENTS, OFFSETS = CK["names"], CK["parents"], np.array(CK["offsets"])
C = rig_math.BVH_TO_BLENDER
RNG = np.random.default_rng(3)


def rest_matrix(head, tail, rng):
    """A bone's ``matrix_local``: Y along the bone, a random roll (any tool's bone axes)."""
    y = np.subtract(tail, head)
    y = y / np.linalg.norm(y)
    x = np.cross(y, rng.normal(size=3))
    x /= np.linalg.norm(x)
    m = np.eye(4)
    m[:3, 0], m[:3, 1], m[:3, 2], m[:3, 3] = x, y, np.cross(x, y), head
    return m


def converted(names_table, extra=(), unmap=()):
    bones = rig_builders.rig(names_table, extra)
    bm = bone_map.detect(NAMES, PARENTS, bones)
    joint_bones = bone_map.check(NAMES, PARENTS, {b: v[0] for b, v in bones.items()}, bm.bones)
    joint_bones = [None if n in unmap else b for n, b in zip(NAMES, joint_bones, strict=True)]
    rig = {b: retarget.RigBone(v[0], rest_matrix(v[1], v[2], RNG), bool(RNG.integers(2))) for b, v in bones.items()}
    return retarget.build(NAMES, PARENTS, OFFSETS, joint_bones, rig)


def rig_fk(rt, basis, loc):
    """Blender's pose: every read bone's rotation against rest (armature axes) and posed head."""
    c = rt.contributions(basis)
    g, h = np.zeros_like(c), np.zeros(basis.shape[:-1] + (3,))
    for b, q in enumerate(rt.bone_parent):
        off = rt.heads[b] - (rt.heads[q] if q >= 0 else 0.0)
        step = off + rig_math.qrotate(rt.loc_frame[b], loc[:, b])
        g[:, b] = c[:, b] if q < 0 else rig_math.qmul(g[:, q], c[:, b])
        h[:, b] = step if q < 0 else h[:, q] + rig_math.qrotate(g[:, q], step)
    return g, h


def model_fk(rot, pos):
    g, x = np.zeros_like(rot), np.zeros(rot.shape[:-1] + (3,))
    for j, p in enumerate(PARENTS):
        g[:, j] = rot[:, j] if p < 0 else rig_math.qmul(g[:, p], rot[:, j])
        x[:, j] = pos[:, j] if p < 0 else x[:, p] + rig_math.qrotate(g[:, p], pos[:, j])
    return g, x


def random_pose(rt, frames=6, amount=0.6):
    b = len(rt.bones)
    basis = rig_math.qnormalize(np.concatenate([np.ones((frames, b, 1)), amount * RNG.normal(size=(frames, b, 3))], -1))
    return basis, 0.05 * RNG.normal(size=(frames, b, 3))


def same_rotation(a, b, atol=1e-9):
    np.testing.assert_allclose(np.abs(np.sum(a * b, -1)), 1.0, atol=atol)


@pytest.mark.parametrize("table", [rig_builders.MIXAMO, rig_builders.RIGIFY_DEF, rig_builders.UNREAL,
                                   rig_builders.CMU], ids=["mixamo", "rigify", "ue", "cmu"])
def test_the_model_sees_the_rigs_world_motion_and_the_way_back_returns_the_channels(table):
    rt = converted(table)
    assert rt.reference == "a standing T-pose" and not rt.native and rt.inner_bones()
    basis, loc = random_pose(rt)
    rot, pos = rt.to_model(basis, loc)
    g_rig, h_rig = rig_fk(rt, basis, loc)
    g_model, x_model = model_fk(rot, pos)
    d = rt.rest_diff
    for j in rt.mapped:  # G_model = C^T G_rig C D, positions scaled, in the model's axes
        b = rt.joint_bone[j]
        same_rotation(g_model[:, j], rig_math.qmul(rig_math.qmul(rig_math.qmul(rig_math.qconj(C), g_rig[:, b]), C),
                                                   d[j]))
        if j == 1:  # hips: where the rig's hips are (cm)
            np.testing.assert_allclose(x_model[:, j], rt.scale * rig_math.qrotate(rig_math.qconj(C), h_rig[:, b]),
                                       atol=1e-9)
    back_b, back_l = rt.to_rig(rot, pos, basis, loc)
    for j in rt.mapped:
        same_rotation(back_b[:, j], basis[:, rt.joint_bone[j]])
    np.testing.assert_allclose(back_l[:, 1], loc[:, rt.joint_bone[1]], atol=1e-9)


@pytest.mark.parametrize("table, unmap", [(rig_builders.MIXAMO, ()), (rig_builders.RIGIFY_DEF, ()),
                                          (rig_builders.UNREAL, ()), (rig_builders.CMU, ()),
                                          (rig_builders.MIXAMO, ("Spine", "Neck", "LowerArm_L")),
                                          (rig_builders.UNREAL, ("Chest", "UpperLeg_R"))],
                         ids=["mixamo", "rigify", "ue", "cmu", "mixamo-unmapped-middle", "ue-unmapped-chest-thigh"])
def test_the_conversion_over_all_joints_at_once_equals_the_per_joint_loops_bit_for_bit(table, unmap):
    """to_model/to_rig pad chains and joints in between with the identity to convert every joint at once:
    the very same floats as walking joint by joint (retarget_loops, the code before)."""
    rt = converted(table, unmap=unmap)
    assert rt.inner_bones() and (table is not rig_builders.MIXAMO or rt.between[NAMES.index("Hips")])  # (no root bone)
    assert any(rt.above[j] >= 0 and rt.between[j] for j in rt.mapped) == bool(set(unmap) - {"Hips"})
    basis, loc = random_pose(rt, frames=9)
    new, old = rt.to_model(basis, loc), retarget_loops.to_model(rt, basis, loc)
    rot, pos = random_pose(rt, frames=9)[0][:, :len(NAMES)], 3.0 * RNG.normal(size=(9, len(NAMES), 3))
    back_new, back_old = rt.to_rig(rot, pos, basis, loc), retarget_loops.to_rig(rt, rot, pos, basis, loc)
    for a, b in zip(new + back_new, old + back_old, strict=True):
        assert a.shape == b.shape and np.array_equal(a, b)
    inner = rt.inner_bones()  # bones in between that keep still (a twist bone, a control root): the same floats
    basis[:, inner], loc[:, inner] = basis[:1, inner], loc[:1, inner]
    still_new, still_old = rt.to_rig(rot, pos, basis, loc), retarget_loops.to_rig(rt, rot, pos, basis, loc)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(still_new, still_old, strict=True))
    moving = [1] + [j for j in rt.mapped if rt.between[j]][-1:]  # (Inbetween asks only for the hips' locations)
    only_b, only_l = rt.to_rig(rot, pos, basis, loc, positions=moving)
    assert only_b.tobytes() == still_new[0].tobytes() and only_l[:, moving].tobytes() == still_new[1][:, moving].tobytes()
    assert not np.delete(only_l, moving, 1).any()


def test_the_data_sets_own_skeleton_converts_as_before():
    """One bone per joint, the data set's rest: no padding, no rest differences, the same floats."""
    rig = {}
    for j, (n, p) in enumerate(zip(NAMES, PARENTS, strict=True)):
        m = np.eye(4)
        m[:3, 3] = rig_math.qrotate(C, OFFSETS[j]) / 100.0 + (rig[NAMES[p]].matrix[:3, 3] if p >= 0 else 0.0)
        rig[n] = retarget.RigBone(NAMES[p] if p >= 0 else None, m, True)
    rt = retarget.build(NAMES, PARENTS, OFFSETS, list(NAMES), rig)
    assert rt.native and rt.rest_diff is None and not rt.inner_bones()
    basis, loc = random_pose(rt, frames=9)
    rot, pos = rt.to_model(basis, loc)
    assert all(np.array_equal(a, b) for a, b in zip((rot, pos), retarget_loops.to_model(rt, basis, loc), strict=True))
    np.testing.assert_allclose(rot, rig_math.qmul(rig_math.qmul(rig_math.qconj(C), basis), C), atol=1e-12)
    assert all(np.array_equal(a, b) for a, b in zip(rt.to_rig(rot, pos), retarget_loops.to_rig(rt, rot, pos), strict=True))


def test_standing_rigs_face_and_stand_as_the_models_reference():
    """A Mixamo rig at rest is the model's standing T-pose: spine up, legs down, arms out to the sides."""
    rt = converted(rig_builders.MIXAMO)
    b = len(rt.bones)
    rest = np.zeros((1, b, 4))
    rest[..., 0] = 1.0
    rot, pos = rt.to_model(rest, np.zeros((1, b, 3)))
    _, x = model_fk(rot, pos)
    x = x[0]
    i = {n: k for k, n in enumerate(NAMES)}

    def direction(a, z):
        v = x[i[z]] - x[i[a]]
        return v / np.linalg.norm(v)
    assert direction("Hips", "Head")[1] > 0.99 and direction("UpperLeg_L", "Foot_L")[1] < -0.99
    assert direction("UpperArm_L", "Hand_L")[0] > 0.99 and direction("UpperArm_R", "Hand_R")[0] < -0.99
    assert direction("Foot_L", "Toes_L")[2] > 0.5  # the feet point forward (+Z, the model's facing)
    assert 91 < rt.scale < 93  # model cm per metre of this 1.6 m rig: by the legs


def test_a_rest_pose_with_the_arms_hanging_down_converts_and_points_the_arms_down():
    """Arms hanging straight down in the rest pose (the commonest BVH rest after the T-pose) are not refused:
    each arm bone's rest difference swings the model's arm onto the rig's, so the model at the rig's rest
    points its arms where the rig's point."""
    bones = rig_builders.rig(rig_builders.MIXAMO)
    for side, sx in (("Left", 1), ("Right", -1)):  # arms hanging straight down in the rest pose
        for k, z in (("Arm", 1.45), ("ForeArm", 1.18), ("Hand", 0.94)):
            name = f"mixamorig:{side}{k}"
            parent, _, _ = bones[name]
            bones[name] = (parent, (sx * 0.15, 0, z), (sx * 0.15, 0, z - 0.2))
    joint_bones = bone_map.check(NAMES, PARENTS, {b: v[0] for b, v in bones.items()}, bone_map.detect(NAMES, PARENTS, bones).bones)
    rig = {b: retarget.RigBone(v[0], rest_matrix(v[1], v[2], RNG)) for b, v in bones.items()}
    rt = retarget.build(NAMES, PARENTS, OFFSETS, joint_bones, rig)
    j = NAMES.index("UpperArm_L")
    down = quat_np.rotate(rt.rest_diff[j], np.asarray(OFFSETS[NAMES.index("LowerArm_L")], dtype=np.float64))
    assert down[1] < -0.99 * np.linalg.norm(down)  # BVH axes: the model's upper arm points down (-Y) at rest


def test_swing_and_kabsch():
    a, b = RNG.normal(size=3), RNG.normal(size=3)
    q = rest_pose.swing(a, b)
    np.testing.assert_allclose(rig_math.qrotate(q, a / np.linalg.norm(a)), b / np.linalg.norm(b), atol=1e-12)
    np.testing.assert_allclose(rest_pose.swing(a, a), [1, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(rig_math.qrotate(rest_pose.swing(a, -a), a), -a, atol=1e-12)
    turn = rig_math.qnormalize(RNG.normal(size=4))
    src = RNG.normal(size=(3, 3))
    same_rotation(rest_pose.kabsch(src, rig_math.qrotate(turn, src)), turn, atol=1e-12)
