"""Training a mesh-sequence model: caches -> PCA coefficients -> Spline-based Transformer.

The basis is fitted once on the training frames; the model then only ever sees K
coefficients per frame, so a training step costs the same for 500 or 50,000 vertices.
Because the basis rows are orthonormal, the squared error of the coefficients *is* the
squared vertex error (plus the constant part the basis cannot represent); the loss is that,
per vertex, in (% of the asset's bounding-box diagonal)^2.

Longer than 300 lines: one training procedure (basis, model, validation, resume), read in order.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from backend.mesh.engine import basis_from
from backend.mesh.sequences import MeshBasis, bbox_diagonal, fit_basis, project
from backend.models.registry import build_model
from backend.models.spline_transformer import ModelConfig, count_parameters
from backend.motion.features import Normalizer
from backend.runtime import checkpoint as ckpt_io

from .. import progress
from ..config import MeshTrainConfig
from ..data import DataError, WindowSampler, protocol_windows
from ..inbetween_task import regular_key_masks, sample_key_masks
from ..keyframes import compose_inbetween, interpolation_base
from ..loop import Progress, lr_lambda, optimizer_step, restore_state, val_key_masks
from ..principal import pca
from ..state import load_state, save_state
from .data import MeshSet, load_mesh_split


def basis_tensors(basis: MeshBasis) -> dict:
    # The components are stored in float16: they are unit vectors, and half precision moves a
    # vertex by well under 0.01 % of the asset's size while halving the checkpoint.
    return {"basis.mean": torch.as_tensor(basis.mean, dtype=torch.float32),
            "basis.components": torch.as_tensor(basis.components, dtype=torch.float16),
            "basis.variance": torch.as_tensor(basis.variance, dtype=torch.float32)}


def stored_basis(basis: MeshBasis) -> MeshBasis:
    """The basis exactly as the checkpoint will hold it (training sees what inference sees)."""
    return basis_from(basis_tensors(basis))


class MeshBatcher:
    """Frame indices -> (model inputs, normalised target, key mask or None)."""

    def __init__(self, coeffs: np.ndarray, normalizer: Normalizer, task: str, seed: int, base: str = "cspline"):
        self.coeffs = torch.from_numpy(coeffs)
        self.norm, self.task, self.interp = normalizer, task, interpolation_base(base)
        self.rng = np.random.default_rng(seed + 7)

    def __call__(self, idx: np.ndarray, masks: np.ndarray | None = None):
        c = self.coeffs[torch.from_numpy(idx)]
        target = self.norm(c)
        if self.task != "inbetween":
            return (target,), target, None
        if masks is None:
            masks = sample_key_masks(self.rng, idx.shape[0], idx.shape[1])
        mask = torch.from_numpy(masks)
        keyed = torch.where(mask[..., None], c, torch.zeros_like(c))
        return (self.norm(keyed), self.norm(self.interp(keyed, mask)), mask), target, mask


def vertex_loss(pred_n, target_n, std, scale, base_n=None):
    """Mean squared vertex distance, in (% of the bounding-box diagonal)^2, from coefficients.

    With ``base_n`` (in-betweening) each window's error is divided by its interpolation base's
    error: the loss is the mean squared-error *ratio* to the base, so windows with keys every 3
    frames count as much as those with keys every 30 (an absolute loss is all long gaps, and
    the model learns to make short gaps worse than the base it starts from).
    """
    v = scale["vertices"]
    d = (pred_n - target_n) * std
    err = (d * d).sum(-1).mean(-1) / v / (scale["diag"] / 100.0) ** 2  # [B]
    if base_n is None:
        return err.mean()
    b = (base_n - target_n) * std
    base = (b * b).sum(-1).mean(-1) / v / (scale["diag"] / 100.0) ** 2
    return (err / (base + 1e-4)).mean()


@torch.no_grad()
def fit_key_regression(model, batcher, sampler, std, scale, windows: int = 8192, batch: int = 32,
                       ridges=(1e-4,), seed: int = 0, score=None) -> dict:
    """Fit the in-betweener's linear path (it stays frozen while the transformer trains).

    A ridge regression over ``windows`` training windows with keys every 2..30 frames, each window
    weighted by 1 / its base's error as in the ratio loss, solved in closed form (float64).  On
    held-out cloth (keys every 10) 4,096 windows miss 3 % more than 8,192; unweighted, 33 % more;
    keys from the training recipe (half irregular) spread the data too thin: 5 % below the spline
    instead of 28 %.  With several ``ridges`` (strengths relative to the mean diagonal) the one whose
    solution ``score``s lowest (the run passes its validation error) is kept.  Returns what was fitted.
    """
    reg = model.key_regression
    f = reg.linear.in_features
    xtx = torch.zeros(f, f, dtype=torch.float64)
    xty = torch.zeros(f, reg.linear.out_features, dtype=torch.float64)
    rng = np.random.default_rng(seed + 11)
    batches = max(1, windows // batch)
    for i in range(batches):
        progress.phase("fitting the linear path", i, batches)
        idx = sampler.sample(batch)
        (keys_n, base_n, mask), target_n, _ = batcher(idx, regular_key_masks(rng, *idx.shape))
        x = reg.features(keys_n, base_n, mask)
        x = x[~mask]
        y = (target_n - base_n)[~mask]
        b = ((base_n - target_n) * std).pow(2).sum(-1).mean(-1) / scale["vertices"] / (scale["diag"] / 100.0) ** 2
        w = (1.0 / (b + 1e-4))[:, None].expand_as(mask)[~mask]
        xw = x * w[:, None]
        xtx += (xw.T @ x).double()  # one batch in float32 (fast), the sum in float64
        xty += (xw.T @ y).double()
    scores, solutions = {}, {}
    for i, ridge in enumerate(ridges):
        progress.phase("choosing the linear path's strength", i, len(ridges))
        sol = torch.linalg.solve(xtx + ridge * xtx.diagonal().mean() * torch.eye(f, dtype=torch.float64), xty)
        solutions[ridge] = sol.T.float()
        reg.linear.weight.copy_(solutions[ridge])
        scores[ridge] = score() if score is not None and len(ridges) > 1 else 0.0
    best = min(scores, key=scores.get)
    reg.linear.weight.copy_(solutions[best])
    return {"windows": max(1, windows // batch) * batch, "ridge": best, "keys_every": "2-30",
            **({"ridge_val_pct": {f"{r:g}": v for r, v in scores.items()}} if len(ridges) > 1 else {})}


@torch.no_grad()
def val_error_pct(model, batcher, ms: MeshSet, basis: MeshBasis, windows, masks=None, bs=16) -> float:
    """Mean vertex error (% of each window's bounding-box diagonal), in vertex space, on non-key frames
    for the in-between task (keys snapped exactly, as the engine does)."""
    comps = torch.as_tensor(basis.components)
    mean = torch.as_tensor(basis.mean.reshape(-1))
    model.eval()
    errs = []
    for i in range(0, len(windows), bs):
        w = windows[i:i + bs]
        m = None if masks is None else masks[i:i + bs]
        inputs, _, mask = batcher(w, m)
        flat = batcher.norm.inverse(model(*inputs)) @ comps + mean
        true = torch.from_numpy(ms.frames[w]).reshape(len(w), w.shape[1], -1)
        if mask is not None:  # as the engine composes it: Hermite of the key vertices + the model's correction
            base = batcher.norm.inverse(inputs[1]) @ comps + mean
            flat = compose_inbetween(flat, base, torch.where(mask[..., None], true, torch.zeros_like(true)), mask,
                                     batcher.interp)
        err = (flat - true).reshape(len(w), w.shape[1], -1, 3).norm(dim=-1).mean(-1)  # [B, N]
        rel = err / torch.tensor([bbox_diagonal(ms.frames[x]) for x in w])[:, None]
        errs.append(float((rel[~mask] if mask is not None else rel).mean()) * 100.0)
    model.train()
    return float(np.mean(errs))


def _mesh_checkpoint(mcfg, normalizer, basis, cfg, info) -> ckpt_io.Checkpoint:
    return ckpt_io.Checkpoint(mcfg, None, None, normalizer, {}, info, basis_tensors(basis), cfg.window,
                              asset={"kind": "mesh", "vertices": basis.num_vertices, "components": basis.size})


def add_principal(path: Path, ms: MeshSet, count: int, windows: int = 2048, seed: int = 0):
    """PCA of the control points of random train windows, stored for the sliders."""
    from backend.mesh.engine import MeshEngine
    engine = MeshEngine(path, "cpu")
    sampler = WindowSampler(ms, engine.window, engine.window, seed)
    rows = []
    for a in range(0, windows, 64):
        for w in sampler.sample(min(64, windows - a)):
            rows.append(engine.encode(ms.frames[w]).points.reshape(-1))
    x = np.stack(rows)
    mean, comps, std = pca(x, count)
    explained = (std ** 2) / x.var(0, ddof=1).sum()
    c = engine.ckpt
    c.extra.update({"pca.mean": torch.tensor(mean, dtype=torch.float32),
                    "pca.components": torch.tensor(comps, dtype=torch.float32),
                    "pca.std": torch.tensor(std, dtype=torch.float32)})
    c.info["principal_names"] = [f"Mode {i + 1} ({100 * e:.0f} %)" for i, e in enumerate(explained)]
    c.info["principal_explained"] = [round(float(e), 4) for e in explained]
    c.info["principal_source"] = f"{windows} random train windows of {c.window} frames, seed {seed}"
    ckpt_io.save(c.path, c)


def train_mesh(cfg: MeshTrainConfig) -> Path:
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = Path(cfg.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        cfg.save(out / "config.json")
    except OSError as e:
        raise ValueError(f"{out}: cannot write the run folder ({e.strerror}); choose a writable --out") from None
    torch.manual_seed(cfg.seed)
    init = ckpt_io.load(cfg.init) if cfg.init else None
    if init is not None and not init.is_mesh:
        raise ValueError(f"{cfg.init}: --init needs a mesh checkpoint; this one is for armatures")
    want_v = init.asset["vertices"] if init is not None else None  # the data must fit the model's asset
    progress.phase("reading the data")
    train_ms = load_mesh_split(cfg.data, "train", cfg.object, want_v)
    val_ms = load_mesh_split(cfg.data, "val", cfg.object, train_ms.num_vertices)
    for split, ms in (("train", train_ms), ("val", val_ms)):
        if ms.lengths.max() < cfg.window:
            raise DataError(f"{cfg.data}: every {split} sequence is shorter than --window={cfg.window} frames "
                            f"(the longest has {ms.lengths.max()}); lower --window")
    t0 = time.time()
    if init is not None:
        basis, normalizer = basis_from(init.extra), init.normalizer
    elif cfg.basis:
        shared = ckpt_io.load(cfg.basis)
        if not shared.is_mesh:
            raise ValueError(f"{cfg.basis}: --basis needs a mesh checkpoint; this one is for armatures")
        basis = basis_from(shared.extra)
    else:
        progress.phase("fitting the vertex basis")
        basis = stored_basis(fit_basis(train_ms.frames, cfg.components, seed=cfg.seed))
    if basis.num_vertices != train_ms.num_vertices:
        raise ValueError(f"{cfg.init or cfg.basis}: its basis is for {basis.num_vertices} vertices, the data has "
                         f"{train_ms.num_vertices}")
    train_c, val_c = project(train_ms.frames, basis), project(val_ms.frames, basis)
    if init is None:
        normalizer = Normalizer.fit(torch.from_numpy(train_c), floor=1e-6)
    t_basis = time.time() - t0
    scale = {"vertices": basis.num_vertices,
             "diag": float(np.median([bbox_diagonal(train_ms.sequence(i)) for i in range(len(train_ms.names))]))}
    family = "keyframe" if cfg.task == "inbetween" else "spline"
    mcfg = ModelConfig(input_dim=basis.size, output_dim=basis.size, family=family, width=cfg.width, latent=cfg.latent,
                       layers=cfg.layers, heads=cfg.heads, ffn_factor=cfg.ffn_factor, controls=cfg.controls, dropout=cfg.dropout,
                       base=cfg.base if family == "keyframe" else "slerp",
                       linear_path=cfg.linear_path)
    model = build_model(mcfg)
    if init is not None:
        if init.config != mcfg:
            raise ValueError(f"{cfg.init}: --init checkpoint's model config differs from this run's")
        model.load_state_dict(init.state)
    batcher = MeshBatcher(train_c, normalizer, cfg.task, cfg.seed, cfg.base)
    val_batcher = MeshBatcher(val_c, normalizer, cfg.task, cfg.seed, cfg.base)
    val_windows = protocol_windows(val_ms, cfg.window, cfg.window)
    val_windows = val_windows[np.random.default_rng(0).permutation(len(val_windows))[:cfg.val_windows]]
    # in-betweening is validated half at keys every 5 frames, half at every 10 (the two cases)
    half = len(val_windows) // 2
    val_masks = (np.concatenate([val_key_masks(val_windows[:half], 5), val_key_masks(val_windows[half:], 10)])
                 if cfg.task == "inbetween" else None)
    std = normalizer.std
    opt = torch.optim.RAdam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(cfg))
    sampler = WindowSampler(train_ms, cfg.min_window, cfg.window, cfg.seed)
    step, best, wall, history = 0, float("inf"), 0.0, []
    state = load_state(out / "last")
    if state is not None:
        step, best, wall, history = restore_state(state, model, opt, sched, sampler)
        batcher.rng.bit_generator.state = state["key_rng"]
        print(f"resuming {out} at step {step}", file=sys.stderr)
        progress.emit("resume", step=step)
    info_base = {"data": str(cfg.data), "task": cfg.task, "kind": "mesh", "parameters": count_parameters(model),
                 "vertices": basis.num_vertices, "components": basis.size,
                 "train_sequences": len(train_ms.names), "train_frames": int(train_ms.starts[-1]),
                 "val_sequences": len(val_ms.names), "skipped_sequences": len(train_ms.skipped) + len(val_ms.skipped),
                 "basis_fit_s": round(t_basis, 1), "scale_diag": scale["diag"]}
    if state is None and init is None and getattr(model, "key_regression", None) is not None:
        t_fit = time.time()
        halves = [(val_windows[:half], val_masks[:half]), (val_windows[half:], val_masks[half:])]
        progress.phase("validating the base path")
        before = [val_error_pct(model, val_batcher, val_ms, basis, w, m) for w, m in halves]
        sampler_fit = WindowSampler(train_ms, cfg.min_window, cfg.window, cfg.seed + 1)
        info_base["key_regression"] = fit_key_regression(
            model, batcher, sampler_fit, std, scale, cfg.fit_windows, ridges=(1e-5, 1e-4, 1e-3), seed=cfg.seed,
            score=lambda: val_error_pct(model, val_batcher, val_ms, basis, val_windows, val_masks))
        progress.phase("validating the linear path")
        after = [val_error_pct(model, val_batcher, val_ms, basis, w, m) for w, m in halves]
        print(f"linear path fitted in {time.time() - t_fit:.0f} s: val mean vertex error with keys every 5 "
              f"{before[0]:.3f} -> {after[0]:.3f} %, every 10 {before[1]:.3f} -> {after[1]:.3f} % (base -> fitted)",
              file=sys.stderr)
        # step 0 is a candidate too: if the transformer never beats the fitted linear path, it ships
        best = min(info_base["key_regression"]["ridge_val_pct"].values())  # the chosen ridge's validation
        info_base["key_regression"].update(seconds=round(time.time() - t_fit, 1),
                                           val_base_pct_every_5=before[0], val_base_pct_every_10=before[1],
                                           val_vertex_pct_every_5=after[0], val_vertex_pct_every_10=after[1])
        history.append({"step": 0, "val_vertex_pct": best})
        ckpt_io.save(out / "best", _mesh_checkpoint(mcfg, normalizer, basis, cfg, dict(
            info_base, steps=0, wall_time_s=round(time.time() - t_fit, 1), val_vertex_pct=best, config=vars(cfg).copy())),
            model)
    print(f"{len(train_ms.names)} train sequences ({train_ms.starts[-1]} frames of {basis.num_vertices} vertices), "
          f"{len(val_windows)} val windows, basis of {basis.size} in {t_basis:.1f} s, "
          f"{count_parameters(model)} parameters", file=sys.stderr)
    prog = Progress(cfg.steps, step)
    progress.emit("start", total=cfg.steps)
    t_start, seen, t_rate = time.time() - wall, 0, time.time()
    model.train()
    rate = 0.0
    while step < cfg.steps:
        idx = sampler.sample(cfg.batch_size)
        inputs, target_n, mask = batcher(idx)
        loss = vertex_loss(model(*inputs), target_n, std, scale, inputs[1] if mask is not None else None)
        optimizer_step(loss, model, opt, sched, cfg.clip_grad)
        step += 1
        seen += cfg.batch_size
        rate = seen / max(time.time() - t_rate, 1e-9)
        prog.show(step, f"loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e} {rate:.0f} win/s")
        progress.step(step, cfg.steps, loss=loss.item(), lr=sched.get_last_lr()[0], windows_per_s=round(rate, 1))
        if step % 50 == 0:
            history.append({"step": step, "loss": loss.item(), "windows_per_s": rate})
        is_last = step == cfg.steps
        if step % cfg.val_every == 0 or is_last:
            err = val_error_pct(model, val_batcher, val_ms, basis, val_windows, val_masks)
            history.append({"step": step, "val_vertex_pct": err})
            print(f"\nstep {step}: val mean vertex error {err:.3f} % of the bounding-box diagonal", file=sys.stderr)
            progress.emit("validation", step=step, metric="val_vertex_pct", value=err)
            wall = time.time() - t_start
            info = dict(info_base, steps=step, wall_time_s=round(wall, 1), val_vertex_pct=err,
                        windows_per_s=round(rate, 1), config=vars(cfg).copy())
            ck = _mesh_checkpoint(mcfg, normalizer, basis, cfg, info)
            if err < best:
                best = err
                ckpt_io.save(out / "best", ck, model)
            if is_last:
                ckpt_io.save(out / "final", ck, model)
        if step % cfg.ckpt_every == 0 or is_last:
            wall = time.time() - t_start
            save_state(out / "last", {"model": model.state_dict(), "opt": opt.state_dict(),
                                      "sched": sched.state_dict(), "sampler": sampler.state(),
                                      "key_rng": batcher.rng.bit_generator.state, "step": step, "best": best,
                                      "wall": wall, "history": history})
    (out / "history.json").write_text(json.dumps(history))
    if cfg.task == "autoencoder" and cfg.principal > 0 and not os.environ.get("SPLINETWEEN_NO_PRINCIPAL"):
        add_principal(out / "best", train_ms, cfg.principal, seed=cfg.seed)
    from backend.runtime.export import export_saved
    print(export_saved(out / "best.json"), file=sys.stderr)  # (last: the principal directions rewrite the weights)
    print(f"\ndone: {out / 'best.json'} (val mean vertex error {best:.3f} % of the bounding-box diagonal)",
          file=sys.stderr)
    progress.emit("done", checkpoint=str(out / "best.json"), metric="val_vertex_pct", value=best)
    return out / "best.json"
