"""Mesh sequences without bpy: choosing key frames (joining segments is ``backend.mesh.sequences.join_frames``)."""
from __future__ import annotations

import re


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
    gaps = [(a, b) for a, b in zip(keys[:-1], keys[1:], strict=True) if b - a > max_gap]
    if gaps:
        a, b = gaps[0]
        return (f"the key frames {a} and {b} are {b - a} frames apart; the model fills at most {max_gap} "
                "(add a key in between, or key more often)")
    return None
