"""backend.humanoid.bone_map on its own: presets detected on rigs named as each tool names them, the
ancestry rule, refusals that say what is missing, the JSON preset format."""
from __future__ import annotations

import json

import pytest

import addon_helpers  # noqa: F401  (sets BLENDER_USER_RESOURCES before any bpy import)
import rig_builders
from backend.humanoid import bone_map

NAMES = ["joint_Root", "Hips", "Spine", "Chest", "Neck", "Head", "Shoulder_L", "UpperArm_L", "LowerArm_L", "Hand_L",
         "Shoulder_R", "UpperArm_R", "LowerArm_R", "Hand_R", "UpperLeg_L", "LowerLeg_L", "Foot_L", "Toes_L",
         "UpperLeg_R", "LowerLeg_R", "Foot_R", "Toes_R"]
PARENTS = [-1, 0, 1, 2, 3, 4, 3, 6, 7, 8, 3, 10, 11, 12, 1, 14, 15, 16, 1, 18, 19, 20]


def parents_of(bones):
    return {b: v[0] for b, v in bones.items()}


def detected(bones):
    bm = bone_map.detect(NAMES, PARENTS, bones)
    bone_map.check(NAMES, PARENTS, parents_of(bones), bm.bones)  # accepted as it is: no user step
    return bm


def test_the_data_sets_own_names_map_to_themselves():
    names = {k: v for k, v in zip(["root", "hips", "spine1", "spine3", "neck", "head"],
                                   ["joint_Root", "Hips", "Spine", "Chest", "Neck", "Head"], strict=True)}
    names.update(rig_builders.sided({"shoulder_L": "Shoulder_{s}", "upperarm_L": "UpperArm_{s}",
                                     "lowerarm_L": "LowerArm_{s}", "hand_L": "Hand_{s}", "upleg_L": "UpperLeg_{s}",
                                     "leg_L": "LowerLeg_{s}", "foot_L": "Foot_{s}", "toe_L": "Toes_{s}"}, "L", "R"))
    bm = detected(rig_builders.rig(names))
    assert bm.bones == {n: n for n in NAMES}
    assert bm.preset == "Splinetween data set" and bm.score == 1.0


@pytest.mark.parametrize("names, expect, preset", [
    (rig_builders.MIXAMO, rig_builders.MIXAMO_EXPECT, "Mixamo (mixamorig:)"),
    (rig_builders.RIGIFY_DEF, rig_builders.RIGIFY_EXPECT, "Rigify (deform bones)"),
    (rig_builders.UNREAL, rig_builders.UNREAL_EXPECT, "Unreal mannequin"),
    (rig_builders.CMU, rig_builders.CMU_EXPECT, "BVH / CMU"),
])
def test_presets_map_every_required_joint(names, expect, preset):
    bm = detected(rig_builders.rig(names))
    assert bm.preset == preset
    for joint, bone in expect.items():
        assert bm.bones[joint] == bone, joint


def test_rigify_twist_segments_and_unreal_twist_leaves_are_passed_over():
    """Rigify's DEF chain has a second segment per limb bone (the next joint's bone sits under it);
    Unreal's twist bones are leaves beside the chain: neither is taken for a joint."""
    twist = [("DEF-upper_arm.L.001", "DEF-upper_arm.L", (0.3, 0, 1.45)),
             ("DEF-thigh.L.001", "DEF-thigh.L", (0.1, 0, 0.75)), ("DEF-pelvis.L", "DEF-spine", (0.05, 0, 1.0))]
    bones = rig_builders.rig(rig_builders.RIGIFY_DEF, twist)
    bones["DEF-forearm.L"] = ("DEF-upper_arm.L.001",) + bones["DEF-forearm.L"][1:]
    bones["DEF-shin.L"] = ("DEF-thigh.L.001",) + bones["DEF-shin.L"][1:]
    bm = detected(bones)
    assert bm.bones["LowerArm_L"] == "DEF-forearm.L" and bm.bones["LowerLeg_L"] == "DEF-shin.L"
    ue = rig_builders.rig(rig_builders.UNREAL, [("upperarm_twist_01_l", "upperarm_l", (0.2, 0, 1.45)),
                            ("ik_foot_root", "root", (0, 0, 0)), ("ik_foot_l", "ik_foot_root", (0.1, 0, 0.08))])
    assert detected(ue).bones["Foot_L"] == "foot_l"


def test_unknown_names_fall_back_to_name_similarity_and_the_side_by_position():
    """A studio rig with its own spelling and no side in some names: the fallback finds the joints."""
    names = {"hips": "pelvis_jnt", "spine1": "spine_a", "spine3": "chest_jnt", "neck": "neck_jnt", "head": "head_jnt",
             "upperarm_L": "arm_up.left", "lowerarm_L": "forearm.left", "hand_L": "wrist.left",
             "upperarm_R": "arm_up.right", "lowerarm_R": "forearm.right", "hand_R": "wrist.right",
             "upleg_L": "thighA", "leg_L": "kneeA", "foot_L": "ankleA",
             "upleg_R": "thighB", "leg_R": "kneeB", "foot_R": "ankleB"}
    bm = detected(rig_builders.rig(names))
    assert bm.bones["Hips"] == "pelvis_jnt" and bm.bones["Chest"] == "chest_jnt" and bm.bones["Head"] == "head_jnt"
    assert bm.bones["Hand_L"] == "wrist.left" and bm.bones["LowerArm_R"] == "forearm.right"
    assert (bm.bones["UpperLeg_L"], bm.bones["Foot_R"]) == ("thighA", "ankleB")  # sides from the heads' x
    assert bm.bones["Toes_L"] is None and bm.bones["Shoulder_L"] is None  # optional, left unmapped


def test_a_map_with_too_little_is_refused_naming_what_is_missing():
    armless = {k: v for k, v in rig_builders.MIXAMO.items() if "arm" not in k.lower() and "hand" not in k}
    bones = rig_builders.rig(armless)
    bm = bone_map.detect(NAMES, PARENTS, bones)
    with pytest.raises(bone_map.BoneMapError) as e:
        bone_map.check(NAMES, PARENTS, parents_of(bones), bm.bones)
    msg = str(e.value)
    assert msg.startswith("no bone for UpperArm_L, LowerArm_L, Hand_L, UpperArm_R, LowerArm_R, Hand_R")
    assert "Bone Map panel" in msg
    full = rig_builders.rig(rig_builders.MIXAMO)
    with pytest.raises(bone_map.BoneMapError, match=r"^no bone for Spine or Chest \("):
        bone_map.check(NAMES, PARENTS, parents_of(full), dict(detected(full).bones, Spine=None, Chest=None))


def test_a_joint_must_sit_under_its_parent_joints_bone():
    bones = rig_builders.rig(rig_builders.MIXAMO)
    bm = detected(bones)
    wrong = dict(bm.bones, LowerArm_L="mixamorig:RightForeArm", LowerArm_R=None)
    with pytest.raises(bone_map.BoneMapError, match=r"LowerArm_L \(mixamorig:RightForeArm is not under "
                                              r"mixamorig:LeftArm\)"):
        bone_map.check(NAMES, PARENTS, parents_of(bones), wrong)
    with pytest.raises(bone_map.BoneMapError, match=r"bones not in the armature: Head -> Kopf"):
        bone_map.check(NAMES, PARENTS, parents_of(bones), dict(bm.bones, Head="Kopf"))


def test_json_round_trip_and_bad_files():
    bm = detected(rig_builders.rig(rig_builders.UNREAL))
    back = bone_map.from_json(bm.to_json(), NAMES)
    assert back.bones == bm.bones and back.preset == bm.preset
    for text, why in [("{", "not JSON"), ("[]", "not a bone map file"),
                      (json.dumps({"format": bone_map.FORMAT, "version": 9, "bones": {}}), "version 9"),
                      # (a JSON true is Python's 1: it must not read as version 1)
                      (json.dumps({"format": bone_map.FORMAT, "version": True, "bones": {}}), "is true, not a whole number"),
                      (json.dumps({"format": bone_map.FORMAT, "version": 1.0, "bones": {}}), "is 1.0, not a whole number"),
                      (json.dumps({"format": bone_map.FORMAT, "version": 1, "bones": {"Hips": 3}}), "joint name -> bone"),
                      (json.dumps({"format": bone_map.FORMAT, "version": 1, "bones": {"Pelvis": "x"}}), "Pelvis")]:
        with pytest.raises(bone_map.BoneMapError, match=why):
            bone_map.from_json(text, NAMES)


def test_a_rig_whose_names_say_nothing_is_found_by_its_structure():
    """Every bone named ``b00``...: the pelvis, legs, spine, chest, arms, neck and head from the hierarchy and
    the bone lengths, left and right from geometry (the toes point forward, -Y; left is +X); a control root
    above the hips and a three-bone spine passed through.  The same rig mirrored swaps the sides."""
    keys = [k for k, _, _ in rig_builders._both_sides()]
    names = {k: f"b{i:02d}" for i, k in enumerate(keys)}
    expect = {"Hips": "hips", "Spine": "spine1", "Chest": "spine3", "Neck": "neck", "Head": "head",
              "UpperArm_L": "upperarm_L", "LowerArm_L": "lowerarm_L", "Hand_L": "hand_L", "Shoulder_R": "shoulder_R",
              "UpperLeg_L": "upleg_L", "LowerLeg_R": "leg_R", "Foot_L": "foot_L", "Toes_R": "toe_R"}
    bm = detected(rig_builders.rig(names))
    assert {j: bm.bones[j] for j in expect} == {j: names[k] for j, k in expect.items()}
    assert bm.preset == "Structure" and bm.reasons["UpperArm_L"] == "structure, side by geometry"
    assert bm.reasons["Hips"] == "structure" and bm.bones["joint_Root"] is None
    mirrored = {b: (p, (-h[0], h[1], h[2]), (-t[0], t[1], t[2])) for b, (p, h, t) in rig_builders.rig(names).items()}
    flipped = bone_map.detect(NAMES, PARENTS, mirrored)
    assert flipped.bones["UpperLeg_L"] == names["upleg_R"] and flipped.bones["Hand_R"] == names["hand_L"]
