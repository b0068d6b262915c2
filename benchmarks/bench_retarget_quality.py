"""Issue 27's retargeting check: does a rig of another tool cost the model quality?

    python benchmarks/bench_retarget_quality.py [--clips 4] [--every 15]

Familiar motion (the data set's test split: walks, ids ending in 5) in real (headless) Blender, the model
in-process, keys every 15 frames: on the data set's own rig (Import BVH) and on Mixamo-style rigs built
from tests/rig_builders.py (T-pose; A-pose arms 45 degrees down, an extra spine bone, the ``mixamorig:``
namespace and a control root; the same with the extra spine bone carrying half the chest's turn), the
motion keyed through the conversion on every frame (the truth) and on the keys.  For each rig: the joints' mean error (cm) of Inbetween and of Blender's Bezier of the same
keys against the truth on the frames between keys, and their ratio; the issue's target is <= 0.5 x
Bezier on the Mixamo-style rig and within 10 % of the data set's rig.
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

DATA = Path("/work/data-cache/bandai-namco-2/bvh")


def a_pose(bones: dict, degrees: float) -> dict:
    """``bones`` with each arm (upper arm, forearm, hand) turned ``degrees`` down about its shoulder joint."""
    import numpy as np
    out = dict(bones)
    for side, sign in (("Left", 1.0), ("Right", -1.0)):
        chain = [n for n in bones if n.endswith((f"{side}Arm", f"{side}ForeArm", f"{side}Hand"))]
        pivot = np.array(bones[[n for n in chain if n.endswith(f"{side}Arm")][0]][1])
        a = np.radians(sign * degrees)
        turn = np.array([[np.cos(a), 0.0, np.sin(a)], [0.0, 1.0, 0.0], [-np.sin(a), 0.0, np.cos(a)]])
        for n in chain:
            p, h, t = bones[n]
            out[n] = (p, tuple(pivot + turn @ (np.array(h) - pivot)), tuple(pivot + turn @ (np.array(t) - pivot)))
    return out


def mixamo_rig(bpy, name: str, pose_degrees: float, control_root: bool):
    import rig_builders
    names = dict(rig_builders.MIXAMO)
    if control_root:
        names["root"] = "mixamorig:root"  # (a control root above the hips, as exports from game rigs have)
    bones = rig_builders.rig(names)
    if pose_degrees:
        bones = a_pose(bones, pose_degrees)
    return rig_builders.build_armature(bpy, name, bones)


def spread_spine(rt, basis_fn, n):
    """The bones in between on the spine carrying half the chest's turn each (as motion retargeted to the rig by
    another tool spreads it), the mapped chest the rest: ``inner`` channels for ``Retarget.to_rig``."""
    import numpy as np

    from blender_addon.core import rig_math
    inner = np.zeros((n, len(rt.bones), 4))
    inner[..., 0] = 1.0
    chest_basis = basis_fn(inner)
    chest = [j for j in rt.mapped if len(rt.chains[j]) > 1]
    for j in chest:
        for b in rt.chains[j][:-1]:
            inner[:, b] = rig_math.slerp(np.broadcast_to([1.0, 0, 0, 0], (n, 4)), chest_basis[:, j], 0.5)
    return inner


def key_inner(rig, rt, inner, frames):
    for b in rt.inner_bones():
        pb = rig.pose.bones[rt.bones[b]]
        pb.rotation_mode = "QUATERNION"
        for f in frames:
            pb.rotation_quaternion = inner[f - 1, b]
            pb.keyframe_insert("rotation_quaternion", frame=f)


def measure(bpy, rig, clip_path, every: int, fps: float, spread: bool = False):
    """(model error, Bezier error) in cm for one rig and clip, as tests/test_rig_other_tools.py measures;
    ``spread``: the bones in between on the spine move too (``spread_spine``)."""
    import numpy as np

    from addon_helpers import select_keys
    from backend.motion.keyframes_np import every_k
    from blender_addon import bridge, preferences
    from blender_addon.batch.job_bvh import read
    from blender_addon.io import bone_map as bone_map_io
    from test_rig_other_tools import heads, key_motion
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = int(round(fps)), 1.0
    info = bridge.describe(preferences.settings(bpy.context))
    _, joint_bones = bone_map_io.resolve(rig, info.names, info.parents)
    rt = bone_map_io.conversion(rig, info, joint_bones)
    clip = read(str(clip_path))
    n = clip.num_frames
    zero = np.zeros((n, len(rt.bones), 3))
    inner = np.zeros((n, len(rt.bones), 4))
    inner[..., 0] = 1.0
    if spread:
        inner = spread_spine(rt, lambda i: rt.to_rig(clip.rotations, clip.positions, i, zero)[0], n)
    basis, loc = rt.to_rig(clip.rotations, clip.positions, inner, zero)
    keys = [1 + k for k in every_k(n, every)]
    truth = rig.copy()
    truth.data = rig.data
    bpy.context.collection.objects.link(truth)
    key_motion(truth, rt, basis, loc, range(1, n + 1))
    key_motion(rig, rt, basis, loc, keys)
    if spread:
        key_inner(truth, rt, inner, range(1, n + 1))
        key_inner(rig, rt, inner, keys)
    select_keys(rig, keys)
    names = [rt.bone_of(j) for j in rt.mapped]
    frames = [f for f in range(1, n + 1) if f not in keys]
    gt = heads(truth, names, frames)
    bezier = np.linalg.norm(heads(rig, names, frames) - gt, axis=-1).mean()
    bpy.context.view_layer.objects.active = rig
    assert bpy.ops.anim.splinetween_inbetween(editable=False) == {"FINISHED"}
    model = np.linalg.norm(heads(rig, names, frames) - gt, axis=-1).mean()
    cm = rt.scale  # model centimetres per rig unit
    bpy.data.objects.remove(truth)
    return model * cm, bezier * cm


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clips", type=int, default=4)
    ap.add_argument("--every", type=int, default=15)
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import numpy as np

    from addon_helpers import bpy, disable_addon, fresh_scene_with_addon, prefs
    bpy = bpy()
    clips = sorted(glob.glob(str(DATA / "dataset-2_walk_*_005.bvh")))[:args.clips]
    rigs = {"data set's rig (Import BVH)": None, "Mixamo-style, T-pose": (0.0, False, False),
            "Mixamo-style, A-pose, control root": (45.0, True, False),
            "... and the extra spine bone moving": (45.0, True, True)}
    results = {r: [] for r in rigs}
    fresh_scene_with_addon()
    prefs().backend_mode = "IN_PROCESS"
    for path in clips:
        for label, spec in rigs.items():
            from blender_addon.batch.job_bvh import read
            if spec is None:  # the imported rig keyed through its (identity) conversion, as the others
                from addon_helpers import import_bvh
                rig = import_bvh(path)
                rig.animation_data_clear()
            else:
                rig = mixamo_rig(bpy, "rig", *spec[:2])
            fps = 1.0 / read(str(path)).frame_time
            results[label].append(measure(bpy, rig, path, args.every, fps, bool(spec and spec[2])))
            bpy.data.objects.remove(rig)
    disable_addon()
    print(f"{len(clips)} familiar walks (test split), keys every {args.every}, model in-process; joint error in cm "
          "on the frames between keys")
    base = np.mean([m for m, _ in results["data set's rig (Import BVH)"]])
    for label, rs in results.items():
        m, b = np.mean([r[0] for r in rs]), np.mean([r[1] for r in rs])
        print(f"  {label:38s} model {m:6.3f}  Bezier {b:6.3f}  ratio {m / b:5.2f} x Bezier  "
              f"model / data set's rig {m / base:5.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
