"""What Blender draws through keys: F-curves with Bezier interpolation, auto-clamped handles and
Blender's default handle smoothing (*Continuous Acceleration*), in numpy.

The guard (``backend.motion.inbetween.guard``) measures the model against "the curves", and the curves a Blender user
gets without Splinetween are these (``training.blender_baseline`` reads them from real ``bpy``; the
tests check this module against it).  Blender's rule (``BKE_nurb_handle_smooth_fcurve``): every
handle is a third of its key span long in time, so a curve is a cubic in the frame; the first and
last key and every local extreme (a key not between its neighbours' values) have flat handles; the
handles of the keys between are the C2 spline's (continuous acceleration), except where that would
overshoot a neighbouring key's value or turn a key's handle against its neighbours: there the handle
is held at the limit and the rest solved again.  Rotations are keyed as Euler angles in each joint's
own order, made continuous across keys first (as Blender's BVH importer keys them); positions per
axis.  Pure numpy.
"""
from __future__ import annotations

import functools

import numpy as np

from ...maths import quat_np


def _thomas(a, b, c, d):
    """Tridiagonal solves [C, n] (a: below the diagonal, c: above), one per row."""
    n = d.shape[1]
    cp, dp = np.empty_like(d), np.empty_like(d)
    cp[:, 0], dp[:, 0] = c[:, 0] / b[:, 0], d[:, 0] / b[:, 0]
    for i in range(1, n):
        m = b[:, i] - a[:, i] * cp[:, i - 1]
        cp[:, i], dp[:, i] = c[:, i] / m, (d[:, i] - a[:, i] * dp[:, i - 1]) / m
    h = np.empty_like(d)
    h[:, -1] = dp[:, -1]
    for i in range(n - 2, -1, -1):
        h[:, i] = dp[:, i] - cp[:, i] * h[:, i + 1]
    return h


def _limits(dy, l):
    """(hmin, hmax) [C, K] of the right-handle offsets (``bezier_clamp``: no overshoot, no reversal).

    Each key's handle is bounded by its two neighbouring spans (``dy`` scaled by the span ratio ``l`` on
    the right): a span going up caps the offset at its rise and floors it at 0, one going down the other
    way round, a flat one pins it at 0; the bounds of both spans hold at once (the tightest)."""
    def cap(v):  # an upper bound from one span: its rise where it goes up, else 0 (NaN: none)
        return np.where(v > 0, v, np.where(v <= 0, 0.0, np.inf))

    def floor(v):
        return np.where(v < 0, v, np.where(v >= 0, 0.0, -np.inf))
    c, k = dy.shape[0], dy.shape[1] + 1
    hmin, hmax = np.full((c, k), -np.inf), np.full((c, k), np.inf)
    right = dy * l[1:]  # the span before key i, scaled to key i's right handle
    hmax[:, :-1], hmin[:, :-1] = cap(dy), floor(dy)
    hmax[:, 1:], hmin[:, 1:] = np.minimum(hmax[:, 1:], cap(right)), np.maximum(hmin[:, 1:], floor(right))
    return hmin, hmax


def right_offsets(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """[C, K] right-handle value offsets of keys at frames ``x [K]`` with values ``y [C, K]`` (the left
    handle's offset is ``-h / l``, ``l`` the ratio of the key's next to previous span)."""
    return right_offsets_many([(x, y)])[0]


def _system(x: np.ndarray, y: np.ndarray):
    """The handle system of one key set: (a, b, c, d, hmin, hmax, locked) [C, K] (``_thomas``' rows, the limits,
    the keys whose handles are flat)."""
    ch, k = y.shape
    dx, dy = np.diff(x), np.diff(y, axis=1)
    l = np.ones(k)
    l[1:-1] = dx[1:] / dx[:-1]
    d1, d2 = -dy[:, :-1], dy[:, 1:]  # previous key minus this one, next minus this one
    locked = np.ones((ch, k), dtype=bool)
    locked[:, 1:-1] = ((d1 <= 0) & (d2 <= 0)) | ((d1 >= 0) & (d2 >= 0))  # extremes (and plateaus): flat
    a0, b0, c0, d0 = np.zeros((ch, k)), np.ones((ch, k)), np.zeros((ch, k)), np.zeros((ch, k))
    i = np.arange(1, k - 1)
    free = ~locked
    a0[:, i] = np.where(free[:, i], l[i] * l[i], 0.0)
    b0[:, i] = np.where(free[:, i], 2.0 * (l[i] + 1), 1.0)
    c0[:, i] = np.where(free[:, i], 1.0 / l[i + 1], 0.0)
    d0[:, i] = np.where(free[:, i], dy[:, :-1] * (l[i] * l[i]) + dy[:, 1:], 0.0)
    return (a0, b0, c0, d0) + _limits(dy, l) + (locked,)


def right_offsets_many(sets) -> list[np.ndarray]:
    """``right_offsets`` of several key sets [(x [K_i], y [C_i, K_i])] in one solve: their rows stacked, each
    padded after its last key with rows of a locked key (a = c = d = 0, b = 1, no limits).  The last key is
    locked too (c = 0), so nothing flows back from the padding and every row gets the numbers it gets alone."""
    out = [np.zeros(np.shape(y)) for _, y in sets]
    todo = [i for i, (_, y) in enumerate(sets) if np.shape(y)[1] >= 3]
    if not todo:
        return out
    systems = [_system(np.asarray(sets[i][0]), np.asarray(sets[i][1])) for i in todo]
    if len(systems) == 1:
        a0, b0, c0, d0, hmin, hmax, locked = systems[0]
    else:
        k = max(s[0].shape[1] for s in systems)
        rows = sum(s[0].shape[0] for s in systems)
        a0, b0, c0, d0, hmin, hmax, locked = stacked = [
            np.full((rows, k), v, dtype=bool if v is True else np.float64)
            for v in (0.0, 1.0, 0.0, 0.0, -np.inf, np.inf, True)]
        start = 0
        for s in systems:
            ch, ki = s[0].shape
            for whole, part in zip(stacked, s, strict=True):
                whole[start:start + ch, :ki] = part
            start += ch
    h = _thomas(a0, b0, c0, d0)
    # most curves overshoot nowhere: only those that do are solved again with handles held at their limits
    redo = np.flatnonzero(((h < hmin) | (h > hmax)).any(1))
    if len(redo):
        keys = np.concatenate([np.full(s[0].shape[0], s[0].shape[1]) for s in systems])
        h[redo] = _clamped(a0[redo], b0[redo], c0[redo], d0[redo], hmin[redo], hmax[redo], 4 * keys[redo] + 8,
                           h[redo])
    h = np.where(locked, 0.0, h)
    start = 0
    for i, s in zip(todo, systems, strict=True):
        ch, ki = s[0].shape
        out[i] = h[start:start + ch, :ki]
        start += ch
    return out


def _clamped(a0, b0, c0, d0, hmin, hmax, rounds, first=None):
    """Blender's ``tridiagonal_solve_with_limits`` of the systems [C, K] (each row on its own): solve, hold
    the handles that overshoot their limits at the limit, release held ones the solution pulls back; row r
    for at most ``rounds[r]`` rounds (Blender's 4 K + 8 of its own key count K).  ``first``: the first
    round's solution, when the caller has it (the unheld systems' own: each row solves on its own).
    The rows still being solved are kept together (gathered again only when some finish), so each round is
    a few operations on them alone."""
    h = np.zeros(d0.shape)
    idx = np.arange(len(d0))  # the rows being solved (every array below holds theirs, in this order)
    a0, b0, c0, d0, hmin, hmax = (np.asarray(v, dtype=np.float64) for v in (a0, b0, c0, d0, hmin, hmax))
    rounds = np.asarray(rounds)
    a, b, c, d = a0.copy(), b0.copy(), c0.copy(), d0.copy()
    held = np.zeros(d0.shape, dtype=bool)
    unlocks = np.zeros(d0.shape, dtype=np.int8)
    for n in range(int(np.max(rounds)) if len(rounds) else 0):
        if n:
            go = n < rounds
            if not go.all():
                if not go.any():
                    break
                idx, rounds = idx[go], rounds[go]
                a0, b0, c0, d0, hmin, hmax, a, b, c, d, held, unlocks = (
                    v[go] for v in (a0, b0, c0, d0, hmin, hmax, a, b, c, d, held, unlocks))
        hr = first if n == 0 and first is not None else _thomas(a, b, c, d)
        h[idx] = hr
        high = hr > hmax
        over = (hr < hmin) | high
        target = np.where(high, hmax, hmin)
        want = over & (target != 0)  # handles that go the right way first, the others only if none does
        lock = np.where(want.any(1, keepdims=True), want, over)
        a, c, b = np.where(lock, 0.0, a), np.where(lock, 0.0, c), np.where(lock, 1.0, b)
        d = np.where(lock, target, d)
        held |= lock
        locked_any = lock.any(1)
        state = a0 * np.roll(hr, 1, 1) + b0 * hr + c0 * np.roll(hr, -1, 1) - d0
        relax = -state * b0
        release = (held & (unlocks < 2) & ~locked_any[:, None]
                   & (((relax > 0) & (hr < hmax)) | ((relax < 0) & (hr > hmin))))
        a, b, c, d = (np.where(release, v0, v) for v, v0 in ((a, a0), (b, b0), (c, c0), (d, d0)))
        held &= ~release
        unlocks += release
        rounds = np.where(over.any(1) | release.any(1), rounds, 0)  # a row that neither held nor let go is done
    return h


def evaluate(x, y, frames) -> np.ndarray:
    """The curves through keys ``x [K]``, ``y [K, C]`` at ``frames [N]`` -> [N, C] (constant outside)."""
    return evaluate_many([(x, y, frames)])[0]


def evaluate_many(jobs) -> list[np.ndarray]:
    """``evaluate`` of several key sets [(x, y, frames)], their handles in one solve (``right_offsets_many``)."""
    jobs = [(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64).reshape(len(x), -1),
             np.asarray(frames, dtype=np.float64)) for x, y, frames in jobs]
    handles = iter(right_offsets_many([(x, y.T) for x, y, _ in jobs if len(x) > 1]))
    return [_draw(x, y, next(handles).T if len(x) > 1 else None, f) for x, y, f in jobs]


def _draw(x, y, h, frames) -> np.ndarray:
    """The cubic of each span through keys ``x [K]``, ``y [K, C]`` with right-handle offsets ``h [K, C]``, at
    ``frames`` (clipped to the keys)."""
    f = np.clip(frames, x[0], x[-1])
    if len(x) == 1:
        return np.repeat(y, len(f), 0)
    l = np.ones(len(x))
    l[1:-1] = np.diff(x)[1:] / np.diff(x)[:-1]
    s = np.clip(np.searchsorted(x, f, side="right") - 1, 0, len(x) - 2)
    t = ((f - x[s]) / (x[s + 1] - x[s]))[:, None]  # handles a third of the span long: x is linear in t
    u = 1 - t
    p1, p2 = y[s] + h[s], y[s + 1] - h[s + 1] / l[s + 1][:, None]
    # products, not ``** 3``: exactly rounded multiplications, where pow may go through a SIMD library
    return u * u * u * y[s] + 3 * u * u * t * p1 + 3 * u * t * t * p2 + t * t * t * y[s + 1]


@functools.lru_cache(maxsize=64)
def _order_groups(channels: tuple, num_joints: int) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """The joints of each Euler order, in first-seen order (one conversion per order)."""
    from ..skeleton import euler_order_of
    orders = [euler_order_of(channels[i] if i < len(channels) else ()) for i in range(num_joints)]
    return tuple((o, tuple(i for i in range(num_joints) if orders[i] == o)) for o in dict.fromkeys(orders))


def at(skeleton, rot: np.ndarray, pos: np.ndarray, keys, frames) -> tuple[np.ndarray, np.ndarray]:
    """(rotations [N, J, 4], positions [N, J, 3]) of the curves through the key frames of ``rot``, ``pos``
    (only keys are read) at ``frames [N]`` (within keys[0]..keys[-1]): ``fill`` at those frames only, as
    the guard's hidden-key passes need (the same numbers, without the frames nobody reads)."""
    return at_many(skeleton, rot, pos, [(keys, frames)])[0]


def at_many(skeleton, rot: np.ndarray, pos: np.ndarray, jobs) -> list[tuple[np.ndarray, np.ndarray]]:
    """``at`` of one clip for several ``jobs`` [(keys, frames)] (the fill's keys and the guard's passes, each
    with some keys hidden): every key's Euler angles converted once, made continuous along every job's keys
    in one pass, every job's frames back to quaternions at once."""
    j = skeleton.num_joints
    groups = _order_groups(tuple(tuple(c) for c in skeleton.channels), j)
    jobs = [(np.asarray(k, dtype=np.int64), np.asarray(f, dtype=np.int64)) for k, f in jobs]
    every = np.unique(np.concatenate([k for k, _ in jobs]))
    raw = np.empty((len(every), j, 3))
    for o, js in groups:
        raw[:, js] = quat_np.to_euler(np.asarray(rot[every][:, js], np.float64), o)
    eulers = _unwrap_many([raw[np.searchsorted(every, keys)] for keys, _ in jobs])
    curves = []
    for (keys, frames), euler in zip(jobs, eulers, strict=True):
        # Blender keeps a key's value in float32; so does this reference, which also makes it repeatable: numpy's
        # vectorised atan2 can differ in the last bit of a float64 between calls (by the arrays' alignment)
        keyed = np.concatenate([pos[keys], euler], -1).reshape(len(keys), -1).astype(np.float32).astype(np.float64)
        curves.append((keys, keyed, frames))
    dense = np.concatenate([c.reshape(-1, j, 6) for c in evaluate_many(curves)])
    out_r = np.empty((len(dense), j, 4))
    for o, js in groups:
        out_r[:, js] = quat_np.from_euler(dense[:, js, 3:], o)
    cuts = np.cumsum([len(f) for _, f in jobs])[:-1]
    return list(zip(np.split(out_r, cuts), np.split(dense[..., :3].copy(), cuts), strict=True))


def _unwrap_many(seqs: list[np.ndarray]) -> list[np.ndarray]:
    """``bvh.unwrap_euler`` of each Euler sequence [K_i, J, 3], stepped along all of them at once (each key
    nearest its own sequence's previous one; every key's other triple made once): the same numbers as one by
    one."""
    from ...formats.bvh import euler_alternative, nearest_equivalent
    k = max(len(s) for s in seqs)
    e = np.zeros((len(seqs), k) + seqs[0].shape[1:])
    for i, s in enumerate(seqs):
        e[i, :len(s)] = s
    alt = euler_alternative(e)
    for t in range(1, k):
        e[:, t] = nearest_equivalent(e[:, t], e[:, t - 1], alt[:, t])
    return [e[i, :len(s)] for i, s in enumerate(seqs)]


def fill(skeleton, rot: np.ndarray, pos: np.ndarray, keys) -> tuple[np.ndarray, np.ndarray]:
    """(rotations [F, J, 4], positions [F, J, 3]) of the curves through the key frames of ``rot``,
    ``pos`` (only keys are read) over frames keys[0]..keys[-1]; other frames as given; keys exact."""
    return fill_and_at(skeleton, rot, pos, keys, [])[0]


def fill_and_at(skeleton, rot: np.ndarray, pos: np.ndarray, keys, jobs):
    """(``fill`` through ``keys``, ``at_many`` of ``jobs``) in one ``at_many`` (the in-betweener's curves and
    its guard's hidden-key passes: one conversion and one handle solve for all)."""
    keys = np.asarray(keys, dtype=np.int64)
    out_r, out_p = np.array(rot, dtype=np.float64, copy=True), np.array(pos, dtype=np.float64, copy=True)
    span = np.arange(keys[0], keys[-1] + 1)
    (out_r[span], out_p[span]), *held = at_many(skeleton, rot, pos, [(keys, span)] + list(jobs))
    out_r[keys], out_p[keys] = rot[keys], pos[keys]
    return (out_r, out_p), held
