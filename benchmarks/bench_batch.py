"""Throughput of the headless batch: files per minute with 1 and 2 worker processes.

    python benchmarks/bench_batch.py [--repeats 3] [--files 8] [--rigs 4] [--jobs 1 2] [--mesh]

Makes ``--files`` shot files, each holding ``--rigs`` armatures (the example clips, imported and
blocked to a key every 15 frames, all keys selected: 70-273 frames, 22 bones each), then times
``python -m blender_addon.batch inbetween SHOTS --out-dir OUT --force --jobs N --device cpu`` as a
user runs it (a fresh process, worker start-up and model loading included), ``--repeats`` times
per N.  Prints the median wall time, files per minute end to end and after the workers were up
(from the run's report), and the speed-up of each N over one worker (target: 2 workers >= 1.6x).

``--mesh``: the files are copies of the example flag (examples/cloth/cloth_flag.blend, a 5,041-vertex
cloth simulated over frames 1-60) and the command is ``mesh-inbetween SHOTS --every 5`` (each file:
the cloth simulated headless, 13 key frames read, 47 frames filled, a PC2 written).

Torch threads: the batch gives each worker ``cores // N`` threads unless OMP_NUM_THREADS is set
(set it to 1 to compare process parallelism alone).  Run it on an otherwise idle machine.
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

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
EVERY = 15


def make_shots(folder: Path, files: int, rigs: int) -> int:
    """``files`` .blend files with ``rigs`` blocked armatures each; -> frames to fill per file."""
    import bpy
    from addon_helpers import import_bvh, thin_keys
    clips = sorted((ROOT / "examples" / "bvh").glob("*.bvh"))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.context.scene.render.fps = 30
    gaps = 0
    for r in range(rigs):
        obj = import_bvh(clips[r % len(clips)])
        obj.location.x = 2.0 * r
        n = int(round(obj.animation_data.action.frame_range[1]))
        keys = sorted(set(range(1, n + 1, EVERY)) | {n})
        thin_keys(obj, keys)
        gaps += n - len(keys)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        bpy.ops.wm.save_as_mainfile(filepath=str(folder / f"shot_{i:03d}.blend"), copy=True, check_existing=False)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return gaps


def make_flags(folder: Path, files: int) -> int:
    """``files`` copies of the example flag; -> frames to fill per file (keys every 5 of 1-60)."""
    import shutil
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        shutil.copy2(ROOT / "examples" / "cloth" / "cloth_flag.blend", folder / f"flag_{i:03d}.blend")
    return 60 - len(list(range(1, 60, 5)) + [60])


def run_once(shots: Path, out: Path, jobs: int, mesh: bool = False) -> tuple[float, dict]:
    report = out / f"report-{jobs}.json"
    command = ["mesh-inbetween", str(shots), "--every", "5"] if mesh else ["inbetween", str(shots)]
    cmd = [sys.executable, "-m", "blender_addon.batch", *command, "--out-dir", str(out), "--force",
           "--jobs", str(jobs), "--device", "cpu", "--quiet", "--report", str(report)]
    t = time.perf_counter()
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(f"batch failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    return wall, json.loads(report.read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rigs", type=int, default=4, help="armatures per file")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--mesh", action="store_true", help="mesh-inbetween on copies of the example flag")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="splinetween-bench-batch-") as tmp:
        shots, out = Path(tmp) / "shots", Path(tmp) / "out"
        frames = make_flags(shots, args.files) if args.mesh else make_shots(shots, args.files, args.rigs)
        what = "the example flag (mesh-inbetween --every 5)" if args.mesh else f"{args.rigs} armatures"
        print(f"{args.files} files x {what}, {frames} frames to fill per file; "
              f"{os.cpu_count()} cores, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
              f"load average {os.getloadavg()[0]:.2f}")
        rows = {}
        for jobs in args.jobs:
            walls, steady = [], []
            for _ in range(args.repeats):
                wall, rep = run_once(shots, out, jobs, args.mesh)
                walls.append(wall)
                ready = min(w["ready_s"] for w in rep["workers"])
                last = max(f["done_s"] for f in rep["files"])
                steady.append(60.0 * args.files / max(last - ready, 1e-9))
            rows[jobs] = (statistics.median(walls), statistics.median(steady))
        print(f"{'workers':>7} {'wall s':>8} {'files/min':>10} {'after start-up':>15} {'speed-up':>9}")
        base = rows[args.jobs[0]]
        for jobs, (wall, steady) in rows.items():
            fpm = 60.0 * args.files / wall
            print(f"{jobs:>7} {wall:>8.2f} {fpm:>10.1f} {steady:>15.1f} {base[0] / wall:>8.2f}x")
        if 1 in rows and 2 in rows:
            ratio = rows[1][0] / rows[2][0]
            print(f"2 workers / 1 worker: {ratio:.2f}x end to end, {rows[2][1] / rows[1][1]:.2f}x after start-up "
                  f"(target >= 1.6x): {'met' if ratio >= 1.6 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
