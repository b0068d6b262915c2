"""The normalisation of model features, in torch (and which joints a clip moves).

Two stay: ``Normalizer`` works on tensors for training and the torch runtime (``runtime.checkpoint``,
``torch_runner``); its numpy twin, ``features_np.ArrayNormalizer``, serves inference without torch.  Poses ->
features is ``features_np`` for inference and ``training/features.py`` (torch, batched on the GPU) for training.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

# the numpy twin's layout and its poses_from_features, importable from here too (they and the
# decode reply's conversion live there, for the built-in backend)
from .features_np import FeatureLayout, poses_from_features  # noqa: F401


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
