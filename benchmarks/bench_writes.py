"""Issue 19's benchmark, interactive writes in headless Blender (the bpy module): medians in ms, each
beside the floor measured in the same run and the issue's target.

    python benchmarks/bench_writes.py [--repeats 15] [--threads 1] [--profile] [--only CASE ...] [--tree DIR]
                                      [--backend IN_PROCESS|BUILTIN] [--clock wall|cpu]

The floor of an armature case is a bare rewrite of the same curves: every key of every F-curve of
the armature written back with ``keyframe_points.foreach_set('co', ...)`` and ``update()``.  For the
sliders it is sampled in turn with the slider changes (on a twin of the armature, blocks of five
rewrites between blocks of five changes), so that both see the same moments of a shared machine and
their ratio holds.

* Slider: on benchmarks/bench_latent.py's 300 frames of walking (examples/bvh, familiar motion) and
  the same frames played backwards (written with backend.formats.bvh), after Encode of all 300: set the
  fifth segment's Amplify to 1.5 (a new value each time, 1.5 + 0.001 i, so it is decoded, never
  taken from the cache) and let its update callback run.  Model in-process: PyTorch in Blender's Python
  (``IN_PROCESS``), or ``--backend BUILTIN``, the add-on's default
  (ONNX Runtime in Blender's process).  ``--clock cpu`` times the slider changes and their floor in the
  thread's CPU time instead of the wall clock: on a shared machine a neighbour's load preempts either
  at random, which the wall clock counts and the CPU time does not.
* Style: the Strength of segments 4-5 (61 frames) with Style elderly, the same clip and floor.
* Inbetween: the operator on 121 frames with keys every 15 (benchmarks/bench_addon.py's case), with
  the model in-process and through the warm backend process.
* Encode: the operator on 300 frames (benchmarks/bench_latent.py's clip), in-process.
* Mesh slider: Amplify on the example cloth's first segment -> PC2 -> the evaluated mesh read back
  (benchmarks/bench_mesh.py's case); its floor is evaluating and reading the mesh alone.

* Slider over 61 frames: the same, on segments 4 and 5 at once (two 31-frame segments sharing a frame):
  both Amplify values set and one re-decode, as when keyed sliders change with the frame; and on
  segments 5 and 6 (31 and 30 frames: a range's segments differ by a frame in turn).

``--profile`` also prints where the slider's and the Inbetween operator's time goes (in-process), stage
by stage; ``--only slider`` (or inbetween, encode, mesh) runs only those cases.
Everything goes through operators, properties and public functions, so the script measures
whatever writer the add-on has: ``--tree DIR`` measures the add-on of another source tree (e.g.
``git archive main | tar -x -C DIR``), to set a change beside what it replaces.

Longer than 300 lines: a benchmark script: every case beside its floor from the same run.
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
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_addon import inbetween_scene, median_ms  # noqa: E402
from bench_latent import Timers, clip_300, floor  # noqa: E402

# (ms target, most multiples of the floor) of each case; None: no such target
TARGETS = {"slider": (16.0, 1.5), "style": (16.0, None), "inbetween in-process": (60.0, None), "inbetween warm process": (80.0, None),
           "encode": (100.0, None), "mesh slider": (25.0, None)}
CASES = ("slider", "style", "inbetween", "encode", "mesh")


class Stopwatch(Timers):
    """bench_latent's Timers, which can also put the wrapped functions back."""

    def __init__(self):
        super().__init__()
        self.wrapped = []

    def wrap(self, module, name, key):
        self.wrapped.append((module, name, getattr(module, name)))
        super().wrap(module, name, key)

    def wrap_present(self, stages) -> None:
        """Wrap each ``(module, name, label)`` whose module imports and has ``name`` (trees differ)."""
        import importlib
        for module, name, label in stages:
            try:
                mod = importlib.import_module(module)
            except ImportError:
                continue
            if hasattr(mod, name):
                self.wrap(mod, name, label)

    def restore(self):
        for module, name, fn in reversed(self.wrapped):
            setattr(module, name, fn)
        self.wrapped.clear()


def use_tree(tree: Path) -> None:
    """Import the add-on (and the tests' helpers) from ``tree``: its paths before this checkout's, which
    importing this module put first (call it before anything imports the add-on)."""
    sys.path[:0] = [str(tree.resolve()), str(tree.resolve() / "tests")]


def floor_ms(obj, repeats: int) -> float:
    """Every key of every F-curve of ``obj`` rewritten (``foreach_set('co', ...)`` + ``update()``)."""
    return 1e3 * floor(obj, repeats)


SLIDER_STAGES = [("blender_addon.bridge", "request", "decode request (model, in-process)"),
                 ("blender_addon.latent.armature.layer", "layer_frames", "layer maths (decode request included)"),
                 ("blender_addon.latent.armature_layer", "layer_frames", "layer maths (decode request included)"),
                 ("blender_addon.latent.armature.layer", "_joined", "  edited decode joined at the seams"),
                 ("blender_addon.latent.armature_layer", "_joined", "  edited decode joined at the seams"),
                 ("blender_addon.core.slider_math", "channels_near", "  rotations -> channel values"),
                 ("blender_addon.core.layer_math", "channels_near", "  rotations -> channel values"),
                 ("blender_addon.latent.armature.adapter", "write", "write the frames"),
                 ("blender_addon.latent.armature", "write", "write the frames"),  # (trees before the wings)
                 ("blender_addon.io.latent", "overwrite_values", "  of which foreach_get/set of co")]


BLOCK = 5  # slider changes (and floor rewrites) in a row
CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}


def floor_step(obj):
    """-> a function that rewrites every key of every F-curve of ``obj`` once (the floor, one sample)."""
    import numpy as np

    from blender_addon.io import scene as scene_io
    data = []
    for fc in scene_io.channelbag(obj).fcurves:
        co = np.zeros(2 * len(fc.keyframe_points), np.float32)
        fc.keyframe_points.foreach_get("co", co)
        data.append((fc, co))

    def rewrite():
        for fc, co in data:
            fc.keyframe_points.foreach_set("co", co)
            fc.update()
    return rewrite


def slider_case(path: Path, repeats: int, segments=(4,), profile: bool = False, backend: str = "IN_PROCESS",
                clock=time.perf_counter, style: str = ""):
    """-> (label, median ms, floor ms, median ms of the model inside, stages or None).  One segment: its
    Amplify set from the panel (the update callback re-decodes).  Several: each one's Amplify set and one
    re-decode of them all, as when keyed sliders change with the frame (the frame-change handler).
    ``style``: the segments' Style set to it, then their Strength changed instead of Amplify."""
    import bpy

    from addon_helpers import fresh_scene_with_addon, import_bvh, prefs
    from blender_addon import bridge
    from blender_addon.latent import core as latent_core
    try:
        from blender_addon.latent import slider
    except ImportError:  # a tree before the latent wings (--tree): the same functions in ``kinds``
        from blender_addon.latent import kinds as slider
    from addon_helpers import copy_armature
    fresh_scene_with_addon()
    prefs().backend_mode = backend
    obj = import_bvh(path)
    rewrite = floor_step(copy_armature(obj))  # (a twin's curves: the encoded ones stay as the layer wrote them)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.anim.splinetween_encode(frame_range="ACTION") == {"FINISHED"}
    st = obj.splinetween_latent
    segs = [st.segments[s] for s in segments]
    prop = "style_strength" if style else "amplify"
    for seg in segs:
        if style:
            seg.style = style

    def change(value):
        if len(segs) == 1:
            setattr(segs[0], prop, value)
            return
        with latent_core.suspended():
            for seg in segs:
                setattr(seg, prop, value)
        slider.sync_quietly(obj)
    timers = Stopwatch()
    timers.wrap(bridge, "request", "model")
    if profile:
        timers.wrap_present(SLIDER_STAGES[1:])
    samples = []
    bare = []
    for i in range(repeats + 3):
        if i % BLOCK == 0:  # the floor's samples in blocks between the slider's
            for _ in range(BLOCK):
                t = clock()
                rewrite()
                bare.append(clock() - t)
        timers.now.clear()
        t = clock()
        change(1.5 + 0.001 * i)
        took = clock() - t
        assert st.status == "", st.status
        if i >= 3:  # (first decodes warm the model up)
            samples.append({"total": took, **timers.now})
    timers.restore()
    first, last = segs[0], segs[-1]
    which = f"segment {segments[0] + 1}" if len(segs) == 1 else f"segments {segments[0] + 1}-{segments[-1] + 1}"
    label = f"{path.stem}: {which} of {len(st.segments)} ({last.end - first.start + 1} frames)"
    med = {k: 1e3 * statistics.median(s.get(k, 0.0) for s in samples) for k in {k for s in samples for k in s}}
    stages = None
    if profile:
        stages = {"slider change, end to end": med["total"], SLIDER_STAGES[0][2]: med.get("model", 0.0)}
        stages.update({label: med[label] for _, _, label in SLIDER_STAGES[1:] if label in med})
    return label, med["total"], 1e3 * statistics.median(bare), med.get("model", 0.0), stages


def inbetween_cases(repeats: int, profile: bool):
    import bpy

    from addon_helpers import copy_armature, prefs
    from blender_addon import bridge, preferences
    src, _ = inbetween_scene()
    op = bpy.ops.anim.splinetween_inbetween
    rows = []

    def fresh():
        return copy_armature(src)

    def drop(obj):
        bpy.data.objects.remove(obj)
    prefs().backend_mode = "IN_PROCESS"
    obj = fresh()
    assert op() == {"FINISHED"}  # warm-up (model load); the filled armature gives the floor
    base = floor_ms(obj, repeats)
    drop(obj)
    rows.append(("inbetween in-process", "Inbetween, 121 frames, model in-process", median_ms(op, repeats, fresh, drop),
                 base))
    stages = profile_inbetween(op, fresh, drop, repeats) if profile else None
    prefs().backend_mode = "SUBPROCESS"
    bridge.check(preferences.settings())  # a warm process
    rows.append(("inbetween warm process", "Inbetween, 121 frames, warm backend process",
                 median_ms(op, repeats, fresh, drop), base))
    bridge.shutdown()
    prefs().backend_mode = "IN_PROCESS"
    return rows, stages


def profile_inbetween(op, fresh, drop, repeats: int) -> dict:
    """Median ms per stage of the operator (public functions, wrapped where the module has them)."""
    timers = Stopwatch()
    stages = [("blender_addon.inbetween.fill", "prepare", "checks, backend describe, selection, plan"),
              ("blender_addon.io.scene", "read_pose", "read the key poses"),
              ("blender_addon.core.rig_math", "blender_to_bvh", "convert to the model's convention"),
              ("blender_addon.bridge", "inbetween", "backend call (plain)"),
              ("blender_addon.bridge", "request", "backend call (editable)"),
              ("blender_addon.core.rig_math", "bvh_to_blender", "convert back"),
              ("blender_addon.io.latent", "snapshot", "snapshot of the driven curves (editable)"),
              ("blender_addon.inbetween.fill", "write", "write the gaps (all of it)"),
              ("blender_addon.inbetween.fill", "_write_bone", "write the gaps (all of it)"),  # (an older tree's name)
              ("blender_addon.core.rig_math", "quat_to_channels", "  of which rotation channels + continuity"),
              ("blender_addon.io.keys", "replace_in_gaps", "  of which key arrays written (io.keys)"),
              ("blender_addon.latent.armature.encode", "install_inbetween", "latent controls installed (editable)"),
              ("blender_addon.latent.encode", "install_inbetween", "latent controls installed (editable)")]
    timers.wrap_present(stages)
    samples = []
    for _ in range(repeats):
        obj = fresh()
        timers.now.clear()
        t = time.perf_counter()
        op()
        samples.append({"operator, end to end": time.perf_counter() - t, **timers.now})
        drop(obj)
    timers.restore()
    seen = {k for s in samples for k in s}
    order = ["operator, end to end"] + [label for _, _, label in stages]
    return {k: 1e3 * statistics.median(s.get(k, 0.0) for s in samples) for k in order if k in seen}


def encode_case(repeats: int):
    import bpy

    from addon_helpers import copy_armature, fresh_scene_with_addon, import_bvh, prefs
    fresh_scene_with_addon()
    prefs().backend_mode = "IN_PROCESS"
    src = import_bvh(clip_300(ROOT, Path(tempfile.mkdtemp(prefix="splinetween-bench-"))))
    encode = bpy.ops.anim.splinetween_encode

    def run():
        assert encode(frame_range="CUSTOM", frame_start=1, frame_end=300) == {"FINISHED"}
    for _ in range(2):  # model load, first-call allocations
        obj = copy_armature(src)
        run()
        bpy.data.objects.remove(obj)
    ms = median_ms(run, repeats, lambda: copy_armature(src), bpy.data.objects.remove)
    return ms, floor_ms(src, repeats)


def mesh_case(repeats: int):
    import mesh_addon_helpers
    from addon_helpers import bpy
    from blender_addon.io import mesh as mesh_io
    bpy = bpy()
    flag = mesh_addon_helpers.flag()
    mesh_addon_helpers.setup_scene()
    mesh_addon_helpers.prefs().backend_mode = "IN_PROCESS"
    obj = mesh_addon_helpers.cached_grid(flag["pc2"], "Flag")
    assert bpy.ops.anim.splinetween_mesh_encode(frame_range="CUSTOM", frame_start=1, frame_end=60) == {"FINISHED"}
    st = obj.splinetween_latent
    bpy.context.scene.frame_set(30)

    def evaluate():
        mesh_io.evaluated_positions(obj, bpy.context.evaluated_depsgraph_get())
    i = [0]

    def slider():
        i[0] += 1
        st.segments[0].amplify = 1.5 + 0.001 * i[0]  # a new value: never from the cache
        evaluate()
        assert st.status == "", st.status
    for _ in range(2):
        slider()
    base = median_ms(lambda: (obj.update_tag(refresh={"DATA"}), evaluate()), repeats)
    return median_ms(slider, repeats), base


def verdict(case: str, ms: float, base: float) -> str:
    target, ratio = TARGETS[case]
    parts = [f"<= {target:g} ms"] + ([f"<= {ratio:g}x floor"] if ratio else [])
    ok = ms <= target and (ratio is None or ms <= ratio * base)
    return f"{' and '.join(parts):<26} {'ok' if ok else 'OVER'}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--profile", action="store_true", help="also the slider and the Inbetween operator stage by stage")
    ap.add_argument("--only", nargs="+", choices=CASES, help="run only these cases (default: all)")
    ap.add_argument("--tree", type=Path, help="the source tree whose add-on is measured (default: this one)")
    ap.add_argument("--backend", choices=("IN_PROCESS", "BUILTIN"), default="IN_PROCESS",
                    help="the sliders' model: PyTorch in Blender's Python (the target's figure) or the add-on's "
                         "default, ONNX Runtime in Blender's process")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time the slider changes and their floor by the wall clock or the thread's CPU time")
    args = ap.parse_args(argv)
    if args.tree:  # (before anything imports the add-on)
        use_tree(args.tree)
    os.environ["OMP_NUM_THREADS"] = os.environ["SPLINETWEEN_THREADS"] = str(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    r = args.repeats
    rows = []  # (case, label, ms, floor ms, note)
    folder = Path(tempfile.mkdtemp(prefix="splinetween-bench-"))
    only = set(args.only or CASES)
    slider_stages, stages = {}, None
    if "slider" in only:
        for path in (clip_300(ROOT, folder), clip_300(ROOT, folder, backwards=True)):
            for segments in ((4,), (3, 4), (4, 5)):  # (4-5: 31 + 31 frames; 5-6: 31 + 30)
                label, ms, base, model, prof = slider_case(path, r + 10, segments, args.profile, args.backend,
                                                           CLOCKS[args.clock])
                rows.append(("slider", f"Slider, {label}", ms, base, f"model {model:.1f}"))
                if prof:
                    slider_stages[label] = prof
    if "style" in only:  # the Style's Strength on a 61-frame stretch (segments 4-5), the style the slowest to apply
        path = clip_300(ROOT, folder)
        label, ms, base, model, _ = slider_case(path, r + 10, (3, 4), False, args.backend, CLOCKS[args.clock],
                                                style="elderly")
        rows.append(("style", f"Style Strength (elderly), {label}", ms, base, f"model {model:.1f}"))
    if "inbetween" in only:
        inb, stages = inbetween_cases(r, args.profile)
        rows += [(case, label, ms, base, "") for case, label, ms, base in inb]
    if "encode" in only:
        ms, base = encode_case(r)
        rows.append(("encode", "Encode, 300 frames, model in-process", ms, base, ""))
    if "mesh" in only:
        ms, base = mesh_case(r)
        rows.append(("mesh slider", "Mesh slider -> PC2 -> evaluated mesh (cloth, 5,041 vertices)", ms, base,
                     "floor: the mesh re-evaluated and read"))
    print(f"\nbench_writes: {args.threads} thread(s), sliders on {args.backend} ({args.clock} clock), medians of {r} ({r + 10} for the sliders), ms; "
          "floor: every key of every F-curve rewritten (foreach_set 'co' + update())")
    print(f"  {'case':<74} {'median':>7} {'floor':>7} {'ratio':>6}   target")
    for case, label, ms, base, note in rows:
        print(f"  {label:<74} {ms:7.2f} {base:7.2f} {ms / base:5.2f}x   {verdict(case, ms, base)}"
              + (f"   ({note})" if note else ""))
    for label, prof in slider_stages.items():
        print(f"\nSlider, {label}, stage by stage (medians, ms; nested stages inside the line above them):")
        for name, ms in prof.items():
            print(f"  {name:<56} {ms:7.2f}")
    if stages:
        print("\nInbetween operator, 121 frames, model in-process, stage by stage (medians, ms):")
        for name, ms in stages.items():
            print(f"  {name:<56} {ms:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
