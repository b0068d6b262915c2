"""Poses <-> model features in torch, for training (batched, on the GPU, with autograd).

A frame's feature vector is ``[positions of the moving joints (re-centred), 6D rotation of every rotating
joint]``, the root re-centred on the sequence's mean horizontal position (that origin travels beside the
control points).  Two stay: inference runs the numpy twins in ``backend.motion.features_np`` (no torch);
tests/test_onnx.py checks they agree.
"""
from __future__ import annotations

import torch

from backend.maths import quat_torch
from backend.motion.features_np import FeatureLayout


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
