"""Rest poses other than the model's, in real (headless) Blender: an A-pose copy of the test rig (arms
turned 45 degrees down in the rest pose, the motion re-keyed so that the world motion is the same)
in-betweens to the same world joint positions as the original, and its keys stay bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import (
    assert_same_keys,
    bpy,
    copy_armature,
    disable_addon,
    fresh_scene_with_addon,
    import_bvh,
    keys_on,
    snapshot,
    thin_every,
    use_test_backend,
)

bpy = bpy()
import rig_helpers  # noqa: E402
from rig_helpers import ARMS  # noqa: E402

pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_inbetween


@pytest.fixture(scope="module")
def walk():
    fresh_scene_with_addon()
    use_test_backend()
    obj = import_bvh()
    n, keys = thin_every(obj)
    ref = copy_armature(obj, "reference")
    bpy.context.view_layer.objects.active = obj
    assert OP(editable=False) == {"FINISHED"}
    yield {"name": obj.name, "ref": ref.name, "n": n, "keys": keys}
    disable_addon()


def heads(obj, frames):
    out = []
    for f in frames:
        bpy.context.scene.frame_set(int(f))
        out.append([tuple(pb.head) for pb in obj.pose.bones])
    return np.array(out)


def a_pose_copy(walk, degrees=45.0):
    """The thinned rig with its arms turned down in the rest pose, re-keyed to the reference's world poses
    at the keys."""
    return rig_helpers.a_pose_copy(bpy.data.objects[walk["ref"]], walk["keys"], degrees)


def test_an_a_pose_rig_in_betweens_to_the_originals_world_motion(walk):
    arm = a_pose_copy(walk)
    rest_dirs = np.array([np.array(arm.data.bones[c[1]].head_local - arm.data.bones[c[0]].head_local)
                          for c in ARMS.values()])
    orig = bpy.data.objects[walk["name"]].data.bones
    o_dirs = np.array([np.array(orig[c[1]].head_local - orig[c[0]].head_local) for c in ARMS.values()])
    cos = np.sum(rest_dirs * o_dirs, -1) / np.linalg.norm(rest_dirs, axis=-1) / np.linalg.norm(o_dirs, axis=-1)
    np.testing.assert_allclose(np.degrees(np.arccos(cos)), 45.0, atol=1e-3)  # the arms rest 45 degrees down
    frames = range(1, walk["n"] + 1)
    at_keys = heads(arm, walk["keys"])
    np.testing.assert_allclose(at_keys, heads(bpy.data.objects[walk["ref"]], walk["keys"]), atol=1e-3)
    before = snapshot(arm)
    assert OP(editable=False) == {"FINISHED"}
    after = snapshot(arm)
    for path, old in before.items():  # the keys the user set: bit for bit
        kept = keys_on(after[path], walk["keys"])
        assert_same_keys(old, after[path], rows_b=kept, skip=("handle_left", "handle_right"))
    err = np.linalg.norm(heads(arm, frames) - heads(bpy.data.objects[walk["name"]], frames), axis=-1)
    print(f"A-pose rig vs the original: joint position error mean {err.mean():.2e} cm, max {err.max():.2e} cm")
    assert err.max() < 1e-3  # cm
    bpy.data.objects.remove(arm)


def test_the_conversion_kept_for_a_rig_follows_its_rest_pose(walk):
    """A rig's conversion is built once and kept; turning its arms in the rest pose (edit mode) or giving a
    bone another location frame gives the conversion of the new rest, as built afresh."""
    from mathutils import Matrix

    from blender_addon import bridge, preferences
    from blender_addon.io import bone_map as bone_map_io
    info = bridge.describe(preferences.settings(bpy.context))
    arm = copy_armature(bpy.data.objects[walk["ref"]], "rest changes")

    def conversion(afresh=False):
        if afresh:
            bone_map_io._built.clear()
        _, bones = bone_map_io.resolve(arm, info.names, info.parents)
        return bone_map_io.conversion(arm, info, bones)
    first = conversion()
    assert conversion() is first and first.rest_diff is None  # kept; the data set's own rest
    bpy.ops.object.mode_set(mode="EDIT")
    pivot = arm.data.edit_bones[ARMS["L"][0]].head.copy()
    for name in ARMS["L"]:
        arm.data.edit_bones[name].transform(Matrix.Translation(pivot) @ Matrix.Rotation(0.6, 4, "Y")
                                            @ Matrix.Translation(-pivot))
    bpy.ops.object.mode_set(mode="OBJECT")
    turned = conversion()
    assert turned is not first and turned.rest_diff is not None
    fresh = conversion(afresh=True)
    np.testing.assert_array_equal(turned.rest_diff, fresh.rest_diff)
    np.testing.assert_array_equal(turned.rest, fresh.rest)
    arm.data.bones[ARMS["L"][1]].use_local_location = False
    moved = conversion()
    assert moved is not fresh and not np.array_equal(moved.loc_frame, fresh.loc_frame)
    np.testing.assert_array_equal(moved.loc_frame, conversion(afresh=True).loc_frame)
    bpy.data.objects.remove(arm)
