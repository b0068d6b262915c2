"""Match Style: read a reference clip's style as a mix of the checkpoint's style directions.

The directions (``training.style``) are, per content, a style's mean encoded control points minus
*normal*'s.  A reference is read the same way: its mean control points (over its segments) minus a
*neutral* -- the source clip's own mean points, the content being styled -- expressed as a non-negative
mix of the directions by least squares (``nnls``: the directions point away from normal, so a negative
weight would read "less elderly than normal", which no performer played).  The mix is then applied to
the source as the Style sliders are (``style.styled_decode`` with several styles).

Why the source as the neutral: the reference's own content's normal is not known at edit time (a
reference is any clip).  When the reference performs the source's content (an elderly walk for a normal
walk) the difference is the style; when it performs another content the difference carries content too,
and the mix reads the directions closest to it (``training.studies.style_eval --match`` measures both).
Written down, not built: the latent classifier's probabilities as weights (it needs the train split's
points, which the checkpoint does not carry) and stored per-content neutrals (the content picked by
the smallest residual).

numpy only.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np


def nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min ||a x - b|| over x >= 0 for a few columns (the six styles): every subset's least squares, the
    best feasible one kept (2^6 = 64 small solves: exact, no iteration to tune)."""
    n = a.shape[1]
    best, best_r = np.zeros(n), float(np.linalg.norm(b))
    for k in range(1, n + 1):
        for cols in combinations(range(n), k):
            x, *_ = np.linalg.lstsq(a[:, cols], b, rcond=None)
            if (x < 0).any():
                continue
            r = float(np.linalg.norm(a[:, cols] @ x - b))
            if r < best_r - 1e-12:
                full = np.zeros(n)
                full[list(cols)] = x
                best, best_r = full, r
    return best


def read_style(styles, reference_points: np.ndarray, neutral_points: np.ndarray) -> dict:
    """``{style: weight}`` (every stored style, weights >= 0): the reference's mean control points minus the
    neutral's (both ``[S, K, d]``, any segment counts), as a non-negative mix of the directions."""
    diff = np.asarray(reference_points, np.float64).mean(0) - np.asarray(neutral_points, np.float64).mean(0)
    a = np.stack([np.asarray(d, np.float64).reshape(-1) for d in styles.directions], axis=1)
    w = nnls(a, diff.reshape(-1))
    return {n: float(x) for n, x in zip(styles.names, w, strict=True)}


def scaled(weights: dict, strength: float) -> dict:
    """The mix times ``strength`` (0: no style at all, so the decode is the plain one bit for bit)."""
    return {n: float(strength) * w for n, w in weights.items()} if strength != 0.0 else {}


def reference_controls(engine, ref):
    """The reference clip ``ref`` encoded: put on the model's skeleton where it is another one (through
    ``backend.humanoid.bvh_rig.to_model``, the one conversion every path reads other skeletons with) and at
    the model's rate.  Raises ValueError naming the problem (no styles, a skeleton that does not map)."""
    from ..humanoid import bone_map, bvh_rig
    from ..maths import timebase
    from . import style as style_edit
    if engine.styles() is None:
        raise style_edit.StyleError(style_edit.no_styles_message(engine.path.name))
    if not engine.skeleton.same_hierarchy(ref.skeleton):
        try:
            ref = bvh_rig.to_model(ref, engine.skeleton, tuple(engine.layout.position_joints))
        except bone_map.BoneMapError as e:
            raise ValueError(f"the reference's skeleton does not map onto the model's ({e})") from None
    return engine.encode(timebase.to_model_rate(ref, engine.frame_time))


def matched(engine, reference, controls, strength: float = 1.0) -> tuple[dict, dict]:
    """(the mix read from ``reference``'s controls against ``controls``, it times ``strength``)."""
    read = read_style(engine.styles(), reference.points, controls.points)
    return read, scaled(read, strength)


def describe(weights: dict) -> str:
    """``elderly 0.82, exhausted 0.10`` (largest first, zeros left out), or ``none (reads as normal)``."""
    kept = sorted(((w, n) for n, w in weights.items() if w > 0.005), reverse=True)
    return ", ".join(f"{n} {w:.2f}" for w, n in kept) if kept else "none (reads as normal)"
