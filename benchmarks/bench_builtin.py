"""The built-in backend (ONNX Runtime) beside PyTorch in Blender's process, in one run.

    python benchmarks/bench_builtin.py [--rounds 8] [--block 10]

In headless Blender (the bpy module, one thread), on the add-on:

* a 61-frame slider change: Amplify of two neighbouring segments (31 + 31 frames sharing one) of the
  300-frame walk after Encode (benchmarks/bench_latent.py's clip), re-decode and key writes;
* Inbetween of 121 frames: the example walk's keys every 10 frames, frames 1-121 filled and written;

each case in blocks that alternate between the two backends (``BUILTIN``, ``IN_PROCESS``), so both see
the same moments of this shared machine; prints each backend's median (ms) and the ratio built-in /
PyTorch.  Then, each in a fresh Python: the first in-betweening call on ONNX Runtime (its import, the
graphs loaded, the engine made, one 61-frame fill) beside the same first call on PyTorch (its import,
the module built).  ``--first-call`` measures only that.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("BUILTIN", "IN_PROCESS")

FIRST_CALL = r"""
import sys, time
t0 = time.perf_counter()
from backend.motion.engine import Engine
from backend.formats.bvh import read_bvh
from backend.motion.keyframes_np import every_k
runtime = sys.argv[1]
clip = read_bvh(sys.argv[2])
clip = type(clip)(clip.skeleton, clip.rotations[:61], clip.positions[:61], clip.frame_time, clip.name)
t1 = time.perf_counter()
engine = Engine(sys.argv[3], "cpu", runtime)  # (imports the runtime: ONNX Runtime, or torch)
engine.inbetween(clip, every_k(61, 10))
print(time.perf_counter() - t1)
"""


def first_call(runtime: str) -> float:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", FIRST_CALL, runtime, str(ROOT / "tests" / "fixtures" /
                          "dataset-2_walk_normal_005.bvh"), str(ROOT / "backend" / "checkpoints" / "inbetween.json")],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def measure(rounds: int, block: int) -> dict:
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-bench-"))
    sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]
    import torch
    torch.set_num_threads(1)
    import bpy
    from bench_latent import clip_300

    from addon_helpers import fresh_scene_with_addon, import_bvh, prefs, thin_keys
    from blender_addon.latent import core as latent
    from blender_addon.latent import kinds
    fresh_scene_with_addon()
    p = prefs()
    p.backend_mode = "IN_PROCESS"
    obj = import_bvh(clip_300(ROOT, Path(tempfile.mkdtemp(prefix="splinetween-bench-"))))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.anim.splinetween_encode(frame_range="ACTION") == {"FINISHED"}
    segs = [obj.splinetween_latent.segments[i] for i in (3, 4)]
    assert segs[1].end - segs[0].start + 1 == 61, [(s.start, s.end) for s in segs]

    def slider(value: float) -> None:
        with latent.suspended():
            for seg in segs:
                seg.amplify = value
        kinds.sync_quietly(obj)

    walk = import_bvh()
    thin_keys(walk, range(1, 122, 10))
    action = walk.animation_data.action

    def inbetween(_value: float) -> None:
        walk.animation_data.action = action.copy()  # (the thinned keys again, each time)
        bpy.context.view_layer.objects.active = walk
        for o in bpy.context.selected_objects:
            o.select_set(False)
        walk.select_set(True)
        assert bpy.ops.anim.splinetween_inbetween(editable=False) == {"FINISHED"}

    times = {(case, mode): [] for case in ("slider", "inbetween") for mode in MODES}
    k = 0
    for case, fn in (("slider", slider), ("inbetween", inbetween)):
        for mode in MODES:  # warm: each backend's engine loaded, caches filled
            p.backend_mode = mode
            for _ in range(5):
                k += 1
                fn(1.5 + 0.001 * k)
        for r in range(rounds):
            for mode in (MODES if r % 2 == 0 else MODES[::-1]):
                p.backend_mode = mode
                for _ in range(block if case == "slider" else max(1, block // 5)):
                    k += 1
                    t0 = time.perf_counter()
                    fn(1.5 + 0.001 * k)
                    times[case, mode].append(1000 * (time.perf_counter() - t0))
    out = {}
    for case in ("slider", "inbetween"):
        med = {m: statistics.median(times[case, m]) for m in MODES}
        out[case] = {"builtin_ms": round(med["BUILTIN"], 3), "torch_ms": round(med["IN_PROCESS"], 3),
                     "ratio": round(med["BUILTIN"] / med["IN_PROCESS"], 3), "samples": len(times[case, "BUILTIN"])}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--block", type=int, default=10)
    ap.add_argument("--first-call", action="store_true", help="only the first call of each runtime")
    args = ap.parse_args(argv)
    res = {} if args.first_call else measure(args.rounds, args.block)
    res["first_call_s"] = {"onnx": round(statistics.median(first_call("onnx") for _ in range(3)), 3),
                           "torch": round(statistics.median(first_call("torch") for _ in range(3)), 3)}
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
