"""python -m training.guard_study CKPT [--split val] [--limit N]: how to guard an in-betweener.

Scores, on the protocol's familiar and unfamiliar columns, the model alone and ways of trusting it
only as far as it predicts hidden keys (backend.motion.inbetween.guard): alpha only (what ships), alpha with a SLERP
weight next to the Hermite base, and a hard switch between model and curves — each with every
other key hidden (doubled gaps up to the model's window) and with hiding capped at doubled gaps of
``backend.motion.inbetween.guard.MAX_HIDDEN_GAP`` frames.  Prints L2Q of global quaternions as a ratio to SLERP.
Choose on the validation split (the default).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import torch

from backend.maths import quat_np
from backend.motion.engine import Engine
from backend.motion.inbetween import fill as inbetween
from backend.motion.inbetween import guard
from backend.motion.skeleton import Clip

from . import metrics
from .data import DEFAULT_DATA
from .evaluate import columns, load_windows
from .keyframes import every_k, interpolate, key_mask


def _slerp(clip, keys):
    rot, pos = inbetween.key_only(clip, keys)
    mask = torch.from_numpy(key_mask(clip.num_frames, keys))[None]
    r, p = interpolate(torch.from_numpy(rot)[None], torch.from_numpy(pos)[None], mask)
    return r[0].numpy(), p[0].numpy()


def _variants(engine, clip, keys, cap: int) -> dict:
    """{name: (rot, pos)} fills of one window under each guard, hiding keys up to doubled gaps ``cap``."""
    rj, pj = engine.layout.rotation_joints, engine.layout.position_joints
    hidden_sets = guard.holdout_passes(keys, engine.ckpt.window - 1, limit=cap)
    fills = inbetween.fill(engine, [(clip, keys)] + [(clip, p) for p in hidden_sets])
    mr, mp, br, bp = fills[0][:4]
    sr, sp = _slerp(clip, keys)
    hid = [sorted(set(keys) - set(p)) for p in hidden_sets]
    if not hid:
        return {"alpha": (mr, mp), "alpha+slerp": (mr, mp), "switch": (mr, mp)}
    idx = np.concatenate(hid).astype(int)
    truth = (clip.rotations[idx], clip.positions[idx])
    model = tuple(np.concatenate([f[i][h] for f, h in zip(fills[1:], hid, strict=True)]) for i in (0, 1))
    herm = tuple(np.concatenate([f[i][h] for f, h in zip(fills[1:], hid, strict=True)]) for i in (2, 3))
    slerp = tuple(np.concatenate([_slerp(clip, p)[i][h] for p, h in zip(hidden_sets, hid, strict=True)]) for i in (0, 1))
    vec = {n: guard.key_vectors(r, p, truth[0], rj, pj) for n, (r, p) in
           (("t", truth), ("m", model), ("h", herm), ("s", slerp))}
    a = float(np.clip(guard.fit_alpha(truth, model, herm, rj, pj), 0, 1))
    # alpha and a SLERP weight beta in [0, 1]^2: the best of a grid (a study, not the product)
    grid = np.linspace(0, 1, 21)
    miss = [(np.sum((vec["h"] + b * (vec["s"] - vec["h"]) + al * (vec["m"] - vec["h"]) - vec["t"]) ** 2), al, b)
            for al in grid for b in grid]
    _, a2, b2 = min(miss)
    def err(v):
        return float(np.sum((v - vec["t"]) ** 2))
    model_better = err(vec["m"]) <= 1.1 * min(err(vec["h"]), err(vec["s"]))
    herm_out = guard.blend((mr, mp), (br, bp), a2)
    mixed = (quat_np.normalize(herm_out[0] + b2 * (np.where((sr * br).sum(-1, keepdims=True) < 0, -sr, sr) - br)),
             herm_out[1] + b2 * (sp - bp))
    best_curve = (br, bp) if err(vec["h"]) <= err(vec["s"]) else (sr, sp)
    return {"alpha": guard.blend((mr, mp), (br, bp), a), "alpha+slerp": mixed,
            "switch": (mr, mp) if model_better else best_curve}


def study(engine, rot, pos, k: int) -> dict:
    keys = every_k(rot.shape[1], k)
    nonkey = np.setdiff1d(np.arange(rot.shape[1]), keys)
    parents = engine.skeleton.parents
    scores: dict[str, list] = {}
    for w in range(len(rot)):
        clip = Clip(engine.skeleton, rot[w], pos[w])
        tg = quat_np.fix_hemisphere(quat_np.fk(rot[w][nonkey], pos[w][nonkey], parents)[0], axis=0)
        fills = {"model alone": inbetween.fill(engine, [(clip, keys)], with_base=False)[0][:2],
                 "SLERP": _slerp(clip, keys)}
        for cap, tag in ((engine.ckpt.window - 1, "hide to window"), (guard.MAX_HIDDEN_GAP, "hide to cap")):
            for name, f in _variants(engine, clip, keys, cap).items():
                fills[f"{name}, {tag}"] = f
        for name, (r, p) in fills.items():
            g = quat_np.fk(quat_np.normalize(r[nonkey]), p[nonkey], parents)[0]
            scores.setdefault(name, []).append(metrics.l2q(metrics.align_signs(g[None], tg[None]), tg[None]))
    base = np.mean(scores["SLERP"])
    return {name: float(np.mean(v) / base) for name, v in scores.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.guard_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--split", default="val", choices=("val", "test"))
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    engine = Engine(args.checkpoint, "cpu")
    rows = {}
    for col, sel in columns(args.split).items():
        rot, pos, _ = load_windows(args.data, sel, args.cache, args.limit, skeleton=engine.skeleton)
        for k in (5, 15, 30):
            rows[col, k] = study(engine, rot, pos, k)
            print(f"{col} k={k}: " + ", ".join(f"{n} {v:.3f}" for n, v in rows[col, k].items()), file=sys.stderr)
    names = list(next(iter(rows.values())))
    print("| guard | " + " | ".join(f"{c} k={k}" for c, k in rows) + " |")
    print("|---|" + "---:|" * len(rows))
    for n in names:
        print(f"| {n} | " + " | ".join(f"{rows[ck][n]:.3f}" for ck in rows) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
