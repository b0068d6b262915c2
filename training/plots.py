"""PNG plots of a run and of a checkpoint (matplotlib, Agg backend).

    python -m training.plots curves RUN_DIR [--out PNG]            training loss + validation error
    python -m training.plots latent CKPT CLIP.bvh [--out PNG]      latent spline of a clip (the paper's Fig. 8)
    python -m training.plots recon CKPT CLIP.bvh [--out PNG]       ground truth vs reconstruction, per joint

``curves`` reads RUN_DIR/history.json, or, for a run still in progress, the history kept in
RUN_DIR/last.json.  Every figure is ``--size`` pixels exactly (default per plot).

Longer than 300 lines: short plots sharing the run's reading and one figure style.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

SIZES = {"curves": (1200, 500), "latent": (1200, 700), "recon": (1200, 900)}
DPI = 100


class PlotError(ValueError):
    pass


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def new_figure(size, dpi=DPI, **kw):
    plt = pyplot()
    w, h = size
    return plt.subplots(figsize=(w / dpi, h / dpi), dpi=dpi, **kw)


def save_figure(fig, out: Path, dpi=DPI) -> Path:
    """Save without bbox_inches='tight', so the PNG is exactly the asked-for size."""
    plt = pyplot()
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=dpi, format="png")
    except OSError as e:
        raise PlotError(f"{out}: cannot write the plot ({e.strerror})") from None
    finally:
        plt.close(fig)
    return out


# -- training curves --------------------------------------------------------------------

def read_history(run_dir) -> tuple[list[dict], Path]:
    """The run's history entries and the file they came from."""
    p = Path(run_dir)
    if p.is_file():
        candidates = [p]
    else:
        if not p.exists():
            raise PlotError(f"{p}: run folder not found")
        candidates = [p / "history.json", p / "last.json"]
    for f in candidates:
        if not f.exists():
            continue
        try:
            doc = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            raise PlotError(f"{f}: cannot read the history ({e})") from None
        if isinstance(doc, list):
            return doc, f
        # training state (training.state): {"$d": [[key, value], ...]}, the history holds no tensors
        for k, v in doc.get("$d", []) if isinstance(doc, dict) else []:
            if k == "history":
                from .state import join_tensors
                return join_tensors(v, {}), f
        raise PlotError(f"{f}: no training history in this file")
    raise PlotError(f"{p}: no history.json or last.json (is this a training run folder?)")


def plot_curves(run_dir, out, size=SIZES["curves"], dpi=DPI) -> Path:
    history, src = read_history(run_dir)
    train = [e for e in history if "loss" in e]
    val = [e for e in history if "val_rot_deg" in e]
    if not train and not val:
        raise PlotError(f"{src}: the history has no 'loss' or 'val_rot_deg' entries yet")
    fig, (ax_l, ax_v) = new_figure(size, dpi, ncols=2)
    if train:
        steps = [e["step"] for e in train]
        ax_l.plot(steps, [e["loss"] for e in train], color="k", lw=1.5, label="total")
        for k, c in (("feat", "tab:blue"), ("fk", "tab:orange")):
            if all(k in e for e in train):
                ax_l.plot(steps, [e[k] for e in train], color=c, lw=1, alpha=0.8, label=k)
        if min(e["loss"] for e in train) > 0:
            ax_l.set_yscale("log")
        ax_l.legend(loc="upper right")
    else:
        ax_l.text(0.5, 0.5, "no training loss logged yet", ha="center", transform=ax_l.transAxes)
    ax_l.set(xlabel="step", ylabel="loss", title="training loss")
    ax_l.grid(alpha=0.3, which="both")
    if val:
        steps, errs = [e["step"] for e in val], [e["val_rot_deg"] for e in val]
        ax_v.plot(steps, errs, "o-", color="tab:green", ms=3, lw=1.5)
        b = int(np.argmin(errs))
        ax_v.plot([steps[b]], [errs[b]], "*", color="tab:red", ms=12,
                  label=f"best {errs[b]:.2f}° at step {steps[b]}")
        ax_v.legend(loc="upper right")
    else:
        ax_v.text(0.5, 0.5, "no validation yet", ha="center", transform=ax_v.transAxes)
    ax_v.set(xlabel="step", ylabel="mean local rotation error (deg)", title="validation")
    ax_v.grid(alpha=0.3)
    fig.suptitle(str(src.parent.name if src.name in ("history.json", "last.json") else src.name))
    fig.tight_layout()
    return save_figure(fig, out, dpi)


# -- latent spline (Fig. 8) ---------------------------------------------------------------

def _engine_and_clip(ckpt, clip_path):
    from backend.formats.bvh import read_bvh
    from backend.motion.engine import Engine
    engine = Engine(ckpt, device="cpu")
    clip = read_bvh(clip_path)
    engine.check_clip(clip)
    return engine, clip


def latent_spline(engine, clip, segment: int = 0, features: int = 8, samples: int = 256) -> dict:
    """The latent Bezier spline of one segment, densely sampled, and its most varying features."""
    from backend.maths import splines
    if engine.ckpt.config.family != "spline":
        raise PlotError(f"{engine.path}: a {engine.ckpt.config.family!r} checkpoint has no latent spline "
                        "(the latent plot needs the spline family)")
    controls = engine.encode(clip)
    n_seg = len(controls.segments)
    if not -n_seg <= segment < n_seg:
        raise PlotError(f"--segment={segment}: {clip.name} has {n_seg} segment(s) of at most "
                        f"{engine.ckpt.window} frames (0..{n_seg - 1})")
    segment %= n_seg
    points = controls.points[segment].astype(np.float64)  # [K, d]
    k = points.shape[0]
    t = np.linspace(0.0, 1.0, samples)
    curve = splines.evaluate(points, splines.bezier_basis(k - 1, t))  # [samples, d]
    order = np.argsort(-curve.var(0), kind="stable")[:features]
    return {"t": t, "curve": curve, "points": points, "control_t": np.linspace(0.0, 1.0, k),
            "features": order, "segment": segment, "segments": controls.segments, "name": clip.name}


def plot_latent(ckpt, clip_path, out, segment=0, features=8, size=SIZES["latent"], dpi=DPI) -> Path:
    engine, clip = _engine_and_clip(ckpt, clip_path)
    d = latent_spline(engine, clip, segment, features)
    a, b = d["segments"][d["segment"]]
    fig, ax = new_figure(size, dpi)
    colors = pyplot().get_cmap("tab10")
    for i, f in enumerate(d["features"]):
        c = colors(i % 10)
        ax.plot(d["t"], d["curve"][:, f], color=c, lw=2, label=f"z[{f}]")
        ax.plot(d["control_t"], d["points"][:, f], "o--", color=c, lw=0.8, ms=7, alpha=0.7)
    for tk in d["control_t"]:
        ax.axvline(tk, color="0.6", lw=0.8, ls=":")
    ax.set_xticks(d["control_t"], [f"{tk:.3g}" for tk in d["control_t"]])
    ax.set(xlim=(-0.02, 1.02), xlabel="position along the spline t (dotted: control points P0..P3 at t = k/3)",
           ylabel="latent value")
    top = ax.secondary_xaxis("top", functions=(lambda t: a + t * (b - a), lambda f: (f - a) / max(b - a, 1)))
    top.set_xlabel("frame")
    ax.set_title(f"{d['name']}: latent spline of segment {d['segment']} (frames {a}-{b}); "
                 f"the {len(d['features'])} of {d['curve'].shape[1]} features that vary most "
                 "(lines: curve, circles: control points)", fontsize=10)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, out, dpi)


# -- reconstruction curves ----------------------------------------------------------------

def recon_curves(engine, clip, joints: list[str] | None = None, count: int = 4) -> dict:
    """Per joint, ground-truth and reconstructed Euler angles (degrees, in the joint's channel order).

    The ground truth is the file's own channel values, unwrapped over time (no 360-degree jumps);
    the reconstruction's angles are the Euler solution nearest them frame by frame (as a BVH export
    with the source as reference writes them), so the curves are comparable.
    """
    from backend.formats.bvh import clip_to_channels
    from backend.maths import quat_np
    skel = clip.skeleton
    rec = engine.reconstruct([clip])[0]
    gt_ch = clip.meta.get("source_channels")
    if gt_ch is None:
        gt_ch = clip_to_channels(clip)
    cols, col = {}, 0
    for j, ch in enumerate(skel.channels):
        rot = [(col + i, c[0]) for i, c in enumerate(ch) if c.endswith("rotation")]
        if rot:
            cols[j] = rot
        col += len(ch)
    gt_ch = np.array(gt_ch, dtype=np.float64)
    rot_cols = [c for cs in cols.values() for c, _ in cs]
    gt_ch[:, rot_cols] = np.unwrap(gt_ch[:, rot_cols], period=360.0, axis=0)
    rec_ch = clip_to_channels(rec, reference=gt_ch)
    if joints:
        missing = [n for n in joints if n not in skel.names]
        if missing:
            raise PlotError(f"--joints: {', '.join(missing)} not in the skeleton ({', '.join(skel.names)})")
        picked = [skel.index(n) for n in joints]
        norot = [skel.names[j] for j in picked if j not in cols]
        if norot:
            raise PlotError(f"--joints: {', '.join(norot)} has no rotation channels")
    else:  # the joints that rotate most (spread of the rotation matrices: blind to Euler wrapping)
        spread = {j: float(quat_np.to_matrix(clip.rotations[:, j]).reshape(-1, 9).std(0).sum()) for j in cols}
        picked = sorted(spread, key=lambda j: -spread[j])[:count]
    err = np.degrees(quat_np.angle_between(rec.rotations, clip.rotations))  # [F, J]
    return {"frames": np.arange(clip.num_frames), "name": clip.name, "fps": clip.fps,
            "joints": [{"name": skel.names[j], "axes": [a for _, a in cols[j]],
                        "gt": gt_ch[:, [c for c, _ in cols[j]]], "rec": rec_ch[:, [c for c, _ in cols[j]]],
                        "err_deg": float(err[:, j].mean())} for j in picked]}


def plot_recon(ckpt, clip_path, out, joints=None, count=4, size=SIZES["recon"], dpi=DPI) -> Path:
    engine, clip = _engine_and_clip(ckpt, clip_path)
    d = recon_curves(engine, clip, joints, count)
    n = len(d["joints"])
    fig, axes = new_figure(size, dpi, nrows=n, sharex=True, squeeze=False)
    colors = {"X": "tab:red", "Y": "tab:green", "Z": "tab:blue"}
    for ax, jd in zip(axes[:, 0], d["joints"], strict=True):
        for i, a in enumerate(jd["axes"]):
            ax.plot(d["frames"], jd["gt"][:, i], color=colors[a], lw=1.8, label=f"{a} truth")
            ax.plot(d["frames"], jd["rec"][:, i], color=colors[a], lw=1.4, ls="--", label=f"{a} recon")
        ax.set_ylabel("deg")
        ax.set_title(f"{jd['name']} ({''.join(jd['axes'])}): mean error {jd['err_deg']:.2f}°", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
    axes[-1, 0].set_xlabel(f"frame ({d['fps']:.0f} fps)")
    fig.suptitle(f"{d['name']}: local rotations, ground truth (solid) vs reconstruction (dashed), "
                 f"{Path(str(engine.path)).name}", fontsize=11)
    fig.tight_layout()
    return save_figure(fig, out, dpi)


# -- command line -------------------------------------------------------------------------

def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: use WIDTHxHEIGHT in pixels, e.g. 1200x600") from None
    if not (100 <= w <= 10000 and 100 <= h <= 10000):
        raise argparse.ArgumentTypeError(f"{text!r}: width and height must be between 100 and 10000 pixels")
    return w, h


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m training.plots", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("curves", help="training loss and validation error of a run")
    c.add_argument("run", type=Path, metavar="RUN_DIR", help="run folder (history.json or last.json), or the file")
    la = sub.add_parser("latent", help="latent spline trajectories of a clip (Fig. 8)")
    r = sub.add_parser("recon", help="ground truth vs reconstruction, local rotations per joint")
    for p in (la, r):
        p.add_argument("checkpoint", type=Path, metavar="CKPT", help="checkpoint .json")
        p.add_argument("clip", type=Path, metavar="CLIP.bvh")
    la.add_argument("--segment", type=int, default=0, help="which segment of a long clip (default 0)")
    la.add_argument("--features", type=int, default=8, help="how many latent features to draw (default 8)")
    r.add_argument("--joints", help="comma separated joint names (default: the --count that move most)")
    r.add_argument("--count", type=int, default=4, help="joints to draw without --joints (default 4)")
    for p in (c, la, r):
        p.add_argument("--out", type=Path, help="PNG to write (default: next to the input)")
        p.add_argument("--size", type=_size, help=f"WIDTHxHEIGHT in pixels (default {SIZES[p.prog.split()[-1]][0]}x"
                                                  f"{SIZES[p.prog.split()[-1]][1]})")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    size = args.size or SIZES[args.command]
    try:
        if args.command == "curves":
            out = args.out or (args.run if args.run.is_dir() else args.run.parent) / "curves.png"
            path = plot_curves(args.run, out, size)
        else:
            stem = f"{args.clip.stem}_{args.command}.png"
            out = args.out or Path(args.checkpoint).parent / stem
            if args.command == "latent":
                if args.features < 1:
                    raise PlotError(f"--features={args.features}: draw at least one")
                path = plot_latent(args.checkpoint, args.clip, out, args.segment, args.features, size)
            else:
                joints = [s.strip() for s in args.joints.split(",") if s.strip()] if args.joints else None
                if args.count < 1:
                    raise PlotError(f"--count={args.count}: draw at least one joint")
                path = plot_recon(args.checkpoint, args.clip, out, joints, args.count, size)
    except ValueError as e:  # PlotError, CheckpointError, BVHError, EngineError
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
