"""The add-on's quaternions: ``[..., 4]`` (w, x, y, z), broadcasting, numpy only.

The one quaternion module of ``blender_addon``: what in the add-on multiplies, rotates or converts
quaternions does it here (``rig_math`` builds Blender's rotation modes on it; ``latent_math``'s seam
product, written as one matrix product, is the last to move here).  It holds the
arithmetic of ``backend.maths.quat_np`` term for term, so the add-on and the backend give the same floats
(tests/test_addon_rig_math.py checks it function by function); it is its own module because
``core/`` stands on nothing outside ``core/`` (the add-on's maths works without reaching the backend).
"""
from __future__ import annotations

import numpy as np

_CONJ = np.array([1.0, -1.0, -1.0, -1.0])


def normalize(q, eps=1e-8):
    return q / np.maximum(np.linalg.norm(q, axis=-1, keepdims=True), eps)


def mul(a, b):
    """The Hamilton product ``a * b`` (``a`` applied after ``b``)."""
    a, b = np.asarray(a), np.asarray(b)
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), dtype=np.result_type(a, b, np.float16))
    out[..., 0] = aw * bw - ax * bx - ay * by - az * bz
    out[..., 1] = aw * bx + ax * bw + ay * bz - az * by
    out[..., 2] = aw * by - ax * bz + ay * bw + az * bx
    out[..., 3] = aw * bz + ax * by - ay * bx + az * bw
    return out


def conj(q):
    """The inverse of a unit quaternion."""
    q = np.asarray(q, dtype=np.float64)
    return q * _CONJ


def _cross(a, b):
    """``np.cross`` over the last axis term for term (the same floats), without its per-call set-up."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack(np.broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), -1)


def rotate(q, v):
    """Vectors ``v [..., 3]`` rotated by unit quaternions ``q [..., 4]``."""
    w, xyz = q[..., :1], q[..., 1:]
    t = 2.0 * _cross(xyz, v)
    return v + w * t + _cross(xyz, t)


def to_matrix(q):
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], axis=-1).reshape(q.shape[:-1] + (3, 3))


def from_matrix(m):
    """Rotation matrices ``[..., 3, 3]`` (float32 noise allowed) -> unit quaternions with w >= 0
    (Shepperd's method: of four candidate solutions, the one whose pivot is largest)."""
    m = np.asarray(m, dtype=np.float64)
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
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


def slerp(a, b, t, eps=1e-6):
    """Spherical interpolation along the shorter arc; ``t`` scalar or broadcasting against ``[...]``."""
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
