"""Edits on latent control points: pure functions, the same for the CLI and the sliders.

Control points are ``[..., K, d]`` cubic Bezier points per segment (K = 4).  Neutral
values (amplify 1, timing 0, all offsets 0) return the input unchanged, exactly.
"""
from __future__ import annotations

import functools

import numpy as np

# Decoding attends over every frame of a segment at once: memory grows with the square of its
# length.  Super-sampling is refused, before anything is allocated, past this many frames.
MAX_DECODED_SEGMENT = 2048


def check_supersample(n: int, segment_frames: int, limit: int = MAX_DECODED_SEGMENT) -> None:
    """Refuse ``--supersample n`` when a ``segment_frames``-frame segment would decode past ``limit``."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"--supersample {n!r}: give a whole number of at least 1")
    m = (segment_frames - 1) * n + 1
    if m > limit:
        most = max(1, (limit - 1) // max(1, segment_frames - 1))
        raise ValueError(f"--supersample {n}: a {segment_frames}-frame segment would decode to {m} frames; the "
                         f"limit is {limit} frames per segment (use --supersample {most} or less)")


@functools.lru_cache(maxsize=8)
def _chord_weights(k: int) -> np.ndarray:
    s = np.linspace(0.0, 1.0, k)[:, None]
    s.setflags(write=False)
    return s


def chord_points(points: np.ndarray) -> np.ndarray:
    """Where the inner control points would sit on the straight chord between the end points."""
    s = _chord_weights(points.shape[-2])
    return points[..., :1, :] * (1 - s) + points[..., -1:, :] * s


def amplify(points: np.ndarray, factor: float) -> np.ndarray:
    """Move the inner control points away from (factor > 1) or towards (< 1) the chord.

    The paper's motion-editing experiment: > 1 exaggerates the motion, < 1 tones it down,
    0 leaves a straight latent line between the end poses.  End points never move.
    """
    if factor == 1.0:
        return points.copy()
    chord = chord_points(points)
    out = chord + factor * (points - chord)
    out[..., 0, :], out[..., -1, :] = points[..., 0, :], points[..., -1, :]
    return out


def warp_times(t: np.ndarray, timing: float) -> np.ndarray:
    """Monotone re-timing of spline parameters: ``t + timing * t * (1 - t)``, timing in [-1, 1].

    Positive timing makes the motion happen earlier in the clip, negative later;
    the first and last frame stay where they are.
    """
    if not -1.0 <= timing <= 1.0:
        raise ValueError(f"timing {timing} is outside [-1, 1]")
    t = np.asarray(t, dtype=np.float64)
    return t + timing * t * (1.0 - t)


def principal_offset(points: np.ndarray, components: np.ndarray, std: np.ndarray,
                     amounts) -> np.ndarray:
    """Add ``sum_i amounts[i] * std[i] * components[i]`` (amounts in standard deviations).

    components [M, K*d] (orthonormal rows, from PCA on the training set), std [M].
    """
    amounts = np.asarray(amounts, dtype=np.float64)
    if not amounts.any():
        return points.copy()
    m = len(amounts)
    delta = (amounts[:, None] * std[:m, None] * components[:m]).sum(0)
    return points + delta.reshape(points.shape[-2:])


def edit_points(points, *, amplify_by: float = 1.0, principal=None, amounts=()) -> np.ndarray:
    """Amplify, then principal offsets; ``principal`` is (components, std) or None."""
    out = amplify(points, amplify_by)
    if principal is not None and len(amounts):
        out = principal_offset(out, principal[0], principal[1], amounts)
    return out
