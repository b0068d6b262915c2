"""Speed of the Blender add-on, in headless Blender (the bpy module): medians in milliseconds.

    python benchmarks/bench_addon.py [--repeats 15] [--threads 1]

The 22-bone armature of examples/bvh/dataset-2_walk_normal_001.bvh over 120 frames
(scene frames 1..121) with keys every 15 frames (9 keys, 8 gaps, every frame filled):

* the Inbetween operator with the model in-process, and through the warm backend process;
* the backend call alone (bridge.inbetween), in-process and through the process;
* the backend process's cold start (start, handshake, model load);
* for reference, Blender's own default interpolation of the same keys: recomputing BEZIER /
  AUTO_CLAMPED handles of every curve, and baking that interpolation to a key on every gap
  frame through the add-on's own bulk writer (``io.keys.replace_in_gaps`` on all 132 curves at
  once, after ``evaluate`` on every gap frame: the add-on's cost without the model).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

CLIP = ROOT / "examples" / "bvh" / "dataset-2_walk_normal_001.bvh"
FRAMES, EVERY = 121, 15


def median_ms(fn, repeats, setup=None, teardown=None):
    times = []
    for _ in range(repeats):
        state = setup() if setup else None
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        if teardown:
            teardown(state)
    return 1e3 * statistics.median(times)


def inbetween_scene():
    """The benchmark's case in a fresh scene with the add-on: the walk's 22-bone armature with keys
    every EVERY frames over frames 1..FRAMES, all selected.  -> (armature, key frames)."""
    from addon_helpers import fresh_scene_with_addon, import_bvh, thin_keys
    fresh_scene_with_addon()
    src = import_bvh(CLIP)
    keys = list(range(1, FRAMES + 1, EVERY))
    thin_keys(src, keys)  # also drops every key after frame FRAMES
    return src, keys


def bench_args(argv, doc: str):
    """The add-on benchmarks' arguments (--repeats, --threads); the math threads set before any model runs."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = os.environ["SPLINETWEEN_THREADS"] = str(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    return args


def main(argv=None) -> int:
    args = bench_args(argv, __doc__)
    import bpy
    import numpy as np

    from addon_helpers import channelbag, copy_armature, prefs
    from blender_addon import bridge, preferences
    from blender_addon.core import rig_math
    from blender_addon.io import keys as keys_io
    from blender_addon.io import scene as scene_io

    src, keys = inbetween_scene()
    op = bpy.ops.anim.splinetween_inbetween
    r = args.repeats

    def fresh():
        return copy_armature(src)

    def drop(obj):
        bpy.data.objects.remove(obj)

    rows = []
    prefs().backend_mode = "IN_PROCESS"
    obj = fresh()
    op()  # warm-up: the model is loaded in-process
    drop(obj)
    rows.append(("Inbetween operator, in-process", median_ms(op, r, fresh, drop)))
    prefs().backend_mode = "SUBPROCESS"
    settings = preferences.settings()
    bridge.check(settings)  # warm the process
    rows.append(("Inbetween operator, warm backend process", median_ms(op, r, fresh, drop)))

    info = bridge.describe(settings)
    names = list(info.names)
    bag = channelbag(src)
    rig = scene_io.rig_frames(src, names, info.offsets)
    rot, pos = rig_math.blender_to_bvh(rig, *scene_io.read_pose(src, bag, names, keys))
    rel = [k - keys[0] for k in keys]
    call = (rig.bvh_offsets(), rel, rot, pos)
    rows.append(("backend call alone, warm backend process", median_ms(lambda: bridge.inbetween(settings, *call), r)))
    inproc = bridge.BackendSettings(mode="IN_PROCESS")
    rows.append(("backend call alone, in-process", median_ms(lambda: bridge.inbetween(inproc, *call), r)))
    rows.append(("backend process cold start (start, handshake, model load)",
                 median_ms(lambda: bridge.check(settings), max(3, r // 3), bridge.shutdown)))
    bridge.shutdown()

    ip = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["BEZIER"].value
    ht = bpy.types.Keyframe.bl_rna.properties["handle_left_type"].enum_items["AUTO_CLAMPED"].value

    def blender_handles():
        obj = bpy.context.view_layer.objects.active
        for fc in channelbag(obj).fcurves:
            n = len(fc.keyframe_points)
            for a, v in (("interpolation", ip), ("handle_left_type", ht), ("handle_right_type", ht)):
                fc.keyframe_points.foreach_set(a, np.full(n, v, np.int32))
            fc.update()

    rows.append(("Blender default interpolation: BEZIER handles of all curves",
                 median_ms(blender_handles, r, fresh, drop)))

    def bake_blender():  # every curve has keys on the same frames: one bulk write of them all
        obj = bpy.context.view_layer.objects.active
        fcs = list(channelbag(obj).fcurves)
        gaps = list(zip(keys, keys[1:], strict=False))
        inner = np.concatenate([np.arange(a + 1, c) for a, c in gaps])
        values = np.array([[fc.evaluate(f) for f in inner.tolist()] for fc in fcs])
        keys_io.replace_in_gaps(fcs, [keys_io.read(fc) for fc in fcs], gaps, inner, values)

    rows.append(("Blender interpolation baked to every gap frame (add-on writer)",
                 median_ms(bake_blender, r, fresh, drop)))
    print(f"\n{len(names)} bones, frames 1..{FRAMES}, keys every {EVERY} ({len(keys)} keys), "
          f"{args.threads} thread(s), medians of {r}:")
    for name, ms in rows:
        print(f"  {name:<66} {ms:9.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
