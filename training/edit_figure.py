"""python -m training.edit_figure: what latent edits do to a clip (docs/latent-editing.png), and how the
add-on layers them on the animator's own motion (``--layer``: docs/latent-layer.png).

    python -m training.edit_figure [--checkpoint AE.json] [--clip CLIP.bvh] [--out PNG] [--segment S]
    python -m training.edit_figure --layer [--checkpoint AE.json] [--clip CLIP.bvh] [--out PNG] [--segment S]

Top: one clip decoded with every segment's inner control points amplified by 0, 0.5, 1, 2 and 3
(the paper's motion-editing experiment), shown as two joints' rotation angles against the file.
Bottom: the latent spline of one segment before and after an edit (amplify 2 and, when the
checkpoint has principal directions, +2 standard deviations along the first), as its most varying
latent features over the spline parameter, and the whole clip's latent trajectory projected onto
its own two leading directions.

``--layer``: the original motion, the model's decode of it (what Encode used to write), the layer at
neutral sliders (the original itself) and the layer after Amplify 1.5 on one segment (original +
decode(edited) - decode(encoded)), as a joint's rotation and as every joint's distance from the
original per frame.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from .plots import DPI, new_figure, pyplot, save_figure

ROOT = Path(__file__).resolve().parents[1]
CLIP = ROOT / "examples" / "bvh" / "dataset-2_walk_normal_001.bvh"
OUT = ROOT / "docs" / "latent-editing.png"
LAYER_CLIP = ROOT / "examples" / "bvh" / "dataset-2_run_normal_002.bvh"
LAYER_OUT = ROOT / "docs" / "latent-layer.png"
AMPLIFY = (0.0, 0.5, 1.0, 2.0, 3.0)
JOINTS = ("LowerLeg_L", "UpperArm_R")


def joint_angle(rotations: np.ndarray, j: int) -> np.ndarray:
    """Degrees a joint is turned from its rest pose, per frame."""
    from backend.maths import quat_np
    ident = np.zeros_like(rotations[:, j])
    ident[:, 0] = 1.0
    return np.degrees(quat_np.angle_between(rotations[:, j], ident))


def edited_points(engine, points: np.ndarray, segment: int) -> tuple[np.ndarray, str]:
    from backend.motion.edits import amplify, principal_offset
    out = points.copy()
    out[segment] = amplify(points[segment], 2.0)
    label = "amplify 2"
    pca = engine.principal()
    if pca is not None:
        amounts = np.zeros(len(pca[1]))
        amounts[0] = 2.0
        out[segment] = principal_offset(out[segment], pca[0], pca[1], amounts)
        names = engine.principal_names()
        label += f" + 2 std along PC1 ({names[0] if names else 'PC1'})"
    return out, label


def trajectory(points: np.ndarray, samples: int = 64) -> np.ndarray:
    """Every segment's Bezier curve sampled densely and chained: ``[S * samples, d]``."""
    from backend.maths import splines
    basis = splines.bezier_basis(points.shape[1] - 1, np.linspace(0.0, 1.0, samples))
    return np.concatenate([splines.evaluate(p, basis) for p in points])


def figure(checkpoint, clip_path, out, segment: int = 2, size=(1400, 1000), dpi=DPI) -> Path:
    from backend.formats.bvh import read_bvh
    from backend.motion.edits import amplify
    from backend.motion.engine import DEFAULT_CHECKPOINT, Engine
    engine = Engine(checkpoint or DEFAULT_CHECKPOINT, "cpu")
    clip = read_bvh(clip_path)
    controls = engine.encode(clip)
    segment = min(segment, len(controls.segments) - 1)
    names = list(clip.skeleton.names)
    joints = [j for j in JOINTS if j in names] or names[2:4]
    fig, axes = new_figure(size, dpi, nrows=2, ncols=2)
    cmap = pyplot().get_cmap("viridis")
    frames = np.arange(clip.num_frames)
    for ax, joint in zip(axes[0], joints, strict=False):
        j = names.index(joint)
        ax.plot(frames, joint_angle(clip.rotations, j), color="k", lw=2.2, ls="--", label="file")
        for k, a in enumerate(AMPLIFY):
            dec = engine.decode(controls, points=amplify(controls.points, a))
            ax.plot(frames, joint_angle(dec.rotations, j), color=cmap(k / (len(AMPLIFY) - 1)), lw=1.4,
                    label=f"amplify {a:g}")
        for a, _ in controls.segments[1:]:
            ax.axvline(a, color="0.7", lw=0.8, ls=":")
        ax.set(xlabel="frame (dotted: segment seams)", ylabel="rotation from rest (deg)",
               title=f"{joint}: every segment amplified")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8, ncol=2)
    edited, label = edited_points(engine, controls.points.astype(np.float64), segment)
    from backend.maths import splines
    t = np.linspace(0.0, 1.0, 128)
    basis = splines.bezier_basis(3, t)
    before, after = splines.evaluate(controls.points[segment], basis), splines.evaluate(edited[segment], basis)
    ax = axes[1][0]
    colors = pyplot().get_cmap("tab10")
    for i, f in enumerate(np.argsort(-before.var(0), kind="stable")[:5]):
        ax.plot(t, before[:, f], color=colors(i), lw=1.8, label=f"z[{f}]")
        ax.plot(t, after[:, f], color=colors(i), lw=1.4, ls="--")
        ax.plot(np.linspace(0, 1, 4), controls.points[segment][:, f], "o", color=colors(i), ms=5)
        ax.plot(np.linspace(0, 1, 4), edited[segment][:, f], "x", color=colors(i), ms=7)
    a, b = controls.segments[segment]
    ax.set(xlabel="spline parameter t (o: control points; x: after the edit)", ylabel="latent value",
           title=f"segment {segment + 1} (frames {a}-{b}): before (solid), after {label} (dashed)")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax = axes[1][1]
    path_before, path_after = trajectory(controls.points.astype(np.float64)), trajectory(edited)
    dirs = np.linalg.svd(path_before - path_before.mean(0), full_matrices=False)[2][:2]
    pb, pa = path_before @ dirs.T, path_after @ dirs.T
    seg = slice(segment * 64, (segment + 1) * 64)
    ax.plot(pb[:, 0], pb[:, 1], color="0.6", lw=1.2, label="whole clip")
    ax.plot(pb[seg, 0], pb[seg, 1], color="k", lw=2.4, label=f"segment {segment + 1} before")
    ax.plot(pa[seg, 0], pa[seg, 1], color="tab:red", lw=2.0, ls="--", label=f"after {label}")
    cb, ca = controls.points[segment] @ dirs.T, edited[segment] @ dirs.T
    ax.plot(cb[:, 0], cb[:, 1], "o:", color="k", ms=5, lw=0.8)
    ax.plot(ca[:, 0], ca[:, 1], "x:", color="tab:red", ms=7, lw=0.8)
    ax.set(xlabel="direction 1", ylabel="direction 2",
           title="latent trajectory of the clip on its two leading directions (o, x: control points)")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.suptitle(f"{clip.name}: latent editing with {Path(engine.path).name}", fontsize=11)
    fig.tight_layout()
    return save_figure(fig, Path(out), dpi)


def layered(clip, neutral, edited):
    """The add-on's layer in the model's convention: the clip moved by edited - neutral (rotations in each
    joint's frame, positions added)."""
    from backend.maths import quat_np
    rot = quat_np.normalize(quat_np.mul(clip.rotations, quat_np.mul(quat_np.inv(neutral.rotations), edited.rotations)))
    return rot, clip.positions + edited.positions - neutral.positions


def layer_figure(checkpoint, clip_path, out, segment: int = 1, amount: float = 1.5, size=(1400, 900),
                 dpi=DPI) -> Path:
    from backend.formats.bvh import read_bvh
    from backend.maths import quat_np
    from backend.motion.edits import amplify
    from backend.motion.engine import DEFAULT_CHECKPOINT, Engine
    engine = Engine(checkpoint or DEFAULT_CHECKPOINT, "cpu")
    clip = read_bvh(clip_path)
    controls = engine.encode(clip)
    segment = min(segment, len(controls.segments) - 1)
    points = controls.points.astype(np.float64)
    pts = points.copy()
    pts[segment] = amplify(points[segment], amount)
    neutral, edited = engine.decode(controls, points=points), engine.decode(controls, points=pts)
    rot, pos = layered(clip, neutral, edited)
    names, parents = list(clip.skeleton.names), clip.skeleton.parents
    joint = next((j for j in JOINTS if j in names), names[2])
    j = names.index(joint)
    frames = np.arange(clip.num_frames)
    a, b = controls.segments[segment]
    fig, axes = new_figure(size, dpi, nrows=2, ncols=1)
    ax = axes[0]
    ax.plot(frames, joint_angle(clip.rotations, j), color="k", lw=2.6, label="original (the user's keys)")
    ax.plot(frames, joint_angle(neutral.rotations, j), color="tab:orange", lw=1.3,
            label="decode(encoded): what Encode used to write")
    ax.plot(frames[::3], joint_angle(clip.rotations, j)[::3], "o", color="tab:green", ms=3.5, mfc="none",
            label="layer at neutral = original")
    ax.plot(frames, joint_angle(rot, j), color="tab:red", lw=1.4, ls="--",
            label=f"layer, segment {segment + 1} amplified {amount:g}")
    ax.axvspan(a, b, color="tab:red", alpha=0.07)
    ax.set(xlabel="frame (shaded: the edited segment)", ylabel="rotation from rest (deg)",
           title=f"{joint}: the keys stay the user's until a slider moves")
    ax.legend(fontsize=8, ncol=2)
    ax.grid(alpha=0.3)
    gpos = quat_np.fk(clip.rotations, clip.positions, parents)[1]

    def drift(r, p):
        return np.linalg.norm(quat_np.fk(quat_np.normalize(r), p, parents)[1] - gpos, axis=-1).max(1)

    ax = axes[1]
    ax.plot(frames, drift(neutral.rotations, neutral.positions), color="tab:orange", lw=1.3,
            label="decode(encoded)")
    ax.plot(frames, np.zeros(len(frames)), color="tab:green", lw=2.0, label="layer at neutral: 0 on every frame")
    ax.plot(frames, drift(rot, pos), color="tab:red", lw=1.4, ls="--", label=f"layer, amplify {amount:g}")
    ax.axvspan(a, b, color="tab:red", alpha=0.07)
    ax.set(xlabel="frame", ylabel="largest joint distance from the original (cm)",
           title="how far each frame is from the user's motion")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.suptitle(f"{clip.name}: latent edits as a layer ({Path(engine.path).name})", fontsize=11)
    fig.tight_layout()
    return save_figure(fig, Path(out), dpi)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.edit_figure", description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", help="autoencoder .json (default: the shipped one)")
    ap.add_argument("--clip", type=Path, help=f"default: {CLIP.name} ({LAYER_CLIP.name} with --layer)")
    ap.add_argument("--out", type=Path, help=f"default: docs/{OUT.name} (docs/{LAYER_OUT.name} with --layer)")
    ap.add_argument("--segment", type=int, help="0-based segment to edit (default 2; 1 with --layer)")
    ap.add_argument("--layer", action="store_true", help="the edit layer over the original motion instead")
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    if args.layer:
        path = layer_figure(args.checkpoint, args.clip or LAYER_CLIP, args.out or LAYER_OUT,
                            1 if args.segment is None else args.segment)
    else:
        path = figure(args.checkpoint, args.clip or CLIP, args.out or OUT, 2 if args.segment is None else args.segment)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
