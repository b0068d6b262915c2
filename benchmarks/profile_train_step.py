"""Where a training step's time goes (one CPU thread): data, forward, loss, backward, optimiser.

    python benchmarks/profile_train_step.py --data PATH [--cache DIR] [--task autoencoder|inbetween]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.models.registry import build_model
from backend.models.spline_transformer import ModelConfig
from backend.motion.features import Normalizer, detect_layout
from training.data import WindowSampler, load_split, within_clip_position_std
from training.features import to_features
from training.inbetween_task import InbetweenBatcher
from training.loop import Batcher
from training.losses import pose_loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache")
    ap.add_argument("--task", default="autoencoder")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(1)
    ms = load_split(args.data, "train", args.cache)
    layout = detect_layout(within_clip_position_std(ms), ms.skeleton.channels)
    s = WindowSampler(ms, 61, 61, 0)
    feats, _ = to_features(*Batcher(ms, layout).raw(s.sample(512)), layout)
    norm = Normalizer.fit(feats)
    batcher = Batcher(ms, layout, norm, True)
    if args.task == "inbetween":
        batcher = InbetweenBatcher(batcher, layout, norm, 0)
    family = "keyframe" if args.task == "inbetween" else "spline"
    model = build_model(ModelConfig(input_dim=layout.dim, output_dim=layout.dim, family=family))
    opt = torch.optim.RAdam(model.parameters(), lr=3e-4)
    t = {k: [] for k in ("data", "forward", "loss (features + FK)", "backward", "optimiser")}
    for step in range(args.steps):
        t0 = time.perf_counter()
        inputs, target, origin, template, _ = batcher(s.sample(args.batch))
        t1 = time.perf_counter()
        pred = model(*inputs)
        t2 = time.perf_counter()
        loss, _ = pose_loss(pred, target, norm, layout, origin, template, ms.skeleton.parents, 1.0)
        t3 = time.perf_counter()
        opt.zero_grad()
        loss.backward()
        t4 = time.perf_counter()
        opt.step()
        t5 = time.perf_counter()
        if step >= 5:
            for k, a, b in zip(t, (t0, t1, t2, t3, t4), (t1, t2, t3, t4, t5), strict=True):
                t[k].append(b - a)
    total = sum(statistics.median(v) for v in t.values())
    print(f"{args.task}: batch {args.batch} x 61 frames, one thread; median per step {1e3 * total:.0f} ms "
          f"({args.batch / total:.0f} windows/s)")
    for k, v in t.items():
        m = statistics.median(v)
        print(f"  {k:22s} {1e3 * m:7.1f} ms  {100 * m / total:5.1f} %")


if __name__ == "__main__":
    main()
