"""scene_io + rig_math against Blender's own BVH importer: the keys Blender holds, converted to
the backend's convention, are the file's motion as backend.formats.bvh.read_bvh reads it; and back."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import TEST_CLIP, bpy, channelbag, copy_armature, disable_addon, fresh_scene_with_addon, import_bvh

bpy = bpy()
from backend.formats.bvh import read_bvh  # noqa: E402
from blender_addon.core import rig_math  # noqa: E402
from blender_addon.io import scene as scene_io  # noqa: E402

pytestmark = pytest.mark.blender
ROT_TOL = 2e-6  # rad; Blender keeps keys and rest matrices in float32
POS_TOL = 5e-4  # cm, over ~400 cm of root travel (float32: ~1e-4 observed)


@pytest.fixture(scope="module")
def imported():
    fresh_scene_with_addon()
    clip = read_bvh(TEST_CLIP)
    obj = import_bvh(TEST_CLIP)
    yield clip, obj
    disable_addon()


def convert(obj, names, frames):
    bag = channelbag(obj)
    rig = scene_io.rig_frames(obj, list(names), read_bvh(TEST_CLIP).skeleton.offsets)
    basis, loc = scene_io.read_pose(obj, bag, list(names), frames)
    return rig, rig_math.blender_to_bvh(rig, basis, loc)


def angle(a, b):
    return 2 * np.arccos(np.clip(np.abs(np.sum(a * b, -1)), 0, 1))


def test_importer_facts(imported):
    clip, obj = imported
    # the importer's NATIVE mode keys each bone in the file's order letters, but in the bone's own
    # rest frame; the file's ZXY triple itself is Blender's Euler(..., 'YXZ') in BVH axes
    assert {pb.rotation_mode for pb in obj.pose.bones} == {"ZXY"}
    from mathutils import Euler
    src = clip.meta["source_channels"][10]
    zxy = np.radians(src[9:12])  # Hips: Xpos Ypos Zpos Zrot Xrot Yrot
    q = np.array(Euler((zxy[1], zxy[2], zxy[0]), "YXZ").to_quaternion(), dtype=np.float64)
    assert abs(abs(np.dot(q, clip.rotations[10, 1])) - 1) < 1e-6  # mathutils is float32
    assert obj.animation_data.action.frame_range[:] == (1, clip.num_frames)


def test_keys_convert_to_the_files_motion(imported):
    clip, obj = imported
    frames = np.arange(1, clip.num_frames + 1)
    rig, (rot, pos) = convert(obj, clip.skeleton.names, frames)
    assert rig.cm_per_unit == 1.0
    np.testing.assert_allclose(rig.bvh_offsets(), clip.skeleton.offsets, atol=POS_TOL)
    assert angle(rot, clip.rotations).max() < ROT_TOL
    assert np.abs(pos - clip.positions).max() < POS_TOL
    # the wrong convention is far off: the comparison has teeth
    assert np.abs(rig_math.qrotate(rig_math.BVH_TO_BLENDER, pos) - clip.positions).max() > 10


def test_back_to_channels_reproduces_the_keys(imported):
    clip, obj = imported
    names = list(clip.skeleton.names)
    bag = channelbag(obj)
    frames = np.arange(1, 60)
    rig = scene_io.rig_frames(obj, names, clip.skeleton.offsets)
    basis, loc = scene_io.read_pose(obj, bag, names, frames)
    b2, l2 = rig_math.bvh_to_blender(rig, *rig_math.blender_to_bvh(rig, basis, loc))
    np.testing.assert_allclose(l2, loc, atol=1e-9)
    for j, name in enumerate(names):
        keyed = scene_io.read_channel(obj, bag, name, "rotation_euler", 3, frames)
        again = rig_math.quat_to_channels(b2[:, j], "ZXY", keyed[0])
        np.testing.assert_allclose(again, keyed, atol=1e-9, err_msg=name)  # same Euler numbers, no flips


def test_scaled_rig_in_metres(imported):
    clip, obj = imported
    b = bpy.context
    arm = copy_armature(obj)
    b.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    for eb in arm.data.edit_bones:
        eb.head *= 0.01
        eb.tail *= 0.01
    bpy.ops.object.mode_set(mode="OBJECT")
    bag = channelbag(arm)
    for fc in bag.fcurves:  # locations in metres too
        if fc.data_path.endswith(".location"):
            co = np.zeros(2 * len(fc.keyframe_points), np.float32)
            fc.keyframe_points.foreach_get("co", co)
            co[1::2] *= 0.01
            fc.keyframe_points.foreach_set("co", co)
    frames = [1, 100]
    rig, (rot, pos) = convert(arm, clip.skeleton.names, frames)
    assert rig.cm_per_unit == 100.0
    assert np.abs(pos - clip.positions[[0, 99]]).max() < 100 * POS_TOL
    assert angle(rot, clip.rotations[[0, 99]]).max() < 1e-5
    bpy.data.objects.remove(arm)
    b.view_layer.objects.active = obj


def test_location_frames_and_rotation_modes_follow_blender(imported):
    """Pose a bone with any rotation mode and either location option: Blender's evaluated
    bone heads and orientations equal what our conversion + FK predicts."""
    clip, original = imported
    from backend.maths import quat_np
    names = list(clip.skeleton.names)
    obj = copy_armature(original)
    spine = obj.pose.bones["Spine"]
    obj.data.bones["Spine"].use_local_location = False
    spine.rotation_mode = "QUATERNION"
    obj.pose.bones["Chest"].rotation_mode = "AXIS_ANGLE"
    obj.animation_data.action = None  # pose by hand
    try:
        for pb in obj.pose.bones:
            pb.location = (0, 0, 0)
            pb.rotation_quaternion = (1, 0, 0, 0)
            pb.rotation_euler = (0, 0, 0)
            pb.rotation_axis_angle = (0, 0, 1, 0)
        obj.pose.bones["Hips"].location = (3.0, -2.0, 5.0)
        obj.pose.bones["Hips"].rotation_euler = (0.3, -0.2, 0.5)
        spine.location = (1.0, 2.0, -1.5)
        spine.rotation_quaternion = rig_math.qnormalize(np.array([0.9, 0.1, -0.3, 0.2]))
        obj.pose.bones["Chest"].rotation_axis_angle = (0.7, 0.2, 0.9, -0.3)
        bpy.context.view_layer.update()
        rig = scene_io.rig_frames(obj, names, clip.skeleton.offsets)
        basis = np.stack([rig_math.channels_to_quat(np.array(getattr(obj.pose.bones[n], scene_io.rotation_property(
            obj.pose.bones[n].rotation_mode)[0])), obj.pose.bones[n].rotation_mode) for n in names])
        loc = np.array([tuple(obj.pose.bones[n].location) for n in names])
        rot, pos = rig_math.blender_to_bvh(rig, basis, loc)
        grot, gpos = quat_np.fk(rot, pos, clip.skeleton.parents)
        c = rig_math.q_to_matrix(rig_math.BVH_TO_BLENDER)
        ours = gpos @ c.T
        theirs = np.array([tuple(obj.pose.bones[n].head) for n in names])
        np.testing.assert_allclose(ours, theirs, atol=1e-4)
        for j, n in enumerate(names):
            pb = obj.pose.bones[n]
            posed = np.array(pb.matrix.to_3x3()) @ np.array(pb.bone.matrix_local.to_3x3()).T
            np.testing.assert_allclose(posed, c @ quat_np.to_matrix(grot[j]) @ c.T, atol=1e-5, err_msg=n)
    finally:
        bpy.data.objects.remove(obj)
