"""Speed of latent editing in headless Blender (the bpy module), model in-process: medians in ms.

    python benchmarks/bench_latent.py [--repeats 25] [--threads 1] [--checkpoint AE.json]

* One slider change: setting a segment's Amplify runs its update callback, which decodes the
  segment (a new value each time, so never from the cache), joins its shared end frames with the
  neighbours and writes its frames into the F-curves of the 22-bone armature (every rotation
  channel and the Hips location).  Split into the model (the backend request: edit, decode,
  features -> rotations) and the Blender write (rig conversion, Euler runs, ``foreach_set``).
  Segments are at most the model's window (31 frames for the shipped autoencoder; the labels give
  each case's segment length).
* Encode of 300 frames: the operator end to end, split into reading the curves,
  the backend (encode, then decode of every segment) and writing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

CLIPS = [ROOT / "examples" / "bvh" / n for n in ("dataset-2_walk_normal_001.bvh",
                                                  "dataset-2_walk-turn-left_normal_001.bvh")]
BUDGET = {"slider": 16.0, "encode": 200.0}


def clip_300(folder: Path) -> Path:
    """300 frames: the 273-frame walk followed by the start of the walk-turn (same skeleton)."""
    import numpy as np
    from dataclasses import replace
    from backend.bvh import read_bvh, write_bvh
    a, b = (read_bvh(p) for p in CLIPS)
    rot = np.concatenate([a.rotations, b.rotations])[:300]
    pos = np.concatenate([a.positions, b.positions])[:300]
    meta = {k: np.concatenate([a.meta[k], b.meta[k]])[:300] for k in a.meta if k == "source_channels"}
    out = folder / "walk300.bvh"
    write_bvh(out, replace(a, rotations=rot, positions=pos, meta=meta))
    return out


class Timers:
    """Wraps module functions to add up the time spent in them per measured call."""

    def __init__(self):
        self.now = defaultdict(float)

    def wrap(self, module, name, key):
        fn = getattr(module, name)

        def timed(*args, **kw):
            t = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                self.now[key] += time.perf_counter() - t
        setattr(module, name, timed)


def median_rows(samples: list[dict]) -> dict:
    return {k: 1e3 * statistics.median(s.get(k, 0.0) for s in samples) for k in samples[0]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--checkpoint", help="autoencoder .json (default: the shipped one)")
    args = ap.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = os.environ["SPLINETWEEN_THREADS"] = str(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    import bpy
    from addon_helpers import copy_armature, fresh_scene_with_addon, import_bvh, prefs
    from blender_addon import bridge
    from blender_addon.latent import armature
    from blender_addon.io import latent as latent_io

    fresh_scene_with_addon()
    prefs().backend_mode = "IN_PROCESS"
    if args.checkpoint:
        prefs().autoencoder = str(Path(args.checkpoint).resolve())
    src = import_bvh(clip_300(Path(tempfile.mkdtemp(prefix="splinetween-bench-"))))
    timers = Timers()
    timers.wrap(bridge, "request", "model")
    timers.wrap(armature, "write", "blender write")
    timers.wrap(latent_io, "read_pose", "read curves")
    encode = bpy.ops.anim.splinetween_encode
    results = {}

    def encoded(frames):
        obj = copy_armature(src)
        assert encode(frame_range="CUSTOM", frame_start=1, frame_end=frames) == {"FINISHED"}
        return obj

    for warm in range(2):  # model load, first-call allocations
        bpy.data.objects.remove(encoded(300))
    samples = []
    for _ in range(args.repeats):
        obj = copy_armature(src)
        timers.now.clear()
        t = time.perf_counter()
        assert encode(frame_range="CUSTOM", frame_start=1, frame_end=300) == {"FINISHED"}
        total = time.perf_counter() - t
        samples.append({"total": total, **timers.now})
        bpy.data.objects.remove(obj)
    probe = encoded(300)
    results[f"Encode 300 frames ({len(probe.splinetween_latent.segments)} segments)"] = median_rows(samples)
    bpy.data.objects.remove(probe)

    for frames, seg in ((64, 0), (121, 0)):  # segments are at most the checkpoint's window
        obj = encoded(frames)
        st = obj.splinetween_latent
        a, b = st.segments[seg].start, st.segments[seg].end
        label = f"{frames}-frame range, slider on segment {seg + 1} ({b - a + 1} frames)"
        samples = []
        for i in range(args.repeats + 3):
            timers.now.clear()
            t = time.perf_counter()
            st.segments[seg].amplify = 1.2 + 0.01 * i  # a new value: decoded, not taken from the cache
            total = time.perf_counter() - t
            assert st.status == "", st.status
            if i >= 3:
                samples.append({"total": total, **timers.now})
        results[f"Slider: {label}"] = median_rows(samples)
        bpy.data.objects.remove(obj)

    print(f"\n22 bones, in-process model, {args.threads} thread(s), medians of {args.repeats} (ms):")
    for name, row in results.items():
        budget = BUDGET["encode" if name.startswith("Encode") else "slider"]
        parts = ", ".join(f"{k} {v:.1f}" for k, v in row.items() if k != "total")
        ok = "within" if row["total"] < budget else "OVER"
        print(f"  {name:<58} total {row['total']:6.1f}  ({parts})  {ok} the {budget:g} ms budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
