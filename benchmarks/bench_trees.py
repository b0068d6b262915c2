"""The in-betweener's speed in two (or more) source trees, in turn, in one run: what a change costs.

    python benchmarks/bench_trees.py TREE [TREE ...] [--rounds 3] [--threads 1] [--calls 200]

Each round runs every tree in its own process, one after the other (so both see the same machine), and
times ``Engine.inbetween`` on one 61-frame window of the example walk with keys every 5, 15 and 30
frames, as each tree ships it (its checkpoint, guard, mirror average and planted feet): the median of
``--calls`` calls after a warm-up.  Prints each tree's medians per round, then each tree's median over
the rounds and its ratio to the first tree's.  A tree is a checkout (``git worktree add /tmp/old REV``).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

SPACINGS = (5, 15, 30)

PROBE = r"""
import json, statistics, sys, time
import torch
torch.set_num_threads({threads})
sys.path.insert(0, {root!r})
from backend.bvh import read_bvh
from backend.engine import DEFAULT_INBETWEEN, Engine
from backend.keyframes import every_k
eng = Engine(DEFAULT_INBETWEEN, "cpu")
clip = read_bvh({root!r} + "/examples/bvh/dataset-2_walk_normal_001.bvh").slice(0, 61)
out = {{}}
for k in {spacings!r}:
    keys = every_k(61, k)
    for _ in range(20):
        eng.inbetween(clip, keys)
    times = []
    for _ in range({calls}):
        t = time.perf_counter()
        eng.inbetween(clip, keys)
        times.append(time.perf_counter() - t)
    out[k] = 1e3 * statistics.median(times)
print(json.dumps(out))
"""


def probe(root: Path, threads: int, calls: int) -> dict[int, float]:
    code = PROBE.format(root=str(root.resolve()), threads=threads, calls=calls, spacings=SPACINGS)
    env = {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, env=env)
    if r.returncode:
        raise SystemExit(f"{root}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    return {int(k): v for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args(argv)
    for t in args.trees:
        if not (t / "backend" / "engine.py").exists():
            raise SystemExit(f"{t}: not a Splinetween tree (no backend/engine.py); make one with git worktree add")
    got = {t: [] for t in args.trees}
    for r in range(args.rounds):
        for t in args.trees:
            got[t].append(probe(t, args.threads, args.calls))
            ms = " / ".join(f"{got[t][-1][k]:.2f}" for k in SPACINGS)
            print(f"round {r + 1} {t}: {ms} ms at keys every 5 / 15 / 30", flush=True)
    med = {t: {k: statistics.median(x[k] for x in got[t]) for k in SPACINGS} for t in args.trees}
    base = med[args.trees[0]]
    print(f"\nmedians over {args.rounds} rounds, {args.threads} thread(s), one 61-frame window (ms; ratio to "
          f"{args.trees[0]}):")
    for t in args.trees:
        print(f"  {t}: " + " | ".join(f"k={k}: {med[t][k]:.2f} ({med[t][k] / base[k]:.2f} x)" for k in SPACINGS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
