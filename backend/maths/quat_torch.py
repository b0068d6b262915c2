"""Quaternion and rotation math in torch: the twin of ``backend.maths.quat_np``.

Same names, same conventions ((w, x, y, z), intrinsic Euler, radians), autograd-safe.
"""
from __future__ import annotations

import torch

from . import hamilton

_AXIS = {"X": 0, "Y": 1, "Z": 2}


def normalize(q, eps=1e-8):
    return q / q.norm(dim=-1, keepdim=True).clamp_min(eps)


def mul(a, b):
    return torch.stack(hamilton.terms(a.unbind(-1), b.unbind(-1)), dim=-1)


def mul_parts(a, b):
    """``mul`` of quaternions laid out component-major, ``[4, ...]``."""
    return torch.stack(hamilton.terms(a.unbind(0), b.unbind(0)))


def left_matrix(a):
    """``[..., 4, 4]`` with ``left_matrix(a) @ b == mul(a, b)``."""
    w, x, y, z = a.unbind(-1)
    return torch.stack([torch.stack(r, -1) for r in ((w, -x, -y, -z), (x, w, -z, y), (y, z, w, -x), (z, -y, x, w))], -2)


def right_matrix(b):
    """``[..., 4, 4]`` with ``right_matrix(b) @ a == mul(a, b)``."""
    w, x, y, z = b.unbind(-1)
    return torch.stack([torch.stack(r, -1) for r in ((w, -x, -y, -z), (x, w, z, -y), (y, -z, w, x), (z, y, -x, w))], -2)


def inv(q):
    return q * q.new_tensor([1.0, -1.0, -1.0, -1.0])


def rotate(q, v):
    w, xyz = q[..., :1], q[..., 1:]
    xyz, v = torch.broadcast_tensors(xyz, v)  # either side may have the extra batch dims
    t = 2.0 * torch.linalg.cross(xyz, v)
    return v + w * t + torch.linalg.cross(xyz, t)


def from_axis_angle(axis, angle):
    half = 0.5 * angle[..., None]
    return torch.cat([torch.cos(half), torch.sin(half) * axis], dim=-1)


def _basis_quat(axis_index, angle):
    axis = angle.new_zeros(3)
    axis[axis_index] = 1.0
    return from_axis_angle(axis, angle)


def from_euler(e, order="ZXY"):
    q = _basis_quat(_AXIS[order[0]], e[..., 0])
    q = mul(q, _basis_quat(_AXIS[order[1]], e[..., 1]))
    return mul(q, _basis_quat(_AXIS[order[2]], e[..., 2]))


def to_matrix(q):
    w, x, y, z = q.unbind(-1)
    return torch.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], dim=-1).reshape(q.shape[:-1] + (3, 3))


def from_matrix(m):
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    cands = torch.stack([
        torch.stack([1 + m00 + m11 + m22, m21 - m12, m02 - m20, m10 - m01], -1),
        torch.stack([m21 - m12, 1 + m00 - m11 - m22, m01 + m10, m02 + m20], -1),
        torch.stack([m02 - m20, m01 + m10, 1 - m00 + m11 - m22, m12 + m21], -1),
        torch.stack([m10 - m01, m02 + m20, m12 + m21, 1 - m00 - m11 + m22], -1),
    ], -2)
    pivots = torch.stack([m00 + m11 + m22, m00, m11, m22], -1)
    best = pivots.argmax(-1)[..., None, None].expand(pivots.shape[:-1] + (1, 4))
    q = normalize(torch.gather(cands, -2, best)[..., 0, :])
    return torch.where(q[..., :1] < 0, -q, q)


def to_euler(q, order="ZXY"):
    i, j, k = (_AXIS[a] for a in order)
    s = 1.0 if (i, j, k) in ((0, 1, 2), (1, 2, 0), (2, 0, 1)) else -1.0
    m = to_matrix(normalize(q))
    cb = torch.hypot(m[..., i, i], m[..., i, j])
    b = torch.atan2(s * m[..., i, k], cb)
    a = torch.atan2(-s * m[..., j, k], m[..., k, k])
    lock = cb < 1e-12
    a = torch.where(lock, torch.atan2(s * m[..., k, j], m[..., j, j]), a)
    sa, ca = torch.sin(a), torch.cos(a)
    c = torch.atan2(s * ca * m[..., j, i] + sa * m[..., k, i], ca * m[..., j, j] + s * sa * m[..., k, j])
    return torch.stack([a, b, c], dim=-1)


def to_6d(q):
    m = to_matrix(q)
    return torch.cat([m[..., :, 0], m[..., :, 1]], dim=-1)


def from_6d(r):
    return from_matrix(matrix_from_6d(r))


def matrix_from_6d(r):
    """Gram-Schmidt of the two columns; differentiable, used by the losses."""
    x = normalize(r[..., :3])
    b = r[..., 3:]
    y = normalize(b - (x * b).sum(-1, keepdim=True) * x)
    z = torch.linalg.cross(x, y)
    return torch.stack([x, y, z], dim=-1)


def fk(lrot, lpos, parents):
    grot, gpos = [lrot[..., 0, :]], [lpos[..., 0, :]]
    for j in range(1, len(parents)):
        p = int(parents[j])
        gpos.append(rotate(grot[p], lpos[..., j, :]) + gpos[p])
        grot.append(mul(grot[p], lrot[..., j, :]))
    return torch.stack(grot, dim=-2), torch.stack(gpos, dim=-2)


def fix_hemisphere(q, axis=0):
    q = q.movedim(axis, 0).clone()
    dots = (q[1:] * q[:-1]).sum(-1)
    flips = (torch.cumsum((dots < 0).long(), 0) % 2).bool()
    q[1:] = torch.where(flips[..., None], -q[1:], q[1:])
    return q.movedim(0, axis)


def slerp(a, b, t, eps=1e-6):
    t = torch.as_tensor(t, dtype=a.dtype, device=a.device)
    t = t[..., None] if t.ndim else t
    d = (a * b).sum(-1, keepdim=True)
    b = torch.where(d < 0, -b, b)
    d = d.abs()
    theta = torch.acos(d.clamp(-1.0, 1.0))
    sin = torch.sin(theta)
    safe = sin > eps
    sin_safe = torch.where(safe, sin, torch.ones_like(sin))
    wa = torch.where(safe, torch.sin((1 - t) * theta) / sin_safe, 1 - t)
    wb = torch.where(safe, torch.sin(t * theta) / sin_safe, t)
    return normalize(wa * a + wb * b)


def angle_between(a, b):
    d = (normalize(a) * normalize(b)).sum(-1).abs()
    return 2.0 * torch.acos(d.clamp(-1.0, 1.0))
