"""Augmentations that create motion the data lacks: mirroring, time reversal, speed changes and
upper/lower body mixing.  Pure functions over local rotations [..., F, J, 4] and local positions
[..., F, J, 3] (torch), in the (lrot, lpos, parents) layout of ``backend.skeleton``.

Mirroring needs care because every joint has its own local frame (in the Bandai-Namco skeleton
the arms run along +x on the left and -x on the right, the shoulders sit apart along the chest's
z, the legs along the hips' y).  With M the reflection of the world's x axis, a mirrored pose has
global rotations G'_j = M G_s(j) M A_j, where s swaps left and right and A_j is a fixed rotation
that carries joint j's frame onto its partner's mirrored frame.  Then, per joint,

    local rotation  L'_j = A_p^T (M L_s(j) M) A_j        local position  l'_j = A_p^T M l_s(j)

and forward kinematics gives exactly the mirrored positions M g_s(j).  A_j is one of the 24
axis-aligned rotations: the one that maps the joint's child offsets onto the mirrored offsets of
its partner's children, with the twist about a single child (or a leaf) chosen so that mirrored
rotations look like the data's own (``fit_mirror``).  Partners get A_s(j) = M A_j^T M, so that
mirroring twice is the identity.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np
import torch

from backend import quat_np as Q
from backend import quat_torch as QT

_SIDES = [(r"_L$", "_R"), (r"_R$", "_L"), (r"\.L$", ".R"), (r"\.R$", ".L"), (r"_l$", "_r"), (r"_r$", "_l"),
          (r"^Left", "Right"), (r"^Right", "Left"), (r"^left", "right"), (r"^right", "left")]


def partner_names(names) -> np.ndarray:
    """[J] index of each joint's left/right partner (itself for centre joints)."""
    index = {n: i for i, n in enumerate(names)}
    out = np.arange(len(names))
    for i, n in enumerate(names):
        for pat, rep in _SIDES:
            other = re.sub(pat, rep, n)
            if other != n and other in index:
                out[i] = index[other]
                break
    return out


def _axis_rotations() -> np.ndarray:
    """The 24 rotations that are signed permutation matrices: [24, 3, 3]."""
    mats = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1, -1), repeat=3):
            m = np.zeros((3, 3))
            m[range(3), perm] = signs
            if np.linalg.det(m) > 0:
                mats.append(m)
    return np.stack(mats)


@dataclass(frozen=True)
class Mirror:
    """Left/right mirroring for one skeleton (see the module docstring)."""
    partner: np.ndarray  # [J]
    frames: np.ndarray  # [J, 4] quaternion A_j
    parents: np.ndarray  # [J]

    def __call__(self, rot: torch.Tensor, pos: torch.Tensor):
        a = torch.as_tensor(self.frames, dtype=rot.dtype, device=rot.device)
        par = np.where(self.parents < 0, np.arange(len(self.parents)), self.parents)
        ap_inv = QT.inv(a[par])
        ap_inv[self.parents < 0] = torch.tensor([1.0, 0, 0, 0], dtype=rot.dtype)  # a root has no parent frame
        sw = torch.as_tensor(self.partner)
        r = rot[..., sw, :]
        r = torch.stack([r[..., 0], r[..., 1], -r[..., 2], -r[..., 3]], -1)  # M R M for M = diag(-1, 1, 1)
        r = QT.mul(QT.mul(ap_inv.expand_as(r), r), a.expand_as(r))
        p = pos[..., sw, :] * torch.tensor([-1.0, 1.0, 1.0], dtype=pos.dtype, device=pos.device)
        p = QT.rotate(ap_inv.expand(p.shape[:-1] + (4,)), p)
        return r, p


def fit_mirror(names, parents, offsets: np.ndarray, rot_sample: np.ndarray) -> Mirror | None:
    """The Mirror of a skeleton, or None when it has no left/right pairs.

    ``offsets`` [J, 3]: local rest offsets (or the data's mean local positions); ``rot_sample``
    [F, J, 4]: local rotations of some frames of real motion, to choose twists about single bones.
    """
    partner = partner_names(names)
    if np.all(partner == np.arange(len(names))):
        return None
    parents = np.asarray(parents)
    m = np.diag([-1.0, 1.0, 1.0])
    cands = _axis_rotations()
    mats = Q.to_matrix(Q.normalize(rot_sample.astype(np.float64)))  # [F, J, 3, 3]
    children = [np.flatnonzero(parents == j) for j in range(len(names))]
    chosen: dict[int, np.ndarray] = {}
    for j in range(len(names)):
        if j in chosen:
            continue
        s = int(partner[j])
        if parents[j] < 0 and not np.any(np.abs(mats[:, j] - np.eye(3)) > 1e-6):
            chosen[j] = np.eye(3)  # a static root (all-zero channels) stays the identity
            continue
        a_parent = np.eye(3) if parents[j] < 0 else chosen[int(parents[j])]
        best, best_score = None, np.inf
        for a in cands:
            if s == j and not np.allclose(a, m @ a.T @ m):
                continue  # a centre joint must be its own mirror
            miss = 0.0
            for c in children[j]:  # A_j o_c = M o_s(c)
                target = m @ offsets[partner[c]]
                miss += np.linalg.norm(a @ offsets[c] - target) / max(np.linalg.norm(target), 1e-6)
            if miss > 1e-2 * max(1, len(children[j])):
                continue
            # mirrored local rotations of j (from its partner's) should look like j's own
            mirrored = a_parent.T @ m @ mats[:, s] @ m @ a
            score = np.linalg.norm(mirrored.mean(0) - mats[:, j].mean(0))
            if score < best_score:
                best, best_score = a, score
        if best is None:
            return None  # the skeleton is not left/right symmetric: no mirroring
        chosen[j] = best
        if s != j:
            chosen[s] = m @ best.T @ m
    frames = Q.from_matrix(np.stack([chosen[j] for j in range(len(names))]))
    return Mirror(partner, frames.astype(np.float32), parents)


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
    r = QT.slerp(a, b, w[None, :, None].expand(a.shape[:-1]))
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


class Augmenter:
    """The training recipe's augmentations, drawn per window with the loop's torch generator."""

    def __init__(self, skeleton, ms, mirror: float = 0.0, reverse: float = 0.0, mix: float = 0.0):
        self.p_mirror, self.p_reverse, self.p_mix = mirror, reverse, mix
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
