"""Scene time <-> model time: the model works in seconds and was trained at one frame rate.

A clip at another rate (a 24 fps scene, a BVH at 60 fps) is mapped onto the model's frame grid, filled or
encoded there, and read back on its own frames.  Pure numpy (tested alone in tests/test_timebase.py).

In-betweening: key frames k_i (scene frames) go to model frames
    m_i = round((k_i - k_0) * frame_time / model_frame_time)
(pushed one frame on where two keys would land on the same model frame), the model fills its own grid,
and scene frame t is read back at model time
    m_i + (t - k_i) (m_{i+1} - m_i) / (k_{i+1} - k_i)
(piecewise linear, exact at the keys) by SLERP of the rotations and linear positions between the two
model frames around it.  At the model's own rate m_i = k_i - k_0 and every read lands on a whole model
frame, which is copied: the result is bit for bit what the model gives without this module.

Encoding: a clip of N scene frames becomes round((N - 1) * frame_time / model_frame_time) + 1 model
frames spread evenly over the same span (first and last frame exact); segments found on the model grid
map back to scene frames the same way.
"""
from __future__ import annotations

import math

import numpy as np

from . import quat_np

MODEL_FRAME_TIME = 1.0 / 30.0  # what every shipped motion checkpoint was trained at (Bandai Namco: 30 fps)
SAME_RATE = 1e-4  # relative: a BVH's "0.0333333" is the model's 30 fps, not a resample


def model_frame_time(info: dict | None) -> float:
    """A checkpoint's frame time (its ``info["frame_time"]`` when training wrote one, else 30 fps)."""
    ft = (info or {}).get("frame_time")
    try:
        ft = float(ft)
    except (TypeError, ValueError, OverflowError):
        return MODEL_FRAME_TIME
    return ft if math.isfinite(ft) and ft > 0 else MODEL_FRAME_TIME


def check_frame_time(frame_time: float) -> float:
    ft = float(frame_time)
    if not (math.isfinite(ft) and ft > 0):
        raise ValueError(f"frame time {frame_time!r}: give the seconds per frame, a positive number "
                         "(for example 0.0416667 at 24 fps)")
    return ft


def same_rate(frame_time: float, model_ft: float = MODEL_FRAME_TIME) -> bool:
    return abs(check_frame_time(frame_time) / model_ft - 1.0) <= SAME_RATE


def describe_rate(frame_time: float) -> str:
    return f"{1.0 / frame_time:.4g} fps"


def max_scene_gap(max_model_gap: int, frame_time: float, model_ft: float = MODEL_FRAME_TIME) -> int:
    """The longest gap in scene frames whose keys always land at most ``max_model_gap`` model frames apart
    (rounding both ends moves a gap by less than one frame, so the floor is safe)."""
    if same_rate(frame_time, model_ft):
        return int(max_model_gap)
    # (a file's rounded frame time, 0.0416667 for 24 fps, must not cost a frame: ``model_keys`` caps the rest)
    return max(1, int(math.floor(max_model_gap * model_ft / frame_time * (1.0 + SAME_RATE))))


def gap_message(a: int, b: int, max_model_gap: int, frame_time: float, model_ft: float = MODEL_FRAME_TIME) -> str:
    """The refusal for a gap from scene frame ``a`` to ``b`` that is too long, in the scene's frames and seconds."""
    limit = max_scene_gap(max_model_gap, frame_time, model_ft)
    return (f"the gap between keys {a} and {b} is {b - a} frames ({(b - a) * frame_time:.3g} s); the model fills gaps "
            f"of up to {limit} frames ({max_model_gap * model_ft:.3g} s at {describe_rate(frame_time)}; "
            "add a key in between)")


def model_keys(keys, frame_time: float, model_ft: float = MODEL_FRAME_TIME, max_gap: int = 0) -> list[int]:
    """Scene key frames (sorted, unique) -> model key frames from 0, strictly increasing; with ``max_gap`` no
    two more than that apart (a gap at the scene's limit that rounding would stretch by a frame)."""
    keys = [int(k) for k in keys]
    if same_rate(frame_time, model_ft):
        return [k - keys[0] for k in keys]
    r = frame_time / model_ft
    out = []
    for k in keys:
        m = int(round((k - keys[0]) * r))
        if out:
            m = max(m, out[-1] + 1)  # two keys on one model frame: the later one moves on
            m = min(m, out[-1] + max_gap) if max_gap > 0 else m
        out.append(m)
    return out


def model_times(keys, mkeys, frames) -> np.ndarray:
    """Model time of each scene frame in ``frames`` (within keys[0]..keys[-1]): piecewise linear between
    the keys, exact at them; whole numbers wherever the two grids agree."""
    k = np.asarray(keys, dtype=np.int64)
    m = np.asarray(mkeys, dtype=np.int64)
    t = np.asarray(frames, dtype=np.int64)
    if t.size and (t.min() < k[0] or t.max() > k[-1]):
        raise ValueError(f"frames {t.min()}..{t.max()} reach outside the keys {k[0]}..{k[-1]}")
    i = np.clip(np.searchsorted(k, t, side="right") - 1, 0, len(k) - 2)
    # integer products first, one division: exact when the segment's two spans are equal
    return m[i] + ((t - k[i]) * (m[i + 1] - m[i])) / (k[i + 1] - k[i])


def sample(rot: np.ndarray, pos: np.ndarray, times) -> tuple[np.ndarray, np.ndarray]:
    """Poses ``rot [F, J, 4]``, ``pos [F, J, 3]`` read at (fractional) frame ``times [T]``: a whole time copies
    its frame; between frames SLERP of the rotations and linear positions."""
    times = np.asarray(times, dtype=np.float64)
    n = len(rot)
    if times.size and (times.min() < -1e-9 or times.max() > n - 1 + 1e-9):
        raise ValueError(f"times {times.min():g}..{times.max():g} reach outside the {n} frames")
    times = np.clip(times, 0.0, n - 1)
    lo = np.floor(times).astype(np.int64)  # the last frame itself is a whole time: never read past it
    w = times - lo
    out_rot, out_pos = rot[lo].copy(), pos[lo].copy()  # whole times: the frame itself
    frac = w != 0.0
    if frac.any():
        a, b, wf = lo[frac], lo[frac] + 1, w[frac]
        out_rot[frac] = quat_np.slerp(rot[a], rot[b], wf[:, None]).astype(rot.dtype)
        out_pos[frac] = (pos[a] + wf[:, None, None] * (pos[b] - pos[a])).astype(pos.dtype)
    return out_rot, out_pos


def model_length(num_frames: int, frame_time: float, model_ft: float = MODEL_FRAME_TIME) -> int:
    """Model frames of a clip of ``num_frames`` scene frames (the same span in seconds, at least 2)."""
    if same_rate(frame_time, model_ft):
        return int(num_frames)
    return max(2, int(round((num_frames - 1) * frame_time / model_ft)) + 1)


def uniform_times(n_from: int, n_to: int) -> np.ndarray:
    """Where each of ``n_to`` evenly spread frames falls on a grid of ``n_from`` frames over the same span
    (first and last exact; every frame whole when the two counts agree)."""
    if n_to == 1:
        return np.zeros(1)
    if n_from == n_to:
        return np.arange(n_to, dtype=np.float64)
    return np.arange(n_to, dtype=np.float64) * (n_from - 1) / (n_to - 1)


def resample_uniform(rot: np.ndarray, pos: np.ndarray, n_to: int) -> tuple[np.ndarray, np.ndarray]:
    """A clip spread evenly over ``n_to`` frames (the same span)."""
    return sample(rot, pos, uniform_times(len(rot), n_to))


def map_bounds(bounds, n_from: int, n_to: int) -> list[tuple[int, int]]:
    """Segments ``[(a, b)]`` on a grid of ``n_from`` frames -> the same spans on ``n_to`` frames (shared
    ends stay shared, first and last exact); refuses spans that would vanish."""
    r = (n_to - 1) / (n_from - 1)
    cuts = [int(math.floor(a * r + 0.5)) for a, _ in bounds] + [n_to - 1]
    out = list(zip(cuts[:-1], cuts[1:], strict=True))
    if any(b <= a for a, b in out):
        raise ValueError(f"{n_to} frames are too few for {len(bounds)} segments")
    return out


# -- whole clips (the CLI's and the batch's reconstruct / edit of BVH files) -------------------------
def to_model_rate(clip, model_ft: float = MODEL_FRAME_TIME):
    """``clip`` spread over the model's frame grid (the same span in seconds), or the clip itself at its rate."""
    from dataclasses import replace
    if same_rate(clip.frame_time, model_ft):
        return clip
    n = model_length(clip.num_frames, clip.frame_time, model_ft)
    rot, pos = resample_uniform(quat_np.fix_hemisphere(clip.rotations), clip.positions, n)
    return replace(clip, rotations=rot, positions=pos, frame_time=model_ft, meta={})


def to_clip_rate(out, like, scale: int = 1):
    """A decode ``out`` of ``to_model_rate(like)`` (``scale`` times denser) back on ``like``'s frames (times
    ``scale``): frame time ``like.frame_time / scale``; ``like``'s Euler hints kept where the frames are its own."""
    from dataclasses import replace
    if out.num_frames == (like.num_frames - 1) * scale + 1 and same_rate(out.frame_time * scale, like.frame_time):
        return out
    n = (like.num_frames - 1) * scale + 1
    rot, pos = resample_uniform(quat_np.fix_hemisphere(out.rotations), out.positions, n)
    meta = {k: v for k, v in like.meta.items() if k == "source_channels"} if scale == 1 else {}
    return replace(out, rotations=rot, positions=pos, frame_time=like.frame_time / scale, meta=meta)
