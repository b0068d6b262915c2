"""Blender's axes against the BVH convention, and the few quaternion helpers the conversion needs.

``backend.maths.quat_np``'s quaternions ``(w, x, y, z)``; ``rig_math`` in the add-on takes these same
objects (through the bridge), so a rig and a file are turned by one constant.
"""
from __future__ import annotations

import numpy as np

from ..maths import quat_np
from ..motion import units

# BVH (Y up) -> Blender (Z up): +90 degrees about X.
BVH_TO_BLENDER = np.array([np.sqrt(0.5), np.sqrt(0.5), 0.0, 0.0])

qmul, qrotate, q_to_matrix = quat_np.mul, quat_np.rotate, quat_np.to_matrix


def qconj(q: np.ndarray) -> np.ndarray:
    return quat_np.inv(np.asarray(q, dtype=np.float64))


def q_from_matrix(m: np.ndarray) -> np.ndarray:
    """Rotation matrices ``[..., 3, 3]`` (float32 noise allowed) -> unit quaternions, w >= 0."""
    return quat_np.from_matrix(np.asarray(m, dtype=np.float64))


def cm_per_unit(rig_offsets: np.ndarray, skeleton_offsets: np.ndarray) -> float:
    """Centimetres per Blender unit (``backend.motion.units.cm_per_unit``: 1 for a BVH imported at scale 1,
    100 for one imported in metres, 2.54 in inches): the rig's proportions are kept, only its units change."""
    return units.cm_per_unit(rig_offsets, skeleton_offsets)
