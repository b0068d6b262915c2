"""The feature maths of inference in numpy: the layout, poses -> features, the normaliser.

Two stay: ``backend.motion.features`` has the torch twins (training runs them on the GPU, with autograd, and
the torch runtime's ``Normalizer`` works on tensors); tests/test_onnx.py checks they agree.  Torch-free, so the add-on's built-in backend
(``backend.runtime.onnx_runner``: ONNX Runtime) runs the same inference path as the torch one.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..maths import quat_np


@dataclass
class FeatureLayout:
    position_joints: list[int]  # joints whose local position is modelled (e.g. Hips)
    rotation_joints: list[int]  # joints whose local rotation is modelled
    up_axis: int = 1  # BVH is Y-up; re-centring leaves the up component alone

    @property
    def dim(self) -> int:
        return 3 * len(self.position_joints) + 6 * len(self.rotation_joints)

    def rotation_columns(self, joint: int) -> list[int]:
        """The six feature columns of ``joint``'s rotation (positions come first, then rotations in order)."""
        at = 3 * len(self.position_joints) + 6 * self.rotation_joints.index(joint)
        return list(range(at, at + 6))

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "FeatureLayout":
        return cls(list(d["position_joints"]), list(d["rotation_joints"]), int(d.get("up_axis", 1)))

    def horizontal(self) -> np.ndarray:
        """[3]: 1 on the horizontal axes, 0 on the up axis."""
        m = np.ones(3)
        m[self.up_axis] = 0.0
        return m


def sequence_origin(pos: np.ndarray, layout: FeatureLayout) -> np.ndarray:
    """Mean horizontal position of the first modelled joint over the frames: [..., F, J, 3] -> [..., 3]."""
    root = np.asarray(pos, dtype=np.float32)[..., :, layout.position_joints[0], :]
    return (root.mean(-2) * layout.horizontal().astype(np.float32)).astype(np.float32)


def to_features(rot: np.ndarray, pos: np.ndarray, layout: FeatureLayout, origin: np.ndarray) -> np.ndarray:
    """Local rotations [..., F, J, 4] and positions [..., F, J, 3] -> features [..., F, D] (float32), the
    first position joint re-centred on ``origin [..., 3]``."""
    p = pos[..., layout.position_joints, :].astype(np.float32)
    p[..., 0, :] -= np.asarray(origin, dtype=np.float32)[..., None, :]
    r = quat_np.to_6d(rot[..., layout.rotation_joints, :]).astype(np.float32)
    return np.concatenate([p.reshape(p.shape[:-2] + (-1,)), r.reshape(r.shape[:-2] + (-1,))], -1)


def poses_from_features(feat: np.ndarray, layout: FeatureLayout, origin: np.ndarray, template_pos: np.ndarray,
                        num_joints: int) -> tuple[np.ndarray, np.ndarray]:
    """Features -> local rotations [..., F, J, 4] and positions [..., F, J, 3] in float64; joints that are
    not modelled keep identity rotation / the template (rest) position.  ``origin [..., 3]`` broadcasts
    against the frames (``[G, 1, 3]`` for G segments of one length stacked in front, ``[sum F, 3]`` for
    segments laid end to end).  Every operation is per row, so a segment converts to the same poses alone
    or beside others (the add-on caches decodes per segment)."""
    feat = np.asarray(feat, dtype=np.float64)
    n_p, shape = len(layout.position_joints), feat.shape[:-1]
    rot = np.zeros(shape + (num_joints, 4))
    rot[..., 0] = 1.0
    rot[..., layout.rotation_joints, :] = quat_np.from_6d(feat[..., 3 * n_p:].reshape(shape + (-1, 6)))
    pos = np.empty(shape + (num_joints, 3))
    pos[...] = np.asarray(template_pos, dtype=np.float64)
    p = feat[..., :3 * n_p].reshape(shape + (n_p, 3))
    pos[..., layout.position_joints, :] = p
    pos[..., layout.position_joints[0], :] += np.asarray(origin, dtype=np.float64)
    return rot, pos


@dataclass
class ArrayNormalizer:
    """``features.Normalizer`` in numpy float32: per-channel standardisation, then an optional rotation."""
    mean: np.ndarray  # [D]
    std: np.ndarray  # [D]
    rotation: np.ndarray | None = None  # [D, D]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        z = (np.asarray(x, dtype=np.float32) - self.mean) / self.std
        return z if self.rotation is None else z @ self.rotation

    def inverse(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        if self.rotation is not None:
            x = x @ self.rotation.T
        return x * self.std + self.mean
