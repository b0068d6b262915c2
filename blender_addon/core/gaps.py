"""Which frames the model sees and which it writes (pure Python + numpy, no bpy).

* A bone takes part when any of its keys is selected.  The model's key frames are the union of
  the selected key frames of all matched bones; at a key frame every matched bone's pose is
  read from its F-curves (keys of unselected bones are context).
* Each taking-part bone is written strictly inside the gaps between its own consecutive
  selected key frames; with "all bones", every matched bone is written inside the gaps between
  consecutive model key frames.  Nothing else is written.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


class PlanError(ValueError):
    """The selection cannot be in-betweened; the message says why and what to do."""


@dataclass
class Plan:
    keys: list[int]  # model key frames (scene frames), sorted
    gaps: dict[str, list[tuple[int, int]]]  # bone -> (left key, right key), written strictly inside
    left: dict[str, str] = field(default_factory=dict)  # bone -> why it is not written although it would be
    left_gaps: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # their gaps

    @property
    def start(self) -> int:
        return self.keys[0]

    @property
    def num_frames(self) -> int:
        return self.keys[-1] - self.keys[0] + 1

    def written_frames(self, bone: str) -> np.ndarray:
        return np.concatenate([np.arange(a + 1, b) for a, b in self.gaps.get(bone, [])] or [np.zeros(0, int)])


def _consecutive_gaps(frames: list[int]) -> list[tuple[int, int]]:
    return [(a, b) for a, b in zip(frames, frames[1:], strict=False) if b - a > 1]


def plan(selected: dict[str, list[float]], bones: list[str], all_bones: bool, max_gap: int,
         fps: float | None = None, max_seconds: float | None = None) -> Plan:
    """``selected``: bone -> frames of its selected keys (any channel); ``bones``: matched bones; ``max_gap``:
    the longest gap in scene frames (at ``fps``: the model's limit of ``max_seconds`` in the scene's frames)."""
    whole = {}
    for bone in bones:
        frames = sorted(set(selected.get(bone, ())))
        odd = [f for f in frames if abs(f - round(f)) > 1e-4]
        if odd:
            raise PlanError(f"the selected key at frame {odd[0]:g} on {bone} is between frames; "
                            "Inbetween works on whole frames (snap the keys first)")
        if frames:
            whole[bone] = sorted({int(round(f)) for f in frames})
    keys = sorted(set().union(*whole.values())) if whole else []
    if len(keys) < 2 or not any(len(f) >= 2 for f in whole.values()):
        raise PlanError("select at least two keys of a bone (in the Dope Sheet or Graph Editor); "
                        "the frames between consecutive selected keys are filled")
    for a, b in zip(keys, keys[1:], strict=False):
        if b - a > max_gap:
            raise PlanError(f"the gap between the selected keys at frames {a} and {b} is {b - a} frames"
                            f"{_seconds(b - a, fps)}; the model fills gaps of up to {max_gap} frames"
                            f"{_limit(max_seconds, fps)} (select or add a key in between)")
    if all_bones:
        gaps = {bone: _consecutive_gaps(keys) for bone in bones}
    else:
        gaps = {bone: _consecutive_gaps(f) for bone, f in whole.items()}
    gaps = {bone: g for bone, g in gaps.items() if g}
    if not gaps:
        raise PlanError("the selected keys are on neighbouring frames: there is no frame between them to fill")
    return Plan(keys, gaps)


def _seconds(frames: int, fps: float | None) -> str:
    return f" ({frames / fps:.3g} s)" if fps else ""


def _limit(seconds: float | None, fps: float | None) -> str:
    return f" ({seconds:.3g} s at {fps:.4g} fps)" if seconds and fps else ""


def without(plan: Plan, left: dict[str, str]) -> Plan:
    """The plan with ``left`` (bone -> why) not written: the key frames stay (their poses are still read)."""
    return Plan(plan.keys, {b: g for b, g in plan.gaps.items() if b not in left}, {**plan.left, **left},
                {**plan.left_gaps, **{b: g for b, g in plan.gaps.items() if b in left}})


def sample_frames(a: int, b: int, step: int) -> np.ndarray:
    """Frames to key strictly inside the gap (a, b): every ``step``-th frame after ``a`` (the
    middle frame when the gap is shorter than ``step``)."""
    at = np.arange(a + step, b, max(1, int(step)))
    return at if at.size or b - a < 2 else np.array([(a + b) // 2])


def slopes(values: np.ndarray, frames: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Tangents (value per frame) of dense per-frame ``values [n, c]`` at frames ``at`` (central
    differences; ``frames`` are consecutive and ``at`` lies strictly inside them)."""
    i = np.searchsorted(frames, at)
    return 0.5 * (values[i + 1] - values[i - 1])


def bezier_handles(frames: np.ndarray, values: np.ndarray, tangents: np.ndarray, left, right):
    """Handles one third of the way to the neighbouring keys (``left``/``right`` bound the first and
    last), along the motion's tangent: (handle_left [m, 2], handle_right [m, 2]) for one channel.
    Many gaps and channels at once: ``frames [m, G]``, ``left``/``right`` ``[G]``, ``values`` and
    ``tangents`` ``[m, G, ...]`` -> ``[m, G, ..., 2]``."""
    frames = np.asarray(frames, dtype=np.float64)
    edge = (1,) + frames.shape[1:]
    prev = np.concatenate([np.broadcast_to(np.asarray(left, dtype=np.float64), edge), frames[:-1]])
    nxt = np.concatenate([frames[1:], np.broadcast_to(np.asarray(right, dtype=np.float64), edge)])
    dl, dr = (frames - prev) / 3.0, (nxt - frames) / 3.0
    more = (1,) * (np.ndim(values) - frames.ndim)  # channel axes after the frame axes
    f, dl, dr = (v.reshape(v.shape + more) for v in (frames, dl, dr))
    hl = np.stack(np.broadcast_arrays(f - dl, values - tangents * dl), -1)
    hr = np.stack(np.broadcast_arrays(f + dr, values + tangents * dr), -1)
    return hl, hr
