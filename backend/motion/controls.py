"""What an encoded clip is, and how clips are cut: the leaf every engine and the service share.

``Controls`` (a clip's latent spline: control points per segment plus what decoding needs),
``segment_bounds`` (windows that share their end frames) and ``group_by_length`` (batching
segments of equal length).  numpy only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def segment_bounds(num_frames: int, window: int) -> list[tuple[int, int]]:
    """Inclusive [start, end] frame ranges of at most ``window`` frames sharing end frames."""
    if num_frames <= window:
        return [(0, num_frames - 1)]
    count = -(-(num_frames - 1) // (window - 1))
    b = np.round(np.linspace(0, num_frames - 1, count + 1)).astype(int)
    return [(int(b[i]), int(b[i + 1])) for i in range(count)]


@dataclass
class Controls:
    """A clip's latent spline: control points per segment plus what decoding needs."""
    points: np.ndarray  # [S, K, d]
    origins: np.ndarray  # [S, 3] re-centring offset of each segment
    segments: list[tuple[int, int]]  # inclusive frame ranges, sharing end frames
    template: np.ndarray  # [J, 3] local positions of joints the model does not move
    frame_time: float
    name: str = ""
    keys: list[int] | None = None  # in-betweening: the key frames (clip-relative) ...
    key_rotations: np.ndarray | None = None  # ... and their poses, which the decoder interpolates
    key_positions: np.ndarray | None = None

    @property
    def num_frames(self) -> int:
        return self.segments[-1][1] + 1


def group_by_length(jobs):
    """Jobs (index, segment, start, end) grouped by their length end - start + 1."""
    groups = {}
    for j in jobs:
        groups.setdefault(j[3] - j[2] + 1, []).append(j)
    return groups
