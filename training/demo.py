"""The README's main job: in-between an example clip from keys every 15 frames, then a cloth.

Writes OUT/<clip>.bvh (the model's result) and OUT/<clip>.png (ground truth vs SLERP vs
the model: a few joints' curves and a skeleton strip), and prints the errors of both.
Then the cloth part (``training.mesh.demo``): Blender simulates the example cloth, the
shipped cloth models in-between it from every 5th frame and reconstruct it (PC2 + PNG).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

from backend.formats.bvh import read_bvh, write_bvh
from backend.maths import quat_np
from backend.motion.engine import DEFAULT_INBETWEEN, Engine

from .keyframes import every_k, interpolate, key_mask

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CLIP = ROOT / "examples" / "bvh" / "dataset-2_walk_normal_001.bvh"
CURVE_JOINTS = ("UpperLeg_L", "LowerLeg_L", "UpperArm_R")


def slerp_baseline(clip, keys):
    mask = torch.from_numpy(key_mask(clip.num_frames, keys))[None]
    r, p = interpolate(torch.from_numpy(clip.rotations)[None], torch.from_numpy(clip.positions)[None], mask)
    return r[0].numpy(), p[0].numpy()


def errors(rot, pos, clip, keys):
    """Mean local-rotation error (deg) and MPJPE (cm) on the frames that are not keys."""
    free = ~key_mask(clip.num_frames, keys)
    parents = clip.skeleton.parents
    _, gp = quat_np.fk(rot, pos, parents)
    _, gt = quat_np.fk(clip.rotations, clip.positions, parents)
    ang = np.degrees(quat_np.angle_between(rot[free], clip.rotations[free])).mean()
    return float(ang), float(np.linalg.norm(gp[free] - gt[free], axis=-1).mean())


def plot(path, clip, keys, slerp, model):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    skel = clip.skeleton
    series = {"ground truth": (clip.rotations, clip.positions, "k"), "SLERP": (*slerp, "tab:orange"),
              "Splinetween": (*model, "tab:blue")}
    fig = plt.figure(figsize=(14, 9))
    for i, name in enumerate(CURVE_JOINTS):
        ax = fig.add_subplot(3, 3, i + 1)
        j = skel.index(name)
        order = skel.euler_order(j)
        gt = np.degrees(np.unwrap(quat_np.to_euler(clip.rotations[:, j], order), axis=0))
        axis = int(np.argmax(gt.std(0)))  # the channel that moves most
        for label, (rot, _, col) in series.items():
            e = np.degrees(np.unwrap(quat_np.to_euler(rot[:, j], order), axis=0))
            ax.plot(e[:, axis], color=col, lw=1.2 if label != "ground truth" else 2, label=label)
        ax.plot(keys, gt[keys, axis], "o", color="k", ms=3)
        ax.set_title(f"{name}: {order[axis]} rotation (deg)", fontsize=9)
        ax.set_xlabel("frame", fontsize=8)
    fig.axes[0].legend(fontsize=8)
    frames = np.linspace(keys[0], min(keys[-1], keys[0] + 60), 9).astype(int)
    # Joints whose position is animated (the Hips): a "bone" into them is no bone, and the
    # first of them is the body centre the strip follows.
    moving = [j for j in range(skel.num_joints) if np.ptp(clip.positions[:, j], axis=0).max() > 1e-3] or [0]
    centre = quat_np.fk(clip.rotations, clip.positions, skel.parents)[1][:, moving[0]]
    travel = centre[frames[-1]] - centre[frames[0]]
    side = 0 if abs(travel[0]) >= abs(travel[2]) else 2  # view from the side of the walk
    for row, (rot, pos, col) in enumerate(series.values()):
        ax = fig.add_subplot(3, 1, 2 + (row > 0)) if row < 2 else fig.axes[-1]
        _, gp = quat_np.fk(rot, pos, skel.parents)
        for k, f in enumerate(frames):
            x = gp[f, :, side] - centre[f, side] + k * 60.0  # Y is up in BVH
            y = gp[f, :, 1]
            for j, p in enumerate(skel.parents):
                if p >= 0 and j not in moving:
                    ax.plot([x[p], x[j]], [y[p], y[j]], color=col, lw=1.5 if row == 0 else 1.0,
                            alpha=1.0 if row != 1 else 0.7)
        ax.set_aspect("equal")
        ax.set_yticks([])
        ax.set_title("skeleton strip, frames " + ", ".join(map(str, frames)) +
                     (" (black: ground truth)" if row == 0 else " (orange: SLERP, blue: Splinetween)"), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.demo", description=__doc__)
    ap.add_argument("clip", nargs="?", type=Path, default=DEFAULT_CLIP)
    ap.add_argument("--every", type=int, default=15)
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "demo")
    ap.add_argument("--checkpoint", type=Path, default=DEFAULT_INBETWEEN)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--no-cloth", action="store_true", help="skip the cloth part (Blender simulates the example "
                    "cloth, the shipped cloth models in-between and reconstruct it)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        clip = read_bvh(args.clip)
        keys = every_k(clip.num_frames, args.every)
        engine = Engine(args.checkpoint, args.device)
        result, controls = engine.inbetween(clip, keys)
    except ValueError as e:  # BVHError, CheckpointError, EngineError: the message names the file
        print(f"error: {e}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    write_bvh(args.out / args.clip.name, result)
    slerp = slerp_baseline(clip, keys)
    png = args.out / (args.clip.stem + ".png")
    plot(png, clip, keys, slerp, (result.rotations, result.positions))
    es, em = errors(*slerp, clip, keys), errors(result.rotations, result.positions, clip, keys)
    print(f"{args.clip.name}: {clip.num_frames} frames, keys every {args.every} ({len(keys)} keys), "
          f"{len(controls.segments)} spline segment(s) of {controls.points.shape[1]} control points")
    print("  non-key frames   rotation error   MPJPE")
    print(f"  SLERP/LERP       {es[0]:8.2f} deg   {es[1]:6.2f} cm")
    print(f"  Splinetween      {em[0]:8.2f} deg   {em[1]:6.2f} cm")
    print(f"wrote {args.out / args.clip.name} and {png} in {time.perf_counter() - t0:.1f} s")
    if args.no_cloth:
        return 0
    from .mesh import demo as mesh_demo
    return mesh_demo.main(["--out", str(args.out), "--device", args.device])


if __name__ == "__main__":
    sys.exit(main())
