"""The training loop: windows -> features -> model -> loss, with validation and resume.

Longer than 300 lines: one training procedure (data, model, validation, resume), read in order.
"""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from backend.maths import quat_torch
from backend.models.registry import build_model
from backend.models.spline_transformer import ModelConfig, count_parameters
from backend.motion.features import Normalizer, detect_layout
from backend.motion.inbetween.contacts import find_legs
from backend.runtime import checkpoint as ckpt_io

from . import progress
from .augment import Augmenter, time_warp
from .config import TrainConfig
from .data import DataError, WindowSampler, load_split, protocol_windows, within_clip_position_std
from .features import split_features, to_features
from .inbetween_task import InbetweenBatcher
from .losses import pose_loss, relative_pose_loss
from .state import load_state, save_state


class Batcher:
    """Frame indices -> normalised features, origin and per-window template positions."""

    def __init__(self, ms, layout, normalizer=None, augment_yaw=False, augmenter=None):
        self.rot = torch.from_numpy(ms.rotations)
        self.pos = torch.from_numpy(ms.positions)
        self.layout, self.normalizer, self.augment_yaw = layout, normalizer, augment_yaw
        self.augmenter = augmenter

    def raw(self, idx: np.ndarray, gen: torch.Generator | None = None, frames: int | None = None):
        """Windows at ``idx`` [B, L]; resampled to ``frames`` samples when given (a speed change)."""
        idx_t = torch.from_numpy(idx)
        rot, pos = self.rot[idx_t], self.pos[idx_t].clone()
        if frames is not None and frames != idx.shape[1]:
            rot, pos = time_warp(rot, pos, frames)
        if self.augmenter is not None:
            rot, pos = self.augmenter(rot, pos, gen)
        if self.augment_yaw:
            rot, pos = self._yaw(rot, pos, gen)
        return rot, pos

    def _yaw(self, rot, pos, gen):
        """Rotate the whole motion about the up axis (through the modelled root joint)."""
        b = rot.shape[0]
        ang = torch.rand(b, generator=gen) * 2 * math.pi
        axis = torch.zeros(3)
        axis[self.layout.up_axis] = 1.0
        q = quat_torch.from_axis_angle(axis, ang)[:, None]  # [B,1,4]
        j = self.layout.position_joints[0]
        rot = rot.clone()
        rot[:, :, j] = quat_torch.mul(q.expand_as(rot[:, :, j]), rot[:, :, j])
        pos[:, :, j] = quat_torch.rotate(q.expand(rot.shape[:2] + (4,)), pos[:, :, j])
        return rot, pos

    def __call__(self, idx, gen=None, frames=None):
        """-> (model inputs, normalised target, origin, template positions, true rotations)."""
        rot, pos = self.raw(idx, gen, frames)
        feat, origin = to_features(rot, pos, self.layout)
        feat_n = self.normalizer(feat)
        return (feat_n,), feat_n, origin, pos[:, :1], rot


def lr_lambda(cfg: TrainConfig):
    def f(step):
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
        lo = cfg.min_lr / cfg.lr
        return lo + (1 - lo) * 0.5 * (1 + math.cos(math.pi * min(1.0, t)))
    return f


@torch.no_grad()
def rotation_error_deg(model, batcher, windows, layout, bs=256):
    """Mean geodesic local-rotation error (degrees) over the given windows."""
    errs = []
    model.eval()
    for i in range(0, len(windows), bs):
        inputs, _, origin, _, rot = batcher(windows[i:i + bs])
        pred = batcher.normalizer.inverse(model(*inputs))
        _, r6 = split_features(pred, layout, origin)
        q = quat_torch.from_6d(r6)
        errs.append(torch.rad2deg(quat_torch.angle_between(q, rot[..., layout.rotation_joints, :])).mean(dim=(1, 2)))
    model.train()
    return float(torch.cat(errs).mean())


def val_key_masks(windows: np.ndarray, spacing: int = 15) -> np.ndarray:
    """Fixed validation keys: every ``spacing`` frames plus the last (the protocol's middle case)."""
    m = np.zeros(windows.shape, dtype=bool)
    m[:, ::spacing] = True
    m[:, -1] = True
    return m


class Progress:
    def __init__(self, total, start=0):
        self.total, self.t0, self.s0, self.last = total, time.time(), start, 0.0

    def show(self, step, text, force=False):
        now = time.time()
        if not force and now - self.last < 1.0:
            return
        self.last = now
        done = step / self.total
        bar = "#" * int(24 * done) + "." * (24 - int(24 * done))
        rate = (step - self.s0) / max(now - self.t0, 1e-9)
        eta = (self.total - step) / max(rate, 1e-9)
        print(f"\r[{bar}] {step}/{self.total} {text} eta {int(eta // 60)}:{int(eta % 60):02d}",
              end="", file=sys.stderr, flush=True)


def optimizer_step(loss, model, opt, sched, clip_grad: float):
    """Backward, optional gradient-norm clipping, one optimiser and one schedule step."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if clip_grad > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_grad)
    opt.step()
    sched.step()


def restore_state(state: dict, model, opt, sched, sampler):
    """Put a run's ``last`` state back; -> (step, best, wall, history)."""
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    sched.load_state_dict(state["sched"])
    sampler.set_state(state["sampler"])
    return state["step"], state["best"], state["wall"], state["history"]


class _FixedKeys:
    """Validation batches with fixed keys, looked up by the window's first frame."""

    def __init__(self, batcher, windows, masks):
        self.batcher, self.normalizer = batcher, batcher.normalizer
        self.masks = {int(w[0]): m for w, m in zip(windows, masks, strict=True)}

    def __call__(self, idx, gen=None):
        return self.batcher(idx, gen, masks=np.stack([self.masks[int(w[0])] for w in idx]))


def draw_windows(sampler, batch: int, p_speed: float, rng: np.random.Generator, max_len: int):
    """(frame indices [B, L], frames n): a batch of windows of n frames; with chance ``p_speed`` it
    reads L = (n-1) s + 1 source frames at a speed s drawn log-uniformly in [0.5, 2]."""
    n = sampler.draw_length()
    if p_speed > 0 and rng.random() < p_speed:
        span = int(round((n - 1) * float(np.exp(rng.uniform(np.log(0.5), np.log(2.0)))))) + 1
        if 2 <= span <= max_len:
            return sampler.sample(batch, span), n
    return sampler.sample(batch, n), n


def train(cfg: TrainConfig) -> Path:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("gloo")
    if cfg.batch_size % world:
        raise ValueError(f"batch_size={cfg.batch_size} is not divisible by {world} processes")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    out = Path(cfg.out)
    if rank == 0:
        try:
            out.mkdir(parents=True, exist_ok=True)
            cfg.save(out / "config.json")
        except OSError as e:
            raise ValueError(f"{out}: cannot write the run folder ({e.strerror})") from None
    torch.manual_seed(cfg.seed)
    cache = cfg.cache or None
    left_out = cfg.left_out()
    ref = ckpt_io.load(cfg.skeleton).skeleton if cfg.skeleton else None
    train_ms = load_split(cfg.data, "train", cache, verbose=rank == 0, skeleton=ref, exclude=left_out)
    val_ms = load_split(cfg.data, "val", cache, verbose=rank == 0, skeleton=train_ms.skeleton, exclude=left_out)
    for split, ms in (("train", train_ms), ("val", val_ms)):
        if ms.lengths.max() < cfg.window:
            raise DataError(f"{cfg.data}: every {split} clip is shorter than --window={cfg.window} frames "
                            f"(the longest has {ms.lengths.max()}); lower --window")
    layout = detect_layout(within_clip_position_std(train_ms), train_ms.skeleton.channels)
    augmenter = None
    if cfg.augment_mirror or cfg.augment_reverse or cfg.augment_mix or cfg.augment_scale:
        augmenter = Augmenter(train_ms.skeleton, train_ms, cfg.augment_mirror, cfg.augment_reverse, cfg.augment_mix,
                              cfg.augment_scale)
    # statistics (and the principal axes of a linear path) of what the model will see: augmented windows
    stats_sampler = WindowSampler(train_ms, cfg.window, cfg.window, cfg.seed + 1)
    stats_gen = torch.Generator().manual_seed(cfg.seed + 1)
    feats, _ = to_features(*Batcher(train_ms, layout, None, cfg.augment_yaw, augmenter).raw(
        stats_sampler.sample(2048), stats_gen), layout)
    normalizer = Normalizer.fit(feats, cfg.norm_floor, rotate=cfg.linear_path and cfg.task == "autoencoder")
    init = ckpt_io.load(cfg.init) if cfg.init else None
    if init is not None:
        if init.layout != layout or not init.skeleton.same_hierarchy(train_ms.skeleton):
            raise ValueError(f"{cfg.init}: --init checkpoint has a different skeleton or feature layout")
        # keep the statistics the weights were trained with, the spreads raised to this run's floor (a
        # fine-tune with another studio's capture must not read its few degrees of off-axis roll as
        # hundreds of spreads); channels above the floor keep their numbers
        normalizer = replace(init.normalizer, std=init.normalizer.std.clamp_min(cfg.norm_floor))
    batcher = Batcher(train_ms, layout, normalizer, cfg.augment_yaw, augmenter)
    val_batcher = Batcher(val_ms, layout, normalizer)
    val_windows = protocol_windows(val_ms, cfg.window, cfg.window)
    val_windows = val_windows[np.random.default_rng(0).permutation(len(val_windows))[:cfg.val_windows]]
    if cfg.task == "inbetween":
        batcher = InbetweenBatcher(batcher, layout, normalizer, cfg.seed, cfg.base)
        fixed = val_key_masks(val_windows)
        val_batcher = _FixedKeys(InbetweenBatcher(val_batcher, layout, normalizer, cfg.seed, cfg.base),
                                 val_windows, fixed)
    family = "keyframe" if cfg.task == "inbetween" else cfg.family
    mcfg = ModelConfig(input_dim=layout.dim, output_dim=layout.dim, family=family, width=cfg.width,
                       latent=cfg.latent, layers=cfg.layers, heads=cfg.heads, ffn_factor=cfg.ffn_factor,
                       decoder_layers=cfg.decoder_layers if cfg.task == "autoencoder" else 0,
                       base=cfg.base if cfg.task == "inbetween" else "slerp",
                       linear_path=cfg.linear_path and cfg.task == "autoencoder")
    model = build_model(mcfg)
    if init is not None:
        if init.config != mcfg:
            raise ValueError(f"{cfg.init}: --init checkpoint's model config differs from this run's "
                             f"({init.config} vs {mcfg})")
        model.load_state_dict(init.state)
    opt = torch.optim.RAdam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(cfg))
    sampler = WindowSampler(train_ms, cfg.min_window, cfg.window, cfg.seed,
                            train_ms.clip_weights(cfg.converted_weight))
    gen = torch.Generator().manual_seed(cfg.seed)
    speed_rng = np.random.default_rng(cfg.seed + 11)
    step, best, wall, history = 0, float("inf"), 0.0, []
    state = load_state(out / "last")
    if state is not None:
        step, best, wall, history = restore_state(state, model, opt, sched, sampler)
        gen.set_state(state["gen"])
        if "speed_rng" in state:
            speed_rng.bit_generator.state = state["speed_rng"]
        if rank == 0:
            print(f"resuming {out} at step {step}", file=sys.stderr)
            progress.emit("resume", step=step)
    net = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    parents = train_ms.skeleton.parents
    legs = find_legs(train_ms.skeleton.names, parents)
    info_base = {"data": str(cfg.data), "split": "train (dataset-2: id % 10 not in {5, 8}; dataset-1: style not "
                 "happy or tired; CMU: subjects other than 05 and 09)", "left_out_kinds": list(left_out), "task": cfg.task,
                 "parameters": count_parameters(model), "train_clips": len(train_ms.names),
                 "train_frames": int(train_ms.starts[-1]), "skipped_clips": len(train_ms.skipped),
                 "val_clips": len(val_ms.names), "skipped_val_clips": len(val_ms.skipped),
                 "processes": world}
    if augmenter is not None and augmenter.mirror is not None:  # the in-betweener's test-time symmetry reads it
        info_base["mirror"] = augmenter.mirror.to_info()
    if rank == 0:
        print(f"{len(train_ms.names)} train clips ({train_ms.starts[-1]} frames, {sampler.short} shorter than "
              f"{cfg.window} skipped for windows), {len(val_windows)} val windows, "
              f"{count_parameters(model)} parameters", file=sys.stderr)
        progress.emit("start", total=cfg.steps)
    prog = Progress(cfg.steps, step)
    t_start, seen, t_rate = time.time() - wall, 0, time.time()
    model.train()
    while step < cfg.steps:
        idx, frames = draw_windows(sampler, cfg.batch_size, cfg.augment_speed, speed_rng,
                                   int(train_ms.lengths.max()))
        inputs, target_n, origin, template, _ = batcher(idx, gen, frames=frames)
        shard = slice(rank * cfg.batch_size // world, (rank + 1) * cfg.batch_size // world)
        pred = net(*(x[shard] for x in inputs))
        if cfg.task == "inbetween" and cfg.loss == "relative":
            _, base_n, mask = (x[shard] for x in inputs)
            loss, parts = relative_pose_loss(pred, base_n, target_n[shard], ~mask, normalizer, layout,
                                             origin[shard], template[shard], parents, cfg.fk_weight)
        else:
            loss, parts = pose_loss(pred, target_n[shard], normalizer, layout, origin[shard], template[shard],
                                    parents, cfg.fk_weight, legs=legs, foot_weight=cfg.foot_weight)
        optimizer_step(loss, model, opt, sched, cfg.clip_grad)
        step += 1
        seen += cfg.batch_size
        if rank == 0:
            rate = seen / max(time.time() - t_rate, 1e-9)
            prog.show(step, f"loss {loss.item():.5f} lr {sched.get_last_lr()[0]:.2e} {rate:.0f} win/s")
            progress.step(step, cfg.steps, loss=loss.item(), lr=sched.get_last_lr()[0], windows_per_s=round(rate, 1))
        if step % cfg.log_every == 0:
            logged = torch.stack([loss.detach(), *parts.values()])
            if world > 1:  # equal slices: the mean of the ranks' means is the whole batch's mean
                dist.all_reduce(logged)
                logged /= world
            if rank == 0:
                history.append({"step": step, **dict(zip(["loss", *parts], logged.tolist(), strict=True)),
                                "windows_per_s": rate})
        is_last = step == cfg.steps
        if (step % cfg.val_every == 0 or is_last) and rank == 0:
            err = rotation_error_deg(model, val_batcher, val_windows, layout)
            history.append({"step": step, "val_rot_deg": err})
            print(f"\nstep {step}: val rotation error {err:.3f} deg", file=sys.stderr)
            progress.emit("validation", step=step, metric="val_rot_deg", value=err)
            wall = time.time() - t_start
            info = dict(info_base, steps=step, wall_time_s=round(wall, 1), val_rot_deg=err,
                        windows_per_s=round(rate, 1), config=vars(cfg).copy())
            ck = ckpt_io.Checkpoint(mcfg, train_ms.skeleton, layout, normalizer, {}, info, window=cfg.window)
            if err < best:
                best = err
                ckpt_io.save(out / "best", ck, model)
            if is_last:
                ckpt_io.save(out / "final", ck, model)
        if (step % cfg.ckpt_every == 0 or is_last) and rank == 0:
            wall = time.time() - t_start
            save_state(out / "last", {"model": model.state_dict(), "opt": opt.state_dict(),
                                      "sched": sched.state_dict(), "sampler": sampler.state(),
                                      "gen": gen.get_state(), "speed_rng": speed_rng.bit_generator.state,
                                      "step": step, "best": best, "wall": wall,
                                      "history": history})
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        import json
        (out / "history.json").write_text(json.dumps(history))
        from backend.runtime.export import export_saved
        print(export_saved(out / "best.json"), file=sys.stderr)
        print(f"\ndone: {out / 'best.json'} (val rotation error {best:.3f} deg)", file=sys.stderr)
        progress.emit("done", checkpoint=str(out / "best.json"), metric="val_rot_deg", value=best)
    return out / "best.json"
