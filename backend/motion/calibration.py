"""A capture's calibration frames: the reference pose some archives put before the motion.

Every file of CMU's BVH release (the cgspeed conversion, ``../shared/data/cmu-mocap-part``) begins with
the same T-pose, and the performer's first pose follows it one frame (1/120 s) later: a jump of 20-180°
in the arms that no body makes.  Read as motion, that frame is a key in a T-pose for an evaluation window
and a snap out of one for a training window.  A few files also repeat their first frame and then jump.
The data reading drops such leading frames; the motion after them is kept as it is.  The CLI's and the
batch's ``--every K`` start their keys after them (``motion_keys``): in-betweening out of a T-pose is not the
performer's motion.
"""
from __future__ import annotations

import numpy as np

from ..maths import quat_np
from .keyframes_np import every_k

JUMP_DEG_S = 720.0  # mean joint turn per second no body makes between frames (Bandai: 99.9 % of steps < 320)
LEAD_S = 0.25  # how far into a clip a jump still marks a calibration frame rather than a glitch


def joint_speeds(rotations: np.ndarray, frame_time: float) -> np.ndarray:
    """Mean turn of the joints' local rotations ``[F, J, 4]`` (w, x, y, z) between frames, in deg/s: ``[F-1]``."""
    r = np.asarray(rotations, dtype=np.float64)
    return np.degrees(quat_np.angle_between(r[1:], r[:-1])).mean(axis=-1) / float(frame_time)


def leading_calibration_frames(rotations: np.ndarray, frame_time: float) -> int:
    """How many leading frames of a clip are calibration, not motion: the frames before the last jump
    (``JUMP_DEG_S``) in its first ``LEAD_S`` seconds; 0 for a clip that starts moving at once."""
    n = min(len(rotations) - 1, max(1, int(round(LEAD_S / float(frame_time)))))
    if n < 1:
        return 0
    jumps = np.flatnonzero(joint_speeds(rotations[:n + 1], frame_time) > JUMP_DEG_S)
    return int(jumps[-1]) + 1 if len(jumps) else 0


def motion_keys(rotations: np.ndarray, frame_time: float, k: int) -> list[int]:
    """``--every K`` on a capture: a key on its first frame of motion (after ``leading_calibration_frames``, which
    are copied as they are, not filled from), every ``k`` frames after it and on the last frame; from frame 0
    when the clip is all calibration."""
    start = leading_calibration_frames(rotations, frame_time)
    return every_k(len(rotations), k, start if len(rotations) - start >= 2 else 0)
