"""What the hand-edit check (``latent/armature/carry.py``) costs a slider change, part by part.

    python benchmarks/bench_hand_edit_check.py [--tree DIR] [--repeats 400]

On the 300 walking frames of ``bench_writes.py`` after Encode, segments 4-5 edited (61 frames): medians,
in microseconds, of reading every driven curve's ``co`` (``keys_io.read_co``: the slider's write needs it
too, the check hands it on), the check on an untouched range (``reconcile``'s fast path, the read
included), saving what a 61-frame write put on the curves (``record``) and remembering the curves
(``remember``); beside them the floor (every key of every F-curve rewritten, as ``bench_writes.py``).
Every part is timed in blocks taken in turn, so all see the same moments of the shared machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", type=Path, help="the source tree whose add-on is measured (default: this one)")
    ap.add_argument("--repeats", type=int, default=400)
    args = ap.parse_args(argv)
    tree = (args.tree or HERE.parent).resolve()
    sys.path.insert(0, str(HERE))
    os.environ["OMP_NUM_THREADS"] = os.environ["SPLINETWEEN_THREADS"] = "1"
    import bench_writes
    import numpy as np
    bench_writes.use_tree(tree)  # (importing bench_writes put this checkout first: the tree's add-on goes before it)
    import bpy

    from addon_helpers import copy_armature, fresh_scene_with_addon, import_bvh, prefs
    from blender_addon.io import keys as keys_io
    from blender_addon.io import scene as scene_io
    from blender_addon.latent.armature import adapter, carry
    fresh_scene_with_addon()
    prefs().backend_mode = "IN_PROCESS"
    obj = import_bvh(bench_writes.clip_300(bench_writes.ROOT, Path(tempfile.mkdtemp(prefix="splinetween-bench-"))))
    floor = bench_writes.floor_step(copy_armature(obj))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.anim.splinetween_encode(frame_range="ACTION") == {"FINISHED"}
    st = obj.splinetween_latent
    st.segments[3].amplify, st.segments[4].amplify = 1.5, 1.5
    bag = scene_io.channelbag(obj)
    everything = adapter.channels_of(obj, st)
    base, cols = adapter.base_values(st, everything), adapter.writable(st, everything)
    curves = keys_io.curve_map(bag)
    fcs = [curves.get(k) for k in adapter.curve_keys(st, everything)]
    originals = adapter.base_keys(st)
    shown = np.asarray(st["shown_frames"], np.int64)
    a, b = st.segments[3].start, st.segments[4].end
    frames = shown[(shown >= a) & (shown <= b)]
    values = np.asarray(st["shown_values"]).reshape(len(shown), -1)[np.searchsorted(shown, frames)].copy()
    read = keys_io.read_co(fcs)
    carry.remember(st, fcs)
    parts = {
        "read every driven curve's co": lambda: keys_io.read_co(fcs),
        "check, untouched range (read included)": lambda: carry.reconcile(obj, st, bag, everything, cols, fcs,
                                                                         originals, base),
        "record a 61-frame write": lambda: carry.record(st, frames, values, False),
        "remember the curves": lambda: carry.remember(st, None, read),
        "floor: rewrite every key": floor,
    }
    times = {name: [] for name in parts}
    for _ in range(args.repeats // 20):
        for name, fn in parts.items():
            for _ in range(20):
                t = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t)
    print(f"bench_hand_edit_check: {tree}, medians of {args.repeats // 20 * 20}, us")
    for name, got in times.items():
        print(f"  {name:45s} {1e6 * statistics.median(got):8.1f}")


if __name__ == "__main__":
    main()
