"""docs/latent-hand-edits.png: "your animation is the truth" on the example walk, through the add-on
itself in headless Blender (the same steps as tests/test_latent_hand_edits.py).

    .venv/bin/python scripts/hand_edit_figure.py [--out docs/latent-hand-edits.png] [--frames 1 125]

Encode, segment 2 amplified 1.5, then two keys of the Hips' height changed by hand (one on a frame the
layer writes, one in a neutral segment), then another segment's slider moved.  Top: your keys at Encode,
your keys after the edits (at neutral sliders, read after Reset All), and what the curve shows with the
slider on.  Bottom: what the layer adds (shown minus yours), before and after the hand edits: the same
offset, on top of the animation as it is now.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

PATH, INDEX = 'pose.bones["Hips"].location', 1


def values(obj) -> np.ndarray:
    from addon_helpers import channelbag
    fc = channelbag(obj).fcurves.find(PATH, index=INDEX)
    co = np.zeros(2 * len(fc.keyframe_points), np.float32)
    fc.keyframe_points.foreach_get("co", co)
    return co.reshape(-1, 2).astype(np.float64)


def edit(obj, frame: int, delta: float) -> None:
    from addon_helpers import bpy, channelbag
    fc = channelbag(obj).fcurves.find(PATH, index=INDEX)
    kp = next(k for k in fc.keyframe_points if abs(k.co.x - frame) < 1e-3)
    kp.co_ui = (kp.co.x, kp.co.y + delta)
    fc.update()
    bpy().context.view_layer.update()


def measure(frames=(1, 125)) -> dict:
    from addon_helpers import bpy
    from latent_helpers import segment_frames, setup_scene
    b = bpy()
    obj = setup_scene()
    assert b.ops.anim.splinetween_encode() == {"FINISHED"}
    st = obj.splinetween_latent
    at_encode = values(obj)
    st.segments[1].amplify = 1.5
    before = values(obj)
    a1, b1 = segment_frames(obj, 1)
    a3, b3 = segment_frames(obj, 3)
    f_layer, f_own = (a1 + b1) // 2, (a3 + b3) // 2
    edit(obj, f_layer, 4.0)
    edit(obj, f_own, -4.0)
    st.segments[6].amplify = 2.0  # a slider far away: the layer writes again, over the edited animation
    shown = values(obj)
    assert b.ops.anim.splinetween_latent_reset(segment=-1) == {"FINISHED"}
    yours = values(obj)
    lo, hi = frames
    keep = lambda a: a[(a[:, 0] >= lo) & (a[:, 0] <= hi)]
    return {"at_encode": keep(at_encode), "before": keep(before), "shown": keep(shown), "yours": keep(yours),
            "edits": (f_layer, f_own), "segment": (a1, b1), "edited_note": bool(st.base_edited)}


def draw(m: dict, out: Path) -> Path:
    from training.plots import new_figure, save_figure
    fig, (top, bottom) = new_figure((1300, 850), nrows=2, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    a, b = m["segment"]
    for ax in (top, bottom):
        ax.axvspan(a, b, color="#f4e3c1", zorder=0)
    top.plot(*m["at_encode"].T, color="0.6", lw=1.2, label="your keys at Encode")
    top.plot(*m["yours"].T, color="black", lw=1.6, label="your keys now (two changed by hand): neutral sliders")
    top.plot(*m["shown"].T, color="#c0392b", lw=1.4, ls="--", label="shown: segment 2 amplified 1.5 on top")
    for f in m["edits"]:
        y = m["yours"][np.abs(m["yours"][:, 0] - f) < 1e-3, 1]
        top.plot([f], y, "o", ms=9, mfc="none", mec="#2471a3", mew=2)
    top.plot([], [], "o", ms=9, mfc="none", mec="#2471a3", mew=2, label="keys changed by hand after Encode")
    top.set_ylabel("Hips location Y")
    top.legend(loc="upper left", fontsize=9)
    top.set_title("Your animation is the truth: the sliders add an offset on top of it as it is now")
    off_before = m["before"][:, 1] - m["at_encode"][:, 1]
    off_after = m["shown"][:, 1] - m["yours"][:, 1]
    bottom.plot(m["before"][:, 0], off_before, color="0.6", lw=3, label="what the layer adds, before the hand edits")
    bottom.plot(m["shown"][:, 0], off_after, color="#c0392b", lw=1.4, ls="--",
                label="what the layer adds, after them (the same)")
    bottom.set_ylabel("shown − yours")
    bottom.set_xlabel("frame (segment 2 shaded)")
    bottom.legend(loc="upper right", fontsize=9)
    return save_figure(fig, out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "latent-hand-edits.png")
    ap.add_argument("--frames", type=int, nargs=2, default=(1, 125))
    args = ap.parse_args(argv)
    m = measure(tuple(args.frames))
    gap = np.abs((m["shown"][:, 1] - m["yours"][:, 1]) - (m["before"][:, 1] - m["at_encode"][:, 1])).max()
    print(f"edited frames {m['edits']}; panel note on: {m['edited_note']}; the layer's offset before and after "
          f"the hand edits differs by at most {gap:.2e}")
    print(draw(m, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
