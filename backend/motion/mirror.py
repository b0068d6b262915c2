"""Left/right mirroring of a motion skeleton: training augmentation and test-time symmetry.

Mirroring needs care because every joint has its own local frame (in the Bandai-Namco skeleton
the arms run along +x on the left and -x on the right, the shoulders sit apart along the chest's
z, the legs along the hips' y).  With M the reflection of the world's x axis, a mirrored pose has
global rotations G'_j = M G_s(j) M A_j, where s swaps left and right and A_j is a fixed rotation
that carries joint j's frame onto its partner's mirrored frame.  Then, per joint,

    local rotation  L'_j = A_p^T (M L_s(j) M) A_j        local position  l'_j = A_p^T M l_s(j)

and forward kinematics gives exactly the mirrored positions M g_s(j).  A_j is one of the 24
axis-aligned rotations: the one that maps the joint's child offsets onto the mirrored offsets of
its partner's children, with the twist about a single child (or a leaf) chosen so that mirrored
rotations look like the data's own (``fit``).  Partners get A_s(j) = M A_j^T M, so that
mirroring twice is the identity.

The in-betweener uses it at inference too (``backend.motion.inbetween.fill``): the fill of the keys and the
mirrored fill of the mirrored keys, mirrored back, are averaged — a person moves the same way in a
mirror, so the model should too, and the average of its two answers misses less than either
(docs/results.md, *In-betweening*).  Pure numpy; ``training.augment`` applies the same map to torch batches.
"""
from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

import numpy as np

from ..maths import quat_np

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


_left_matrix, _right_matrix = quat_np.left_matrix, quat_np.right_matrix


@dataclass(frozen=True)
class Mirror:
    """Left/right mirroring for one skeleton (see the module docstring)."""
    partner: np.ndarray  # [J]
    frames: np.ndarray  # [J, 4] quaternion A_j
    parents: np.ndarray  # [J]

    def parent_frames_inv(self) -> np.ndarray:
        """[J, 4]: A_p^T per joint (the identity at a root, which has no parent frame)."""
        par = np.where(self.parents < 0, np.arange(len(self.parents)), self.parents)
        inv = quat_np.inv(np.asarray(self.frames, dtype=np.float64)[par])
        inv[self.parents < 0] = (1.0, 0.0, 0.0, 0.0)
        return inv

    @functools.cached_property
    def _maps(self) -> tuple[np.ndarray, np.ndarray]:
        """Per joint, ``apply``'s maps as matrices: [J, 4, 4] taking the partner's reflected rotation to
        A_p^T (.) A_j, [J, 3, 3] taking its reflected position to A_p^T (.) (one product per frame each)."""
        a = np.asarray(self.frames, dtype=np.float64)
        ap_inv = self.parent_frames_inv()
        return _left_matrix(ap_inv) @ _right_matrix(a), quat_np.to_matrix(ap_inv)

    def apply(self, rot: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Local rotations [..., J, 4] and positions [..., J, 3] of the mirrored motion (numpy)."""
        turn, move = self._maps
        r = np.asarray(rot, dtype=np.float64)[..., self.partner, :] * (1.0, 1.0, -1.0, -1.0)  # M R M
        p = np.asarray(pos, dtype=np.float64)[..., self.partner, :] * (-1.0, 1.0, 1.0)
        return (turn @ r[..., None])[..., 0], (move @ p[..., None])[..., 0]

    def to_info(self) -> dict:
        """JSON for a checkpoint's ``info.mirror``."""
        return {"partner": [int(x) for x in self.partner],
                "frames": [[float(v) for v in q] for q in np.asarray(self.frames, dtype=np.float64)]}

    @classmethod
    def from_info(cls, doc, parents) -> "Mirror | None":
        """The Mirror stored in a checkpoint's ``info.mirror`` (validated by checkpoint_checks), or None."""
        if not doc:
            return None
        return cls(np.asarray(doc["partner"], dtype=np.int64), np.asarray(doc["frames"], dtype=np.float32),
                   np.asarray(parents))


def fit(names, parents, offsets: np.ndarray, rot_sample: np.ndarray) -> Mirror | None:
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
    mats = quat_np.to_matrix(quat_np.normalize(rot_sample.astype(np.float64)))  # [F, J, 3, 3]
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
                miss += float(np.linalg.norm(a @ offsets[c] - target)) / max(float(np.linalg.norm(target)), 1e-6)
            if miss > 1e-2 * max(1, len(children[j])):
                continue
            # mirrored local rotations of j (from its partner's) should look like j's own
            mirrored = a_parent.T @ m @ mats[:, s] @ m @ a
            score = float(np.linalg.norm(mirrored.mean(0) - mats[:, j].mean(0)))
            if score < best_score:
                best, best_score = a, score
        if best is None:
            return None  # the skeleton is not left/right symmetric: no mirroring
        chosen[j] = best
        if s != j:
            chosen[s] = m @ best.T @ m
    frames = quat_np.from_matrix(np.stack([chosen[j] for j in range(len(names))]))
    return Mirror(partner, frames.astype(np.float32), parents)
