"""The array maths of a 61-frame slider change (and its read of the raw control points), function by function,
on the inputs of a real change.

    python benchmarks/bench_slider_maths.py [--tree DIR] [--repeats 1000] [--rounds 5]

On the 300 walking frames of ``bench_writes.py`` after Encode, segments 4-5 amplified (61 frames): a slider
change (the second of two: the first lays the layer out) runs with the functions below wrapped to keep their
arguments, then each is called again on those arguments, warm, in rounds taken in turn (``--repeats`` calls
a round): the median of the rounds' medians, in microseconds of the thread's CPU time.  ``--tree`` measures another source tree's functions (e.g.
``git archive main | tar -x -C DIR``); run it on each tree in turn.  A slider change runs them cold (its
key reads and writes and the model go between), two to three times as long: ``bench_writes.py --profile``
has them in place.
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
# (module, function, label): the add-on's seam joins and Euler channels, the backend's poses from features
FUNCTIONS = [("blender_addon.core.latent_math", "segments_values", "seam joins of the edited decode (4 segments)"),
             ("blender_addon.core.slider_math", "euler_near", "rotations -> Euler channels (all bones, 77 frames)"),
             ("backend.motion.features_np", "poses_from_features", "model features -> poses (62 frames)"),
             ("blender_addon.latent.core", "read_raw", "read the raw control points (40 properties)")]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, help="the source tree whose functions are measured (default: this one)")
    ap.add_argument("--repeats", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    tree = (args.tree or HERE.parent).resolve()
    sys.path.insert(0, str(HERE))
    os.environ["OMP_NUM_THREADS"] = os.environ["SPLINETWEEN_THREADS"] = "1"
    import importlib

    import bench_writes
    bench_writes.use_tree(tree)  # (importing bench_writes put this checkout first)
    import bpy

    from addon_helpers import fresh_scene_with_addon, import_bvh, prefs
    from blender_addon.latent import core as latent_core
    from blender_addon.latent import slider
    fresh_scene_with_addon()
    prefs().backend_mode = "IN_PROCESS"
    obj = import_bvh(bench_writes.clip_300(bench_writes.ROOT, Path(tempfile.mkdtemp(prefix="splinetween-bench-"))))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.anim.splinetween_encode(frame_range="ACTION") == {"FINISHED"}
    st = obj.splinetween_latent
    seen, originals = {}, []
    for module, name, label in FUNCTIONS:
        mod = importlib.import_module(module)
        fn = getattr(mod, name)
        originals.append((mod, name, fn))

        def keep(*a, _fn=fn, _label=label, **k):
            seen[_label] = (a, k)
            return _fn(*a, **k)
        setattr(mod, name, keep)
    for value in (1.5, 1.6):  # (the first lays the layer out, the second is a slider dragged: the change measured)
        with latent_core.suspended():  # (both segments' Amplify, one re-decode: bench_writes.py's 61-frame case)
            st.segments[3].amplify = st.segments[4].amplify = value
        slider.sync_quietly(obj)
    for mod, name, fn in originals:
        setattr(mod, name, fn)
    assert st.status == "", st.status
    calls = [(label, fn, seen[label]) for (_, _, fn), (_, _, label) in zip(originals, FUNCTIONS, strict=True) if label in seen]
    times: dict = {label: [] for label, _, _ in calls}
    for _ in range(args.rounds):
        for label, fn, (a, k) in calls:
            got = []
            for _ in range(args.repeats):
                t = time.thread_time_ns()
                fn(*a, **k)
                got.append(time.thread_time_ns() - t)
            times[label].append(statistics.median(got) / 1e3)
    import blender_addon
    assert Path(blender_addon.__file__).resolve().is_relative_to(tree), blender_addon.__file__
    print(f"bench_slider_maths: {tree}, median of {args.rounds} rounds' medians of {args.repeats} calls, us (CPU)")
    for label, got in times.items():
        print(f"  {label:55s} {statistics.median(got):8.1f}")


if __name__ == "__main__":
    main()
