"""An IK target in-betweened from the model's motion (pure numpy, no bpy).

A leg under an IK constraint is not written (``constraints``): its bones follow the IK target, so the
target is what must move.  The model fills the whole body, leg included; the chain's tip (the IK owner's
tail, or head without "Use Tail") is placed by forward kinematics of that fill, and the target follows it:

    target(t) = tip(t) + offset(t),   offset linear between the gap's keys (target(k) - tip(k) there)

so at the keys the target is exactly where the user keyed it, and between them it carries the model's
motion.  Then the world position becomes the target's ``location`` channel through the constant matrix
``A`` (world = A @ location) of a target whose parents do not move.
"""
from __future__ import annotations

import numpy as np

from .rig_math import q_to_matrix


def chain_pose(rest: np.ndarray, basis: np.ndarray, location: np.ndarray) -> np.ndarray:
    """Pose matrices (armature space) of the last bone of a chain ``[F, 4, 4]``: ``rest [n, 4, 4]`` each
    bone's ``matrix_local`` from a root bone down to it (each the parent of the next), ``basis [F, n, 4]``
    rotation quaternions, ``location [F, n, 3]``; Blender's ``P_j = P_parent @ inv(M_parent) @ M_j @ T(L_j) @
    R(B_j)``."""
    rest, basis, location = (np.asarray(a, dtype=np.float64) for a in (rest, basis, location))
    f, n = basis.shape[:2]
    if n == 0:
        raise ValueError("a chain has at least one bone (basis [F, n, 4] with n = 0)")

    def own(j: int) -> np.ndarray:
        m = np.tile(np.eye(4), (f, 1, 1))
        m[:, :3, :3] = q_to_matrix(basis[:, j])
        m[:, :3, 3] = location[:, j]
        return rest[j] @ m
    pose = own(0)
    for j in range(1, n):
        pose = pose @ (np.linalg.inv(rest[j - 1]) @ own(j))
    return pose


def tip(pose: np.ndarray, length: float, use_tail: bool = True) -> np.ndarray:
    """The point the IK solver moves onto its target: the bone's tail (or head) ``[F, 3]``."""
    point = np.array([0.0, float(length) if use_tail else 0.0, 0.0, 1.0])
    return (pose @ point)[..., :3]


def follow(tips: np.ndarray, frames: np.ndarray, gaps, target_at: dict) -> np.ndarray:
    """World positions of the target at ``frames`` (each strictly inside one of ``gaps``): ``tips [len(frames)
    + ..., 3]`` are indexed like ``frames``; ``target_at``: frame -> (target, tip) world positions at each
    gap end.  The offset target - tip is linear across each gap, exact at its ends."""
    out = np.empty((len(frames), 3))
    frames = np.asarray(frames)
    for a, b in gaps:
        inside = (frames > a) & (frames < b)
        if not inside.any():
            continue
        w = ((frames[inside] - a) / (b - a))[:, None]
        off_a = np.subtract(*target_at[a])
        off_b = np.subtract(*target_at[b])
        out[inside] = tips[inside] + (1.0 - w) * off_a + w * off_b
    return out


def to_location(world: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``location`` channel values ``[n, 3]`` that put the target at ``world [n, 3]`` (world = A @ location)."""
    a = np.asarray(matrix, dtype=np.float64)
    return (np.linalg.inv(a[:3, :3]) @ (np.asarray(world) - a[:3, 3]).T).T


def to_world(location: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    a = np.asarray(matrix, dtype=np.float64)
    return (a[:3, :3] @ np.asarray(location, dtype=np.float64).T).T + a[:3, 3]
