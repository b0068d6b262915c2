"""python -m training.principal CKPT --data PATH: principal directions of the control points.

Encodes random train windows, runs PCA on the flattened control points, and stores the
leading directions (unit vectors, with their standard deviations) in the checkpoint, so
a slider of +1 moves one standard deviation along a direction seen in real motion.
Each direction is named by what decoding it changes most (a joint group's rotation or
the root's travel), measured on a few windows.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

from backend import checkpoint as ck
from backend import quat_np as Q
from backend.engine import Engine
from backend.skeleton import Clip

from .data import WindowSampler, load_split

GROUPS = {"legs": ("Leg", "Foot", "Toe"), "arms": ("Arm", "Hand", "Shoulder"), "spine and head": ("Spine", "Chest", "Neck", "Head")}


def control_matrix(engine: Engine, ms, windows: int, seed: int, batch: int = 256) -> np.ndarray:
    """[windows, K*d] control points of random train windows of the checkpoint's length."""
    sampler = WindowSampler(ms, engine.ckpt.window, engine.ckpt.window, seed)
    rows = []
    for a in range(0, windows, batch):
        idx = sampler.sample(min(batch, windows - a))
        clips = [Clip(ms.skeleton, ms.rotations[i].astype(np.float64), ms.positions[i].astype(np.float64))
                 for i in idx]
        rows += [c.points.reshape(-1) for c in engine.encode(clips)]
    return np.stack(rows)


def pca(x: np.ndarray, count: int):
    mean = x.mean(0)
    _, s, vt = np.linalg.svd(x - mean, full_matrices=False)
    std = s[:count] / np.sqrt(len(x) - 1)
    return mean, vt[:count], std


def direction_effects(engine: Engine, clips, component, std) -> dict:
    """How much moving +2 std along a direction changes each joint group and the root's travel."""
    skel = engine.skeleton
    effect = {g: 0.0 for g in GROUPS}
    effect["root travel"] = 0.0
    root = engine.layout.position_joints[0]

    def travel(c):
        return np.linalg.norm(np.diff(c.positions[:, root], axis=0), axis=-1).sum()

    for clip in clips:
        c = engine.encode(clip)
        base = engine.decode(c)
        moved = engine.decode(c, points=c.points + 2 * std * component.reshape(c.points.shape[1:]))
        ang = np.degrees(Q.angle_between(base.rotations, moved.rotations)).mean(0)
        for g, parts in GROUPS.items():
            js = [j for j, n in enumerate(skel.names) if any(p in n for p in parts)]
            effect[g] += float(ang[js].mean()) if js else 0.0
        effect["root travel"] += abs(travel(moved) - travel(base)) / max(travel(base), 1e-6)
    return effect


def name_directions(effects: list[dict]) -> list[str]:
    """Name each direction by the group it moves most *relative to how much directions move it on average*."""
    groups = list(effects[0])
    e = np.array([[d[g] for g in groups] for d in effects])
    rel = e / np.maximum(e.mean(0, keepdims=True), 1e-9)
    names = []
    for i, row in enumerate(rel):
        n = groups[int(np.argmax(row))]
        names.append(n if n not in names else f"{n} {sum(x.startswith(n) for x in names) + 1}")
    return names


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.principal", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache")
    ap.add_argument("--windows", type=int, default=4096)
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    engine = Engine(args.checkpoint, "cpu")
    ms = load_split(args.data, "train", args.cache)
    x = control_matrix(engine, ms, args.windows, args.seed)
    mean, comps, std = pca(x, args.count)
    explained = (std ** 2) / x.var(0, ddof=1).sum()
    probe = [Clip(ms.skeleton, *(a.astype(np.float64) for a in ms.clip(i))) for i in range(0, len(ms.names), 400)]
    probe = [c.slice(0, engine.ckpt.window) for c in probe if c.num_frames >= engine.ckpt.window][:4]
    names = name_directions([direction_effects(engine, probe, comps[i], std[i]) for i in range(args.count)])
    c = engine.ckpt
    c.extra.update({"pca.mean": torch.tensor(mean, dtype=torch.float32),
                    "pca.components": torch.tensor(comps, dtype=torch.float32),
                    "pca.std": torch.tensor(std, dtype=torch.float32)})
    c.info["principal_names"] = names
    c.info["principal_explained"] = [round(float(e), 4) for e in explained]
    c.info["principal_source"] = f"{args.windows} random train windows of {c.window} frames, seed {args.seed}"
    ck.save(c.path, c)
    for i, (n, e, s) in enumerate(zip(names, explained, std)):
        print(f"PC{i + 1}: {n:16s} std {s:.3f}  explains {100 * e:.1f} % of control-point variance")
    print(f"stored in {c.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
