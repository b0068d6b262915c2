"""Batches for the in-betweening task: random keys, the interpolation base, targets.

Key recipe after CITL: the first and last frame of a window are always keys; half the
windows get regular spacing (as an animator blocks: every k frames), half a random
number of keys at random frames, so one checkpoint serves gaps from 2 to 60 frames.
"""
from __future__ import annotations

import numpy as np
import torch

from .features import to_features
from .keyframes import inbetween_inputs


def sample_key_masks(rng: np.random.Generator, batch: int, n: int) -> np.ndarray:
    """[batch, n] bool masks with frame 0 and n-1 always set."""
    masks = np.zeros((batch, n), dtype=bool)
    for b in range(batch):
        if rng.random() < 0.5:
            k = int(rng.integers(2, max(3, min(31, n))))
            masks[b, ::k] = True
        else:
            m = int(rng.integers(0, max(1, n // 4) + 1))
            masks[b, rng.choice(np.arange(1, n - 1), size=min(m, n - 2), replace=False)] = True
        masks[b, 0] = masks[b, -1] = True
    return masks


def regular_key_masks(rng: np.random.Generator, batch: int, n: int, max_spacing: int = 30) -> np.ndarray:
    """[batch, n] masks with keys every k frames (k uniform in 2..max_spacing) plus the last frame:
    the case of a cache kept every K frames."""
    masks = np.zeros((batch, n), dtype=bool)
    for b in range(batch):
        masks[b, ::int(rng.integers(2, max(3, min(max_spacing, n - 1) + 1)))] = True
        masks[b, -1] = True
    return masks


class InbetweenBatcher:
    """Frame indices -> model inputs and targets for the in-betweening task."""

    def __init__(self, ae_batcher, layout, normalizer, seed: int, base: str = "slerp"):
        self.ae, self.layout, self.normalizer, self.base = ae_batcher, layout, normalizer, base
        self.rng = np.random.default_rng(seed + 7)

    def __call__(self, idx, gen=None, masks=None, frames=None):
        rot, pos = self.ae.raw(idx, gen, frames)
        if masks is None:
            masks = sample_key_masks(self.rng, rot.shape[0], rot.shape[1])
        mask = torch.from_numpy(masks)
        keys_n, base_n, origin = inbetween_inputs(rot, pos, mask, self.layout, self.normalizer, self.base)
        target, _ = to_features(rot, pos, self.layout, origin)
        return (keys_n, base_n, mask), self.normalizer(target), origin, pos[:, :1], rot
