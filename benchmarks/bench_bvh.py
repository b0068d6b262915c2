"""BVH parse speed.

    python benchmarks/bench_bvh.py                 # in-memory parse speed on the fixtures
    python benchmarks/bench_bvh.py DATA_DIR        # ... and a cold read of every *.bvh in DATA_DIR

Parse speed is ``parse_bvh`` on text already in memory (median of repeats); the folder pass is
``read_bvh`` per file, disk reads included, so it is what loading a training set costs.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend.formats.bvh import parse_bvh, read_bvh  # noqa: E402

MB = 1e6


def fixture_speed(repeats: int) -> None:
    files = sorted(ROOT.glob("examples/bvh/*.bvh")) + sorted(ROOT.glob("tests/fixtures/*.bvh"))
    texts = [(p, p.read_text()) for p in files]
    total_bytes = sum(len(t.encode()) for _, t in texts)
    per_pass = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for p, text in texts:
            parse_bvh(text, p)
        per_pass.append(time.perf_counter() - t0)
    for p, text in texts:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            parse_bvh(text, p)
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        print(f"  {p.name:48s} {len(text) / 1e3:8.1f} kB  {med * 1e3:7.2f} ms  {len(text) / MB / med:7.1f} MB/s")
    med = statistics.median(per_pass)
    print(f"fixtures: {len(texts)} files, {total_bytes / MB:.2f} MB, median {med * 1e3:.1f} ms per pass "
          f"over {repeats} repeats -> {total_bytes / MB / med:.1f} MB/s")


def folder_speed(folder: Path) -> None:
    files = sorted(folder.rglob("*.bvh"))
    if not files:
        sys.exit(f"{folder}: no .bvh files")
    total_bytes = sum(p.stat().st_size for p in files)
    frames = 0
    t0 = time.perf_counter()
    for p in files:
        frames += read_bvh(p, keep_source=False).num_frames
    dt = time.perf_counter() - t0
    print(f"{folder}: {len(files)} files, {total_bytes / MB:.1f} MB, {frames} frames, "
          f"{dt:.2f} s total -> {total_bytes / MB / dt:.1f} MB/s, {frames / dt:,.0f} frames/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir", nargs="?", type=Path, help="folder of .bvh files to read once")
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    fixture_speed(args.repeats)
    if args.data_dir is not None:
        folder_speed(args.data_dir)


if __name__ == "__main__":
    main()
