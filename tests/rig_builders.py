"""Humanoid rigs as data, named as Mixamo, Rigify, Unreal, CMU and Auto-Rig Pro name them (Blender axes:
Z up, the character faces -Y, its left at +X), for the bone-map tests; ``build_armature`` makes one in bpy."""
from __future__ import annotations

import numpy as np

# (key, parent key, head); the right side mirrors the left (x -> -x).
BODY = [
    ("root", None, (0, 0, 0)), ("hips", "root", (0, 0, 1.0)), ("spine1", "hips", (0, 0, 1.1)),
    ("spine2", "spine1", (0, 0, 1.2)), ("spine3", "spine2", (0, 0, 1.3)), ("neck", "spine3", (0, 0, 1.5)),
    ("head", "neck", (0, 0, 1.6)),
    ("shoulder_L", "spine3", (0.04, 0, 1.45)), ("upperarm_L", "shoulder_L", (0.15, 0, 1.45)),
    ("lowerarm_L", "upperarm_L", (0.42, 0, 1.45)), ("hand_L", "lowerarm_L", (0.66, 0, 1.45)),
    ("upleg_L", "hips", (0.1, 0, 0.95)), ("leg_L", "upleg_L", (0.1, 0, 0.52)), ("foot_L", "leg_L", (0.1, 0, 0.08)),
    ("toe_L", "foot_L", (0.1, -0.12, 0.01)),
]


def _both_sides():
    out = []
    for key, parent, head in BODY:
        out.append((key, parent, head))
        if key.endswith("_L"):
            out.append((key[:-2] + "_R", parent[:-2] + "_R" if parent.endswith("_L") else parent,
                        (-head[0], head[1], head[2])))
    return out


def rig(names: dict, extra=()) -> dict:
    """``{bone: (parent, head, tail)}`` with the body's keys renamed by ``names`` (a key missing from it is
    left out and its children hang from its parent); ``extra``: (name, parent name, head) more bones."""
    keyed = {k: (p, np.array(h, float)) for k, p, h in _both_sides()}

    def name_of(key):
        while key is not None and key not in names:
            key = keyed[key][0]
        return names.get(key) if key is not None else None

    out = {}
    for key, (parent, head) in keyed.items():
        if key in names:
            out[names[key]] = [name_of(parent), head]
    for name, parent, head in extra:
        out[name] = [parent, np.array(head, float)]
    done = {}
    for name, (parent, head) in out.items():
        kids = [h for n, (p, h) in out.items() if p == name]
        tail = kids[0] if kids and np.linalg.norm(kids[0] - head) > 1e-6 else head + np.array([0, 0, 0.05])
        done[name] = (parent, tuple(head), tuple(tail))
    return done


def sided(table: dict, left: str, right: str) -> dict:
    """``{key: pattern}`` with ``{s}`` in the sided patterns -> names for both sides."""
    out = {}
    for key, pat in table.items():
        if key.endswith("_L"):
            out[key] = pat.format(s=left)
            out[key[:-2] + "_R"] = pat.format(s=right)
        else:
            out[key] = pat
    return out


MIXAMO = sided({"hips": "mixamorig:Hips", "spine1": "mixamorig:Spine", "spine2": "mixamorig:Spine1",
                "spine3": "mixamorig:Spine2", "neck": "mixamorig:Neck", "head": "mixamorig:Head",
                "shoulder_L": "mixamorig:{s}Shoulder", "upperarm_L": "mixamorig:{s}Arm",
                "lowerarm_L": "mixamorig:{s}ForeArm", "hand_L": "mixamorig:{s}Hand", "upleg_L": "mixamorig:{s}UpLeg",
                "leg_L": "mixamorig:{s}Leg", "foot_L": "mixamorig:{s}Foot", "toe_L": "mixamorig:{s}ToeBase"},
               "Left", "Right")
MIXAMO_EXPECT = {"Hips": "mixamorig:Hips", "Spine": "mixamorig:Spine", "Chest": "mixamorig:Spine2",
                 "Neck": "mixamorig:Neck", "Head": "mixamorig:Head", "Shoulder_L": "mixamorig:LeftShoulder",
                 "UpperArm_L": "mixamorig:LeftArm", "LowerArm_L": "mixamorig:LeftForeArm",
                 "Hand_L": "mixamorig:LeftHand", "UpperLeg_R": "mixamorig:RightUpLeg", "LowerLeg_R": "mixamorig:RightLeg",
                 "Foot_R": "mixamorig:RightFoot", "Toes_R": "mixamorig:RightToeBase"}

RIGIFY_DEF = sided({"hips": "DEF-spine", "spine1": "DEF-spine.001", "spine2": "DEF-spine.002",
                    "spine3": "DEF-spine.003", "neck": "DEF-spine.004", "head": "DEF-spine.006",
                    "shoulder_L": "DEF-shoulder.{s}", "upperarm_L": "DEF-upper_arm.{s}", "lowerarm_L": "DEF-forearm.{s}",
                    "hand_L": "DEF-hand.{s}", "upleg_L": "DEF-thigh.{s}", "leg_L": "DEF-shin.{s}", "foot_L": "DEF-foot.{s}",
                    "toe_L": "DEF-toe.{s}"}, "L", "R")
RIGIFY_EXPECT = {"Hips": "DEF-spine", "Spine": "DEF-spine.001", "Chest": "DEF-spine.003", "Neck": "DEF-spine.004",
                 "Head": "DEF-spine.006", "UpperArm_L": "DEF-upper_arm.L", "LowerArm_L": "DEF-forearm.L",
                 "Hand_R": "DEF-hand.R", "UpperLeg_L": "DEF-thigh.L", "LowerLeg_L": "DEF-shin.L", "Foot_L": "DEF-foot.L",
                 "Toes_R": "DEF-toe.R"}

UNREAL = sided({"root": "root", "hips": "pelvis", "spine1": "spine_01", "spine2": "spine_02", "spine3": "spine_03",
                "neck": "neck_01", "head": "head", "shoulder_L": "clavicle_{s}", "upperarm_L": "upperarm_{s}",
                "lowerarm_L": "lowerarm_{s}", "hand_L": "hand_{s}", "upleg_L": "thigh_{s}", "leg_L": "calf_{s}",
                "foot_L": "foot_{s}", "toe_L": "ball_{s}"}, "l", "r")
UNREAL_EXPECT = {"Hips": "pelvis", "Spine": "spine_01", "Chest": "spine_03", "Neck": "neck_01", "Head": "head",
                 "Shoulder_L": "clavicle_l", "UpperArm_L": "upperarm_l", "LowerArm_R": "lowerarm_r", "Hand_L": "hand_l",
                 "UpperLeg_L": "thigh_l", "LowerLeg_L": "calf_l", "Foot_L": "foot_l", "Toes_R": "ball_r"}

CMU = sided({"hips": "Hips", "spine1": "LowerBack", "spine2": "Spine", "spine3": "Spine1", "neck": "Neck",
             "head": "Head", "shoulder_L": "{s}Shoulder", "upperarm_L": "{s}Arm", "lowerarm_L": "{s}ForeArm",
             "hand_L": "{s}Hand", "upleg_L": "{s}UpLeg", "leg_L": "{s}Leg", "foot_L": "{s}Foot", "toe_L": "{s}ToeBase"},
            "Left", "Right")
CMU_EXPECT = {"Hips": "Hips", "Chest": "Spine1", "Neck": "Neck", "Head": "Head", "UpperArm_L": "LeftArm",
              "LowerArm_L": "LeftForeArm", "Hand_L": "LeftHand", "UpperLeg_R": "RightUpLeg", "LowerLeg_R": "RightLeg",
              "Foot_R": "RightFoot", "Toes_L": "LeftToeBase"}


def build_armature(bpy, name: str, bones: dict):
    """An armature object (rest pose only) from ``{bone: (parent, head, tail)}``, linked and active."""
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    bpy.context.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    for n, (_, head, tail) in bones.items():
        eb = data.edit_bones.new(n)
        eb.head, eb.tail = head, tail
    for n, (parent, _, _) in bones.items():
        if parent:
            data.edit_bones[n].parent = data.edit_bones[parent]
    bpy.ops.object.mode_set(mode="OBJECT")
    return obj
