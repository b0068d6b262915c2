"""Spline bases: Bezier (any degree), clamped uniform B-splines, composite cubic Beziers.

Every function returns a basis matrix ``B [N, K]`` for times ``t [N]`` in [0, 1], so a
spline with control points ``P [..., K, d]`` is sampled as ``B @ P``: at the clip's N
frames, or at 4N for super-sampling.  Pure numpy (float64); the model converts once.
"""
from __future__ import annotations

from math import comb

import numpy as np


def uniform_times(n: int) -> np.ndarray:
    """``n`` evenly spaced times in [0, 1] (Algorithm 2's ``linspace``)."""
    return np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(1)


def bezier_basis(degree: int, t) -> np.ndarray:
    """Bernstein polynomials ``C(n,i) t^i (1-t)^(n-i)``: ``[N, degree + 1]``."""
    t = np.asarray(t, dtype=np.float64)[:, None]
    i = np.arange(degree + 1)
    coef = np.array([comb(degree, k) for k in i], dtype=np.float64)
    return coef * t ** i * (1.0 - t) ** (degree - i)


def bspline_basis(num_ctrl: int, degree: int, t) -> np.ndarray:
    """Clamped uniform B-spline basis (Cox-de Boor): ``[N, num_ctrl]``.

    With ``num_ctrl == degree + 1`` it equals the Bezier basis.
    """
    if num_ctrl <= degree:
        raise ValueError(f"a degree-{degree} B-spline needs more than {degree} control points")
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
    inner = np.linspace(0.0, 1.0, num_ctrl - degree + 1)
    knots = np.concatenate([np.zeros(degree), inner, np.ones(degree)])
    # Degree 0: indicator of the knot span; the last span is closed so t = 1 is covered.
    b = np.zeros((t.size, len(knots) - 1))
    for i in range(len(knots) - 1):
        lo, hi = knots[i], knots[i + 1]
        if hi > lo:
            b[:, i] = (t >= lo) & ((t < hi) | ((hi == 1.0) & (t == 1.0)))
    for p in range(1, degree + 1):
        nb = np.zeros((t.size, len(knots) - 1 - p))
        for i in range(nb.shape[1]):
            d1 = knots[i + p] - knots[i]
            d2 = knots[i + p + 1] - knots[i + 1]
            if d1 > 0:
                nb[:, i] += (t - knots[i]) / d1 * b[:, i]
            if d2 > 0:
                nb[:, i] += (knots[i + p + 1] - t) / d2 * b[:, i + 1]
        b = nb
    return b


def composite_basis(num_segments: int, t, degree: int = 3) -> np.ndarray:
    """Several Bezier segments joined end to end, sharing end points: ``[N, degree*S + 1]``.

    Segment s covers ``t`` in ``[s/S, (s+1)/S]`` and uses control points
    ``degree*s … degree*s + degree``; consecutive segments share one point (C0 at seams).
    """
    t = np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0)
    seg = np.minimum((t * num_segments).astype(int), num_segments - 1)
    local = t * num_segments - seg
    out = np.zeros((t.size, degree * num_segments + 1))
    local_basis = bezier_basis(degree, local)
    for k in range(degree + 1):
        out[np.arange(t.size), degree * seg + k] = local_basis[:, k]
    return out


def evaluate(controls: np.ndarray, basis: np.ndarray) -> np.ndarray:
    """Sample a spline: ``basis [N, K] @ controls [..., K, d] -> [..., N, d]``."""
    return np.einsum("nk,...kd->...nd", basis, controls)


def ease_weights(n: int) -> np.ndarray:
    """Smoothstep from 0 to 1 over ``n`` frames (the last is 1): a correction eased in this way
    adds no velocity jump where it starts (segment seams)."""
    t = np.linspace(0.0, 1.0, n + 1)[1:]
    return t * t * (3 - 2 * t)
