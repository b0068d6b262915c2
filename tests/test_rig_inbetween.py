"""Inbetween on rigs other than the data set's own, in real (headless) Blender: the bone map found by
itself on renamed rigs, chains with bones in between (their keys kept), refusals of maps with too little.

Each rig here is a copy of the test clip's armature (own action) changed as a user's rig differs, with
the same world motion at the kept keys, so its in-betweening must match the original's."""
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
    select_keys,
    snapshot,
    thin_every,
    use_test_backend,
)

bpy = bpy()
from rig_helpers import MIXAMO, add_twist  # noqa: E402

pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_inbetween



@pytest.fixture(scope="module")
def walk():
    fresh_scene_with_addon()
    use_test_backend()
    obj = import_bvh()
    n, keys = thin_every(obj)
    ref = copy_armature(obj, "reference")  # thinned, not in-betweened: the rigs below are made from it
    bpy.context.view_layer.objects.active = obj
    assert OP(editable=False) == {"FINISHED"}  # the original rig's in-betweening, to compare with
    yield {"name": obj.name, "ref": ref.name, "n": n, "keys": keys}
    disable_addon()


@pytest.fixture
def rig(walk):
    arm = copy_armature(bpy.data.objects[walk["ref"]])
    bpy.context.view_layer.objects.active = arm
    yield arm
    bpy.data.objects.remove(arm)


def world(obj, bone_names, frames):
    """Armature-space matrices ``[frames, bones, 4, 4]`` of the bones, as Blender evaluates them."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(int(f))
        out.append([np.array(obj.pose.bones[b].matrix) for b in bone_names])
    return np.array(out)


UNREAL = {"joint_Root": "root", "Hips": "pelvis", "Spine": "spine_01", "Chest": "spine_03", "Neck": "neck_01",
          "Head": "head"}
for _s in "LR":
    UNREAL.update({f"Shoulder_{_s}": f"clavicle_{_s.lower()}", f"UpperArm_{_s}": f"upperarm_{_s.lower()}",
                   f"LowerArm_{_s}": f"lowerarm_{_s.lower()}", f"Hand_{_s}": f"hand_{_s.lower()}",
                   f"UpperLeg_{_s}": f"thigh_{_s.lower()}", f"LowerLeg_{_s}": f"calf_{_s.lower()}",
                   f"Foot_{_s}": f"foot_{_s.lower()}", f"Toes_{_s}": f"ball_{_s.lower()}"})


@pytest.mark.parametrize("names, exact", [(UNREAL, True), (MIXAMO, False)], ids=["unreal", "mixamo"])
def test_renamed_rigs_are_detected_and_in_between_as_the_original(walk, rig, names, exact):
    """Unreal's names (a bone for every joint, ``root`` included): the same F-curves bit for bit.  Mixamo's
    (no bone for joint_Root: Hips hangs from an unmapped "Ground" bone, counted through the chain): the
    same within float noise (the root's keys hold 1e-9 rad that the neutral root does not: the model,
    in float32, moves Hips by at most 0.002 cm for it)."""
    for joint, bone in names.items():
        rig.data.bones[joint].name = bone
    assert OP(editable=False) == {"FINISHED"}
    original = bpy.data.objects[walk["name"]]
    frames = range(1, walk["n"] + 1, 3)
    a = world(original, list(names), frames)
    b = world(rig, list(names.values()), frames)
    # The same motion; without a bone for joint_Root the model's tiny root motion (float noise: the data's
    # root never moves) is not written, where the original's root bone takes it.
    assert np.abs(a - b).max() < (1e-6 if exact else 0.05)
    before, after = snapshot(original), snapshot(rig)
    for (path, i), keys in before.items():
        bone = path.split('"')[1]
        if bone == "joint_Root" and not exact:  # no joint here: not written (the original's stays ~ identity)
            continue
        mine = after[(path.replace(f'"{bone}"', f'"{names[bone]}"'), i)]
        if exact:
            assert_same_keys(keys, mine)
        else:
            assert np.abs(keys["co"] - mine["co"]).max() < 2e-3, (path, i)


def test_a_twist_bone_in_the_arm_keeps_its_keys_and_the_arm_moves_as_before(walk, rig):
    """A twist bone between UpperArm_L and LowerArm_L, keyed with a 30-degree twist; LowerArm_L's keys
    are re-keyed so that the world pose at the keys is the original's.  Inbetween maps around the twist
    bone (its keys stay bit for bit) and the arm in-betweens to the original's world motion."""
    original = bpy.data.objects[walk["name"]]
    add_twist(rig, bpy.data.objects[walk["ref"]], walk["keys"])
    select_keys(rig, walk["keys"], bones=[b.name for b in rig.pose.bones if b.name != "UpperArm_twist_L"])
    before = snapshot(rig)
    assert OP() == {"FINISHED"}
    after = snapshot(rig)
    for key in before:
        if "UpperArm_twist_L" in key[0]:
            assert_same_keys(before[key], after[key])
    frames = range(1, walk["n"] + 1, 2)
    names = ["UpperArm_L", "LowerArm_L", "Hand_L", "Head", "Foot_R"]
    err = np.abs(world(original, names, frames) - world(rig, names, frames)).max()
    assert err < 1e-3, err


def test_a_map_with_too_little_is_refused_and_nothing_changes(walk, rig):
    """Names that say nothing are no reason to refuse (the structure finds the bones); a body without a left
    arm is refused, naming the joints it lacks (the renamed hips among them: the structure reads whole
    bodies only)."""
    rig.data.bones["Hips"].name = "Bone"
    rig.data.bones["UpperArm_L"].name = "Bone.001"
    from blender_addon import bridge
    from blender_addon.io import bone_map as bone_map_io
    info = bridge.describe(bridge.BackendSettings())
    bm, bones = bone_map_io.resolve(rig, list(info.names), list(info.parents))
    assert (bm.bones["Hips"], bm.bones["UpperArm_L"], bm.reasons["UpperArm_L"]) == ("Bone", "Bone.001", "structure")
    bpy.ops.object.mode_set(mode="EDIT")
    for name in ("Bone.001", "LowerArm_L", "Hand_L"):
        rig.data.edit_bones.remove(rig.data.edit_bones[name])
    bpy.ops.object.mode_set(mode="OBJECT")
    select_keys(rig, walk["keys"])
    before = snapshot(rig)
    with pytest.raises(RuntimeError, match=r"cannot drive the model \(detected as Splinetween data set\): no bone for "
                                           r"Hips, UpperArm_L, LowerArm_L, Hand_L \(map them in the Bone Map panel"):
        OP()
    after = snapshot(rig)
    for key in before:
        assert_same_keys(before[key], after[key])


def test_unmapped_toes_are_named_and_left_alone(walk, rig):
    for side in "LR":
        rig.data.bones[f"Toes_{side}"].name = f"Zeh_{side}x"
    before = snapshot(rig)
    assert OP() == {"FINISHED"}
    after = snapshot(rig)
    for key in before:
        if "Zeh_" in key[0]:
            assert_same_keys(before[key], after[key])
