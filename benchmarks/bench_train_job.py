"""What Train Mesh Model costs Blender's interface, in headless Blender (the bpy module).

    python benchmarks/bench_train_job.py [--size 71] [--frames 60] [--repeats 5]

* Export: the mesh's evaluated vertices over the range, ``frame_set`` + bulk ``foreach_get`` per
  frame (a size x size grid with a Wave modifier: 71 x 71 = 5,041 vertices), median of repeats.
* Start: the operator end to end (export, PC2 write, digest, process start); it returns while
  the training runs.
* Tick: one ``bpy.app.timers`` poll of a running job (read the log's new bytes, parse, progress,
  redraw tags), median and max over a short real training run.
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=71, help="grid vertices per side")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    from addon_helpers import bpy, disable_addon, fresh_scene_with_addon
    bpy = bpy()
    fresh_scene_with_addon()
    from blender_addon.train import data as train_data
    from blender_addon.train import op_train as op_train_mesh
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=args.size - 1, y_subdivisions=args.size - 1, size=2)
    obj = bpy.context.active_object
    obj.modifiers.new("Wave", "WAVE")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, args.frames
    folder = Path(tempfile.mkdtemp(prefix="splinetween-bench-blend-"))
    bpy.ops.wm.save_as_mainfile(filepath=str(folder / "bench.blend"))
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        frames = train_data.export_sequence(bpy.context, obj, 1, args.frames)
        times.append(time.perf_counter() - t0)
    print(f"export: {frames.shape[1]} vertices x {frames.shape[0]} frames: median {1e3 * statistics.median(times):.0f} ms "
          f"({1e3 * statistics.median(times) / frames.shape[0]:.2f} ms per frame)")
    t0 = time.perf_counter()
    bpy.ops.object.splinetween_train_mesh(steps=200, components=16, options="--layers=1 --width=32 --heads=4 "
                                          "--val_every=50 --threads=1")
    start = time.perf_counter() - t0
    job = op_train_mesh.current_job()
    print(f"start: the operator returned in {1e3 * start:.0f} ms, the training process running: "
          f"{job.proc.poll() is None}")
    op_train_mesh._tick_cost.clear()
    ticks = 0
    while op_train_mesh.tick() is not None:
        ticks += 1
        time.sleep(op_train_mesh.INTERVAL)
    cost = op_train_mesh._tick_cost
    print(f"tick: median {1e3 * statistics.median(cost):.3f} ms, max {1e3 * max(cost):.3f} ms over {len(cost)} "
          f"ticks of a {job.elapsed:.0f} s run ({job.state}); log {job.log_path.stat().st_size} bytes")
    print(job.message)
    disable_addon()
    import shutil
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
