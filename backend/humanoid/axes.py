"""Blender's axes against the BVH convention, and the few quaternion helpers the conversion needs.

``backend.maths.quat_np``'s quaternions ``(w, x, y, z)``; ``rig_math`` in the add-on takes these same
objects (through the bridge), so a rig and a file are turned by one constant.
"""
from __future__ import annotations

import numpy as np

from ..maths import quat_np

# BVH (Y up) -> Blender (Z up): +90 degrees about X.
BVH_TO_BLENDER = np.array([np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0])

qmul, qrotate, q_to_matrix = quat_np.mul, quat_np.rotate, quat_np.to_matrix


def qconj(q: np.ndarray) -> np.ndarray:
    return quat_np.inv(np.asarray(q, dtype=np.float64))


def q_from_matrix(m: np.ndarray) -> np.ndarray:
    """Rotation matrices ``[..., 3, 3]`` (float32 noise allowed) -> unit quaternions, w >= 0."""
    return quat_np.from_matrix(np.asarray(m, dtype=np.float64))


def cm_per_unit(rig_offsets: np.ndarray, skeleton_offsets: np.ndarray) -> float:
    """Centimetres per Blender unit, to the nearest power of ten (1 for a BVH imported at scale 1,
    100 for one imported in metres): the rig's proportions are kept, only its units change."""
    a = float(np.linalg.norm(skeleton_offsets, axis=-1).sum())
    b = float(np.linalg.norm(rig_offsets, axis=-1).sum())
    if a <= 0 or b <= 0:
        return 1.0
    return float(10.0 ** np.round(np.log10(a / b)))
