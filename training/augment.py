"""Augmentations that create motion the data lacks: mirroring, time reversal, speed changes,
upper/lower body mixing and other proportions (another performer: body and legs scaled).  Pure functions over local rotations [..., F, J, 4] and local positions
[..., F, J, 3] (torch), in the (lrot, lpos, parents) layout of ``backend.motion.skeleton``.

Mirroring (the per-joint frame corrections, fitted to the skeleton) is ``backend.motion.mirror``'s; here it is
applied to torch batches.
"""
from __future__ import annotations

import numpy as np
import torch

from backend.maths import quat_torch
from backend.motion.mirror import Mirror as _Mirror
from backend.motion.mirror import fit, partner_names  # noqa: F401  (partner_names: the API)


class Mirror(_Mirror):
    """``backend.motion.mirror.Mirror`` applied to torch batches."""

    def __call__(self, rot: torch.Tensor, pos: torch.Tensor):
        a = torch.as_tensor(self.frames, dtype=rot.dtype, device=rot.device)
        ap_inv = torch.as_tensor(self.parent_frames_inv(), dtype=rot.dtype, device=rot.device)
        sw = torch.as_tensor(self.partner)
        r = rot[..., sw, :]
        r = torch.stack([r[..., 0], r[..., 1], -r[..., 2], -r[..., 3]], -1)  # M R M for M = diag(-1, 1, 1)
        r = quat_torch.mul(quat_torch.mul(ap_inv.expand_as(r), r), a.expand_as(r))
        p = pos[..., sw, :] * torch.tensor([-1.0, 1.0, 1.0], dtype=pos.dtype, device=pos.device)
        p = quat_torch.rotate(ap_inv.expand(p.shape[:-1] + (4,)), p)
        return r, p




def fit_mirror(names, parents, offsets: np.ndarray, rot_sample: np.ndarray) -> Mirror | None:
    """``backend.motion.mirror.fit``, as a Mirror that applies to torch batches."""
    m = fit(names, parents, offsets, rot_sample)
    return None if m is None else Mirror(m.partner, m.frames, m.parents)


def reverse_time(rot: torch.Tensor, pos: torch.Tensor):
    """Play the windows backwards: [B, F, J, *] -> the same, frames in reverse order."""
    return rot.flip(1), pos.flip(1)


def time_warp(rot: torch.Tensor, pos: torch.Tensor, frames: int):
    """Resample windows [B, L, J, *] to ``frames`` evenly spaced samples (speed L-1 : frames-1):
    SLERP between neighbouring rotations, linear between positions."""
    src = rot.shape[1]
    t = torch.linspace(0, src - 1, frames, dtype=torch.float64)
    lo = t.floor().long().clamp(max=src - 2) if src > 1 else torch.zeros(frames, dtype=torch.long)
    hi = (lo + 1).clamp(max=src - 1)
    w = (t - lo).to(rot.dtype)
    a, b = rot[:, lo], rot[:, hi]
    r = quat_torch.slerp(a, b, w[None, :, None].expand(a.shape[:-1]))
    p = pos[:, lo] * (1 - w)[None, :, None, None] + pos[:, hi] * w[None, :, None, None]
    return r, p


def descendants(parents, root: int) -> np.ndarray:
    """[J] bool: ``root`` and every joint below it."""
    parents = np.asarray(parents)
    out = np.zeros(len(parents), dtype=bool)
    out[root] = True
    for j in range(len(parents)):
        if parents[j] >= 0 and out[parents[j]]:
            out[j] = True
    return out


def mix_bodies(rot: torch.Tensor, upper: np.ndarray, partner: torch.Tensor, which: torch.Tensor) -> torch.Tensor:
    """The upper body's local rotations of window ``partner[b]`` on the lower body of window b, where
    ``which[b]``: rot [B, F, J, 4], upper [J] bool, partner [B] long, which [B] bool."""
    out = rot.clone()
    sel = torch.as_tensor(upper)
    mixed = rot[partner][:, :, sel]
    out[:, :, sel] = torch.where(which[:, None, None, None], mixed, rot[:, :, sel])
    return out


def proportion_groups(parents) -> tuple[int, np.ndarray, np.ndarray]:
    """(hips, root chain [J] bool: the hips and the joints above them, legs [J] bool): the hips are the
    first joint with more than one child; the legs are what hangs below them besides the upper body."""
    parents = np.asarray(parents)
    j = 0
    while len(np.flatnonzero(parents == j)) == 1:
        j = int(np.flatnonzero(parents == j)[0])
    chain = np.zeros(len(parents), dtype=bool)
    k = j
    while k >= 0:
        chain[k], k = True, int(parents[k])
    legs = descendants(parents, j) & ~upper_body(parents)
    legs[j] = False
    return j, chain, legs


def scale_proportions(pos: torch.Tensor, chain: np.ndarray, legs: np.ndarray, body: torch.Tensor,
                      leg: torch.Tensor) -> torch.Tensor:
    """Local positions [B, F, J, 3] of another performer: every offset times ``body`` [B], the legs' and
    the root chain's (the hips' height and travel) times ``body * leg``."""
    f = body[:, None].expand(-1, pos.shape[2]).clone()
    sel = torch.as_tensor(legs | chain)
    f[:, sel] *= leg[:, None]
    return pos * f[:, None, :, None].to(pos.dtype)


class Augmenter:
    """The training recipe's augmentations, drawn per window with the loop's torch generator."""

    def __init__(self, skeleton, ms, mirror: float = 0.0, reverse: float = 0.0, mix: float = 0.0,
                 scale: float = 0.0):
        self.p_mirror, self.p_reverse, self.p_mix, self.scale = mirror, reverse, mix, scale
        _, self.chain, self.legs = proportion_groups(skeleton.parents)
        sample = ms.rotations[:: max(1, len(ms.rotations) // 4096)]
        self.mirror = fit_mirror(skeleton.names, skeleton.parents, ms.positions.mean(0), sample) if mirror else None
        if mirror and self.mirror is None:
            raise ValueError("augment_mirror: the skeleton has no left/right joint pairs to swap (_L/_R, .L/.R, "
                             "Left/Right); set --augment_mirror=0")
        self.upper = upper_body(skeleton.parents)

    def __call__(self, rot: torch.Tensor, pos: torch.Tensor, gen=None):
        u = torch.rand(rot.shape[0], 3, generator=gen)
        if self.mirror is not None:
            m = u[:, 0] < self.p_mirror
            if m.any():
                rot, pos = rot.clone(), pos.clone()
                rot[m], pos[m] = self.mirror(rot[m], pos[m])
        r = u[:, 1] < self.p_reverse
        if r.any():
            rot, pos = rot.clone(), pos.clone()
            rot[r], pos[r] = reverse_time(rot[r], pos[r])
        x = u[:, 2] < self.p_mix
        if x.any():
            rot = mix_bodies(rot, self.upper, torch.randperm(rot.shape[0], generator=gen), x)
        if self.scale:
            s = 2 * torch.rand(rot.shape[0], 2, generator=gen, dtype=torch.float64) - 1
            pos = scale_proportions(pos, self.chain, self.legs, 1 + self.scale * s[:, 0], 1 + 0.5 * self.scale * s[:, 1])
        return rot, pos


def upper_body(parents) -> np.ndarray:
    """[J] bool: the upper body, i.e. the largest subtree below the first branching joint (the
    spine above the hips; the legs are the smaller subtrees there)."""
    parents = np.asarray(parents)
    j = 0
    while True:
        kids = np.flatnonzero(parents == j)
        if len(kids) != 1:
            break
        j = int(kids[0])
    if len(kids) == 0:
        return np.zeros(len(parents), dtype=bool)
    return max((descendants(parents, int(k)) for k in kids), key=lambda d: d.sum())
