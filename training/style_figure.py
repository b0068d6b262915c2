"""python -m training.style_figure --data BANDAI2 [-o docs/style-figure.png]: a normal walk styled, beside
real clips performed in those styles.

Rows: *normal*, *elderly*, *exhausted* and *masculine* -- the issue's "proud" is not one of dataset 2's
styles; masculine ("a wider stance and broader arm swing", chest out) is the nearest stored one, active
the other candidate.  Left column: the same normal test-split walk (``dataset-2_walk_normal_005``) through
the autoencoder with the style's direction at strength 1 (``backend.motion.style.styled_decode``, root
path pinned, contact pass on), the plain decode in the top row.  Middle column: the same walk with Match
Style (``backend.motion.style_match``), the right column's clip as the reference.  Right column: a real test-split walk
performed in that style (``dataset-2_walk_{style}_005``).  Each cell: stick figures (forward kinematics of
the joints) at evenly spaced frames over the first 2 s, seen from the side, each pose centred on its
pelvis and set one step to the right of the last, so postures compare, not paths.

    python -m training.style_figure --data /tmp/data/bandai-namco-2/bvh
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROWS = ("normal", "elderly", "exhausted", "masculine")
TAKE = 5  # a test-split id (id % 10 == 5)


def side_view(clip, frames: int = 6, span_s: float = 2.0):
    """[(bones [(a, b)] in 2-D)] for ``frames`` poses: x along the walk's ground direction, y up (BVH's Y)."""
    from backend.maths import quat_np
    _, g = quat_np.fk(quat_np.normalize(clip.rotations), clip.positions, clip.skeleton.parents)
    last = min(clip.num_frames - 1, int(round(span_s / clip.frame_time)))
    at = np.linspace(0, last, frames).round().astype(int)
    root = 1 if clip.skeleton.num_joints > 1 else 0  # the hips (joint 0 is Bandai's ground-plane root)
    travel = g[last, root, [0, 2]] - g[0, root, [0, 2]]
    fwd = travel / max(float(np.linalg.norm(travel)), 1e-9)
    poses = []
    for f in at:
        p = g[f] - g[f, root] * np.array([1.0, 0.0, 1.0])  # pelvis over the origin, heights kept
        x, y = p[:, [0, 2]] @ fwd, p[:, 1]
        poses.append([((x[j], y[j]), (x[q], y[q])) for j, q in enumerate(clip.skeleton.parents) if q > 0])
    return poses


def draw(ax, poses, step: float, colour: str) -> None:
    for i, bones in enumerate(poses):
        for (x0, y0), (x1, y1) in bones:
            ax.plot([x0 + i * step, x1 + i * step], [y0, y1], color=colour, lw=1.6, solid_capstyle="round")
    ax.set_aspect("equal")
    ax.axis("off")


def clips(data: Path):
    """{row: (styled edit, matched edit, real clip)} at the model's rate, and the mixes Match Style read."""
    from backend.formats.bvh import read_bvh
    from backend.maths import timebase
    from backend.motion import style as style_edit
    from backend.motion import style_match
    from backend.motion.engine import Engine
    engine = Engine(None, "cpu", runtime="onnx")

    def real(style):
        return timebase.to_model_rate(read_bvh(data / f"dataset-2_walk_{style}_{TAKE:03d}.bvh"), engine.frame_time)

    src = real("normal")
    ctl = engine.encode(src)
    out, mixes = {}, {}
    for row in ROWS:
        asked = {} if row == "normal" else {row: 1.0}
        ref = real(row)
        mixes[row] = style_match.read_style(engine.styles(), engine.encode(ref).points, ctl.points)
        matched = {} if row == "normal" else mixes[row]  # (the source against itself: nothing to read)
        out[row] = (style_edit.styled_decode(engine, ctl, ctl.points, asked, like=src),
                    style_edit.styled_decode(engine, ctl, ctl.points, matched, like=src), ref)
    return out, mixes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.style_figure", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, type=Path, help="Bandai dataset 2's BVH folder")
    ap.add_argument("-o", "--out", type=Path, default=Path("docs/style-figure.png"))
    args = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from backend.motion import style_match
    got, mixes = clips(args.data)
    fig, axes = plt.subplots(len(ROWS), 3, figsize=(18, 2.3 * len(ROWS)))
    step = 70.0  # cm between poses
    for r, row in enumerate(ROWS):
        edit, matched, real = got[row]
        draw(axes[r, 0], side_view(edit), step, "#1f5fa8" if row != "normal" else "#444444")
        draw(axes[r, 1], side_view(matched), step, "#2e8b57" if row != "normal" else "#444444")
        draw(axes[r, 2], side_view(real), step, "#b5452b" if row != "normal" else "#444444")
        label = row + (' (for "proud")' if row == "masculine" else "")
        axes[r, 0].set_title(f"normal walk, {label} style at strength 1" if row != "normal"
                             else "normal walk (the autoencoder's plain decode)", fontsize=9, loc="left")
        print(f"{row}: Match Style reads the real clip as {style_match.describe(mixes[row])}")
        axes[r, 1].set_title("the plain decode (the source is its own reference)" if row == "normal" else
                             "Match Style to the right's clip, read as " + ", ".join(style_match.describe(mixes[row]).split(", ")[:2]),
                             fontsize=9, loc="left")
        axes[r, 2].set_title(f"real clip performed {label}: dataset-2_walk_{row}_{TAKE:03d}", fontsize=9, loc="left")
    y0 = min(a.get_ylim()[0] for a in axes.flat)
    y1 = max(a.get_ylim()[1] for a in axes.flat)
    x1 = max(a.get_xlim()[1] for a in axes.flat)
    x0 = min(a.get_xlim()[0] for a in axes.flat)
    for a in axes.flat:  # one scale everywhere: heights compare across cells
        a.set_ylim(y0, y1)
        a.set_xlim(x0, x1)
    fig.suptitle("Style as a control: the same normal walk styled by name (left) and by Match Style (middle) beside real "
                 "clips in each style (right); "
                 "poses every 0.4 s, side view", fontsize=10)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
