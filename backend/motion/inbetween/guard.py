"""The in-betweener's guard: trust the model only as far as it predicts the user's own keys.

A learned correction must shrink to nothing where the model does not know the motion.  The keys
themselves say whether it does: hide every other interior key, fill the doubled gaps, and compare
each hidden key with what the model and the curves put there.  "The curves" are what Blender draws
through the same keys (``backend.motion.inbetween.blender_curves``: auto-clamped Bezier, as in ``training.evaluate``'s
Blender column), so the weight

    out = curves + alpha * (model - curves),   alpha in [0, 1]

that fits the hidden keys best (least squares over every joint's quaternion and the root position)
is used for the fill with all keys: familiar motion keeps alpha near 1; on motion the model does not
know alpha drops towards 0 and the fill is what Blender would have drawn.

Keys are hidden where the doubled gap is at most ``MAX_HIDDEN_GAP`` frames (``Engine.guard_limit``).
Hiding at every spacing (doubled gaps up to the model's window) misjudges the model on the Bandai
validation columns: L2Q x SLERP, 57 familiar / 20 unfamiliar windows (every 6th), keys every 15:
familiar 0.562 against 0.532, unfamiliar 0.476 against 0.436; every 30: familiar 0.752 against 0.495
(the model fills 60-frame doubled gaps much worse than the 30-frame gaps it is asked for).  Against
the Hermite base the guard used before, the curves give the same at 15 and 30 and 0.613 against 0.618
(unfamiliar, every 5).  ``training.evaluate`` reports the every-spacing guard beside the shipped one.
The mirror average (``backend.motion.inbetween.fill``) is used where no key is hidden (its cost).  A weight for
SLERP next to the curves, and a hard switch between model and curves, did worse (``training.guard_study``).

Where no key is hidden (keys more than 10 frames apart) the model's two readings of the keys judge it
instead: the fill of the keys as given and the mirrored fill of the mirrored keys, mirrored back, agree
where the model knows the motion.  Per gap, the disagreement of the two over the departure of their
mean from the curves, ``x``, gives ``alpha = clip((AGREE[1] - x) / (AGREE[1] - AGREE[0]), 0, 1)``: a
model whose two answers differ as much as it differs from the curves is not departing from them on
knowledge (docs/results.md, *In-betweening*: each part of the fill switched off).
Pure numpy: the passes that produce the predictions live in ``backend.motion.inbetween.fill``.
"""
from __future__ import annotations

import numpy as np

from ...maths import quat_np

POSITION_SCALE = 0.01  # 1 cm of root travel weighs like 0.01 of a quaternion component (about 1 degree)
MAX_HIDDEN_GAP = 20  # frames: keys up to 10 apart
AGREE = (0.6, 1.0)  # the mirror pair's disagreement / the departure from the curves: all model .. all curves


def holdout_passes(keys: list[int], max_gap: int = 0, limit: int = MAX_HIDDEN_GAP) -> list[list[int]]:
    """Key lists with every other interior key hidden (odd ordinals, then even ones), where the doubled
    gap is at most ``limit`` (and ``max_gap``, the model's longest gap, when given); passes that would
    hide nothing are left out."""
    limit = limit if max_gap <= 0 else min(limit, max_gap)
    passes = []
    for first in (1, 2):
        hidden = {i for i in range(first, len(keys) - 1, 2) if keys[i + 1] - keys[i - 1] <= limit}
        if hidden:
            passes.append([k for i, k in enumerate(keys) if i not in hidden])
    return passes


def key_vectors(rot: np.ndarray, pos: np.ndarray, ref_rot: np.ndarray, rot_joints, pos_joints) -> np.ndarray:
    """[F, V]: quaternions of the rotating joints (sign-aligned to ``ref_rot``) and scaled positions."""
    return _vectors(rot, pos, ref_rot[:, rot_joints], rot_joints, pos_joints)


def _vectors(rot, pos, ref_q, rot_joints, pos_joints) -> np.ndarray:
    """``key_vectors`` with the reference's rotating joints already gathered (``ref_q`` [F, R, 4]: several sets
    compared with one reference gather it once), written into one array."""
    q = rot[:, rot_joints]
    q = np.where((q * ref_q).sum(-1, keepdims=True) < 0, -q, q)
    p = pos[:, pos_joints]
    f, n = len(q), q.shape[1] * 4
    out = np.empty((f, n + p.shape[1] * 3), dtype=np.result_type(q, POSITION_SCALE * p[:0]))
    out[:, :n], out[:, n:] = q.reshape(f, -1), POSITION_SCALE * p.reshape(f, -1)
    return out


def fit_alpha(truth, model, curves, rot_joints, pos_joints) -> float:
    """alpha in [0, 1] minimising the miss at the hidden keys: each argument is (rotations [F, J, 4],
    positions [F, J, 3]) at the hidden frames.  Nothing hidden: the model is trusted (1)."""
    if len(truth[0]) == 0:
        return 1.0
    ref = truth[0][:, rot_joints]
    t, m, h = (_vectors(r, p, ref, rot_joints, pos_joints) for r, p in (truth, model, curves))
    c, r = (m - h).ravel(), (t - h).ravel()
    den = float(c @ c)
    return float(np.clip(c @ r / den, 0.0, 1.0)) if den > 0 else 1.0


def agreement_alphas(own, back, mean, curves, keys, rot_joints, pos_joints) -> np.ndarray:
    """Per gap between consecutive ``keys``: alpha from the model's two readings (``own``: the keys as
    given; ``back``: the mirrored keys' fill mirrored back; ``mean``: theirs), each (rotations [F, J, 4],
    positions [F, J, 3]), against the ``curves`` through the same keys (see the module's docstring).
    A gap without frames, or where the model is the curves, keeps 1."""
    ref = mean[0][:, rot_joints]
    va, vb, vm, vc = (_vectors(r, p, ref, rot_joints, pos_joints) for r, p in (own, back, mean, curves))
    lo, hi = AGREE
    out = np.ones(max(len(keys) - 1, 0))
    # each frame's squared distances once; a gap's root mean square reads its frames' (the same sums)
    dm, dab = vm - vc, va - vb
    dm, dab = (dm * dm).sum(-1), (dab * dab).sum(-1)
    for i, (a, b) in enumerate(zip(keys, keys[1:], strict=False)):
        departure = float(np.sqrt(dm[a + 1:b].mean())) if b - a > 1 else 0.0
        if departure > 0:
            out[i] = np.clip((hi - float(np.sqrt(dab[a + 1:b].mean())) / departure) / (hi - lo), 0.0, 1.0)
    return out


def frame_alphas(keys, alphas, num_frames: int) -> np.ndarray:
    """[num_frames]: each frame's gap's alpha (``alphas`` [len(keys) - 1]; keys and frames outside them 1,
    where model and curves are the keys anyway)."""
    out = np.ones(num_frames)
    for (a, b), w in zip(zip(keys, keys[1:], strict=False), alphas, strict=True):
        out[a + 1:b] = w
    return out


def blend(model, curves, alpha):
    """The guarded fill: (rotations, positions) from the two fills [F, J, *] and the weight (one, or one
    per frame [F])."""
    (mr, mp), (hr, hp) = model, curves
    mr = np.where((mr * hr).sum(-1, keepdims=True) < 0, -mr, mr)
    a = np.asarray(alpha, dtype=np.float64)
    a = a[:, None, None] if a.ndim == 1 else a
    return quat_np.normalize(hr + a * (mr - hr)), hp + a * (mp - hp)
