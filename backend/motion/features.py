"""Poses <-> model features, and the normalisation that goes with them, in torch.

Two stay: the numpy twins (``features_np``) serve inference without torch; these serve training (batched, on
the GPU, with autograd) and the torch runtime's ``Normalizer`` (``runtime.checkpoint``, ``torch_runner``).

A frame's feature vector is ``[positions of the moving joints (re-centred), 6D rotation
of every rotating joint]``.  Root positions are re-centred on the sequence's mean
horizontal position (CITL's sequence-level re-centring), and that origin travels
beside the control points, so a clip can be decoded anywhere in the scene.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..maths import quat_torch

# the numpy twin's layout and its poses_from_features, importable from here too (they and the
# decode reply's conversion live there, for the built-in backend)
from .features_np import FeatureLayout, poses_from_features  # noqa: F401


def horizontal_mask(layout: FeatureLayout, like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(layout.horizontal(), dtype=like.dtype, device=like.device)


def sequence_origin(pos: torch.Tensor, layout: FeatureLayout) -> torch.Tensor:
    """Mean horizontal position of the first modelled joint over the frames: [..., F, J, 3] -> [..., 3]."""
    root = pos[..., :, layout.position_joints[0], :]
    return root.mean(-2) * horizontal_mask(layout, root)


def to_features(rot: torch.Tensor, pos: torch.Tensor, layout: FeatureLayout,
                origin: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Local rotations [..., F, J, 4] and positions [..., F, J, 3] -> (features [..., F, D], origin [..., 3])."""
    if origin is None:
        origin = sequence_origin(pos, layout)
    p = pos[..., layout.position_joints, :].clone()
    p[..., 0, :] = p[..., 0, :] - origin[..., None, :]
    r = quat_torch.to_6d(rot[..., layout.rotation_joints, :])
    return torch.cat([p.flatten(-2), r.flatten(-2)], -1), origin


def split_features(feat: torch.Tensor, layout: FeatureLayout, origin: torch.Tensor):
    """Features [..., F, D] -> (positions [..., F, P, 3] with origin restored, 6D rotations [..., F, R, 6])."""
    n_p = len(layout.position_joints)
    p = feat[..., : 3 * n_p].unflatten(-1, (n_p, 3)).clone()
    p[..., 0, :] = p[..., 0, :] + origin[..., None, :]
    r6 = feat[..., 3 * n_p:].unflatten(-1, (len(layout.rotation_joints), 6))
    return p, r6


@dataclass
class Normalizer:
    """Per-channel standardisation, optionally followed by a rotation onto principal axes.

    With ``rotation`` [D, D] (orthonormal, columns by decreasing variance) the model sees principal
    coordinates: a motion autoencoder's linear path then fits the leading ones with its latent Bezier
    (the cloth models' linear path, with the PCA done here instead of in a vertex basis).
    """
    mean: torch.Tensor  # [D]
    std: torch.Tensor  # [D]
    rotation: torch.Tensor | None = None  # [D, D]

    @classmethod
    def fit(cls, feats: torch.Tensor, floor: float = 1e-3, rotate: bool = False) -> "Normalizer":
        flat = feats.reshape(-1, feats.shape[-1]).double()
        # A constant channel (an unused joint) gets a floor, not a division by zero.
        mean, std = flat.mean(0), flat.std(0).clamp_min(floor)
        rotation = None
        if rotate:
            z = (flat - mean) / std
            evals, evecs = torch.linalg.eigh(z.T @ z / max(1, len(z) - 1))
            rotation = evecs.flip(-1).float()  # decreasing variance
        return cls(mean.float(), std.float(), rotation)

    def __call__(self, x):
        z = (x - self.mean.to(x)) / self.std.to(x)
        return z if self.rotation is None else z @ self.rotation.to(x)

    def inverse(self, x, product=None):
        """Features from model coordinates; ``product(x, w)`` takes ``x @ w.T`` where given (the engine's
        row-independent one for segments decoded together: ``model.rows_product``)."""
        if self.rotation is not None:
            w = self.rotation.to(x)
            x = product(x, w) if product is not None else x @ w.T
            if not x.requires_grad:  # (a new tensor: scaled in place, the same numbers)
                return x.mul_(self.std.to(x)).add_(self.mean.to(x))
        return x * self.std.to(x) + self.mean.to(x)


def detect_layout(position_std: np.ndarray, channels, tol: float = 1e-3, up_axis: int = 1) -> FeatureLayout:
    """Which joints move: ``position_std [J]`` is the largest within-clip standard deviation
    of each joint's local position (bone lengths differ between performers but are constant
    within a clip); every joint with rotation channels is modelled."""
    moving = [j for j in range(len(position_std)) if position_std[j] > tol]
    rotating = [j for j, ch in enumerate(channels) if any(c.endswith("rotation") for c in ch)]
    return FeatureLayout(moving or [0], rotating, up_axis)
