"""Blender pose channels <-> the backend's BVH-convention local rotations and positions.

Pure numpy (no bpy), so it is tested on its own; the quaternions are ``core.quat``'s (the
arithmetic of ``backend.maths.quat_np``): ``(w, x, y, z)`` with ``[..., 4]`` broadcasting.

The derivation (checked numerically in tests/test_addon_rig_math.py and against Blender's BVH
importer in tests/test_addon_scene_io.py):

* Blender poses bone ``j`` with ``P_j = P_parent @ inv(M_parent) @ M_j @ T(L_j) @ R(B_j)``, where
  ``M_j`` is ``bone.matrix_local`` (rest, armature space; its translation is the rest head) and
  ``L_j``, ``B_j`` are the pose channels (``location``, rotation) in the bone's own rest frame.
  The rotation of ``P_j`` relative to rest, in armature axes, is therefore
  ``G_j = G_parent @ (M_j B_j M_j^T)``: each bone contributes ``M_j B_j M_j^T``.
* A BVH skeleton rests with every joint frame aligned with the world, so its global rotation
  is ``G_j = G_parent @ R_j`` with ``R_j`` the local (channel) rotation.  Both chains agree when
  ``R_j = C^T M_j B_j M_j^T C`` with ``C`` the axis change from BVH (Y up, characters face +Z)
  to Blender (Z up, facing -Y): ``(x, y, z) -> (x, -z, y)``, a +90 degree turn about X.  This
  is the ``axis_conversion(from_forward='-Z', from_up='Y')`` of Blender's BVH importer, which
  bakes it into the armature's rest pose (the object matrix stays identity).
* Positions: the rest head moves by ``M_j L_j`` (``use_local_location``, the default) or by
  ``M_parent L_j`` (location in the parent's frame), in the parent's rest-relative frame, so the
  BVH local position is ``s * C^T (h_j - h_parent + F_j L_j)`` with ``h`` the rest heads,
  ``F_j`` that location frame and ``s`` centimetres per Blender unit.
* Euler modes: Blender's ``'XYZ'`` means X applied first, ``R = Rz @ Ry @ Rx``, i.e. the
  intrinsic order read backwards.  The importer keys ``'ZXY'`` bones for the file's ZXY
  channels, but their values are re-decomposed in each bone's rest frame, so they are not the
  file's numbers; the file's own ZXY triple is Blender's ``Euler(..., 'YXZ')`` in BVH axes.

These hold for a rig that is the checkpoint skeleton (one bone per joint, its rest pose the skeleton's:
joint frames aligned, as a BVH import gives); ``retarget`` extends them to any rig through a bone map.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import continuity, quat

AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}
EULER_MODES = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
# BVH (Y up) -> Blender (Z up): +90 degrees about X (backend.humanoid.axes holds the same constant for
# files; test_addon_rig_math checks that they agree).
BVH_TO_BLENDER = np.array([np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0])


# -- quaternions: core/quat.py (backend.maths.quat_np itself) under the add-on's names -----------------
qmul, qrotate, q_to_matrix, qconj, q_from_matrix = quat.mul, quat.rotate, quat.to_matrix, quat.conj, quat.from_matrix


def qnormalize(q: np.ndarray) -> np.ndarray:
    return quat.normalize(q, eps=1e-12)


def align_hemisphere(q: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``q`` with its sign flipped where it points away from ``ref`` (same rotation)."""
    return np.where(np.sum(q * ref, axis=-1, keepdims=True) < 0, -q, q)


def continuous(q: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Sign-continuous sequence ``[F, ..., 4]`` whose first element is in ``start``'s hemisphere.

    Frame ``i`` is flipped when it points away from frame ``i - 1`` as already aligned; with ``d_i``
    the dot product of the unaligned frames that happens where ``d_i`` and the previous flip have
    opposite signs, so the flips are a running parity of negative ``d_i`` (restarting at ``d_i = 0``,
    which never flips): vectorised over frames, the same numbers as aligning frame by frame."""
    q = np.array(q, dtype=np.float64, copy=True)
    if not q.shape[0]:
        return q
    d = np.empty(q.shape[:-1])
    d[0] = np.sum(q[0] * np.asarray(start, dtype=np.float64), axis=-1)
    d[1:] = np.sum(q[1:] * q[:-1], axis=-1)
    neg = d < 0
    count = np.cumsum(neg, axis=0)
    frame = np.arange(q.shape[0]).reshape((-1,) + (1,) * (d.ndim - 1))
    restart = np.maximum.accumulate(np.where(neg | (d > 0), -1, frame), axis=0)  # last d == 0 (or NaN)
    before = np.where(restart >= 0, np.take_along_axis(count, np.maximum(restart, 0), axis=0), 0)
    flip = (count - before) % 2 == 1
    return np.where(flip[..., None], -q, q)


def slerp(a: np.ndarray, b: np.ndarray, t) -> np.ndarray:
    """Shorter-arc spherical interpolation, ``t`` scalar or broadcasting against ``[...]``."""
    return quat.slerp(a, b, t, eps=1e-8)


# -- Blender rotation modes -------------------------------------------------------------------
def _axis_quat(axis: int, angle: np.ndarray) -> np.ndarray:
    q = np.zeros(np.shape(angle) + (4,))
    q[..., 0] = np.cos(0.5 * angle)
    q[..., 1 + axis] = np.sin(0.5 * angle)
    return q


def euler_to_quat(e: np.ndarray, mode: str) -> np.ndarray:
    """Blender Euler ``e [..., 3]`` (radians, indexed x, y, z) in rotation mode ``mode``."""
    e = np.asarray(e, dtype=np.float64)
    a, b, c = (AXIS_INDEX[ch] for ch in mode)  # applied first .. last: R = R_c @ R_b @ R_a
    return qmul(qmul(_axis_quat(c, e[..., c]), _axis_quat(b, e[..., b])), _axis_quat(a, e[..., a]))


def _intrinsic_angles(m: np.ndarray, order: str) -> np.ndarray:
    """Angles of ``R = R_i(a) R_j(b) R_k(c)`` (``order`` = ijk), middle angle in [-pi/2, pi/2]."""
    i, j, k = (AXIS_INDEX[ch] for ch in order)
    s = 1.0 if (i, j, k) in ((0, 1, 2), (1, 2, 0), (2, 0, 1)) else -1.0
    cb = np.hypot(m[..., i, i], m[..., i, j])
    b = np.arctan2(s * m[..., i, k], cb)
    a = np.where(cb < 1e-12, np.arctan2(s * m[..., k, j], m[..., j, j]), np.arctan2(-s * m[..., j, k], m[..., k, k]))
    sa, ca = np.sin(a), np.cos(a)
    c = np.arctan2(s * ca * m[..., j, i] + sa * m[..., k, i], ca * m[..., j, j] + s * sa * m[..., k, j])
    return np.stack([a, b, c], -1)


def _nearest_turn(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return x + 2 * np.pi * np.round((ref - x) / (2 * np.pi))


def both_solutions(q: np.ndarray, order: str) -> tuple[np.ndarray, np.ndarray]:
    ang = _intrinsic_angles(q_to_matrix(qnormalize(np.asarray(q, dtype=np.float64))), order)
    return ang, np.stack([ang[..., 0] + np.pi, np.pi - ang[..., 1], ang[..., 2] + np.pi], -1)


def to_axes(ang: np.ndarray, order: str) -> np.ndarray:
    e = np.empty_like(ang)
    for n, ch in enumerate(order):
        e[..., AXIS_INDEX[ch]] = ang[..., n]
    return e


def quat_to_euler(q: np.ndarray, mode: str, compat: np.ndarray | None = None) -> np.ndarray:
    """Blender Euler ``[..., 3]`` for unit quaternions; with ``compat`` the equivalent triple
    (of the two solutions, each shifted by whole turns) nearest to it: no 360-degree flips."""
    order = mode[::-1]
    ang, alt = both_solutions(q, order)
    if compat is not None:
        ref = np.asarray(compat, dtype=np.float64)[..., [AXIS_INDEX[ch] for ch in order]]
        a, b = _nearest_turn(ang, ref), _nearest_turn(alt, ref)
        far = np.abs(a - ref).sum(-1, keepdims=True) > np.abs(b - ref).sum(-1, keepdims=True)
        ang = np.where(far, b, a)
    return to_axes(ang, order)


def euler_sequence(q: np.ndarray, mode: str, start: np.ndarray) -> np.ndarray:
    """Frames ``[F, ..., 4]`` -> Euler ``[F, ..., 3]``, each the equivalent triple (of the two
    solutions, each shifted by whole turns) nearest the previous frame's, the first nearest
    ``start [..., 3]``: no 360-degree flips, over any number of bones or runs at once."""
    order = mode[::-1]
    cands = np.stack(both_solutions(q, order), 1)  # [F, 2, ..., 3]
    ref = np.asarray(start, dtype=np.float64)[..., [AXIS_INDEX[ch] for ch in order]]
    ref = np.broadcast_to(ref, cands.shape[2:])
    return to_axes(continuity.nearest_chain(cands, ref), order)


def axis_angle_to_quat(aa: np.ndarray) -> np.ndarray:
    """Blender ``rotation_axis_angle`` ``(angle, x, y, z)`` -> quaternions."""
    aa = np.asarray(aa, dtype=np.float64)
    axis = aa[..., 1:] / np.maximum(np.linalg.norm(aa[..., 1:], axis=-1, keepdims=True), 1e-12)
    return np.concatenate([np.cos(0.5 * aa[..., :1]), np.sin(0.5 * aa[..., :1]) * axis], -1)


def quat_to_axis_angle(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    n = np.linalg.norm(q[..., 1:], axis=-1, keepdims=True)
    axis = np.where(n > 1e-12, q[..., 1:] / np.maximum(n, 1e-12), np.array([0.0, 1.0, 0.0]))
    return np.concatenate([2 * np.arctan2(n, q[..., :1]), axis], -1)


def channels_to_quat(values: np.ndarray, mode: str) -> np.ndarray:
    """A bone's rotation channels as Blender stores them (3 Euler, 4 quaternion or axis-angle)."""
    if mode == "QUATERNION":
        return qnormalize(np.asarray(values, dtype=np.float64))
    if mode == "AXIS_ANGLE":
        return axis_angle_to_quat(values)
    return euler_to_quat(values, mode)


def quat_to_channels(q: np.ndarray, mode: str, start: np.ndarray) -> np.ndarray:
    """Frames ``[F, 4]`` -> channel values ``[F, 3 or 4]``, continuous from ``start`` (channel values)."""
    if mode in ("QUATERNION", "AXIS_ANGLE"):
        q = continuous(q, channels_to_quat(start, mode))
        return q if mode == "QUATERNION" else quat_to_axis_angle(q)
    return euler_sequence(q, mode, start)


# -- rig <-> BVH convention -------------------------------------------------------------------
@dataclass
class RigFrames:
    """What the conversion needs from a rig's rest pose, for the matched bones in joint order."""
    rest: np.ndarray  # [J, 4] bone rest orientation (matrix_local), armature space
    location_frame: np.ndarray  # [J, 4] the frame a bone's ``location`` is expressed in
    offsets: np.ndarray  # [J, 3] rest head minus the parent's rest head, armature space (units)
    cm_per_unit: float = 1.0

    @classmethod
    def from_rest(cls, matrices: np.ndarray, parent_matrices: np.ndarray, local_location: np.ndarray,
                  cm_per_unit: float = 1.0) -> "RigFrames":
        """``matrices [J, 4, 4]`` each bone's ``matrix_local``, ``parent_matrices [J, 4, 4]`` its
        parent bone's (identity for a bone without parent), ``local_location [J]`` bool."""
        m = np.asarray(matrices, dtype=np.float64)
        pm = np.asarray(parent_matrices, dtype=np.float64)
        rest = q_from_matrix(m[:, :3, :3])
        loc = np.where(np.asarray(local_location, dtype=bool)[:, None], rest, q_from_matrix(pm[:, :3, :3]))
        return cls(rest, loc, m[:, :3, 3] - pm[:, :3, 3], float(cm_per_unit))

    def bvh_offsets(self) -> np.ndarray:
        """Rest offsets in the backend's convention (BVH axes, centimetres)."""
        return self.cm_per_unit * qrotate(qconj(BVH_TO_BLENDER), self.offsets)


def blender_to_bvh(rig: RigFrames, basis: np.ndarray, location: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pose channels (``basis [..., J, 4]`` rotation quaternions, ``location [..., J, 3]``) ->
    the backend's local rotations ``[..., J, 4]`` and positions ``[..., J, 3]`` (cm)."""
    c_inv = qconj(BVH_TO_BLENDER)
    rot = qmul(qmul(c_inv, qmul(qmul(rig.rest, basis), qconj(rig.rest))), BVH_TO_BLENDER)
    disp = rig.offsets + qrotate(rig.location_frame, location)
    return rot, rig.cm_per_unit * qrotate(c_inv, disp)


def bvh_to_blender(rig: RigFrames, rotations: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of :func:`blender_to_bvh`: -> (basis quaternions, locations in Blender units)."""
    c, r_inv = BVH_TO_BLENDER, qconj(rig.rest)
    basis = qmul(qmul(r_inv, qmul(qmul(c, rotations), qconj(c))), rig.rest)
    disp = qrotate(c, positions) / rig.cm_per_unit - rig.offsets
    return basis, qrotate(qconj(rig.location_frame), disp)
