"""The in-betweener's guard: trust the model only as far as it predicts the user's own keys.

A learned correction must shrink to nothing where the model does not know the motion.  The keys
themselves say whether it does: hide every other interior key, fill the doubled gaps, and compare
each hidden key with what the model, the Hermite base and SLERP put there.  The weights

    out = hermite + beta * (slerp - hermite) + alpha * (model - hermite),   alpha, beta in [0, 1]

that fit the hidden keys best (least squares over every joint's quaternion and the root position)
are then used for the fill with all keys.  Familiar motion keeps alpha near 1; on motion the model
never saw alpha drops towards 0 and the result is the better of the two curves it was built on.
Pure numpy: the passes that produce the predictions live in ``backend.inbetween``.
"""
from __future__ import annotations

import numpy as np

from . import quat_np as Q

POSITION_SCALE = 0.01  # 1 cm of root travel weighs like 0.01 of a quaternion component (about 1 degree)


def holdout_passes(keys: list[int], max_gap: int) -> list[list[int]]:
    """Key lists with every other interior key hidden (odd ordinals, then even ones), where the doubled
    gap still fits the model's window; passes that would hide nothing are left out."""
    passes = []
    for first in (1, 2):
        hidden = {i for i in range(first, len(keys) - 1, 2) if keys[i + 1] - keys[i - 1] <= max_gap}
        if hidden:
            passes.append([k for i, k in enumerate(keys) if i not in hidden])
    return passes


def _vectors(rot: np.ndarray, pos: np.ndarray, ref_rot: np.ndarray, rot_joints, pos_joints) -> np.ndarray:
    """[F, V]: quaternions of the rotating joints (sign-aligned to ``ref_rot``) and scaled positions."""
    q = rot[:, rot_joints]
    q = np.where((q * ref_rot[:, rot_joints]).sum(-1, keepdims=True) < 0, -q, q)
    return np.concatenate([q.reshape(len(q), -1), POSITION_SCALE * pos[:, pos_joints].reshape(len(pos), -1)], -1)


def fit_weights(truth, model, hermite, slerp, rot_joints, pos_joints) -> tuple[float, float]:
    """(alpha, beta) in [0, 1]^2 minimising the miss at the hidden keys.

    Each argument is (rotations [F, J, 4], positions [F, J, 3]) at the hidden frames.  With nothing
    hidden (a single gap) the model is trusted as it is: (1, 0).
    """
    if len(truth[0]) == 0:
        return 1.0, 0.0
    ref = truth[0]
    t, m, h, s = (_vectors(r, p, ref, rot_joints, pos_joints) for r, p in (truth, model, hermite, slerp))
    return box_least_squares(np.stack([m - h, s - h], -1).reshape(-1, 2), (t - h).ravel())


def box_least_squares(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """argmin ||a x - b|| over x in [0, 1]^2 for a [N, 2]: the interior solution if it is feasible,
    else the best point on the box's edges (each a one-dimensional clamp)."""
    def cost(x):
        return float(np.sum((a @ x - b) ** 2))
    cands = []
    g = a.T @ a
    if abs(np.linalg.det(g)) > 1e-12 * max(1.0, np.trace(g) ** 2):
        x = np.linalg.solve(g, a.T @ b)
        if np.all((x >= 0) & (x <= 1)):
            cands.append(x)
    for i in range(2):  # fix coordinate i at 0 or 1, solve the other
        j = 1 - i
        for v in (0.0, 1.0):
            rest = b - a[:, i] * v
            den = float(a[:, j] @ a[:, j])
            xj = float(np.clip(a[:, j] @ rest / den, 0.0, 1.0)) if den > 0 else 0.0
            x = np.zeros(2)
            x[i], x[j] = v, xj
            cands.append(x)
    best = min(cands, key=cost)
    return float(best[0]), float(best[1])


def blend(model, hermite, slerp, alpha: float, beta: float):
    """The guarded fill: (rotations, positions) from the three fills [F, J, *] and the weights."""
    (mr, mp), (hr, hp), (sr, sp) = model, hermite, slerp
    def align(q):
        return np.where((q * hr).sum(-1, keepdims=True) < 0, -q, q)
    rot = Q.normalize(hr + beta * (align(sr) - hr) + alpha * (align(mr) - hr))
    pos = hp + beta * (sp - hp) + alpha * (mp - hp)
    return rot, pos
