"""Other studios' skeletons through Blender's Import BVH and the add-on (real bpy): each family's joints are
found as the batch's .bvh path finds them (one detection, backend.humanoid), and a rest pose lying down
in-betweens in Blender to the rotations the batch writes for the same file and keys."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from addon_helpers import bpy, disable_addon, fresh_scene_with_addon, import_bvh, thin_every, use_test_backend

bpy = bpy()
pytestmark = pytest.mark.blender
SKELETONS = Path(__file__).resolve().parent / "fixtures" / "skeletons"
FAMILIES = ("cmu_07_01", "asf", "reallusion", "daz", "mixamo6", "vicon_zup_inches", "lying", "child", "arena_louise",
            "neuron_milad")


@pytest.fixture(scope="module")
def model():
    from blender_addon import bridge
    fresh_scene_with_addon()
    use_test_backend()
    yield bridge.describe(bridge.BackendSettings())
    disable_addon()


def batch_found(path, info):
    from backend.formats.bvh import read_bvh
    from backend.humanoid import bvh_rig
    return bvh_rig.conversion(read_bvh(path), info.names, info.parents, info.offsets, info.position_joints)


@pytest.mark.parametrize("family", FAMILIES)
def test_blender_import_finds_the_joints_the_batch_finds(model, family):
    from blender_addon.io import bone_map as bone_map_io
    path = SKELETONS / f"{family}.bvh"
    obj = import_bvh(path)
    try:
        bm, bones = bone_map_io.resolve(obj, list(model.names), list(model.parents))
        found = batch_found(path, model)
        rt = found.retarget
        expected = {model.names[j]: rt.bone_of(j) for j in rt.mapped}
        assert {j: b for j, b in zip(model.names, bones, strict=True) if b} == expected
        assert {j: bm.reasons[j] for j in expected} == {j: found.bone_map.reasons[j] for j in expected}
        assert len(expected) >= 17 and bm.preset == found.bone_map.preset
        # the knees and elbows turned onto the model's axes alike (every frame keyed: the file's frames)
        assert bone_map_io.conversion(obj, model, bones).hinge_turns == rt.hinge_turns
        if family != "neuron_milad" and family != "arena_louise":  # (CMU's motion under every other skeleton)
            assert set(rt.hinge_turns) == {"LowerLeg_L", "LowerLeg_R", "LowerArm_L", "LowerArm_R"}
    finally:
        bpy.data.objects.remove(obj)


@pytest.mark.torch  # (the batch's path runs the model in this Python)
@pytest.mark.parametrize("family", ["lying", "vicon_zup_inches"])
def test_a_rest_not_standing_in_betweens_in_blender_as_in_the_batch(model, family):
    """The rest pose on its back under standing motion, and a Z-up capture in inches (lying in the scene
    after Import BVH, which reads Y up): Import BVH + Inbetween gives every mapped bone the world rotation
    the batch's .bvh path gives it (both files were refused before; the Z-up one is stood up on both paths)."""
    from backend.formats.bvh import read_bvh
    from backend.maths import quat_np
    from blender_addon import bridge
    from blender_addon.batch import bvh_map
    from blender_addon.core import rig_math
    path = SKELETONS / f"{family}.bvh"
    obj = import_bvh(path)
    n, keys = thin_every(obj, 15)
    assert bpy.ops.anim.splinetween_inbetween(editable=False) == {"FINISHED"}
    clip = read_bvh(path)
    rot, pos, rec = bvh_map.inbetween(bridge, bridge.BackendSettings(mode="IN_PROCESS"), clip, model,
                                      [k - 1 for k in keys], None)
    g, _ = quat_np.fk(rot, pos, clip.skeleton.parents)
    c = rig_math.q_to_matrix(rig_math.BVH_TO_BLENDER)
    worst = 0.0
    for _joint, bone in rec["bone_map"].items():
        j = clip.skeleton.index(bone)
        rest = np.array(obj.data.bones[bone].matrix_local.to_3x3())
        for f in range(1, n + 1):
            bpy.context.scene.frame_set(f)
            blender = np.array(obj.pose.bones[bone].matrix.to_3x3()) @ rest.T
            batch = c @ rig_math.q_to_matrix(g[f - 1, j]) @ c.T
            worst = max(worst, float(np.abs(blender - batch).max()))
    bpy.data.objects.remove(obj)
    assert worst < 2e-3, worst
