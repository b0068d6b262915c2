"""The maths of File > Import > Acclaim: an ASF skeleton's rest bones and an AMC take's pose channels in
Blender's axes (numpy only; the bpy side is ``io/acclaim.py``).

The take arrives as the backend's clip (``backend.formats.asf.to_clip``): joint ``j``'s local rotation ``L``
in its parent's frame, with every rest frame the file's axes, and its position in the parent's frame.  As
Blender's own Import BVH does, the file's axes become Blender's by one rotation ``A`` (``axis_conversion`` of
the Forward / Up options: Y up, -Z forward by default, a +90 degree turn about X) and one uniform scale, both
baked into the bones (the object's matrix stays identity).  A bone with rest orientation ``R`` (its
``matrix_local``, armature space) then gets the pose ``R^-1 (A L A^-1) R`` and the location
``R^-1 (s A (p - p_rest))``: Blender's pose chain ``P_j = P_parent R_parent^-1 R_j B_j`` is then ``G_j R_j``,
``G_j`` the clip's world rotation turned into Blender's axes, so every head lands where the clip's forward
kinematics puts the joint (tests/test_import_acclaim.py checks it with bpy).
"""
from __future__ import annotations

import numpy as np

from . import quat, rig_math

ZERO_LENGTH = 1e-3  # file units: a bone this short gets a visible stand-in tail (as Import BVH does)


def rest_heads(offsets: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Each joint's rest position ``[J, 3]`` in the file's axes (every rest rotation the identity)."""
    heads = np.zeros_like(np.asarray(offsets, dtype=np.float64))
    for j, p in enumerate(parents):
        heads[j] = offsets[j] + (heads[p] if p >= 0 else 0.0)
    return heads


def rest_tails(heads: np.ndarray, bone_vectors: np.ndarray) -> np.ndarray:
    """Each bone's tail: its head plus the ASF bone's ``direction * length``.  The root (and any bone of zero
    length) gets the file's up axis, the bones' mean length long, as Import BVH gives a zero-length bone."""
    vec = np.asarray(bone_vectors, dtype=np.float64).copy()
    lengths = np.linalg.norm(vec, axis=-1)
    real = lengths > ZERO_LENGTH
    mean = float(lengths[real].mean()) if real.any() else 1.0
    vec[~real] = (0.0, mean, 0.0)
    return heads + vec


def axis_quat(axis_matrix: np.ndarray) -> np.ndarray:
    """The file -> Blender rotation ``A`` (a 3x3 rotation matrix) as a quaternion."""
    return quat.from_matrix(np.asarray(axis_matrix, dtype=np.float64))


def pose_rotations(rotations: np.ndarray, axis: np.ndarray, rest: np.ndarray) -> np.ndarray:
    """``[F, J, 4]`` the clip's local rotations -> each bone's pose rotation ``R^-1 A L A^-1 R`` (``rest
    [J, 4]``: the bones' rest orientations, armature space)."""
    turned = quat.mul(quat.mul(axis, rotations), quat.conj(axis))
    return quat.normalize(quat.mul(quat.mul(quat.conj(rest)[None], turned), rest[None]))


def pose_locations(positions: np.ndarray, offsets: np.ndarray, axis: np.ndarray, rest: np.ndarray,
                   scale: float) -> np.ndarray:
    """``[F, J, 3]`` the clip's positions (parent's frame, file units) -> each bone's ``location``:
    ``R^-1 (scale A (p - offset))``, zero where a joint sits on its rest offset."""
    moved = scale * quat.rotate(axis, np.asarray(positions, dtype=np.float64) - offsets[None])
    return quat.rotate(quat.conj(rest)[None], moved)


def channels(pose: np.ndarray, mode: str) -> np.ndarray:
    """``[F, 4]`` one bone's pose rotations -> its channel values in rotation ``mode`` (QUATERNION or an
    Euler order), continuous from the rest pose: no sign flips, no 360 degree jumps."""
    start = np.array([1.0, 0.0, 0.0, 0.0]) if mode == "QUATERNION" else np.zeros(3)
    return rig_math.quat_to_channels(pose, mode, start)
