"""The paper's §4.1 synthetic 2D curve families (pure numpy, seeded).

Every generator takes ``n`` and a ``numpy.random.Generator`` and returns
``(curves [n, N, 2] float32, params [n, d] float64)`` with ``N = 256`` points by default.
``d`` is the family's known latent size (the model's latent width in Table 1).  All
curves lie in roughly [-1, 1]^2: no per-curve normalisation, so scale stays a parameter.

    Lissajous (d=3)       x = sin(a t + delta), y = sin(b t),  t in [0, 2 pi]
    Hypotrochoid (d=4)    rolling circle r inside circle R, pen at distance p, rotated by phi
    Bezier (d=2 or 64)    degree d/2 + 1 Bezier with both end points fixed and d/2 random
                          interior control points (d=2: a quadratic with one free point;
                          d=64: degree 33 with 32 free points)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from backend.maths.splines import bezier_basis, uniform_times

NUM_POINTS = 256
BEZIER_ENDS = np.array([[-0.8, -0.5], [0.8, 0.5]])  # fixed first / last control point


def lissajous(n: int, rng: np.random.Generator, points: int = NUM_POINTS):
    """Lissajous curves, d=3: ``a, b ~ U[1, 4]`` (continuous frequencies), ``delta ~ U[0, pi]``.

    ``x = sin(a t + delta), y = sin(b t)`` for ``t`` uniform in [0, 2 pi]: values in [-1, 1].
    Returns curves [n, points, 2] and params [n, 3] = (a, b, delta).
    """
    a, b = rng.uniform(1.0, 4.0, n), rng.uniform(1.0, 4.0, n)
    delta = rng.uniform(0.0, np.pi, n)
    t = np.linspace(0.0, 2 * np.pi, points)
    x = np.sin(a[:, None] * t + delta[:, None])
    y = np.sin(b[:, None] * t)
    return np.stack([x, y], -1).astype(np.float32), np.stack([a, b, delta], -1)


def hypotrochoid(n: int, rng: np.random.Generator, points: int = NUM_POINTS):
    """Hypotrochoids, d=4: ``R ~ U[0.5, 0.7]``, ``r ~ U[0.1, 0.3]``, ``p ~ U[0.1, 0.3]``, ``phi ~ U[0, 2 pi]``.

    A circle of radius r rolls inside one of radius R; the pen sits p from its centre:
    ``z(t) = (R - r) e^{it} + p e^{-i (R - r) t / r}``, ``t`` in [0, 2 pi], then rotated by phi.
    The radius is at most R - r + p <= 0.9.  (R - r) / r lies in [2/3, 6], so a curve makes
    up to 6 loops.  Returns curves [n, points, 2] and params [n, 4] = (R, r, p, phi).
    """
    R, r = rng.uniform(0.5, 0.7, n), rng.uniform(0.1, 0.3, n)
    p, phi = rng.uniform(0.1, 0.3, n), rng.uniform(0.0, 2 * np.pi, n)
    t = np.linspace(0.0, 2 * np.pi, points)[None]
    k = ((R - r) / r)[:, None]
    z = (R - r)[:, None] * np.exp(1j * t) + p[:, None] * np.exp(-1j * k * t)
    z = z * np.exp(1j * phi)[:, None]
    return np.stack([z.real, z.imag], -1).astype(np.float32), np.stack([R, r, p, phi], -1)


def bezier(n: int, rng: np.random.Generator, d: int = 2, points: int = NUM_POINTS):
    """2D Bezier curves with ``d/2`` free control points, d = 2, 4, ...

    Degree ``d/2 + 1``: control points ``[E0, P_1 .. P_{d/2}, E1]`` with the end points fixed
    at ``BEZIER_ENDS`` and ``P_i ~ U[-1, 1]^2``, so the family has exactly d parameters and
    every curve lies in the convex hull, inside [-1, 1]^2.  Returns curves [n, points, 2]
    and params [n, d] (the flattened free control points).
    """
    if d < 2 or d % 2:
        raise ValueError(f"Bezier family needs an even d >= 2, got {d}")
    free = rng.uniform(-1.0, 1.0, (n, d // 2, 2))
    ends = np.broadcast_to(BEZIER_ENDS[None], (n, 2, 2))
    ctrl = np.concatenate([ends[:, :1], free, ends[:, 1:]], 1)
    basis = bezier_basis(d // 2 + 1, uniform_times(points))  # [points, d/2 + 2]
    return np.einsum("nk,bkd->bnd", basis, ctrl).astype(np.float32), free.reshape(n, d)


@dataclass(frozen=True)
class Family:
    """One Table 1 column: name, latent size d, model width c, batch size (paper: BS)."""
    name: str
    latent: int
    width: int
    paper_batch: int
    make: Callable  # (n, rng) -> (curves [n, 256, 2], params [n, d])

    def sample(self, n: int, seed: int | np.random.Generator):
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        return self.make(n, rng)


FAMILIES = {
    "lissajous": Family("Lissajous (3D)", 3, 64, 256, lissajous),
    "hypotrochoid": Family("Hypotrochoids (4D)", 4, 64, 256, hypotrochoid),
    "bezier2": Family("Bézier (2D)", 2, 64, 1024, lambda n, rng: bezier(n, rng, d=2)),
    "bezier64": Family("Bézier (64D)", 64, 128, 1024, lambda n, rng: bezier(n, rng, d=64)),
}
