"""Issue 19's slider cases over minutes: ``bench_writes.py --only slider`` run again and again, one tree
after the other, then each case's median ratio to its floor, quartiles, maximum and share of runs over
the target, per tree.

    python benchmarks/bench_slider_series.py TREE [TREE ...] [--pairs 24] [--pause 12] [--log FILE]
                                             [--backend IN_PROCESS|BUILTIN] [--clock wall|cpu]

One run's ratio moves by a fifth with a neighbour's load on this 2-core machine (the load average
does not show it); runs of every tree in turn see the same minutes, so the trees' medians compare
where single runs do not.  Every tree is measured by this checkout's ``bench_writes.py`` (``--tree``),
so all get the same cases and the same harness.
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROW = re.compile(r"^\s+(Slider, .+?)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)x\s+<= [0-9.]+ ms and <= ([0-9.]+)x floor")


def slider_ratios(text: str) -> dict[str, tuple[float, float]]:
    """``bench_writes.py`` output -> {case: (ratio to the floor, the target ratio)}."""
    out = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            out[m.group(1)] = (float(m.group(4)), float(m.group(5)))
    return out


def one_run(tree: Path, timeout: float, backend: str = "IN_PROCESS", clock: str = "wall") -> dict[str, tuple[float, float]]:
    cmd = [sys.executable, str(HERE / "bench_writes.py"), "--only", "slider", "--tree", str(tree), "--backend", backend,
           "--clock", clock]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    got = slider_ratios(done.stdout)
    if done.returncode or not got:
        raise SystemExit(f"bench_writes.py --tree {tree} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return got


def summary(runs: list[dict[str, tuple[float, float]]]) -> list[str]:
    lines = []
    for case in runs[0]:
        col = sorted(r[case][0] for r in runs if case in r)
        target = runs[0][case][1]
        q = statistics.quantiles(col, n=4) if len(col) > 1 else [col[0]] * 3
        over = sum(c > target for c in col) / len(col)
        lines.append(f"  {case:<62} {statistics.median(col):5.2f}x  {q[0]:5.2f}-{q[2]:5.2f}  {col[-1]:5.2f}x"
                     f"  {100 * over:4.0f} %")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", type=Path, help="source trees whose add-on is measured, in turn")
    ap.add_argument("--pairs", type=int, default=24, help="rounds: one run of every tree each")
    ap.add_argument("--pause", type=float, default=12.0, help="seconds between rounds")
    ap.add_argument("--log", type=Path, help="also write every run's ratios here as they come")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds one run may take")
    ap.add_argument("--backend", choices=("IN_PROCESS", "BUILTIN"), default="IN_PROCESS",
                    help="the sliders' model (bench_writes.py --backend)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall clock or the thread's CPU time (bench_writes.py --clock)")
    args = ap.parse_args(argv)
    missing = [t for t in args.trees if not (t / "blender_addon").is_dir()]
    if missing:
        raise SystemExit(f"not a source tree with blender_addon/: {', '.join(map(str, missing))} "
                         "(make one with: git archive REV | tar -x -C DIR)")
    runs: dict[Path, list] = {t: [] for t in args.trees}
    log = args.log.open("a", encoding="utf-8") if args.log else None
    try:
        for i in range(args.pairs):
            if i:
                time.sleep(args.pause)
            for tree in args.trees:
                got = one_run(tree, args.timeout, args.backend, args.clock)
                runs[tree].append(got)
                line = f"{time.strftime('%H:%M:%S')} {tree} " + " ".join(f"{r:.2f}" for r, _ in got.values())
                print(line, flush=True)
                if log:
                    print(line, file=log, flush=True)
    finally:
        if log:
            log.close()
    print(f"\nbench_slider_series: {args.pairs} rounds, sliders on {args.backend} ({args.clock} clock), slider change / floor per run "
          "(median, quartiles, max, runs over the target)")
    for tree, got in runs.items():
        print(f"{tree}:")
        print("\n".join(summary(got)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
