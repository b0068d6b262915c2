"""Key-frame maths of inference in numpy: the interpolation bases, the model's inputs, the snap to keys.

Two stay: ``training/keyframes.py`` has the torch twins with the same names (training runs them batched on the
GPU with autograd; inference needs no torch); tests/test_onnx.py checks they agree.  Torch-free, for the built-in backend (``backend.runtime.onnx_runner``).
Arrays are float32 like the model's, masks ``[B, N]`` bool.
"""
from __future__ import annotations

import numpy as np

from ..maths import quat_np
from .features_np import to_features


def key_mask(num_frames: int, keys) -> np.ndarray:
    m = np.zeros(num_frames, dtype=bool)
    m[np.asarray(keys, dtype=np.int64)] = True
    return m


def every_k(num_frames: int, k: int, start: int = 0) -> list[int]:
    """Frames start, start + k, start + 2k, ... and the last frame (the protocol's keys from 0; the CLI's and the
    batch's ``--every K`` from a capture's first frame of motion, ``calibration.motion_keys``)."""
    keys = list(range(start, num_frames, k))
    if keys[-1] != num_frames - 1:
        keys.append(num_frames - 1)
    return keys


def segments_on_keys(keys, window: int) -> list[tuple[int, int]]:
    """Split a sorted key list into inclusive frame ranges of at most ``window`` frames that
    start and end on keys, so neighbouring segments meet at a key (exact, no seam jump)."""
    keys = list(keys)
    segs, i = [], 0
    while i < len(keys) - 1:
        j = i + 1
        while j + 1 < len(keys) and keys[j + 1] - keys[i] + 1 <= window:
            j += 1
        segs.append((keys[i], keys[j]))
        i = j
    return segs


def validate_keys(keys, num_frames: int, max_gap: int) -> list[int]:
    """Sorted, unique, in range, at least two, no gap above ``max_gap``; raises ValueError naming the problem."""
    keys = [int(k) for k in keys]
    if num_frames < 2:
        raise ValueError(f"the clip has {num_frames} frame; in-betweening needs at least 2")
    if len(keys) < 2:
        raise ValueError(f"{len(keys)} key given; in-betweening needs at least two keys")
    bad = [k for k in keys if not 0 <= k < num_frames]
    if bad:
        raise ValueError(f"keys {bad} are out of range (frames are 0..{num_frames - 1})")
    if keys != sorted(keys):
        raise ValueError(f"keys must be in increasing order, got {keys}")
    if len(set(keys)) != len(keys):
        dup = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"keys {dup} are repeated")
    gaps = np.diff(keys)
    if gaps.size and gaps.max() > max_gap:
        k = int(np.argmax(gaps))
        raise ValueError(f"the gap between keys {keys[k]} and {keys[k + 1]} is {gaps[k]} frames; the model "
                         f"fills gaps of up to {max_gap} frames (add a key in between)")
    return keys


def bracket(mask: np.ndarray):
    """For each frame, the previous and next key index and the blend weight (keys: themselves, 0)."""
    n = mask.shape[-1]
    idx = np.broadcast_to(np.arange(n), mask.shape)
    prev = np.maximum.accumulate(np.where(mask, idx, -1), -1).clip(0, n - 1)
    nxt = np.minimum.accumulate(np.where(mask, idx, n)[..., ::-1], -1)[..., ::-1].clip(0, n - 1)
    span = np.maximum(nxt - prev, 1)
    alpha = ((idx - prev).astype(np.float32) / span.astype(np.float32)).clip(0, 1)
    return prev, nxt, alpha


def _take(x: np.ndarray, i: np.ndarray) -> np.ndarray:
    """``x[b, i[b, n]]`` for every batch row: x [B, N, ...], i [B, M] -> [B, M, ...]."""
    return x[np.arange(x.shape[0])[:, None], i]


def interpolate(rot: np.ndarray, pos: np.ndarray, mask: np.ndarray):
    """SLERP of local rotations and LERP of local positions between keys (only key frames are read)."""
    prev, nxt, alpha = bracket(mask)
    a = alpha[..., None, None]
    r = quat_np.slerp(_take(rot, prev), _take(rot, nxt), alpha[..., None])
    p = _take(pos, prev) * (1 - a) + _take(pos, nxt) * a
    return r.astype(np.float32), p.astype(np.float32)


def key_origin(pos: np.ndarray, mask: np.ndarray, layout) -> np.ndarray:
    """Mean horizontal root position of the key frames: [B, 3]."""
    root = pos[..., layout.position_joints[0], :].astype(np.float32)
    w = mask.astype(np.float32)[..., None]
    return ((root * w).sum(-2) / np.maximum(w.sum(-2), 1) * layout.horizontal()).astype(np.float32)


def snap_to_keys(feat: np.ndarray, key_feat: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Spread the model's miss at each key over the neighbouring frames with a smoothstep (zero slope at
    the keys): the output meets every key exactly and keeps the model's velocity there."""
    prev, nxt, alpha = bracket(mask)
    miss = np.where(mask[..., None], key_feat - feat, 0.0).astype(feat.dtype)
    w = (alpha * alpha * (3 - 2 * alpha))[..., None].astype(feat.dtype)
    return feat + _take(miss, prev) * (1 - w) + _take(miss, nxt) * w


def hermite_base(key_feat: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """C1 cubic Hermite interpolation of key features (Catmull-Rom tangents for uneven spacing)."""
    n = mask.shape[-1]
    idx = np.broadcast_to(np.arange(n), mask.shape)
    prev, nxt, alpha = bracket(mask)
    before = np.maximum.accumulate(np.where(mask, idx, -1), -1)
    before = np.concatenate([np.full_like(before[..., :1], -1), before[..., :-1]], -1)
    after = np.minimum.accumulate(np.where(mask, idx, n)[..., ::-1], -1)[..., ::-1]
    after = np.concatenate([after[..., 1:], np.full_like(after[..., :1], n)], -1)
    a2, b2 = _take(before, prev), _take(after, nxt)

    def take(i):
        return _take(key_feat, i.clip(0, n - 1))
    dt = key_feat.dtype
    xa, xb = take(prev), take(nxt)
    span = np.maximum(nxt - prev, 1).astype(dt)[..., None]
    chord = (xb - xa) / span
    ma = np.where((a2 >= 0)[..., None], (xb - take(a2)) / np.maximum(nxt - a2, 1).astype(dt)[..., None], chord)
    mb = np.where((b2 < n)[..., None], (take(b2) - xa) / np.maximum(b2 - prev, 1).astype(dt)[..., None], chord)
    t = alpha.astype(dt)[..., None]
    t2, t3 = t * t, t * t * t
    return ((2 * t3 - 3 * t2 + 1) * xa + (t3 - 2 * t2 + t) * span * ma
            + (-2 * t3 + 3 * t2) * xb + (t3 - t2) * span * mb).astype(dt)


def spline_base(key_feat: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """C2 natural cubic spline through the keys of each window (float64 solve, one per window)."""
    b_, n, d = key_feat.shape
    frames = np.arange(n, dtype=np.float64)
    out = np.empty_like(key_feat)
    for b in range(b_):
        x = np.flatnonzero(mask[b])
        y = key_feat[b, x].astype(np.float64)
        if len(x) == 1:
            out[b] = y[0]
            continue
        xf = x.astype(np.float64)
        h = np.diff(xf)
        m = len(x)
        a = np.zeros((m, m))
        r = np.zeros((m, d))
        i = np.arange(1, m - 1)
        a[i, i - 1], a[i, i], a[i, i + 1] = h[:-1], 2 * (h[:-1] + h[1:]), h[1:]
        r[1:-1] = 6 * ((y[2:] - y[1:-1]) / h[1:, None] - (y[1:-1] - y[:-2]) / h[:-1, None])
        a[0, 0] = a[-1, -1] = 1.0
        acc = np.linalg.solve(a, r)
        s = (np.searchsorted(xf, frames, side="right") - 1).clip(0, m - 2)
        t0, t1, hh = (frames - xf[s])[:, None], (xf[s + 1] - frames)[:, None], h[s][:, None]
        out[b] = ((acc[s] * t1 ** 3 + acc[s + 1] * t0 ** 3) / (6 * hh) + (y[s] / hh - acc[s] * hh / 6) * t1
                  + (y[s + 1] / hh - acc[s + 1] * hh / 6) * t0)
    return out


def pick_base(name: str, hermite, cspline):
    """``hermite`` or ``cspline`` by an in-betweener's config name (both twins' ``interpolation_base``)."""
    bases = {"hermite": hermite, "cspline": cspline}
    if name not in bases:
        raise ValueError(f"base {name!r} is not one of {', '.join(bases)}")
    return bases[name]


def interpolation_base(name: str):
    """The base an in-between model's residual is added to, by its config name (features only)."""
    return pick_base(name, hermite_base, spline_base)


def inbetween_inputs(rot, pos, mask, layout, normalizer, base: str = "slerp"):
    """(keys_n, base_n, origin [B, 3]): normalised key poses and interpolation base (``keyframes``' twin)."""
    origin = key_origin(pos, mask, layout)
    keys = to_features(rot, pos, layout, origin)
    if base == "hermite":
        return normalizer(keys), normalizer(hermite_base(keys, mask)), origin
    brot, bpos = interpolate(rot, pos, mask)
    return normalizer(keys), normalizer(to_features(brot, bpos, layout, origin)), origin


def compose_inbetween(pred, base, key_v, mask, interp=None, base_v=None) -> np.ndarray:
    """``keyframes.compose_inbetween`` in numpy: the interpolation of the key vertices plus the model's
    correction ``pred - base``, snapped onto the keys (the mesh engine's in-between vertices)."""
    if base_v is None:
        base_v = (interp or spline_base)(key_v, mask)
    return snap_to_keys(base_v + (pred - base), key_v, mask)
