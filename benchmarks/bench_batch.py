"""Throughput of the headless batch: files per minute with 1 and 2 worker processes.

    python benchmarks/bench_batch.py [--repeats 3] [--files 8] [--rigs 4] [--jobs 1 2] [--mesh]
                                     [--baseline-tree DIR]

Makes ``--files`` shot files, each holding ``--rigs`` armatures (the example clips, imported and
blocked to a key every 15 frames, all keys selected: 70-273 frames, 22 bones each), then times
``python -m blender_addon.batch inbetween SHOTS --out-dir OUT --force --jobs N --device cpu`` as a
user runs it (a fresh process, worker start-up and model loading included), ``--repeats`` times
per N.  Prints the median wall time, files per minute end to end and after the workers were up
(from the run's report), and the speed-up of each N over one worker (target: 2 workers >= 1.6x).

The profile columns (medians, from the run's report): ``ready`` is when the first worker could take
a file (Blender imported, the add-on enabled); ``file`` the median seconds of one file in a worker;
``serial`` the part of the wall time that more workers do not divide: wall - ceil(files / N) x file
(process and worker start-up, the model's load where it is not hidden, the tail, the exit);
``cpu`` the CPU seconds of the batch's processes (all workers), which a loaded machine changes less
than wall times: what two workers add to it is work done twice (each worker's start-up).

``--mesh``: the files are copies of the example flag (examples/cloth/cloth_flag.blend, a 5,041-vertex
cloth simulated over frames 1-60) and the command is ``mesh-inbetween SHOTS --every 5`` (each file:
the cloth simulated headless, 13 key frames read, 47 frames filled, a PC2 written).

``--profile`` (with ``--mesh``): no timing of the command; instead one worker's steps run in this
process, each timed: importing Blender, enabling the add-on, importing PyTorch, loading the model
(done on a thread beside the first file in a real worker), then per file opening it, reading the
mesh over the frames (the cloth simulated), the model's request, installing the cache modifier and
PC2, saving the .blend and writing the done marker.  Prints the median of each over the files.

``--baseline-tree DIR``: also time another source tree (for example ``git archive main | tar -x -C
DIR``) on the same files, alternating with this one in every repeat, and print its rows and the
ratio of the two.

Torch threads: the batch gives each worker ``cores // N`` threads unless OMP_NUM_THREADS is set
(set it to 1 to compare process parallelism alone).  Run it on an otherwise idle machine.

``--ceiling``: also time one worker confined to one core in every repeat, and print the best speed-up
as many workers as cores could reach: each file no faster than alone on one core (Blender's own
simulation threads then have no second core; a worker beside another has none either).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
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


def run_once(tree: Path, shots: Path, out: Path, jobs: int, mesh: bool = False, one_core: bool = False) -> dict:
    """One timed batch run; ``one_core``: the command and its workers confined to one core (so Blender
    simulates on one thread), for the ceiling (``--ceiling``)."""
    report = out / f"report-{jobs}.json"
    command = ["mesh-inbetween", str(shots), "--every", "5"] if mesh else ["inbetween", str(shots)]
    cmd = [sys.executable, "-m", "blender_addon.batch", *command, "--out-dir", str(out), "--force",
           "--jobs", str(jobs), "--device", "cpu", "--quiet", "--report", str(report)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    pin = (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})) if one_core else None
    res = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, preexec_fn=pin)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"batch failed ({res.returncode}):\n{res.stdout}\n{res.stderr}")
    rep = json.loads(report.read_text())
    files = rep["files"]
    ready = min(w["ready_s"] for w in rep["workers"])
    last = max(f["done_s"] for f in files)
    per_file = statistics.median(f["seconds"] for f in files)
    return {"wall": wall, "steady": 60.0 * len(files) / max(last - ready, 1e-9), "ready": ready, "file": per_file,
            "serial": wall - math.ceil(len(files) / jobs) * per_file,
            "cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime}


def profile(shots: Path, out: Path) -> None:
    """One mesh-inbetween worker's steps in this process, each step timed (medians over the files)."""
    import importlib
    t = time.perf_counter()
    import bpy
    startup = {"import Blender (bpy)": time.perf_counter() - t}
    from blender_addon.batch import job_mesh, jobs, safe_io, worker
    mesh = importlib.import_module("blender_addon.latent.mesh.adapter")
    worker.secure(bpy)
    t = time.perf_counter()
    state = jobs.State({"command": "mesh-inbetween", "mode": "IN_PROCESS", "checkpoint": "", "device": "cpu",
                        "interpreter": "", "timeout": 600})
    startup["enable the add-on"] = time.perf_counter() - t
    t = time.perf_counter()
    import torch  # noqa: F401
    startup["import PyTorch"] = time.perf_counter() - t
    t = time.perf_counter()
    line = jobs.preload(state, "mesh_inbetween")
    startup[f"load the model ({line})"] = time.perf_counter() - t
    steps: dict[str, list[float]] = {}

    def timed(module, name: str, label: str) -> None:
        inner = getattr(module, name)

        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                steps.setdefault(label, []).append(time.perf_counter() - t0)
        setattr(module, name, wrapper)

    timed(job_mesh, "open_blend", "open the .blend")
    timed(mesh, "_read", "read the mesh over frames 1-60 (cloth simulated)")
    timed(mesh, "request", "the model (13 key frames -> 60 frames)")
    timed(mesh, "_install", "install: PC2 written, MeshCache modifier and driver")
    timed(jobs, "_publish", "save the .blend (temporary file, renamed)")
    timed(safe_io, "write_marker", "the done marker")
    files = sorted(shots.glob("*.blend"))
    for n, src in enumerate(files):
        job = {"id": n, "command": "mesh-inbetween", "file_type": "blend", "source": str(src), "output": str(out / src.name),
               "in_place": False, "digest": "profile", "options": {"objects": [], "checkpoint": "", "range": None,
                                                                   "keys": {"source": "every", "every": 5, "frames": None}}}
        t = time.perf_counter()
        entry = jobs.run(job, state, lambda frames: None)
        steps.setdefault("the whole file", []).append(time.perf_counter() - t)
        if entry["status"] != "ok":
            raise SystemExit(f"{src}: {entry['errors']}")
    print("one worker's start-up (seconds):")
    for what, s in startup.items():
        print(f"  {s:6.2f}  {what}")
    print(f"per file, median of {len(files)} (seconds):")
    for what, s in steps.items():
        print(f"  {statistics.median(s):6.3f}  {what}")


def _table(label: str, rows: dict, files: int) -> None:
    print(f"{label}\n{'workers':>7} {'wall s':>8} {'files/min':>10} {'after start-up':>15} {'speed-up':>9} "
          f"{'ready s':>8} {'file s':>7} {'serial s':>9} {'cpu s':>7}")
    base = rows[min(rows)]["wall"]
    for jobs, r in rows.items():
        print(f"{jobs:>7} {r['wall']:>8.2f} {60.0 * files / r['wall']:>10.1f} {r['steady']:>15.1f} "
              f"{base / r['wall']:>8.2f}x {r['ready']:>8.2f} {r['file']:>7.2f} {r['serial']:>9.2f} {r['cpu']:>7.1f}")
    if 1 in rows and 2 in rows:
        ratio = rows[1]["wall"] / rows[2]["wall"]
        print(f"2 workers / 1 worker: {ratio:.2f}x end to end, {rows[2]['steady'] / rows[1]['steady']:.2f}x after "
              f"start-up (target >= 1.6x): {'met' if ratio >= 1.6 else 'NOT met'}")


def _ceiling(one: dict, pinned: dict, files: int) -> None:
    """What N workers on N cores can reach at best: each file costs at least what it costs a worker alone on
    one core (no contention, no spinning; start-up counted once), so the N workers need at least
    ceil(files / N) of those files' time, against one unconfined worker's wall."""
    cores = os.cpu_count() or 1
    best = pinned["serial"] + math.ceil(files / cores) * pinned["file"]
    print(f"one worker on one core: {pinned['wall']:.2f} s ({pinned['file']:.2f} s a file, cpu {pinned['cpu']:.1f} s); "
          f"one worker on {cores} cores: {one['wall']:.2f} s ({one['file']:.2f} s a file)")
    print(f"ceiling of {cores} workers on {cores} cores: {one['wall']:.2f} / {best:.2f} s = {one['wall'] / best:.2f}x "
          f"(every file as fast as alone on its own core)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--rigs", type=int, default=4, help="armatures per file")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--mesh", action="store_true", help="mesh-inbetween on copies of the example flag")
    ap.add_argument("--baseline-tree", type=Path, help="another source tree timed alternately on the same files")
    ap.add_argument("--profile", action="store_true", help="with --mesh: time one worker's steps in this process")
    ap.add_argument("--ceiling", action="store_true",
                    help="also time one worker confined to one core: what two workers can reach on this machine")
    args = ap.parse_args(argv)
    if args.profile:
        if not args.mesh:
            ap.error("--profile profiles mesh-inbetween: add --mesh")
        with tempfile.TemporaryDirectory(prefix="splinetween-bench-batch-") as tmp:
            make_flags(Path(tmp) / "shots", args.files)
            profile(Path(tmp) / "shots", Path(tmp) / "out")
        return 0
    trees = {"this tree": ROOT}
    if args.baseline_tree:
        trees["baseline"] = args.baseline_tree.resolve()
    with tempfile.TemporaryDirectory(prefix="splinetween-bench-batch-") as tmp:
        shots, out = Path(tmp) / "shots", Path(tmp) / "out"
        frames = make_flags(shots, args.files) if args.mesh else make_shots(shots, args.files, args.rigs)
        what = "the example flag (mesh-inbetween --every 5)" if args.mesh else f"{args.rigs} armatures"
        print(f"{args.files} files x {what}, {frames} frames to fill per file; "
              f"{os.cpu_count()} cores, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, "
              f"load average {os.getloadavg()[0]:.2f}")
        runs = {(name, jobs): [] for name in trees for jobs in args.jobs}
        pinned = []  # --ceiling: one worker confined to one core
        for _ in range(args.repeats):  # alternate, so that a change in the machine's load hits every row alike
            for jobs in args.jobs:
                for name, tree in trees.items():
                    runs[name, jobs].append(run_once(tree, shots, out, jobs, args.mesh))
            if args.ceiling:
                pinned.append(run_once(ROOT, shots, out, 1, args.mesh, one_core=True))
        rows = {name: {jobs: {k: statistics.median(r[k] for r in runs[name, jobs]) for k in runs[name, jobs][0]}
                       for jobs in args.jobs} for name in trees}
        for name in trees:
            _table(f"{name} ({trees[name]}), medians of {args.repeats}:", rows[name], args.files)
        if pinned and 1 in rows["this tree"]:
            _ceiling(rows["this tree"][1], {k: statistics.median(r[k] for r in pinned) for k in pinned[0]}, args.files)
        if args.baseline_tree:
            for jobs in args.jobs:
                print(f"{jobs} worker(s): baseline / this tree {rows['baseline'][jobs]['wall'] / rows['this tree'][jobs]['wall']:.2f}x "
                      f"wall, serial {rows['baseline'][jobs]['serial']:.2f} -> {rows['this tree'][jobs]['serial']:.2f} s, "
                      f"cpu {rows['baseline'][jobs]['cpu']:.1f} -> {rows['this tree'][jobs]['cpu']:.1f} s")
        print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
