"""Skeleton and clip types: the data every other module speaks.

Rotations are local unit quaternions ``(w, x, y, z)``; positions are local
(relative to the parent), so a joint without position channels carries its rest
offset in every frame.  This is orangeduck's ``(lrot, lpos, parents)`` layout.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


@dataclass(frozen=True)
class Skeleton:
    names: tuple[str, ...]
    parents: np.ndarray  # [J] int, -1 for a root; parents[j] < j
    offsets: np.ndarray  # [J, 3] rest offset from the parent
    channels: tuple[tuple[str, ...], ...] = ()  # BVH channel names per joint
    end_sites: tuple[tuple[float, float, float] | None, ...] = ()  # End Site offset per joint

    def __post_init__(self):
        n = len(self.names)
        if self.parents.shape != (n,) or self.offsets.shape != (n, 3):
            raise ValueError(f"skeleton arrays do not match {n} joint names")
        if any(p >= j for j, p in enumerate(self.parents)):
            raise ValueError("skeleton parents must come before their children")

    @property
    def num_joints(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        return self.names.index(name)

    def euler_order(self, j: int) -> str:
        """The joint's rotation order from its channels ("ZXY" for Z-, X-, Y-rotation)."""
        return euler_order_of(self.channels[j])

    def position_joints(self) -> tuple[int, ...]:
        return tuple(j for j, ch in enumerate(self.channels) if any(c.lower().endswith("position") for c in ch))

    def same_hierarchy(self, other: "Skeleton") -> bool:
        return self.names == other.names and np.array_equal(self.parents, other.parents)

    def describe_mismatch(self, other: "Skeleton") -> str:
        """Readable difference, used in the errors that refuse a foreign clip."""
        missing = [n for n in self.names if n not in other.names]
        extra = [n for n in other.names if n not in self.names]
        parts = []
        if missing:
            parts.append("missing joints: " + ", ".join(missing))
        if extra:
            parts.append("extra joints: " + ", ".join(extra))
        if not parts:
            moved = [n for n in self.names
                     if self.parent_name(self.index(n)) != other.parent_name(other.index(n))]
            parts.append("re-parented joints: " + ", ".join(moved) if moved else "joint order differs")
        return "; ".join(parts)

    def parent_name(self, j: int) -> str | None:
        p = int(self.parents[j])
        return None if p < 0 else self.names[p]

    def to_json(self) -> dict:
        return {
            "names": list(self.names),
            "parents": [int(p) for p in self.parents],
            "offsets": np.asarray(self.offsets, dtype=float).round(9).tolist(),
            "channels": [list(c) for c in self.channels],
            "end_sites": [None if e is None else list(e) for e in self.end_sites],
        }

    @classmethod
    def from_json(cls, d: dict) -> "Skeleton":
        return cls(
            names=tuple(d["names"]),
            parents=np.asarray(d["parents"], dtype=np.int64),
            offsets=np.asarray(d["offsets"], dtype=np.float64).reshape(-1, 3),
            channels=tuple(tuple(c) for c in d.get("channels", ())),
            end_sites=tuple(None if e is None else tuple(e) for e in d.get("end_sites", ())),
        )


@dataclass
class Clip:
    skeleton: Skeleton
    rotations: np.ndarray  # [F, J, 4] local quaternions (w, x, y, z)
    positions: np.ndarray  # [F, J, 3] local positions
    frame_time: float = 1.0 / 30.0
    name: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        f, j = self.rotations.shape[:2]
        if self.rotations.shape != (f, j, 4) or self.positions.shape != (f, j, 3):
            raise ValueError(f"clip {self.name!r}: rotations {self.rotations.shape} and "
                             f"positions {self.positions.shape} do not match")
        if j != self.skeleton.num_joints:
            raise ValueError(f"clip {self.name!r}: {j} joints but the skeleton has {self.skeleton.num_joints}")

    @property
    def num_frames(self) -> int:
        return self.rotations.shape[0]

    @property
    def fps(self) -> float:
        return 1.0 / self.frame_time

    @property
    def root_positions(self) -> np.ndarray:
        return self.positions[:, 0]

    def slice(self, start: int, stop: int) -> "Clip":
        """Frames ``start:stop``; per-frame metadata (the BVH's source channels) sliced with them."""
        meta = {k: v[start:stop] if isinstance(v, np.ndarray) and v.shape[:1] == (self.num_frames,) else v
                for k, v in self.meta.items()}
        return replace(self, rotations=self.rotations[start:stop], positions=self.positions[start:stop], meta=meta)


def euler_order_of(channels) -> str:
    """A joint's rotation order from its BVH channel names ("ZXY" for Z-, X-, Y-rotation; "ZXY" without any)."""
    order = "".join(c[0].upper() for c in channels if c.lower().endswith("rotation"))
    return order or "ZXY"
