"""Euler continuity over frames, vectorised (numpy only): of the two Euler solutions of each frame,
each shifted by whole turns, the one nearest the previous frame's, the first nearest a start.

``cands [F, 2, ..., 3]`` are each frame's two solutions (angles in rotation order, any number of
bones or runs after the solution axis), ``ref [..., 3]`` the start.  :func:`nearest_chain` is the
entry point; :func:`steps` is the rule frame by frame, the reference it is checked against.
"""
from __future__ import annotations

import numpy as np

TWO_PI = 2 * np.pi


def nearest_chain(cands: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``[F, ..., 3]``: each frame's solution nearest the previous frame's (the first: nearest
    ``ref``), the same numbers as :func:`steps` frame by frame."""
    out = chain(cands, ref)
    if not is_chain(cands, ref, out):  # a tie within float rounding: decide frame by frame
        out = steps(cands, ref)
    return out


def nearest(cands: np.ndarray, ref: np.ndarray, axis: int = -1) -> np.ndarray:
    """Of ``cands [..., 2, ..., 3]``, each shifted by whole turns towards ``ref``, the one nearer ``ref``
    (L1; the first on a tie), exactly as :func:`steps` decides one frame.  ``axis``: where a candidate's
    three angles lie (counted within one candidate, ``cands[0]``; ``ref`` broadcasts against it): the
    slider's many bones and frames pass them first, ``[2, 3, N]``, so each pass reads whole rows."""
    c = np.subtract(ref, cands)  # (in place from here: the same operations, fewer temporaries)
    c /= TWO_PI
    np.rint(c, out=c)  # (np.round's rule: halves to even)
    c *= TWO_PI
    c += cands
    d = np.subtract(c, ref)
    np.abs(d, out=d)
    at = axis % (d.ndim - 1)  # (within one candidate)
    d = np.moveaxis(d, at + 1, -1)  # (a view: the angles last)
    dist = d[..., 0] + d[..., 1]
    dist += d[..., 2]
    return np.where(np.expand_dims(dist[1] < dist[0], at), c[1], c[0])


def steps(cands: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """The rule frame by frame (the reference): ``cands [F, 2, ..., 3]``, ``ref [..., 3]``."""
    out = np.empty_like(cands[:, 0])
    for i in range(cands.shape[0]):
        ref = out[i] = nearest(cands[i], ref[None])
    return out


def _wrapped_distance(d: np.ndarray) -> np.ndarray:
    d = np.abs(d - TWO_PI * np.round(d / TWO_PI))
    return d[..., 0] + d[..., 1] + d[..., 2]


def chain(cands: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """The rule vectorised over frames.  Which solution a frame takes depends only on the previous
    frame's solution (distances modulo whole turns), so the choices are a chain of maps
    {0, 1} -> {0, 1}, composed by prefix doubling; the turns then add up as a cumulative sum."""
    n = cands.shape[0]
    if n == 0:
        return np.empty_like(cands[:, 0])
    d0 = _wrapped_distance(ref - cands[0])  # [2, ...]
    state = np.empty((n,) + d0.shape[1:], dtype=bool)
    state[0] = d0[1] < d0[0]
    if n > 1:
        d = _wrapped_distance(cands[:-1, :, None] - cands[1:, None])  # [F-1, previous, this, ...]
        to0, to1 = d[:, 0, 1] < d[:, 0, 0], d[:, 1, 1] < d[:, 1, 0]  # the map: previous -> this
        shift = 1
        while shift < n - 1:  # to*[i] becomes the composition of maps i-2*shift+1 .. i
            e0, e1 = to0[:-shift], to1[:-shift]
            l0, l1 = to0[shift:], to1[shift:]
            to0, to1 = np.concatenate([to0[:shift], np.where(e0, l1, l0)]), \
                np.concatenate([to1[:shift], np.where(e1, l1, l0)])
            shift *= 2
        state[1:] = np.where(state[0], to1, to0)
    x = np.where(state[..., None], cands[:, 1], cands[:, 0])
    turns = np.empty_like(x)
    turns[0] = np.round((ref - x[0]) / TWO_PI)
    turns[1:] = np.round((x[:-1] - x[1:]) / TWO_PI)
    return x + TWO_PI * np.cumsum(turns, axis=0)


def is_chain(cands: np.ndarray, ref: np.ndarray, out: np.ndarray) -> bool:
    """Whether every frame of ``out`` is what the rule makes of the frame before it (then, by
    induction, ``out`` is the frame-by-frame result, bit for bit)."""
    if not out.shape[0]:
        return True
    prev = np.concatenate([ref[None], out[:-1]])
    return bool(np.array_equal(nearest(np.moveaxis(cands, 1, 0), prev), out))
