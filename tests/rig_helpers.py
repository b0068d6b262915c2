"""Rigs that differ from the test clip's as a user's do, built in real Blender and re-keyed so that their
world motion is the original's: a twist bone inside the left arm, arms resting in an A-pose; and the
Mixamo names of the data set's joints.  Shared by the bone-map tests (test_rig_inbetween,
test_rig_rest_pose, test_rig_latent)."""
from __future__ import annotations

import numpy as np

from addon_helpers import bpy, channelbag, copy_armature

bpy = bpy()
from mathutils import Matrix  # noqa: E402  (after bpy)

ARMS = {"L": ("UpperArm_L", "LowerArm_L", "Hand_L"), "R": ("UpperArm_R", "LowerArm_R", "Hand_R")}

# the data set's joints -> a Mixamo rig's bones (namespace "mixamorig:"; its Spine2 is the chest)
MIXAMO = {"joint_Root": "mixamorig:Ground", "Hips": "mixamorig:Hips", "Spine": "mixamorig:Spine",
          "Chest": "mixamorig:Spine2", "Neck": "mixamorig:Neck", "Head": "mixamorig:Head"}
for _s, _w in (("L", "Left"), ("R", "Right")):
    MIXAMO.update({f"Shoulder_{_s}": f"mixamorig:{_w}Shoulder", f"UpperArm_{_s}": f"mixamorig:{_w}Arm",
                   f"LowerArm_{_s}": f"mixamorig:{_w}ForeArm", f"Hand_{_s}": f"mixamorig:{_w}Hand",
                   f"UpperLeg_{_s}": f"mixamorig:{_w}UpLeg", f"LowerLeg_{_s}": f"mixamorig:{_w}Leg",
                   f"Foot_{_s}": f"mixamorig:{_w}Foot", f"Toes_{_s}": f"mixamorig:{_w}ToeBase"})


def add_twist(rig, ref, frames, name: str = "UpperArm_twist_L"):
    """A bone ``name`` between UpperArm_L and LowerArm_L keyed with a 30-degree twist on ``frames``; the
    forearm re-keyed there so that its world pose is ``ref``'s.  Returns the twist's pose bone."""
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    eb = rig.data.edit_bones
    tw = eb.new(name)
    tw.head, tw.tail = eb["LowerArm_L"].head, eb["LowerArm_L"].head + (eb["LowerArm_L"].tail - eb["LowerArm_L"].head) * 0.3
    tw.parent = eb["UpperArm_L"]
    eb["LowerArm_L"].use_connect = False
    eb["LowerArm_L"].parent = tw
    bpy.ops.object.mode_set(mode="OBJECT")
    pb = rig.pose.bones[name]
    pb.rotation_mode = "QUATERNION"
    pb.rotation_quaternion = (np.cos(np.radians(15)), 0.0, np.sin(np.radians(15)), 0.0)
    for f in frames:
        pb.keyframe_insert("rotation_quaternion", frame=f)
    low = rig.pose.bones["LowerArm_L"]
    for f in frames:  # the same world pose of the forearm, under the twist
        bpy.context.scene.frame_set(f)
        bpy.context.view_layer.update()
        low.matrix = ref.pose.bones["LowerArm_L"].matrix.copy()
        bpy.context.view_layer.update()
        low.keyframe_insert("rotation_euler", frame=f)
    return pb


def a_pose_copy(ref, frames, degrees: float = 45.0):
    """A copy of ``ref`` with its arms turned down in the rest pose (each arm about the axis through its
    shoulder joint along the character's front-back), re-keyed on ``frames`` to ``ref``'s world poses."""
    arm = copy_armature(ref, "a_pose")
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.data.edit_bones
    turns = {}
    for side, chain in ARMS.items():
        pivot = eb[chain[0]].head.copy()
        sign = 1.0 if side == "L" else -1.0
        turn = Matrix.Translation(pivot) @ Matrix.Rotation(np.radians(sign * degrees), 4, "Y") @ \
            Matrix.Translation(-pivot)
        for name in chain:
            eb[name].transform(turn)  # (Blender picks the turned bones' rolls: the motion does not depend on them)
            turns[name] = turn
    bpy.ops.object.mode_set(mode="OBJECT")
    for f in frames:  # the same world motion: each arm bone moves its (turned) rest as the original's
        bpy.context.scene.frame_set(f)
        for chain in ARMS.values():
            for name in chain:
                bpy.context.view_layer.update()
                deform = ref.pose.bones[name].matrix @ ref.data.bones[name].matrix_local.inverted()
                pb = arm.pose.bones[name]
                pb.matrix = deform @ turns[name].inverted() @ arm.data.bones[name].matrix_local
                bpy.context.view_layer.update()
                pb.keyframe_insert("rotation_euler", frame=f)
    lo, hi = min(frames), max(frames)  # the copy's motion is the original's on ``frames`` only: no keys elsewhere
    for fc in channelbag(arm).fcurves:  # (the conversion reads every keyed pose of an action)
        while (out := [kp for kp in fc.keyframe_points if not lo <= kp.co[0] <= hi]):
            fc.keyframe_points.remove(out[0])  # (one at a time: a removal may move the others)
    return arm
