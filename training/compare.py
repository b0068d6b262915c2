"""Spline vs ALiBi vs ALiBi-Cat, as in the paper's Table 1 (synthetic curves) and Table 4 (motion).

    python -m training.compare synthetic [--steps N] [--batch-size B] [--test-curves M]
                                         [--families lissajous,...] [--out docs/results-synthetic.json]
    python -m training.compare motion --data PATH --cache DIR --steps N --latents 16,32,64
                                      --out-dir DIR [--key=value ...]   (extra TrainConfig overrides)

Everything runs on one CPU thread.  Each command writes JSON (+ a Markdown table next to it)
after every finished run, so an interrupted comparison keeps what it has.
"""
from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch

from backend.models.spline_transformer import MODEL_FAMILIES, ModelConfig, SplineTransformer, count_parameters

from .data import DEFAULT_DATA
from .loop import optimizer_step
from .synthetic import FAMILIES

KIND_NAMES = {"alibi": "ALiBi", "alibi_cat": "ALiBi-Cat", "spline": "Spline (Ours)"}
TABLE_KINDS = ("alibi", "alibi_cat", "spline")  # the paper's row order


def train_synthetic(family: str, kind: str, *, steps: int, batch_size: int, test_curves: int = 2000,
                    lr: float = 1e-3, layers: int = 4, heads: int = 4, width: int | None = None,
                    seed: int = 0, test_seed: int = 10_000, clip_grad: float = 1.0, log=None) -> dict:
    """Train one autoencoder on fresh random curves of ``family``; test MSE on held-out curves.

    Training curves come from ``default_rng(seed)`` (the same stream for every kind), test
    curves [test_curves, 256, 2] from ``default_rng(test_seed)``.  RAdam, cosine annealing
    from ``lr`` to ``lr/1000`` over ``steps``, L2 loss, gradient norm clipped at ``clip_grad``.
    """
    fam = FAMILIES[family]
    torch.manual_seed(seed)
    cfg = ModelConfig(input_dim=2, output_dim=2, family=kind, width=width or fam.width, latent=fam.latent,
                      layers=layers, heads=heads, ffn_factor=1)
    model = SplineTransformer(cfg)
    opt = torch.optim.RAdam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=lr * 1e-3)
    rng = np.random.default_rng(seed)
    t0, losses = time.time(), []
    model.train()
    for step in range(steps):
        x = torch.from_numpy(fam.sample(batch_size, rng)[0])
        loss = torch.mean((model(x) - x) ** 2)
        optimizer_step(loss, model, opt, sched, clip_grad)
        losses.append(loss.item())
        if log and (step + 1) % max(1, steps // 10) == 0:
            log(f"  {family}/{kind} step {step + 1}/{steps} loss {loss.item():.3e} ({time.time() - t0:.0f}s)")
    train_s = time.time() - t0
    test = torch.from_numpy(fam.sample(test_curves, test_seed)[0])
    model.eval()
    se, t1 = 0.0, time.time()
    with torch.no_grad():
        for i in range(0, len(test), 250):
            se += float(torch.sum((model(test[i:i + 250]) - test[i:i + 250]).double() ** 2))
    tail = losses[-max(1, steps // 20):]
    return {"family": family, "kind": kind, "latent": fam.latent, "width": cfg.width, "layers": layers,
            "heads": heads, "parameters": count_parameters(model), "steps": steps, "batch_size": batch_size,
            "lr": lr, "test_curves": test_curves, "test_mse": se / test.numel(),
            "final_train_loss": float(np.mean(tail)), "train_s": round(train_s, 1),
            "eval_s": round(time.time() - t1, 1)}


def fmt(v: float) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:.2e}"


def synthetic_markdown(doc: dict) -> str:
    runs = {(r["family"], r["kind"]): r for r in doc["runs"]}
    fams = [f for f in doc["families"] if any(k[0] == f for k in runs)]
    head = "| Method | " + " | ".join(FAMILIES[f].name for f in fams) + " |"
    lines = [f"Test MSE on {doc['test_curves']} held-out curves (256 points each), "
             f"{doc['steps']} steps at batch {doc['batch_size']}.", "", head,
             "|" + "---|" * (len(fams) + 1)]
    for k in TABLE_KINDS:
        best = {f: min((r["test_mse"] for (ff, _), r in runs.items() if ff == f), default=None) for f in fams}
        cells = []
        for f in fams:
            r = runs.get((f, k))
            v = r["test_mse"] if r else None
            cells.append(f"**{fmt(v)}**" if r and v == best[f] else fmt(v))
        lines.append(f"| {KIND_NAMES[k]} | " + " | ".join(cells) + " |")
    lines += ["", "| Family | Kind | d | c | Parameters | Train loss (last 5%) | Test MSE | Train s | Eval s |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in doc["runs"]:
        lines.append(f"| {FAMILIES[r['family']].name} | {KIND_NAMES[r['kind']]} | {r['latent']} | {r['width']} | "
                     f"{r['parameters']:,} | {fmt(r['final_train_loss'])} | {fmt(r['test_mse'])} | "
                     f"{r['train_s']} | {r['eval_s']} |")
    lines += ["", f"Total wall time {doc['total_s']:.0f} s.  Command: `{doc['command']}`", ""]
    return "\n".join(lines)


def run_synthetic(*, steps: int, batch_size: int, test_curves: int = 2000, families=tuple(FAMILIES),
                  kinds=TABLE_KINDS, out: Path | None = None, seed: int = 0, command: str = "", log=None,
                  **kw) -> dict:
    """Every family x kind; returns (and, with ``out``, writes after each run) the JSON document."""
    doc = {"command": command, "steps": steps, "batch_size": batch_size, "test_curves": test_curves,
           "seed": seed, "families": list(families), "kinds": list(kinds), "threads": torch.get_num_threads(),
           "optimizer": "RAdam lr 1e-3, cosine annealing to 1e-6, grad-norm clip 1.0, L2 loss, n=4 h=4 FFN 1x",
           "runs": [], "total_s": 0.0}
    t0 = time.time()
    for f in families:
        for k in kinds:
            if log:
                log(f"{f} / {k}")
            doc["runs"].append(train_synthetic(f, k, steps=steps, batch_size=batch_size, test_curves=test_curves,
                                               seed=seed, log=log, **kw))
            doc["total_s"] = round(time.time() - t0, 1)
            if log:
                r = doc["runs"][-1]
                log(f"  -> test MSE {r['test_mse']:.3e}, {r['parameters']} params, {r['train_s']}s")
            if out:
                write_doc(out, doc, synthetic_markdown(doc))
    return doc


def write_doc(out: Path, doc: dict, markdown: str):
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    out.with_suffix(".md").write_text(markdown)


def motion_errors(ckpt_path, windows) -> dict:
    """Reconstruction errors of a checkpoint on protocol windows (training.evaluate's functions).

    ``windows = training.evaluate.load_windows(data, selection, cache)``: rot [W, 61, J, 4],
    pos [W, 61, J, 3], MotionSet.  Returns the mean squared local joint-rotation angle
    (deg^2, Table 4's metric), the mean geodesic angle (deg) over the modelled rotating
    joints of every frame, and global MPJPE (cm).
    """
    from backend.motion.engine import Engine

    from .evaluate import evaluate_reconstruction, reconstruct_windows

    rot, pos, ms = windows
    engine = Engine(ckpt_path, "cpu")
    pr, pp = reconstruct_windows(engine, rot, pos)
    rec = evaluate_reconstruction(pr, pp, rot, pos, ms.skeleton.parents, engine.layout.rotation_joints)
    return {"windows": int(len(rot)), "mse_angle_deg2": rec["rot_sq_deg2"], "mean_angle_deg": rec["rot_deg"],
            "mpjpe_cm": rec["mpjpe_cm"], "parameters": count_parameters(engine.model.module),
            "train_wall_total_s": engine.ckpt.info.get("wall_time_s")}


def run_motion(*, data: str, cache: str, steps: int, latents, kinds=TABLE_KINDS, out_dir: Path,
               overrides=(), command: str = "", log=None) -> tuple[dict, str]:
    """Train (training.loop.train, one thread) and evaluate every kind x d; write JSON + Markdown.

    Each run lives in ``out_dir/KIND-dD``; an existing run folder is resumed (training.loop), so
    ``train_s`` is this invocation's time and ``train_wall_total_s`` the run's total from its checkpoint.
    """
    from .config import load_config
    from .evaluate import columns, load_windows
    from .loop import train

    out_dir = Path(out_dir)
    cfgs = [load_config(None, [f"--data={data}", f"--cache={cache}", f"--out={out_dir / f'{k}-d{d}'}",
                               f"--family={k}", f"--latent={d}", f"--steps={steps}", "--threads=1", *overrides])
            for d in latents for k in kinds]  # every override is checked before the first run
    # the generalisation protocol's two columns (train with --leave_out=protocol for a true unfamiliar one)
    windows = {name: load_windows(data, sel, cache or None) for name, sel in columns("test").items()}
    doc = {"command": command, "data": str(data), "steps": steps, "latents": list(latents), "runs": [],
           "metric": "local joint rotations, test split windows of 61 frames at stride 61: familiar kinds, and "
                     "the left-out kinds' val+test clips (unfamiliar)"}
    for cfg in cfgs:
        if log:
            log(f"motion {cfg.family} d={cfg.latent}: {cfg.out}")
        t0 = time.time()
        train(cfg)
        train_s = time.time() - t0
        t1 = time.time()
        err = {name: motion_errors(Path(cfg.out) / "final.json", w) for name, w in windows.items()}
        doc["runs"].append({"kind": cfg.family, "latent": cfg.latent, "run": cfg.out, "train_s": round(train_s, 1),
                            "eval_s": round(time.time() - t1, 1), "config": vars(cfg).copy(),
                            "parameters": err["familiar"]["parameters"], **err})
        write_doc(out_dir / "results-motion.json", doc, motion_markdown(doc))
    return doc, motion_markdown(doc)


def motion_markdown(doc: dict) -> str:
    runs = {(r["kind"], r["latent"]): r for r in doc["runs"]}
    lat = doc["latents"]
    cols = ("familiar", "unfamiliar")
    lines = [f"Mean squared local joint-rotation error (deg^2) / mean angle (deg), protocol windows, familiar | "
             f"unfamiliar kinds, {doc['steps']} steps.", "", "| Method | " + " | ".join(
                 f"{d}D {c}" for d in lat for c in cols) + " |", "|" + "---|" * (2 * len(lat) + 1)]
    for k in TABLE_KINDS:
        cells = [f"{runs[k, d][c]['mse_angle_deg2']:.3f} / {runs[k, d][c]['mean_angle_deg']:.3f}" if (k, d) in runs
                 else "n/a" for d in lat for c in cols]
        lines.append(f"| {KIND_NAMES[k]} | " + " | ".join(cells) + " |")
    lines += ["", "| Kind | d | Parameters | Windows (familiar / unfamiliar) | MPJPE cm (familiar / unfamiliar) "
              "| Train s | Eval s |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {KIND_NAMES[r['kind']]} | {r['latent']} | {r['parameters']:,} | {r['familiar']['windows']} / "
              f"{r['unfamiliar']['windows']} | {r['familiar']['mpjpe_cm']:.2f} / {r['unfamiliar']['mpjpe_cm']:.2f} | "
              f"{r['train_s']} | {r['eval_s']} |" for r in doc["runs"]]
    lines += ["", f"Command: `{doc['command']}`", ""]
    return "\n".join(lines)


def _command(argv) -> str:
    return shlex.join(["python", "-m", "training.compare", *(sys.argv[1:] if argv is None else argv)])


def main(argv=None) -> int:
    torch.set_num_threads(1)
    ap = argparse.ArgumentParser(prog="python -m training.compare", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("synthetic", help="Table 1: 2D curve families", allow_abbrev=False)
    s.add_argument("--steps", type=int, default=2000)
    s.add_argument("--batch-size", type=int, default=32)
    s.add_argument("--test-curves", type=int, default=2000)
    s.add_argument("--families", default=",".join(FAMILIES))
    s.add_argument("--kinds", default=",".join(TABLE_KINDS))
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", default="docs/results-synthetic.json")
    m = sub.add_parser("motion", help="Table 4: motion autoencoders via training.train", allow_abbrev=False)
    m.add_argument("--data", default=DEFAULT_DATA, help="BVH folders or archives, comma-separated (default: both)")
    m.add_argument("--cache", default="")
    m.add_argument("--steps", type=int, required=True)
    m.add_argument("--latents", default="16,32,64")
    m.add_argument("--kinds", default=",".join(TABLE_KINDS))
    m.add_argument("--out-dir", required=True)
    args, extra = ap.parse_known_args(argv)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)
    kinds = [k for k in args.kinds.split(",") if k]
    bad = [k for k in kinds if k not in MODEL_FAMILIES]
    if bad:
        ap.error(f"unknown kind(s) {', '.join(bad)}; use {', '.join(MODEL_FAMILIES)}")
    if args.what == "synthetic":
        if extra:
            ap.error(f"unrecognised arguments: {' '.join(extra)}")
        fams = [f for f in args.families.split(",") if f]
        if any(f not in FAMILIES for f in fams):
            ap.error(f"families are {', '.join(FAMILIES)}")
        doc = run_synthetic(steps=args.steps, batch_size=args.batch_size, test_curves=args.test_curves,
                            families=fams, kinds=kinds, out=Path(args.out), seed=args.seed,
                            command=_command(argv), log=log)
        print(synthetic_markdown(doc))
        return 0
    from .config import ConfigError
    from .data import DataError
    latents = [int(v) for v in args.latents.split(",") if v]
    try:
        doc, md = run_motion(data=args.data, cache=args.cache, steps=args.steps, latents=latents, kinds=kinds,
                             out_dir=Path(args.out_dir), overrides=extra, command=_command(argv), log=log)
    except (ConfigError, DataError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
