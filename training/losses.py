"""Differentiable pose losses: features in normalised space and FK global positions."""
from __future__ import annotations

import torch

from backend import quat_torch as QT
from backend.features import FeatureLayout, split_features


def fk_positions(r6: torch.Tensor, pos_joint: torch.Tensor, template: torch.Tensor,
                 layout: FeatureLayout, parents) -> torch.Tensor:
    """Global joint positions [..., F, J, 3] from 6D rotations and modelled positions.

    Rotation matrices rather than quaternions: Gram-Schmidt is smooth, where the
    matrix-to-quaternion branch selection is not.
    """
    j_count = len(parents)
    shape = r6.shape[:-2]
    eye = torch.eye(3, dtype=r6.dtype, device=r6.device)
    mats = [eye.expand(shape + (3, 3))] * j_count
    for i, j in enumerate(layout.rotation_joints):
        mats[j] = QT.matrix_from_6d(r6[..., i, :])
    lpos = [template[..., j, :].expand(shape + (3,)) for j in range(j_count)]
    for i, j in enumerate(layout.position_joints):
        lpos[j] = pos_joint[..., i, :]
    gr, gp = [mats[0]], [lpos[0]]
    for j in range(1, j_count):
        p = int(parents[j])
        gp.append(gp[p] + (gr[p] @ lpos[j][..., None])[..., 0])
        gr.append(gr[p] @ mats[j])
    return torch.stack(gp, -2)


def pose_loss(pred_n, target_n, normalizer, layout, origin, template, parents, fk_weight, pos_scale=10.0):
    """MSE in normalised feature space + fk_weight * MSE of global positions in units of pos_scale cm."""
    loss = torch.mean((pred_n - target_n) ** 2)
    parts = {"feat": loss.detach()}
    if fk_weight > 0:
        pp, pr = split_features(normalizer.inverse(pred_n), layout, origin)
        tp, tr = split_features(normalizer.inverse(target_n), layout, origin)
        gp = fk_positions(pr, pp, template, layout, parents)
        gt = fk_positions(tr, tp, template, layout, parents)
        fk = torch.mean(((gp - gt) / pos_scale) ** 2)
        parts["fk"] = fk.detach()
        loss = loss + fk_weight * fk
    return loss, parts
