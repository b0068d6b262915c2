"""Quaternion and rotation math in numpy, ``[..., 4]`` (w, x, y, z) broadcasting.

The one quaternion arithmetic of the add-on and the backend: ``blender_addon/core/quat.py`` re-exports it, and
a product needed elsewhere calls ``mul`` (or ``mul_parts``, ``left_matrix``, ``right_matrix``: the same product
in other layouts; its terms are written once, in ``hamilton``).  ``backend.maths.quat_torch`` has the same
functions with the same names (torch, for training's gradients); tests check one against the other.  Euler angles are radians, intrinsic, in the order the
string gives: ``from_euler(e, "ZXY") == R_z(e0) @ R_x(e1) @ R_y(e2)`` (BVH).
"""
from __future__ import annotations

import functools

import numpy as np

from . import hamilton

_AXIS = {"X": 0, "Y": 1, "Z": 2}


def normalize(q, eps=1e-8):
    return q / np.maximum(np.linalg.norm(q, axis=-1, keepdims=True), eps)


def mul(a, b):
    """The Hamilton product ``a * b`` of ``[..., 4]`` quaternions (``a`` applied after ``b``)."""
    a, b = np.asarray(a), np.asarray(b)
    # (components written into one array: no moveaxis / stack, the same arithmetic)
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), dtype=np.result_type(a, b, np.float16))
    out[..., 0], out[..., 1], out[..., 2], out[..., 3] = hamilton.terms((a[..., 0], a[..., 1], a[..., 2], a[..., 3]),
                                                                 (b[..., 0], b[..., 1], b[..., 2], b[..., 3]))
    return out


def mul_parts(a, b):
    """``mul`` of quaternions laid out component-major, ``[4, ...]`` (contiguous rows: quicker than the last
    axis on many small products), the same floats."""
    return np.stack(hamilton.terms(a, b))


def left_matrix(a):
    """``[..., 4, 4]`` with ``left_matrix(a) @ b == mul(a, b)`` (a map applied to many quaternions at once)."""
    a = np.asarray(a)
    w, x, y, z = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    return np.stack([np.stack(r, -1) for r in ((w, -x, -y, -z), (x, w, -z, y), (y, z, w, -x), (z, -y, x, w))], -2)


def right_matrix(b):
    """``[..., 4, 4]`` with ``right_matrix(b) @ a == mul(a, b)``."""
    b = np.asarray(b)
    w, x, y, z = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([np.stack(r, -1) for r in ((w, -x, -y, -z), (x, w, z, -y), (y, -z, w, x), (z, y, -x, w))], -2)


def inv(q):
    return q * np.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def _cross(a, b):
    """``np.cross`` over the last axis term for term (the same floats), without its per-call set-up."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack(np.broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), -1)


def rotate(q, v):
    """Rotate vectors ``v [..., 3]`` by unit quaternions ``q [..., 4]``."""
    w, xyz = q[..., :1], q[..., 1:]
    t = 2.0 * _cross(xyz, v)
    return v + w * t + _cross(xyz, t)


def from_axis_angle(axis, angle):
    half = 0.5 * np.asarray(angle)[..., None]
    return np.concatenate([np.cos(half), np.sin(half) * axis], axis=-1)


def from_euler(e, order="ZXY"):
    """Intrinsic Euler angles ``[..., 3]`` in ``order`` to quaternions: the ``mul`` product of the three axis
    rotations (``from_axis_angle``), each factor's zero components left out of its sums (a third of the time)."""
    e = np.asarray(e, dtype=np.float64)
    half = 0.5 * e
    c, s = np.cos(half), np.sin(half)
    q = np.zeros(e.shape[:-1] + (4,))
    q[..., 0], q[..., 1 + _AXIS[order[0]]] = c[..., 0], s[..., 0]
    q = _times_axis(q, _AXIS[order[1]], c[..., 1], s[..., 1])
    return _times_axis(q, _AXIS[order[2]], c[..., 2], s[..., 2])


def _times_axis(q, axis: int, c, s):
    """``mul(q, (c, s e_axis))``: ``mul``'s sums in its order without the terms that are zero (the same numbers;
    a zero result may differ in sign)."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    out = np.empty(q.shape)
    if axis == 0:
        out[..., 0], out[..., 1], out[..., 2], out[..., 3] = w * c - x * s, w * s + x * c, y * c + z * s, z * c - y * s
    elif axis == 1:
        out[..., 0], out[..., 1], out[..., 2], out[..., 3] = w * c - y * s, x * c - z * s, w * s + y * c, x * s + z * c
    else:
        out[..., 0], out[..., 1], out[..., 2], out[..., 3] = w * c - z * s, x * c + y * s, y * c - x * s, w * s + z * c
    return out


def to_matrix(q):
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], axis=-1).reshape(q.shape[:-1] + (3, 3))


def from_matrix(m):
    """Rotation matrices ``[..., 3, 3]`` to quaternions with w >= 0 (Shepperd's method)."""
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    # Four candidate solutions; each is accurate where its pivot is large.
    cands = np.stack([
        np.stack([1 + m00 + m11 + m22, m21 - m12, m02 - m20, m10 - m01], -1),
        np.stack([m21 - m12, 1 + m00 - m11 - m22, m01 + m10, m02 + m20], -1),
        np.stack([m02 - m20, m01 + m10, 1 - m00 + m11 - m22, m12 + m21], -1),
        np.stack([m10 - m01, m02 + m20, m12 + m21, 1 - m00 - m11 + m22], -1),
    ], -2)
    pivots = np.stack([m00 + m11 + m22, m00, m11, m22], -1)
    best = np.argmax(pivots, axis=-1)[..., None, None]
    q = np.take_along_axis(cands, np.broadcast_to(best, best.shape[:-2] + (1, 4)), -2)[..., 0, :]
    q = normalize(q)
    return np.where(q[..., :1] < 0, -q, q)


def to_euler(q, order="ZXY"):
    """Quaternions to intrinsic Euler angles ``[..., 3]`` (radians), middle angle in [-pi/2, pi/2]."""
    i, j, k = (_AXIS[a] for a in order)
    s = 1.0 if (i, j, k) in ((0, 1, 2), (1, 2, 0), (2, 0, 1)) else -1.0
    m = to_matrix(normalize(q))
    cb = np.hypot(m[..., i, i], m[..., i, j])  # |cos b|, accurate near +-pi/2 (unlike sqrt(1 - sin^2))
    b = np.arctan2(s * m[..., i, k], cb)
    a = np.arctan2(-s * m[..., j, k], m[..., k, k])
    # Gimbal lock: only a + c (or a - c) is defined; put it all in a.
    lock = cb < 1e-12
    a = np.where(lock, np.arctan2(s * m[..., k, j], m[..., j, j]), a)
    # c from a (row j of R_i(-a) @ m is row j of R_k(c)): exact for any a, so near the lock
    # the triple still reproduces the rotation (a separate atan2 for c lost ~1e-4 rad there).
    sa, ca = np.sin(a), np.cos(a)
    c = np.arctan2(s * ca * m[..., j, i] + sa * m[..., k, i], ca * m[..., j, j] + s * sa * m[..., k, j])
    return np.stack([a, b, c], axis=-1)


def to_6d(q):
    """The first two columns of the rotation matrix (Zhou et al. 2019), ``[..., 6]``."""
    m = to_matrix(q)
    return np.concatenate([m[..., :, 0], m[..., :, 1]], axis=-1)


def _unit_rows(v, out, eps=1e-8):
    """``out = v / |v|`` of 3-vectors stored as rows ``v [3, N]`` (each pass over one contiguous row)."""
    n = v[0] * v[0]
    n += v[1] * v[1]
    n += v[2] * v[2]
    np.sqrt(n, out=n)
    np.maximum(n, eps, out=n)
    np.divide(v, n, out=out)


def from_6d(r):
    """The first two matrix columns ``[..., 6]`` (Gram-Schmidt) -> quaternions with w >= 0: Shepperd's
    ``from_matrix`` of that matrix, the best-pivoted of its four candidates.  The rows flattened and laid
    out component by component (``[6, N]``: every pass reads a contiguous row), and only elementwise
    operations: a row's quaternion does not depend on the rows beside it, so segments decoded together
    convert in one call to the numbers each gets alone (a matrix product may round a row by where it
    falls in it)."""
    r = np.asarray(r, dtype=np.float64)
    shape = r.shape[:-1]
    c = np.ascontiguousarray(r.reshape(-1, 6).T)  # [6, N]
    n = c.shape[1]
    x, y = np.empty((3, n)), np.empty((3, n))  # the matrix's first two columns
    _unit_rows(c[:3], x)
    b = c[3:]
    d = x[0] * b[0]
    d += x[1] * b[1]
    d += x[2] * b[2]
    np.multiply(x, d, out=y)
    np.subtract(b, y, out=y)
    _unit_rows(y, y)
    m00, m10, m20, m01, m11, m21 = x[0], x[1], x[2], y[0], y[1], y[2]
    m02 = x[1] * y[2] - x[2] * y[1]  # (the third column, x cross y)
    m12 = x[2] * y[0] - x[0] * y[2]
    m22 = x[0] * y[1] - x[1] * y[0]
    cand = np.empty((4, 4, n))  # Shepperd's candidates (w, x, y, z), unnormalised, each symmetric pair once
    trace = m00 + m11
    trace += m22
    np.add(trace, 1.0, out=cand[0, 0])
    cand[1, 1] = 1.0 + m00 - m11 - m22
    cand[2, 2] = 1.0 - m00 + m11 - m22
    cand[3, 3] = 1.0 - m00 - m11 + m22
    np.subtract(m21, m12, out=cand[0, 1])
    np.subtract(m02, m20, out=cand[0, 2])
    np.subtract(m10, m01, out=cand[0, 3])
    np.add(m01, m10, out=cand[1, 2])
    np.add(m02, m20, out=cand[1, 3])
    np.add(m12, m21, out=cand[2, 3])
    for a, k in ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)):
        cand[k, a] = cand[a, k]
    best = np.zeros(n, dtype=np.intp)  # the largest pivot, the first on a tie (argmax's rule), by
    top = trace.copy()  # compare-and-keep over contiguous rows (argmax down a stacked [4, N] strides)
    for k, v in ((1, m00), (2, m11), (3, m22)):
        best[v > top] = k
        np.maximum(top, v, out=top)
    best *= 4 * n
    q = cand.reshape(-1).take(best + _rows_of(n))  # [4, N]: q[k, i] = cand[best[i], k, i], one gather
    norm = q[0] * q[0]
    for k in (1, 2, 3):
        norm += q[k] * q[k]
    np.sqrt(norm, out=norm)
    np.maximum(norm, 1e-8, out=norm)
    norm[q[0] < 0] *= -1.0  # (w >= 0)
    q /= norm
    return np.ascontiguousarray(q.T).reshape(shape + (4,))


@functools.lru_cache(maxsize=16)
def _rows_of(n: int) -> np.ndarray:
    """``[4, n]`` flat offsets ``k * n + i`` of component ``k`` of element ``i`` in a ``[4, n]`` block
    (read-only; a decode asks for the same few sizes)."""
    out = np.arange(4 * n).reshape(4, n)
    out.setflags(write=False)
    return out


def fk(lrot, lpos, parents):
    """Forward kinematics: local ``[..., J, 4]``, ``[..., J, 3]`` to global rotations and positions."""
    grot, gpos = [lrot[..., 0, :]], [lpos[..., 0, :]]
    for j in range(1, len(parents)):
        p = parents[j]
        gpos.append(rotate(grot[p], lpos[..., j, :]) + gpos[p])
        grot.append(mul(grot[p], lrot[..., j, :]))
    return np.stack(grot, axis=-2), np.stack(gpos, axis=-2)


def fix_hemisphere(q, axis=0):
    """Flip signs along ``axis`` (time) so neighbouring quaternions lie in one hemisphere."""
    q = np.moveaxis(np.array(q, copy=True), axis, 0)
    dots = np.sum(q[1:] * q[:-1], axis=-1)
    flips = (np.cumsum(dots < 0, axis=0) % 2).astype(bool)
    q[1:][flips] *= -1
    return np.moveaxis(q, 0, axis)


def slerp(a, b, t, eps=1e-6):
    """Spherical interpolation along the shorter arc; ``t`` broadcasts against ``[..., 1]``."""
    t = np.asarray(t, dtype=np.float64)[..., None] if np.ndim(t) else np.asarray(t)
    d = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(d < 0, -b, b)
    d = np.abs(d)
    theta = np.arccos(np.clip(d, -1.0, 1.0))
    sin = np.sin(theta)
    safe = sin > eps
    wa = np.where(safe, np.sin((1 - t) * theta) / np.where(safe, sin, 1.0), 1 - t)
    wb = np.where(safe, np.sin(t * theta) / np.where(safe, sin, 1.0), t)
    return normalize(wa * a + wb * b)


def angle_between(a, b):
    """Geodesic angle (radians) between unit quaternions."""
    d = np.abs(np.sum(normalize(a) * normalize(b), axis=-1))
    return 2.0 * np.arccos(np.clip(d, -1.0, 1.0))
