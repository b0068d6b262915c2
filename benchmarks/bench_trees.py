"""The in-betweener's speed in two (or more) source trees, side by side in one run: what a change costs.

    python benchmarks/bench_trees.py TREE[@onnx|@onednn] [TREE[@...] ...] [--rounds 40] [--calls 10] [--threads 1] [--clock cpu]

Each tree runs in a process of its own (its checkpoint, guard, mirror average and planted feet, as it
ships them), started once and warmed up; then, round after round, every tree in turn times ``--calls``
calls of ``Engine.inbetween`` on one 61-frame window of the example walk with keys every 5, 15 and 30
frames and reports their median.  The trees take turns a few hundred milliseconds apart, so a slow
spell of the machine (another job, the host) falls on all of them: each round gives each tree a ratio
to the first tree's time in that round, and the figure is the median of those ratios (with the median
times beside it).  A tree is a checkout (``git worktree add /tmp/old REV``).  ``--clock cpu`` times the
calling thread's CPU time instead of the wall clock (with one thread the model's products run on it).
``TREE@onnx`` runs that tree's model on its exported graphs through ONNX Runtime (``backend.runtime.onnx_runner``: what
the add-on's built-in backend runs in a Blender without PyTorch) instead of PyTorch; ``TREE@onednn`` runs its
PyTorch model's products through oneDNN whatever the CPU (``backend.models.spline_transformer._USE_ONEDNN``: the product path
older trees always took, so a tree's own passes can be timed apart from that choice); one tree may
be named several times, once each way.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

SPACINGS = (5, 15, 30)

SERVE = r"""
import json, statistics, sys, time
import torch
torch.set_num_threads({threads})
sys.path.insert(0, {root!r})
from backend.formats.bvh import read_bvh
from backend.motion.engine import DEFAULT_INBETWEEN, Engine
from backend.motion.keyframes_np import every_k
{onednn}eng = Engine(DEFAULT_INBETWEEN, "cpu"{runtime})
clip = read_bvh({root!r} + "/examples/bvh/dataset-2_walk_normal_001.bvh").slice(0, 61)
keys = {{k: every_k(61, k) for k in {spacings!r}}}
for k in keys:
    for _ in range(20):
        eng.inbetween(clip, keys[k])
print("ready", flush=True)
for line in sys.stdin:
    k, n = map(int, line.split())
    times = []
    for _ in range(n):
        t = {clock}()
        eng.inbetween(clip, keys[k])
        times.append({clock}() - t)
    print(json.dumps(1e3 * statistics.median(times)), flush=True)
"""

CLOCKS = {"wall": "time.perf_counter", "cpu": "time.thread_time"}


class Tree:
    """One tree's process: loaded and warmed up once, then asked for blocks of timed calls."""

    def __init__(self, spec: str, threads: int, clock: str):
        self.spec = spec
        root, _, runtime = spec.partition("@")
        root = Path(root)
        if runtime not in ("", "onnx", "onednn"):
            raise SystemExit(f"{spec}: the runtime after @ is onnx or onednn (or none: PyTorch as the tree ships it)")
        if runtime == "onnx" and not (root / "backend" / "runtime.py").exists():
            raise SystemExit(f"{spec}: this tree has no ONNX Runtime path (backend/runtime/onnx_runner.py)")
        if runtime == "onednn" and "_USE_ONEDNN" not in (root / "backend" / "model.py").read_text():
            raise SystemExit(f"{spec}: this tree always runs oneDNN's products (name it without @onednn)")
        code = SERVE.format(root=str(root.resolve()), threads=threads, spacings=SPACINGS, clock=CLOCKS[clock],
                            runtime=', runtime="onnx"' if runtime == "onnx" else "",
                            onednn="import backend.models.spline_transformer; backend.models.spline_transformer._USE_ONEDNN = True\n"
                            if runtime == "onednn" else "")
        env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin"}
        self.proc = subprocess.Popen([sys.executable, "-c", code], cwd=root, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if self.proc.stdout.readline().strip() != "ready":
            err = self.proc.stderr.read().strip().splitlines()
            raise SystemExit(f"{spec}: {err[-1] if err else 'the probe did not start'}")

    def block(self, k: int, calls: int) -> float:
        self.proc.stdin.write(f"{k} {calls}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", help="source trees, each optionally @onnx or @onednn")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--calls", type=int, default=10, help="timed calls per tree, spacing and round")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    args = ap.parse_args(argv)
    for t in args.trees:
        if not (Path(t.partition("@")[0]) / "backend" / "engine.py").exists():
            raise SystemExit(f"{t}: not a Splinetween tree (no backend/motion/engine.py); make one with git worktree add")
    trees = [Tree(t, args.threads, args.clock) for t in args.trees]
    times = {(t, k): [] for t in args.trees for k in SPACINGS}
    ratios = {(t, k): [] for t in args.trees for k in SPACINGS}
    try:
        for r in range(args.rounds):
            for k in SPACINGS:
                # (the order of the trees turns each round: none always runs first after another's block)
                order = trees[r % len(trees):] + trees[:r % len(trees)]
                got = {tree.spec: tree.block(k, args.calls) for tree in order}
                for t in args.trees:
                    times[t, k].append(got[t])
                    ratios[t, k].append(got[t] / got[args.trees[0]])
            if (r + 1) % 10 == 0 or r + 1 == args.rounds:
                print(f"{r + 1} rounds", flush=True)
    finally:
        for tree in trees:
            tree.close()
    print(f"\n{args.rounds} rounds of {args.calls} calls, {args.threads} thread(s), {args.clock} clock, one 61-frame "
          f"window: median ms, and the median of each round's ratio to {args.trees[0]} (quartiles in brackets):")
    for t in args.trees:
        cells = []
        for k in SPACINGS:
            q = statistics.quantiles(ratios[t, k], n=4) if len(ratios[t, k]) > 1 else [ratios[t, k][0]] * 3
            cells.append(f"k={k}: {statistics.median(times[t, k]):.2f} ms, {q[1]:.3f} x [{q[0]:.3f}, {q[2]:.3f}]")
        print(f"  {t}: " + " | ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
