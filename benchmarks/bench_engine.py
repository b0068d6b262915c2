"""Engine speed on the CPU: medians over repeated calls, one thread by default.

    python benchmarks/bench_engine.py [--autoencoder CKPT] [--inbetween CKPT] [--threads 1]

Prints encode/decode latency of the autoencoder for one 64-frame clip (budget: decode
under 5 ms), the in-betweening model per 61-frame window, alone and with its guard (the two
hidden-key passes; budget: under 10 ms as shipped),
SLERP on the same window as the baseline, and the CLI's wall time for 120 windows of 61
frames including start-up (budget: under 20 s).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend.formats.bvh import read_bvh, write_bvh  # noqa: E402
from backend.motion.engine import DEFAULT_CHECKPOINT, DEFAULT_INBETWEEN, Engine  # noqa: E402
from training.keyframes import every_k, interpolate, key_mask  # noqa: E402

CLIP = ROOT / "examples" / "bvh" / "dataset-2_walk_normal_001.bvh"


def median_ms(fn, repeats=100, warmup=10):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def bench_autoencoder(path):
    eng = Engine(path, "cpu")
    clip = read_bvh(CLIP).slice(0, 64)
    controls = eng.encode(clip)
    d = eng.ckpt.config.latent
    enc = median_ms(lambda: eng.encode(clip))
    dec = median_ms(lambda: eng.decode(controls))
    with torch.inference_mode():
        cp = torch.as_tensor(controls.points, dtype=torch.float32)
        model = median_ms(lambda: eng.model.module.decode(cp, 64))  # (the torch module behind Engine.model)
    print(f"autoencoder d={d}: encode 64 frames {enc:.2f} ms | Engine.decode 64 frames {dec:.2f} ms "
          f"(model alone {model:.2f} ms; budget 5 ms)")


def bench_inbetween(path):
    """One 61-frame window at keys every 5, 15 and 30: as shipped (the guard where keys are <= 10 frames
    apart, the mirror average elsewhere, planted feet), as shipped without planted feet, and the model
    alone (none of them), next to SLERP/LERP."""
    eng = Engine(path, "cpu")
    symmetric = eng.symmetric
    clip = read_bvh(CLIP).slice(0, 61)
    rot, pos = torch.from_numpy(clip.rotations)[None], torch.from_numpy(clip.positions)[None]
    for k in (5, 15, 30):
        keys = every_k(61, k)
        mask = torch.from_numpy(key_mask(61, keys))[None]
        sl = median_ms(lambda: interpolate(rot, pos, mask))
        for label, shipped, feet in (("model alone", False, False), ("as shipped", True, True),
                                     ("feet free", True, False)):  # feet free: as shipped, planted feet off
            eng.guard, eng.symmetric, eng.contacts = shipped, shipped and symmetric, feet
            ib = median_ms(lambda: eng.inbetween(clip, keys))
            t = time.perf_counter()
            eng.inbetween([clip] * 120, [keys] * 120)
            per = 1e3 * (time.perf_counter() - t) / 120
            print(f"inbetween one 61-frame window, keys every {k:2d}, {label:11s}: {ib:5.2f} ms (budget 10 ms) | "
                  f"SLERP/LERP baseline {sl:.2f} ms | ratio {ib / sl:5.1f}x | batched x120: {per:.2f} ms/window")
    eng.guard, eng.symmetric, eng.contacts = True, symmetric, True
    return clip


def bench_cli(path, clip):
    """120 windows of 61 frames as 120 BVH files, one CLI call, wall time with start-up."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = read_bvh(CLIP)
        for i in range(120):
            a = (i * 7) % (src.num_frames - 61)
            w = src.slice(a, a + 61)
            w.meta = {}
            write_bvh(tmp / f"w{i:03d}.bvh", w)
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "backend", "inbetween", *sorted(map(str, tmp.glob("w*.bvh"))),
                            "--every", "15", "--out-dir", str(tmp / "out"), "--checkpoint", str(path),
                            "--device", "cpu"], cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - t
        if r.returncode:
            print(r.stderr)
        print(f"CLI inbetween 120 windows x 61 frames: {wall:.2f} s wall including start-up (budget 20 s)")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--autoencoder", type=Path, default=DEFAULT_CHECKPOINT)
    ap.add_argument("--inbetween", type=Path, default=DEFAULT_INBETWEEN)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s)")
    if args.autoencoder.exists():
        bench_autoencoder(args.autoencoder)
    if args.inbetween.exists():
        clip = bench_inbetween(args.inbetween)
        bench_cli(args.inbetween, clip)


if __name__ == "__main__":
    main()
