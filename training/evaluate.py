"""Evaluate a checkpoint on the fixed protocol windows (61 frames, stride 61), in four kinds of column.

    python -m training.evaluate CHECKPOINT [--data PATHS] [--other-data NAME=PATH,...] [--left-out NAME=PATH]
                                [--split test|val]
                                [--cache DIR] [--out DIR] [--limit N] [--device cpu] [--baselines-only]
                                [--blender-baseline]

The data README's generalisation protocol: *familiar* is the split (test, or val for choosing
designs) without the left-out kinds (training.data.LEAVE_OUT); *unfamiliar* is the clips of the
left-out kinds in the validation and test splits (validation only with --split val).  A model
trained with --leave_out=protocol has never seen the unfamiliar kinds; the report says whether
this checkpoint's training did.  *Other studio* is other studios' capture (``--other-data``, by
default the validation sets of CMU (subjects 05 and 09), HDM05 (performer tr) and ReActIdle (012-015),
whatever the split, as they have no test split) and their mean, each set weighing the same: the figure
designs are chosen on.  *Left-out studio* (``--left-out``) is every clip of a studio the checkpoint was
trained without.  Other studios are converted to the model's skeleton by ``backend.humanoid`` as the
add-on and the batch convert them.

Reconstruction (Engine.encode + decode of each window, segments as the add-on cuts them): local
joint-rotation error and MPJPE of global positions.  In-betweening (keys every k frames plus the
last frame): MPJPE, L2Q and NPSS on the non-key frames, for the model with its guard (as shipped)
and without (and without planted feet, and with the guard at every spacing), next to LERP/SLERP (and
Blender's Bezier with --blender-baseline) on the same windows; beside them the foot-sliding figure
(``foot_sliding``: cm/s of a foot the capture plants).
Writes OUT/eval-<split>.md and .json (OUT defaults to the checkpoint's folder).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from backend.maths import quat_np

from . import metrics
from .data import DEFAULT_DATA, LEAVE_OUT, OTHER_STUDIOS, SPLITS, DataError, Selection, load_split, protocol_windows

WINDOW = 61
SPACINGS = (5, 15, 30)


class EvalError(ValueError):
    pass


def columns(split: str) -> dict[str, Selection]:
    """The protocol's two columns for ``split`` (test: report; val: choose designs)."""
    return {"familiar": Selection((split,), exclude=LEAVE_OUT),
            "unfamiliar": Selection(("val", "test") if split == "test" else (split,), kinds=LEAVE_OUT)}


def load_windows(data, split, cache=None, limit=None, length=WINDOW, skeleton=None, every=1):
    """Protocol windows of a split (or Selection): (rot [W, F, J, 4], pos [W, F, J, 3] float64, MotionSet);
    ``every`` n: every n-th window only (a quicker reading of every clip)."""
    ms = load_split(data, split, cache, verbose=False, skeleton=skeleton)
    idx = protocol_windows(ms, length, length)[::max(1, every)]
    if limit:
        idx = idx[:limit]
    if len(idx) == 0:
        raise EvalError(f"{data}: split {split!r} has no clip of at least {length} frames")
    return ms.rotations[idx].astype(np.float64), ms.positions[idx].astype(np.float64), ms


@torch.inference_mode()
def reconstruct_windows(engine, rot, pos, batch=256):
    """Encode + decode each window through Engine.encode / decode (segments of the checkpoint's
    window, eased seams), as the add-on and the CLI do; encoding is batched."""
    from backend.motion.skeleton import Clip
    out_r, out_p = np.empty_like(rot), np.empty_like(pos)
    for a in range(0, len(rot), batch):
        clips = [Clip(engine.skeleton, rot[i], pos[i], name=f"window {i}") for i in range(a, min(a + batch, len(rot)))]
        for i, (clip, ctrl) in enumerate(zip(clips, engine.encode(clips), strict=True), start=a):
            dec = engine.decode(ctrl, like=clip)
            out_r[i], out_p[i] = dec.rotations, dec.positions
    return out_r, out_p


def evaluate_reconstruction(pred_rot, pred_pos, rot, pos, parents, rotation_joints=None):
    """Local rotation error (over the modelled rotation joints) and global MPJPE, all frames."""
    j = slice(None) if rotation_joints is None else list(rotation_joints)
    mean_deg, mse_deg2 = metrics.rotation_errors_deg(pred_rot[..., j, :], rot[..., j, :])
    gpos_pred = quat_np.fk(quat_np.normalize(pred_rot), pred_pos, parents)[1]
    gpos_true = quat_np.fk(rot, pos, parents)[1]
    return {"rot_deg": mean_deg, "rot_sq_deg2": mse_deg2, "mpjpe_cm": metrics.mpjpe_cm(gpos_pred, gpos_true)}


def _inbetween_scores(pred_rot, pred_pos, true_grot, true_gpos, parents, nonkey):
    grot, gpos = quat_np.fk(quat_np.normalize(pred_rot[:, nonkey]), pred_pos[:, nonkey], parents)
    grot = metrics.align_signs(grot, true_grot)
    return {"mpjpe_cm": metrics.mpjpe_cm(gpos, true_gpos), "l2q": metrics.l2q(grot, true_grot),
            "npss": metrics.npss(grot, true_grot)}


def foot_sliding(skeleton, windows_rot, windows_pos, pred_rot, pred_pos, keys, frame_time: float) -> float:
    """Mean speed (the data's unit per second: cm/s) of the predicted feet over the frame steps in which
    the capture plants them (``backend.motion.inbetween.contacts.planted_steps``: low and still), key-to-key steps aside;
    NaN where the skeleton has no legs by name."""
    from backend.motion.inbetween import contacts as C
    legs = C.find_legs(skeleton.names, skeleton.parents)
    if not legs:
        return float("nan")
    steps = [C.planted_steps(skeleton.parents, legs, windows_rot[w], windows_pos[w], pred_rot[w], pred_pos[w], keys,
                             frame_time) for w in range(len(windows_rot))]
    steps = np.concatenate(steps)
    return float(steps.mean()) if len(steps) else float("nan")


def evaluate_inbetween(predict, windows_rot, windows_pos, parents, spacings=SPACINGS, skeleton=None,
                       frame_time: float = 1.0 / 30.0):
    """In-betweening scores on non-key frames: {k: {"lerp_slerp": {...}, "model": {...}}}.

    ``predict(rot, pos, key_idx) -> (rot, pos)`` gets the windows with every non-key frame
    set to NaN (so it cannot read them; a leak shows as NaN scores), or is None for the
    baseline alone.  NPSS treats each window's non-key frames, in order, as one sequence;
    ground-truth global quaternions are made continuous in time first.  With ``skeleton`` each method
    also gets ``foot_cm_s`` (``foot_sliding``) and each spacing ``capture_foot_cm_s``, the capture's own.
    """
    out = {}
    f = windows_rot.shape[1]
    for k in spacings:
        keys = metrics.protocol_keys(f, k)
        nonkey = np.setdiff1d(np.arange(f), keys)
        true_grot, true_gpos = quat_np.fk(windows_rot[:, nonkey], windows_pos[:, nonkey], parents)
        true_grot = quat_np.fix_hemisphere(true_grot, axis=1)
        sr, sp = metrics.lerp_slerp_inbetween(windows_rot, windows_pos, keys)
        res = {"keys": keys.tolist(), "lerp_slerp": _inbetween_scores(sr, sp, true_grot, true_gpos, parents, nonkey)}
        feet = [("lerp_slerp", sr, sp)]
        if predict is not None:
            rot, pos = windows_rot.copy(), windows_pos.copy()
            rot[:, nonkey], pos[:, nonkey] = np.nan, np.nan
            pr, pp = predict(rot, pos, keys)
            pr, pp = np.asarray(pr, np.float64), np.asarray(pp, np.float64)
            res["model"] = _inbetween_scores(pr, pp, true_grot, true_gpos, parents, nonkey)
            feet.append(("model", pr, pp))
        if skeleton is not None:
            for name, r, p in feet:
                res[name]["foot_cm_s"] = foot_sliding(skeleton, windows_rot, windows_pos, r, p, keys, frame_time)
            res["capture_foot_cm_s"] = foot_sliding(skeleton, windows_rot, windows_pos, windows_rot, windows_pos,
                                                    keys, frame_time)
        out[k] = res
    return out


def curves_predictor(skeleton):
    """``predict(rot, pos, keys)``: Blender's default F-curves through the keys (``backend.motion.inbetween.blender_curves``, the
    numpy twin of ``training.blender_baseline``'s real-bpy curves; tests/test_fcurves.py holds them equal)."""
    from backend.motion.inbetween import blender_curves as fcurves

    def predict(rot, pos, keys):
        out = [fcurves.fill(skeleton, rot[w], pos[w], keys) for w in range(len(rot))]
        return np.stack([r for r, _ in out]), np.stack([p for _, p in out])
    return predict


def inbetween_predictor(engine, batch: int = 256):
    """``predict(rot, pos, keys)`` over windows [W, F, J, *] through ``Engine.inbetween`` (batched)."""
    from backend.motion.skeleton import Clip

    def predict(rot, pos, keys):
        out_r, out_p = np.empty_like(rot), np.empty_like(pos)
        keys = [int(k) for k in keys]
        for a in range(0, len(rot), batch):
            clips = [Clip(engine.skeleton, rot[i], pos[i], name=f"window {i}") for i in range(a, min(a + batch, len(rot)))]
            for i, (res, _) in enumerate(engine.inbetween(clips, [keys] * len(clips)), start=a):
                out_r[i], out_p[i] = res.rotations, res.positions
        return out_r, out_p
    return predict


LABELS = {"model": "Splinetween (guarded, as shipped)", "model_unguarded": "Splinetween without the guard",
          "model_asymmetric": "Splinetween without the mirror average",
          "model_free_feet": "Splinetween without planted feet (contacts off)",
          "model_guard_every_gap": "Splinetween, guard hiding keys at every spacing",
          "lerp_slerp": "LERP/SLERP", "blender_bezier": "Blender Bézier (auto-clamped)"}


def summary(cols: dict) -> list[str]:
    """The shipped model in every column at a glance: L2Q ÷ SLERP, MPJPE ÷ Blender's Bézier (when
    measured) and its feet beside the capture's, per spacing."""
    names = [n for n in cols if all("model" in r for r in cols[n]["inbetween"].values())]
    if not names:
        return []
    ks = list(cols[names[0]]["inbetween"])
    out = ["Splinetween as shipped, per column: L2Q ÷ SLERP · MPJPE ÷ Blender's Bézier · feet (cm/s; the "
           "capture's own in brackets).", "", "| column | " + " | ".join(f"keys every {k}" for k in ks) + " |",
           "|---|" + "---|" * len(ks)]
    for n in names:
        cells = []
        for k in ks:
            r = cols[n]["inbetween"][k]
            bez = (f"{r['model']['mpjpe_cm'] / r['blender_bezier']['mpjpe_cm']:.2f}" if "blender_bezier" in r
                   else "—")
            cells.append(f"{r['model']['l2q'] / r['lerp_slerp']['l2q']:.2f} · {bez} · "
                         f"{r['model'].get('foot_cm_s', float('nan')):.1f} ({r.get('capture_foot_cm_s', float('nan')):.1f})")
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    return out + [""]


def mean_column(parts: list[dict]) -> dict:
    """The mean of several studios' columns, each set weighing the same (not each window): every figure
    the columns share, averaged."""
    def avg(items):
        if all(isinstance(i, dict) for i in items):
            keys = set(items[0]).intersection(*items[1:])
            return {k: avg([i[k] for i in items]) for k in items[0] if k in keys}
        if all(isinstance(i, (int, float)) and not isinstance(i, bool) for i in items):
            return float(np.mean(items))
        return items[0]
    out = {"windows": sum(p["windows"] for p in parts), "clips": sum(p["clips"] for p in parts),
           "what": f"the mean of the {len(parts)} sets above, each set weighing the same"}
    for key in ("inbetween", "reconstruction"):
        if all(key in p for p in parts):
            out[key] = avg([p[key] for p in parts])
    return out


def studio_sources(spec: str) -> dict[str, str]:
    """``NAME=PATH,NAME=PATH`` (or one bare PATH, named "") -> {studio: path}."""
    out = {}
    for item in (i.strip() for i in (spec or "").split(",")):
        if item:
            name, _, path = item.rpartition("=")
            out[name] = path
    return out


def markdown(report: dict) -> str:
    cols = report["columns"]
    names = list(cols)
    seen = report.get("left_out_in_training")
    lines = [f"# Evaluation on the {report['split']} split: " + ", ".join(names), "",
             f"- checkpoint: `{report.get('checkpoint') or 'none (baselines only)'}`",
             f"- data: `{report['data']}`"]
    for name, c in cols.items():
        lines.append(f"- {name}: {c['windows']} windows of {report['window']} frames (stride {report['window']}) "
                     f"from {c['clips']} clips: {c['what']}")
    if seen is not None:
        lines.append("- the unfamiliar kinds were " + ("**left out** of this checkpoint's training"
                                                       if seen else "**in** this checkpoint's training data (so the "
                                                       "unfamiliar column is not unfamiliar to it)"))
    lines.append("")
    if all("reconstruction" in cols[n] for n in names):
        lines += ["## Reconstruction (encode + decode, all frames)", "",
                  "| metric | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for key, label in (("rot_deg", "local rotation error, mean geodesic (deg)"),
                           ("rot_sq_deg2", "local rotation error, mean squared (deg²)"),
                           ("mpjpe_cm", "MPJPE, global positions (cm)")):
            lines.append(f"| {label} | " + " | ".join(f"{cols[n]['reconstruction'][key]:.3f}" for n in names) + " |")
        lines.append("")
    if all("inbetween" in cols[n] for n in names):
        lines += ["## In-betweening (non-key frames; keys every k frames + last frame)", "",
                  "Feet: mean speed of a foot joint (ankle, toes) over the frame steps in which the capture "
                  "plants it (low and still, `backend.motion.inbetween.contacts`); the capture's own speed there is "
                  "the floor.", ""]
        lines += summary(cols)
        for n in names:  # one table per column: every method beside its baselines
            bez = all("blender_bezier" in cols[n]["inbetween"][k] for k in cols[n]["inbetween"])
            lines += [f"### {n}", "", f"| k | method | {n} MPJPE (cm) | {n} L2Q | {n} NPSS | {n} L2Q ÷ SLERP | "
                      + (f"{n} MPJPE ÷ Bézier | " if bez else "") + f"{n} feet (cm/s) |",
                      "|---:|---|" + "---:|" * (6 if bez else 5)]
            for k, res in cols[n]["inbetween"].items():
                for method, label in LABELS.items():
                    if method not in res:
                        continue
                    m = res[method]
                    cells = [f"{m['mpjpe_cm']:.3f}", f"{m['l2q']:.4f}", f"{m['npss']:.5f}",
                             f"{m['l2q'] / res['lerp_slerp']['l2q']:.3f}"]
                    if bez:
                        cells.append(f"{m['mpjpe_cm'] / res['blender_bezier']['mpjpe_cm']:.3f}")
                    cells.append(f"{m.get('foot_cm_s', float('nan')):.2f}")
                    lines.append(f"| {k} | {label} | " + " | ".join(cells) + " |")
                if "capture_foot_cm_s" in res:
                    lines.append(f"| {k} | the capture itself | 0 | 0 | 0 | — | " + ("— | " if bez else "")
                                 + f"{res['capture_foot_cm_s']:.2f} |")
            lines.append("")
    return "\n".join(lines)


def _column(engine, args, data, sel, skeleton, bezier):
    """One column's scores: {windows, clips, what, reconstruction | inbetween}."""
    rot, pos, ms = load_windows(data, sel, args.cache, args.limit, skeleton=skeleton, every=args.every)
    parents = ms.skeleton.parents
    what = (f"{'+'.join(sel.splits)} split(s), " + (f"kinds {', '.join(sel.kinds)}" if sel.kinds else
                                                    f"every kind but {', '.join(sel.exclude)}" if sel.exclude
                                                    else "every clip"))
    if data != args.data:
        what += f" of `{data}`, converted to the model's skeleton (backend.humanoid) and 30 fps"
    out = {"windows": len(rot), "clips": len(ms.names), "what": what}
    task = engine.task if engine is not None else None
    if task == "autoencoder" and not args.baselines_only:
        pr, pp = reconstruct_windows(engine, rot, pos)
        out["reconstruction"] = evaluate_reconstruction(pr, pp, rot, pos, parents, engine.layout.rotation_joints)
        return out
    ft = float(getattr(ms, "frame_time", None) or 1.0 / 30.0)
    inb = {str(k): v for k, v in evaluate_inbetween(None, rot, pos, parents, skeleton=ms.skeleton,
                                                    frame_time=ft).items()}
    if task == "inbetween" and not args.baselines_only:
        symmetric = engine.symmetric
        variants = [("model", True, symmetric, True), ("model_unguarded", False, symmetric, True),
                    ("model_free_feet", True, symmetric, False),  # what backend.motion.inbetween.contacts adds
                    ("model_guard_every_gap", True, symmetric, True)]  # keys hidden at every spacing
        limit = engine.guard_limit
        if symmetric:  # what the mirror average adds (backend.motion.inbetween.fill.mirror_mean)
            variants.append(("model_asymmetric", True, False, True))
        if args.shipped_only:
            variants = variants[:1]
        for name, guard, sym, feet in variants:
            engine.guard, engine.symmetric, engine.contacts = guard, sym, feet
            engine.guard_limit = engine.ckpt.window - 1 if name == "model_guard_every_gap" else limit
            for k, v in evaluate_inbetween(inbetween_predictor(engine), rot, pos, parents, skeleton=ms.skeleton,
                                           frame_time=ft).items():
                inb[str(k)][name] = v["model"]
        engine.guard, engine.symmetric, engine.contacts, engine.guard_limit = True, symmetric, True, limit
    if bezier is not None:
        for k, v in evaluate_inbetween(bezier, rot, pos, parents, skeleton=ms.skeleton, frame_time=ft).items():
            inb[str(k)]["blender_bezier"] = v["model"]
    out["inbetween"] = inb
    return out


def run(args) -> dict:
    engine = None
    if not args.baselines_only or args.checkpoint:
        if not args.checkpoint:
            raise EvalError("a CHECKPOINT is needed unless --baselines-only is given")
        from backend.motion.engine import Engine
        engine = Engine(args.checkpoint, args.device)
    skeleton = engine.skeleton if engine is not None else None
    bezier = None
    ref = skeleton or load_split(args.data, Selection((args.split,)), args.cache, verbose=False).skeleton
    if args.blender_baseline and (engine is None or engine.task == "inbetween"):
        bezier = curves_predictor(ref)
    report = {"checkpoint": str(engine.path) if engine else None, "data": str(args.data), "split": args.split,
              "window": WINDOW, "columns": {}}
    if engine is not None:
        info = engine.ckpt.info
        report["info"] = {k: info.get(k) for k in ("task", "steps", "val_rot_deg", "parameters")}
        left = set(info.get("left_out_kinds") or [])
        report["left_out_in_training"] = bool(left) and set(LEAVE_OUT) <= left
    todo = {name: (args.data, sel, skeleton) for name, sel in columns(args.split).items()}
    others = []
    for name, path in studio_sources(args.other_data).items():  # other studios: their validation sets,
        others.append(f"other studio: {name}" if name else "other studio")  # whatever the split
        todo[others[-1]] = (path, Selection(("val",)), ref)
    for name, path in studio_sources(args.left_out).items():  # a studio the checkpoint never saw: all of it
        todo[f"left-out studio: {name}" if name else "left-out studio"] = (path, Selection(SPLITS), ref)
    for name, (data, sel, skel) in todo.items():
        try:
            report["columns"][name] = _column(engine, args, data, sel, skel, bezier)
        except (EvalError, DataError) as e:
            raise EvalError(f"{name} column: {e}") from None
    if len(others) > 1:  # the figure designs are chosen on: each studio weighs the same
        report["columns"]["other studio: mean"] = mean_column([report["columns"][n] for n in others])
    return report


def _is_mesh_checkpoint(path) -> bool:
    from backend.runtime.checkpoint import paths_for
    try:
        doc = json.loads(paths_for(path)[0].read_text())
    except (OSError, ValueError):
        return False  # the normal path reports why it cannot be read
    return isinstance(doc, dict) and (doc.get("asset") or {}).get("kind") == "mesh"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in argv if not a.startswith("-")), None)
    if first and _is_mesh_checkpoint(first):
        from .mesh.evaluate import main as mesh_main
        return mesh_main(argv)
    ap = argparse.ArgumentParser(prog="python -m training.evaluate", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", nargs="?", help="NAME.json / NAME.safetensors (optional with --baselines-only)")
    ap.add_argument("--data", default=DEFAULT_DATA,
                    help="BVH folders or .tar.xz archives, comma-separated (default: both archives in ../shared/data)")
    ap.add_argument("--other-data", default=",".join(f"{k}={v}" for k, v in OTHER_STUDIOS.items()),
                    help="other studios' capture, NAME=PATH comma-separated (or one PATH): a column of each one's "
                         "validation set and, for several, their mean (default: CMU, HDM05 and ReActIdle in "
                         "../shared/data; '' leaves them out)")
    ap.add_argument("--left-out", default="", metavar="NAME=PATH",
                    help="a studio left out of the checkpoint's training: a column of all of its clips")
    ap.add_argument("--split", default="test", choices=("val", "test"),
                    help="test: report; val: choose designs (the unfamiliar column then reads validation only)")
    ap.add_argument("--cache", default=None, help="parsed-data cache folder")
    ap.add_argument("--out", default=None, help="report folder (default: the checkpoint's folder)")
    ap.add_argument("--limit", type=int, default=None, help="use only the first N windows")
    ap.add_argument("--every", type=int, default=1, metavar="N", help="use every N-th window (all clips, fewer windows)")
    ap.add_argument("--shipped-only", action="store_true",
                    help="the in-betweener as shipped only (not without its guard, contacts or mirror average)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    ap.add_argument("--baselines-only", action="store_true", help="LERP/SLERP in-betweening scores, no model")
    ap.add_argument("--blender-baseline", action="store_true",
                    help="also score Blender's default F-curve interpolation (Bezier, auto-clamped, continuous "
                         "acceleration: backend.motion.inbetween.blender_curves, equal to real bpy's)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from backend.motion.engine import EngineError
    from backend.runtime.checkpoint import CheckpointError
    try:
        report = run(args)
    except (EvalError, DataError, CheckpointError, EngineError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = markdown(report)
    print(text)
    out = Path(args.out) if args.out else (Path(report["checkpoint"]).parent if report["checkpoint"] else None)
    if out is not None:
        stem = f"{'baselines' if args.baselines_only else 'eval'}-{args.split}"
        try:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{stem}.md").write_text(text)
            (out / f"{stem}.json").write_text(json.dumps(report, indent=1))
        except OSError as e:
            print(f"error: {out}: cannot write the report ({e.strerror})", file=sys.stderr)
            return 2
        print(f"wrote {out / stem}.md and .json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
