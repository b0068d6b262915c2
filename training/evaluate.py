"""Evaluate a checkpoint on the fixed protocol windows (61 frames, stride 61) of a split.

    python -m training.evaluate CHECKPOINT --data PATH --split test [--cache DIR] [--out DIR]
                                [--limit N] [--device cpu] [--baselines-only]

Reconstruction (encode + decode each window as one segment): local joint-rotation error
and MPJPE of global positions.  In-betweening (keys every k frames plus the last frame;
only for checkpoints with info["task"] == "inbetween", or alone with --baselines-only):
MPJPE, L2Q and NPSS on the non-key frames, next to LERP/SLERP on the same windows.
Writes OUT/eval-<split>.md and .json (OUT defaults to the checkpoint's folder).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from backend import quat_np as Q

from . import metrics as M
from .data import DataError, load_split, protocol_windows

WINDOW = 61
SPACINGS = (5, 15, 30)


class EvalError(ValueError):
    pass


def load_windows(data, split, cache=None, limit=None, length=WINDOW):
    """Protocol windows of a split: (rot [W, F, J, 4], pos [W, F, J, 3] float64, MotionSet)."""
    ms = load_split(data, split, cache, verbose=False)
    idx = protocol_windows(ms, length, length)
    if limit:
        idx = idx[:limit]
    if len(idx) == 0:
        raise EvalError(f"{data}: split {split!r} has no clip of at least {length} frames")
    return ms.rotations[idx].astype(np.float64), ms.positions[idx].astype(np.float64), ms


@torch.inference_mode()
def reconstruct_windows(engine, rot, pos, batch=256):
    """Encode + decode each window as one segment, batched, the way Engine.encode/decode do."""
    from backend.features import from_features, to_features
    n = rot.shape[1]
    times = torch.linspace(0, 1, n)
    out_r, out_p = [], []
    for i in range(0, len(rot), batch):
        r = torch.as_tensor(rot[i:i + batch], dtype=torch.float32, device=engine.device)
        p = torch.as_tensor(pos[i:i + batch], dtype=torch.float32, device=engine.device)
        feat, origin = to_features(r, p, engine.layout)
        cp = engine.model.encode(engine.norm(feat))
        feat = engine.norm.inverse(engine.model.decode(cp, n, times=times, positions=times * (n - 1)))
        # Joints the model does not move keep the window's first-frame local positions (Engine: clip's).
        qr, qp = from_features(feat, engine.layout, origin, p[:, :1], engine.skeleton.num_joints)
        out_r.append(qr.cpu().numpy().astype(np.float64))
        out_p.append(qp.cpu().numpy().astype(np.float64))
    return np.concatenate(out_r), np.concatenate(out_p)


def evaluate_reconstruction(pred_rot, pred_pos, rot, pos, parents, rotation_joints=None):
    """Local rotation error (over the modelled rotation joints) and global MPJPE, all frames."""
    j = slice(None) if rotation_joints is None else list(rotation_joints)
    mean_deg, mse_deg2 = M.rotation_errors_deg(pred_rot[..., j, :], rot[..., j, :])
    gpos_pred = Q.fk(Q.normalize(pred_rot), pred_pos, parents)[1]
    gpos_true = Q.fk(rot, pos, parents)[1]
    return {"rot_deg": mean_deg, "rot_sq_deg2": mse_deg2, "mpjpe_cm": M.mpjpe_cm(gpos_pred, gpos_true)}


def _inbetween_scores(pred_rot, pred_pos, true_grot, true_gpos, parents, nonkey):
    grot, gpos = Q.fk(Q.normalize(pred_rot[:, nonkey]), pred_pos[:, nonkey], parents)
    grot = M.align_signs(grot, true_grot)
    return {"mpjpe_cm": M.mpjpe_cm(gpos, true_gpos), "l2q": M.l2q(grot, true_grot),
            "npss": M.npss(grot, true_grot)}


def evaluate_inbetween(predict, windows_rot, windows_pos, parents, spacings=SPACINGS):
    """In-betweening scores on non-key frames: {k: {"lerp_slerp": {...}, "model": {...}}}.

    ``predict(rot, pos, key_idx) -> (rot, pos)`` gets the windows with every non-key frame
    set to NaN (so it cannot read them; a leak shows as NaN scores), or is None for the
    baseline alone.  NPSS treats each window's non-key frames, in order, as one sequence;
    ground-truth global quaternions are made continuous in time first.
    """
    out = {}
    f = windows_rot.shape[1]
    for k in spacings:
        keys = M.protocol_keys(f, k)
        nonkey = np.setdiff1d(np.arange(f), keys)
        true_grot, true_gpos = Q.fk(windows_rot[:, nonkey], windows_pos[:, nonkey], parents)
        true_grot = Q.fix_hemisphere(true_grot, axis=1)
        res = {"keys": keys.tolist(), "lerp_slerp": _inbetween_scores(
            *M.lerp_slerp_inbetween(windows_rot, windows_pos, keys), true_grot, true_gpos, parents, nonkey)}
        if predict is not None:
            rot, pos = windows_rot.copy(), windows_pos.copy()
            rot[:, nonkey], pos[:, nonkey] = np.nan, np.nan
            pr, pp = predict(rot, pos, keys)
            res["model"] = _inbetween_scores(np.asarray(pr, np.float64), np.asarray(pp, np.float64),
                                             true_grot, true_gpos, parents, nonkey)
        out[k] = res
    return out


def inbetween_predictor(engine, batch: int = 256):
    """``predict(rot, pos, keys)`` over windows [W, F, J, *] through ``Engine.inbetween`` (batched)."""
    from backend.skeleton import Clip

    def predict(rot, pos, keys):
        out_r, out_p = np.empty_like(rot), np.empty_like(pos)
        keys = [int(k) for k in keys]
        for a in range(0, len(rot), batch):
            clips = [Clip(engine.skeleton, rot[i], pos[i], name=f"window {i}") for i in range(a, min(a + batch, len(rot)))]
            for i, (res, _) in enumerate(engine.inbetween(clips, [keys] * len(clips)), start=a):
                out_r[i], out_p[i] = res.rotations, res.positions
        return out_r, out_p
    return predict


def markdown(report: dict) -> str:
    lines = [f"# Evaluation on the {report['split']} split", "",
             f"- checkpoint: `{report.get('checkpoint') or 'none (baselines only)'}`",
             f"- data: `{report['data']}`; {report['windows']} windows of {report['window']} frames (stride "
             f"{report['window']}) from {report['clips']} clips", ""]
    rec = report.get("reconstruction")
    if rec:
        lines += ["## Reconstruction (encode + decode, all frames)", "",
                  "| metric | value |", "|---|---:|",
                  f"| local rotation error, mean geodesic (deg) | {rec['rot_deg']:.3f} |",
                  f"| local rotation error, mean squared (deg²) | {rec['rot_sq_deg2']:.3f} |",
                  f"| MPJPE, global positions (cm) | {rec['mpjpe_cm']:.3f} |", ""]
    inb = report.get("inbetween")
    if inb:
        lines += ["## In-betweening (non-key frames; keys every k frames + last frame)", "",
                  "| k | method | MPJPE (cm) | L2Q | NPSS | L2Q ÷ LERP/SLERP |", "|---:|---|---:|---:|---:|---:|"]
        labels = {"model": "Splinetween", "lerp_slerp": "LERP/SLERP", "blender_bezier": "Blender Bézier (auto-clamped)"}
        for k, res in inb.items():
            for name, label in labels.items():
                if name in res:
                    s = res[name]
                    ratio = s["l2q"] / res["lerp_slerp"]["l2q"]
                    lines.append(f"| {k} | {label} | {s['mpjpe_cm']:.3f} | {s['l2q']:.4f} | {s['npss']:.5f} "
                                 f"| {ratio:.3f} |")
        lines.append("")
    return "\n".join(lines)


def run(args) -> dict:
    engine = None
    if not args.baselines_only or args.checkpoint:
        if not args.checkpoint:
            raise EvalError("a CHECKPOINT is needed unless --baselines-only is given")
        from backend.engine import Engine
        engine = Engine(args.checkpoint, args.device)
    rot, pos, ms = load_windows(args.data, args.split, args.cache, args.limit)
    parents = ms.skeleton.parents
    if engine is not None and not engine.skeleton.same_hierarchy(ms.skeleton):
        raise EvalError(f"{args.data}: skeleton does not match the checkpoint "
                        f"({engine.skeleton.describe_mismatch(ms.skeleton)})")
    report = {"checkpoint": str(engine.path) if engine else None, "data": str(args.data), "split": args.split,
              "window": WINDOW, "windows": len(rot), "clips": len(ms.names)}
    task = engine.task if engine is not None else None
    if engine is not None and not args.baselines_only:
        report["info"] = {k: engine.ckpt.info.get(k) for k in ("task", "steps", "val_rot_deg", "parameters")}
    if task == "autoencoder" and not args.baselines_only:
        pr, pp = reconstruct_windows(engine, rot, pos)
        report["reconstruction"] = evaluate_reconstruction(pr, pp, rot, pos, parents, engine.layout.rotation_joints)
    if args.baselines_only or task == "inbetween":
        predict = inbetween_predictor(engine) if task == "inbetween" and not args.baselines_only else None
        report["inbetween"] = {str(k): v for k, v in evaluate_inbetween(predict, rot, pos, parents).items()}
        if args.blender_baseline:
            from .blender_baseline import bezier_predictor
            bez = evaluate_inbetween(bezier_predictor(ms.skeleton), rot, pos, parents)
            for k, v in bez.items():
                report["inbetween"][str(k)]["blender_bezier"] = v["model"]
    return report


def _is_mesh_checkpoint(path) -> bool:
    from backend.checkpoint import paths_for
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
    ap.add_argument("--data", required=True, help="BVH folder or .tar.xz archive")
    ap.add_argument("--split", default="test", choices=("train", "val", "test"))
    ap.add_argument("--cache", default=None, help="parsed-data cache folder")
    ap.add_argument("--out", default=None, help="report folder (default: the checkpoint's folder)")
    ap.add_argument("--limit", type=int, default=None, help="use only the first N windows")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    ap.add_argument("--baselines-only", action="store_true", help="LERP/SLERP in-betweening scores, no model")
    ap.add_argument("--blender-baseline", action="store_true",
                    help="also score Blender's default F-curve interpolation (Bezier, auto-clamped), via bpy")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from backend.checkpoint import CheckpointError
    from backend.engine import EngineError
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
