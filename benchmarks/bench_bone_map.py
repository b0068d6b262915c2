"""Issue 16's benchmark: what the bone map and the conversion add to the Inbetween operator.

    python benchmarks/bench_bone_map.py [--repeats 15] [--threads 1]

On benchmarks/bench_addon.py's case (the walk, 121 frames, keys every 15, model in-process), three rigs:
the data set's own (the exact old conversion), a Mixamo-named copy (no joint_Root bone: Hips through
an unmapped root) with a twist bone in each arm and an A-pose rest (arms 45 degrees down), a copy whose
bones have no telling names (found by structure), and the Mixamo copy with a saved bone map.  For each: the operator's median time, and the median time of the mapping
and conversion alone (detecting/reading the map, building the conversion, both conversions, reading
the bones in between at every frame), as a share of the operator's time (the issue's target: <= 10 %).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_addon import bench_args, inbetween_scene, median_ms  # noqa: E402


def mixamo_copy(bpy, src, copy_armature):
    """Mixamo names, an unmapped "Ground" root, a twist bone per arm, arms resting 45 degrees down."""
    from mathutils import Matrix

    from test_rig_inbetween import MIXAMO
    arm = copy_armature(src, "mixamo")
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.data.edit_bones
    for side, sign in (("L", 1.0), ("R", -1.0)):
        low = eb[f"LowerArm_{side}"]
        tw = eb.new(f"twist_{side}")
        tw.head, tw.tail = low.head, low.head + (low.tail - low.head) * 0.3
        tw.parent = eb[f"UpperArm_{side}"]
        low.use_connect = False
        low.parent = tw
        pivot = eb[f"UpperArm_{side}"].head.copy()
        turn = Matrix.Translation(pivot) @ Matrix.Rotation(0.785398 * sign, 4, "Y") @ Matrix.Translation(-pivot)
        for n in (f"UpperArm_{side}", f"twist_{side}", f"LowerArm_{side}", f"Hand_{side}"):
            eb[n].transform(turn)
    bpy.ops.object.mode_set(mode="OBJECT")
    for joint, bone in MIXAMO.items():
        arm.data.bones[joint].name = bone
    return arm


def nameless_copy(bpy, src, copy_armature):
    """Every bone renamed ``bone00``, ``bone01``, ...: no name says anything, the structure finds the map."""
    arm = copy_armature(src, "nameless")
    for i, b in enumerate(list(arm.data.bones)):
        b.name = f"bone{i:02d}"
    return arm


def main(argv=None) -> int:
    args = bench_args(argv, __doc__)
    import bpy
    import numpy as np

    from addon_helpers import channelbag, copy_armature, prefs
    from blender_addon import bridge, preferences
    from blender_addon.inbetween import fill
    from blender_addon.io import bone_map as bone_map_io
    from blender_addon.io import scene as scene_io

    src, keys = inbetween_scene()
    prefs().backend_mode = "IN_PROCESS"
    settings = preferences.settings(bpy.context)
    info = bridge.describe(settings)
    rigs = {"data set's rig": src, "Mixamo, twist bones, A-pose": mixamo_copy(bpy, src, copy_armature),
            "nameless bones (by structure)": nameless_copy(bpy, src, copy_armature)}
    saved = copy_armature(rigs["Mixamo, twist bones, A-pose"], "saved")
    bpy.context.view_layer.objects.active = saved
    bpy.ops.anim.splinetween_bone_map_detect()
    rigs["... with a saved map"] = saved
    print(f"Inbetween on {len(keys)} keys every {keys[1] - keys[0]} frames, 121 frames, in-process, "
          f"{args.threads} thread(s); medians of {args.repeats}")
    for name, rig in rigs.items():
        work = {}

        def setup():
            c = copy_armature(rig)
            bpy.context.view_layer.objects.active = c
            work["obj"] = c
            return c

        def teardown(c):
            bpy.data.objects.remove(c)

        op = median_ms(lambda: fill.run(work["obj"], settings, fill.Options(editable=False)), args.repeats, setup,
                       teardown)
        obj = setup()
        bag = channelbag(obj)
        n = 121
        out_rot = np.tile(np.array([1.0, 0, 0, 0]), (n, len(info.names), 1))
        out_pos = np.broadcast_to(np.asarray(info.offsets), (n, len(info.names), 3)).copy()

        def conversion():
            _, joint_bones = bone_map_io.resolve(obj, info.names, info.parents)
            rt = bone_map_io.conversion(obj, info, joint_bones)
            rt.to_model(*scene_io.read_pose(obj, bag, rt.bones, keys))
            own = bone_map_io.inner_pose(obj, bag, rt, np.arange(1, n + 1.0))
            rt.to_rig(out_rot, out_pos, *own, positions=info.position_joints)  # (as the operator)
        conv = median_ms(conversion, args.repeats)
        teardown(obj)
        print(f"  {name:30s} operator {op:6.1f} ms; mapping + conversion {conv:5.1f} ms = {100 * conv / op:4.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
