"""Mesh sequences without bpy: joining decoded segments, choosing key frames (numpy only)."""
from __future__ import annotations

import re

import numpy as np


def ease_weights(n: int) -> np.ndarray:
    """Smoothstep from 0 to 1 over ``n`` frames, the last 1 (as ``backend.engine._ease_weights``)."""
    t = np.linspace(0.0, 1.0, n + 1)[1:]
    return t * t * (3 - 2 * t)


def join_frames(parts: list[np.ndarray], seams: bool = True) -> np.ndarray:
    """Decoded segments ``[m, V, 3]`` sharing end frames -> one sequence.

    With ``seams`` (encoded ranges) each side of a shared frame eases into the mean of both over
    a quarter of its length, exactly as ``backend.mesh_engine.join_frames`` does, so neutral
    sliders give the engine's own decode.  Without (in-betweened ranges) segments meet on a key
    and are simply concatenated."""
    if not seams:
        return np.concatenate([parts[0]] + [p[1:] for p in parts[1:]])
    parts = [p.copy() for p in parts]
    for i in range(len(parts) - 1):
        a, b = parts[i], parts[i + 1]
        target = 0.5 * (a[-1] + b[0])
        for p, end in ((a, -1), (b, 0)):
            n = max(1, len(p) // 4)
            w = ease_weights(n).astype(np.float32)[:, None, None]
            idx = np.arange(len(p) - n, len(p)) if end == -1 else np.arange(n)[::-1]
            p[idx] += w * (target - p[end])
    return np.concatenate([parts[0]] + [p[1:] for p in parts[1:]])


def every_k(start: int, end: int, k: int) -> list[int]:
    """Key frames every ``k`` frames from ``start``, and always ``end``."""
    if k < 1:
        raise ValueError(f"keys every {k} frames: use 1 or more")
    keys = list(range(start, end + 1, k))
    if keys[-1] != end:
        keys.append(end)
    return keys


def parse_frames(text: str) -> list[int]:
    """'1, 5, 12-20/4, 30' -> [1, 5, 12, 16, 20, 30] (sorted, unique); ValueError naming a bad item."""
    frames = set()
    for item in [t for t in re.split(r"[,\s;]+", text.strip()) if t]:
        m = re.fullmatch(r"(-?\d+)(?:-(-?\d+)(?:/(\d+))?)?", item)
        if not m:
            raise ValueError(f"{item!r} is not a frame (write frames like 1, 5, 12-20/4)")
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) is not None else a
        step = int(m.group(3)) if m.group(3) else 1
        if b < a or step < 1:
            raise ValueError(f"{item!r} is not a range of frames (write start-end or start-end/step)")
        frames.update(range(a, b + 1, step))
        frames.add(b)
    return sorted(frames)


def check_gaps(keys: list[int], max_gap: int) -> str | None:
    """Why these scene key frames cannot be in-betweened (fewer than two, a gap too long), or None."""
    if len(keys) < 2:
        return f"{len(keys)} key frame{'s' * (len(keys) != 1)}: in-betweening needs at least two"
    gaps = [(a, b) for a, b in zip(keys[:-1], keys[1:]) if b - a > max_gap]
    if gaps:
        a, b = gaps[0]
        return (f"the key frames {a} and {b} are {b - a} frames apart; the model fills at most {max_gap} "
                "(add a key in between, or key more often)")
    return None
