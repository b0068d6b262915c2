"""Speed of latent editing in headless Blender (the bpy module), model in-process: medians in ms.

    python benchmarks/bench_latent.py [--repeats 25] [--threads 1] [--checkpoint AE.json]
                                      [--compare-tree DIR]

* One slider change: setting a segment's Amplify runs its update callback, which decodes the segment
  (a new value each time, so never from the cache) and writes its frames into the F-curves of the
  22-bone armature (every rotation channel and the Hips location); split into the model (the
  backend requests) and the Blender write.  On a familiar clip (300 frames of walking) and the same
  clip played backwards.  Segments are at most the model's window (31 frames for the shipped
  autoencoder); the labels give each case's segment length.
* A slider leaving neutral or coming back to it (every driven curve set whole: the original keys,
  the layer keyed on the frames it reaches), alternately.
* The floor, measured in the same run: a bare rewrite of every key of every F-curve of the same
  armature (``keyframe_points.foreach_set('co', ...)`` and ``update()`` per curve); each slider is
  printed as a multiple of it.
* Encode of 300 frames: the operator end to end, split into reading the curves, the backend and
  storing the bookkeeping.
* ``--compare-tree DIR``: the same measurements, in a second process, with the add-on of another
  source tree (e.g. ``git archive main | tar -x -C DIR``), printed beside this tree's: the cost of a
  change against what it replaces, on the same machine in the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-bench-"))
HERE = Path(__file__).resolve().parents[1]

CLIPS = ["dataset-2_walk_normal_001.bvh", "dataset-2_walk-turn-left_normal_001.bvh"]
TARGET = {"slider": 16.0, "slider_floor": 1.5, "encode": 100.0}


def clip_300(root: Path, folder: Path, backwards: bool = False) -> Path:
    """300 frames: the 273-frame walk followed by the start of the walk-turn (same skeleton); or the
    same 300 frames played backwards."""
    from dataclasses import replace

    import numpy as np

    from backend.formats.bvh import read_bvh, write_bvh
    a, b = (read_bvh(root / "examples" / "bvh" / n) for n in CLIPS)
    rot = np.concatenate([a.rotations, b.rotations])[:300]
    pos = np.concatenate([a.positions, b.positions])[:300]
    meta = {k: np.concatenate([a.meta[k], b.meta[k]])[:300] for k in a.meta if k == "source_channels"}
    if backwards:
        rot, pos, meta = rot[::-1].copy(), pos[::-1].copy(), {k: v[::-1].copy() for k, v in meta.items()}
    out = folder / f"walk300{'_backwards' * backwards}.bvh"
    write_bvh(out, replace(a, rotations=rot, positions=pos, meta=meta))
    return out


class Timers:
    """Wraps module functions to add up the time spent in them per measured call."""

    def __init__(self):
        self.now = defaultdict(float)

    def wrap(self, module, name, key):
        fn = getattr(module, name, None)
        if fn is None:  # another tree's add-on may not have it
            return

        def timed(*args, **kw):
            t = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                self.now[key] += time.perf_counter() - t
        setattr(module, name, timed)


def median_rows(samples: list[dict]) -> dict:
    keys = {k for s in samples for k in s}
    return {k: 1e3 * statistics.median(s.get(k, 0.0) for s in samples) for k in keys}


def floor(obj, repeats: int) -> float:
    """Seconds (median) for a bare rewrite of every key of every F-curve of the armature."""
    import numpy as np

    from blender_addon.io import scene as scene_io
    bag = scene_io.channelbag(obj)
    data = []
    for fc in bag.fcurves:
        co = np.zeros(2 * len(fc.keyframe_points), np.float32)
        fc.keyframe_points.foreach_get("co", co)
        data.append((fc, co))
    times = []
    for _ in range(repeats + 3):
        t = time.perf_counter()
        for fc, co in data:
            fc.keyframe_points.foreach_set("co", co)
            fc.update()
        times.append(time.perf_counter() - t)
    return statistics.median(times[3:])


def measure(args) -> dict:
    """Every case of this benchmark with the add-on of ``args.tree``: ``{case: {part: ms}}``."""
    import bpy

    from addon_helpers import copy_armature, fresh_scene_with_addon, import_bvh, prefs
    from blender_addon import bridge
    from blender_addon.io import latent as latent_io
    try:
        from blender_addon.latent.armature import adapter as armature
    except ImportError:  # a tree before the latent wings (--compare-tree)
        from blender_addon.latent import armature

    fresh_scene_with_addon()
    prefs().backend_mode = "IN_PROCESS"
    if args.checkpoint:
        prefs().autoencoder = str(Path(args.checkpoint).resolve())
    folder = Path(tempfile.mkdtemp(prefix="splinetween-bench-"))
    sources = {"walk": import_bvh(clip_300(args.tree, folder)),
               "walk backwards": import_bvh(clip_300(args.tree, folder, backwards=True))}
    timers = Timers()
    timers.wrap(bridge, "request", "model")
    timers.wrap(armature, "write", "blender write")
    timers.wrap(latent_io, "read_values", "read curves")
    timers.wrap(latent_io, "read_pose", "read curves")
    encode = bpy.ops.anim.splinetween_encode
    results = {}

    def encoded(src, frames):
        obj = copy_armature(src)
        assert encode(frame_range="CUSTOM", frame_start=1, frame_end=frames) == {"FINISHED"}
        return obj

    src = sources["walk"]
    results["Floor: bare foreach_set of every key of every F-curve (132 curves x 300 keys)"] = {
        "total": 1e3 * floor(src, args.repeats)}
    for _warm in range(2):  # model load, first-call allocations
        bpy.data.objects.remove(encoded(src, 300))
    samples = []
    for _ in range(args.repeats):
        obj = copy_armature(src)
        timers.now.clear()
        t = time.perf_counter()
        assert encode(frame_range="CUSTOM", frame_start=1, frame_end=300) == {"FINISHED"}
        samples.append({"total": time.perf_counter() - t, **timers.now})
        bpy.data.objects.remove(obj)
    probe = encoded(src, 300)
    results[f"Encode 300 frames ({len(probe.splinetween_latent.segments)} segments)"] = median_rows(samples)
    bpy.data.objects.remove(probe)

    for clip, src in sources.items():
        for frames, seg in ((121, 1), (300, 4)):
            obj = encoded(src, frames)
            st = obj.splinetween_latent
            a, b = st.segments[seg].start, st.segments[seg].end
            label = f"Slider, {clip}: {frames}-frame range, segment {seg + 1} ({b - a + 1} frames)"
            samples = []
            for i in range(args.repeats + 3):
                timers.now.clear()
                t = time.perf_counter()
                st.segments[seg].amplify = 1.2 + 0.01 * i  # a new value: decoded, not taken from the cache
                total = time.perf_counter() - t
                assert st.status == "", st.status
                if i >= 3:
                    samples.append({"total": total, **timers.now})
            results[label] = median_rows(samples)
            if clip == "walk" and frames == 121:  # leaving neutral and coming back: whole curves written
                samples = []
                for i in range(args.repeats + 3):
                    timers.now.clear()
                    t = time.perf_counter()
                    st.segments[seg].amplify = 1.0 if i % 2 else 1.5 + 0.01 * i
                    total = time.perf_counter() - t
                    if i >= 3:
                        samples.append({"total": total, **timers.now})
                results[f"Slider to and from neutral, {clip}: {frames}-frame range, segment {seg + 1}"] = \
                    median_rows(samples)
            bpy.data.objects.remove(obj)
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--checkpoint", help="autoencoder .json (default: the shipped one)")
    ap.add_argument("--tree", type=Path, default=HERE, help="the source tree whose add-on is measured")
    ap.add_argument("--compare-tree", type=Path, help="another source tree, measured in a second process")
    ap.add_argument("--json", action="store_true", help="print the results as JSON only")
    args = ap.parse_args(argv)
    args.tree = args.tree.resolve()
    sys.path[:0] = [str(args.tree), str(args.tree / "tests")]
    os.environ["OMP_NUM_THREADS"] = os.environ["SPLINETWEEN_THREADS"] = str(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    results = measure(args)
    if args.json:
        print("RESULTS " + json.dumps(results))
        return 0
    other = {}
    if args.compare_tree:
        cmd = [sys.executable, __file__, "--tree", str(args.compare_tree), "--json", "--repeats", str(args.repeats),
               "--threads", str(args.threads)] + (["--checkpoint", args.checkpoint] if args.checkpoint else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        other = json.loads(next(ln for ln in out.splitlines() if ln.startswith("RESULTS "))[8:])
    base = next(v["total"] for k, v in results.items() if k.startswith("Floor"))
    other_base = next((v["total"] for k, v in other.items() if k.startswith("Floor")), None)
    print(f"\n22 bones, in-process model, {args.threads} thread(s), medians of {args.repeats} (ms); tree {args.tree}"
          + (f", compared with {args.compare_tree}" if other else "") + ":")
    for name, row in results.items():
        parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(row.items()) if k != "total")
        line = f"  {name:<66} {row['total']:6.1f}" + (f"  ({parts})" if parts else "")
        if name.startswith("Slider,"):
            ok = row["total"] <= TARGET["slider"] and row["total"] <= TARGET["slider_floor"] * base
            line += (f"  {row['total'] / base:.2f}x the floor; target <= {TARGET['slider']:g} ms and "
                     f"<= {TARGET['slider_floor']:g}x: {'met' if ok else 'NOT met'}")
        elif name.startswith("Slider to"):
            line += f"  {row['total'] / base:.2f}x the floor; target <= {TARGET['slider']:g} ms"
        elif name.startswith("Encode"):
            line += f"  target <= {TARGET['encode']:g} ms: {'met' if row['total'] <= TARGET['encode'] else 'NOT met'}"
        if name in other:  # (its ratio to its own floor too: load that changes between the runs cancels)
            line += f"  | other tree {other[name]['total']:6.1f} ({row['total'] / other[name]['total']:.2f}x"
            if name.startswith("Slider"):
                line += f"; {other[name]['total'] / other_base:.2f}x its floor"
            line += ")"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
