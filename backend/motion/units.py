"""A file's length unit against the model's centimetres: the same body in metres, millimetres or inches.

A file of the model's own skeleton (the data set's joints) may be written in any unit: its offsets and
translations are the same numbers times a unit.  The model reads centimetres, so such a clip is scaled to
them on the way in and back on the way out, and a fill does not depend on the file's unit.  Bodies of
other proportions in the same unit (another performer, a child) keep their scale: only a unit is read,
never a proportion (the conversion in ``backend.humanoid`` scales other skeletons by leg length).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .skeleton import Clip, Skeleton

INCH = 2.54  # centimetres
# A length ratio this close to an inch (relative) is read as a file in inches, not as a smaller body in
# centimetres: a child in centimetres is at most ~1.7 x shorter than the data set's adults.
INCH_TOLERANCE = 0.2


def cm_per_unit(offsets: np.ndarray, model_offsets: np.ndarray) -> float:
    """Centimetres per unit of a skeleton with ``offsets`` of the model's joints (``model_offsets`` in
    centimetres): 2.54 for inches, else the nearest power of ten (1 for centimetres, 100 for metres, 0.1
    for millimetres).  The ratio is the median over the bones, so a root's offset (a place, not a bone:
    the data set's hips stand 93 cm above its root) does not count."""
    a = np.linalg.norm(np.asarray(model_offsets, dtype=np.float64), axis=-1)
    b = np.linalg.norm(np.asarray(offsets, dtype=np.float64), axis=-1)
    both = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b)
    if not both.any():
        return 1.0
    ratio = float(np.median(a[both] / b[both]))
    if abs(ratio / INCH - 1.0) < INCH_TOLERANCE:
        return INCH
    return float(10.0 ** np.round(np.log10(ratio)))


def scaled_skeleton(skeleton: Skeleton, factor: float) -> Skeleton:
    """``skeleton`` with its offsets and end sites times ``factor`` (itself when 1)."""
    if factor == 1.0:
        return skeleton
    ends = tuple(None if e is None else (float(e[0]) * factor, float(e[1]) * factor, float(e[2]) * factor)
                 for e in skeleton.end_sites)
    return replace(skeleton, offsets=np.asarray(skeleton.offsets, dtype=np.float64) * factor, end_sites=ends)


def scaled(clip: Clip, factor: float) -> Clip:
    """``clip`` with every length (offsets, end sites, positions) times ``factor``; the clip itself when 1."""
    if factor == 1.0:
        return clip
    return replace(clip, skeleton=scaled_skeleton(clip.skeleton, factor), positions=clip.positions * factor)


def in_centimetres(clip: Clip, model_offsets: np.ndarray) -> tuple[Clip, float]:
    """(``clip`` in the model's centimetres, centimetres per unit of the file)."""
    s = cm_per_unit(clip.skeleton.offsets, model_offsets)
    return scaled(clip, s), s
