"""Key-frame bookkeeping in torch, for training: masks, interpolation between keys, segments that end on keys.

Two stay: these run batched on the GPU with autograd in training; inference (the engines, ONNX Runtime inside
Blender, no torch) runs their numpy twins in ``backend.motion.keyframes_np`` (tests/test_onnx.py checks both).
"""
from __future__ import annotations

import torch

from backend.maths import quat_torch

# the bookkeeping both twins share (in the numpy twin), kept importable from here
from backend.motion.keyframes_np import every_k, key_mask, pick_base, segments_on_keys, validate_keys  # noqa: F401

from .features import horizontal_mask, to_features


def bracket(mask: torch.Tensor):
    """For each frame, the previous and next key index and the blend weight: mask [..., N] (bool).

    Key frames get prev == next == itself and alpha 0.
    """
    n = mask.shape[-1]
    idx = torch.arange(n, device=mask.device).expand_as(mask)
    prev = torch.where(mask, idx, torch.full_like(idx, -1)).cummax(-1).values
    nxt = torch.where(mask, idx, torch.full_like(idx, n)).flip(-1).cummin(-1).values.flip(-1)
    prev = prev.clamp(0, n - 1)
    nxt = nxt.clamp(0, n - 1)
    span = (nxt - prev).clamp_min(1)
    alpha = ((idx - prev).float() / span.float()).clamp(0, 1)
    return prev, nxt, alpha


def interpolate(rot: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor):
    """SLERP of local rotations and LERP of local positions between keys.

    rot [B, N, J, 4], pos [B, N, J, 3], mask [B, N] -> same shapes; only key frames are read.
    """
    prev, nxt, alpha = bracket(mask)
    def take(x, i):
        return torch.gather(x, 1, i[..., None, None].expand(-1, -1, *x.shape[2:]))
    a = alpha[..., None, None].to(rot.dtype)
    r = quat_torch.slerp(take(rot, prev), take(rot, nxt), a[..., 0])
    p = take(pos, prev) * (1 - a) + take(pos, nxt) * a
    return r, p


def key_origin(pos: torch.Tensor, mask: torch.Tensor, layout) -> torch.Tensor:
    """CITL's sequence-level re-centring on the keys: mean horizontal root position of the key frames."""
    root = pos[..., layout.position_joints[0], :]
    w = mask.to(root.dtype)[..., None]
    return (root * w).sum(-2) / w.sum(-2).clamp_min(1) * horizontal_mask(layout, root)


def inbetween_inputs(rot, pos, mask, layout, normalizer, base: str = "slerp"):
    """(keys_n, base_n, origin): normalised key poses, normalised interpolation base, origin [B,3].

    ``base`` is "slerp" (SLERP/LERP between keys) or "hermite" (C1 cubic through the key
    features).  Only key frames of ``rot``/``pos`` are read.
    """
    origin = key_origin(pos, mask, layout)
    keys, _ = to_features(rot, pos, layout, origin)
    if base == "hermite":
        return normalizer(keys), normalizer(hermite_base(keys, mask)), origin
    brot, bpos = interpolate(rot, pos, mask)
    base_feat, _ = to_features(brot, bpos, layout, origin)
    return normalizer(keys), normalizer(base_feat), origin


def snap_to_keys(feat: torch.Tensor, key_feat: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Make decoded features pass through the keys without a kink.

    The model's miss at each key (``key - decoded``) is spread over the neighbouring
    frames with a smoothstep weight, which has zero slope at the keys: the output meets
    every key exactly and keeps the model's own velocity there (offset propagation).
    feat, key_feat [B, N, D] (key_feat read at key frames only), mask [B, N].
    """
    prev, nxt, alpha = bracket(mask)
    miss = torch.where(mask[..., None], key_feat - feat, torch.zeros_like(feat))
    def take(i):
        return torch.gather(miss, 1, i[..., None].expand(-1, -1, miss.shape[-1]))
    w = (alpha * alpha * (3 - 2 * alpha))[..., None].to(feat.dtype)
    return feat + take(prev) * (1 - w) + take(nxt) * w


def hermite_base(key_feat: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """C1 cubic Hermite interpolation of key features (Catmull-Rom tangents for uneven spacing).

    Unlike piecewise SLERP it has no velocity jump at the keys, so the model's residual
    need not undo a kink at every key.  key_feat [B, N, D] (read at keys only), mask [B, N].
    """
    n = mask.shape[-1]
    idx = torch.arange(n, device=mask.device).expand_as(mask)
    prev, nxt, alpha = bracket(mask)
    # the key strictly before ``prev`` and strictly after ``nxt`` (tangent neighbours)
    before = torch.where(mask, idx, torch.full_like(idx, -1)).cummax(-1).values
    before = torch.cat([torch.full_like(before[..., :1], -1), before[..., :-1]], -1)
    after = torch.where(mask, idx, torch.full_like(idx, n)).flip(-1).cummin(-1).values.flip(-1)
    after = torch.cat([after[..., 1:], torch.full_like(after[..., :1], n)], -1)
    a2 = torch.gather(before, 1, prev)
    b2 = torch.gather(after, 1, nxt)
    def take(i):
        return torch.gather(key_feat, 1, i.clamp(0, n - 1)[..., None].expand(-1, -1, key_feat.shape[-1]))
    xa, xb = take(prev), take(nxt)
    span = (nxt - prev).clamp_min(1).to(key_feat.dtype)[..., None]
    chord = (xb - xa) / span
    has_a2, has_b2 = (a2 >= 0)[..., None], (b2 < n)[..., None]
    ma = torch.where(has_a2, (xb - take(a2)) / (nxt - a2).clamp_min(1).to(key_feat.dtype)[..., None], chord)
    mb = torch.where(has_b2, (take(b2) - xa) / (b2 - prev).clamp_min(1).to(key_feat.dtype)[..., None], chord)
    t = alpha.to(key_feat.dtype)[..., None]
    t2, t3 = t * t, t * t * t
    return ((2 * t3 - 3 * t2 + 1) * xa + (t3 - 2 * t2 + t) * span * ma
            + (-2 * t3 + 3 * t2) * xb + (t3 - t2) * span * mb)


def spline_base(key_feat: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """C2 natural cubic spline through the keys of each window (the mesh in-betweener's base).

    Continuous in acceleration, and fourth-order accurate between evenly spaced keys, where
    Catmull-Rom tangents are second order: on held-out cloth with keys every 10 frames it misses
    by 12 % less than ``hermite_base``.  key_feat [B, N, D] (read at keys only), mask [B, N];
    every window starts and ends on a key.  One small linear solve per window (keys x keys).
    """
    b_, n, d = key_feat.shape
    frames = torch.arange(n, dtype=torch.float64, device=key_feat.device)
    out = torch.empty_like(key_feat)
    for b in range(b_):
        x = torch.nonzero(mask[b]).squeeze(-1)
        y = key_feat[b, x].double()
        if len(x) == 1:
            out[b] = y[0].to(out.dtype)
            continue
        xf = x.double()
        h = xf.diff()
        m = len(x)
        a = torch.zeros(m, m, dtype=torch.float64, device=key_feat.device)
        r = torch.zeros(m, d, dtype=torch.float64, device=key_feat.device)
        i = torch.arange(1, m - 1, device=key_feat.device)
        a[i, i - 1], a[i, i], a[i, i + 1] = h[:-1], 2 * (h[:-1] + h[1:]), h[1:]
        r[1:-1] = 6 * ((y[2:] - y[1:-1]) / h[1:, None] - (y[1:-1] - y[:-2]) / h[:-1, None])
        a[0, 0] = a[-1, -1] = 1.0  # natural ends: no curvature at the first and last key
        acc = torch.linalg.solve(a, r)  # second derivatives at the keys
        s = (torch.searchsorted(xf, frames, right=True) - 1).clamp(0, m - 2)
        t0, t1, hh = (frames - xf[s])[:, None], (xf[s + 1] - frames)[:, None], h[s][:, None]
        val = ((acc[s] * t1 ** 3 + acc[s + 1] * t0 ** 3) / (6 * hh) + (y[s] / hh - acc[s] * hh / 6) * t1
               + (y[s + 1] / hh - acc[s + 1] * hh / 6) * t0)
        out[b] = val.to(out.dtype)
    return out


def interpolation_base(name: str):
    """The base an in-between model's residual is added to, by its config name (features only)."""
    return pick_base(name, hermite_base, spline_base)


def compose_inbetween(pred: torch.Tensor, base: torch.Tensor, key_v: torch.Tensor, mask: torch.Tensor,
                      interp=None, base_v: torch.Tensor | None = None) -> torch.Tensor:
    """Final in-between vertices: the interpolation of the key *vertices* plus the model's correction.

    pred, base [B, m, 3V]: the model's output and its base, both rebuilt from basis coefficients;
    key_v [B, m, 3V] key vertices (read at keys only), mask [B, m]; ``interp`` the model's base
    (``interpolation_base``; it is linear, so the base of the vertices projects onto ``base``).  Interpolating the key vertices
    themselves keeps what the basis cannot represent (fine wrinkles) moving smoothly between the keys
    instead of losing it; the model only adds ``pred - base``, which is all it has learned.  The
    result is then snapped onto the keys (the correction is not exactly zero there).  ``base_v``: that
    interpolation of the key vertices, when the caller has it (the engine's runs over the whole sequence).
    """
    if base_v is None:
        base_v = (interp or interpolation_base("cspline"))(key_v, mask)
    return snap_to_keys(base_v + (pred - base), key_v, mask)
