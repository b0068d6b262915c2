"""Differentiable pose losses: features in normalised space and FK global positions."""
from __future__ import annotations

import torch

from backend.maths import quat_torch
from backend.motion.features import FeatureLayout
from backend.motion.inbetween.contacts import CAPTURE, foot_joints

from .features import split_features


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
        mats[j] = quat_torch.matrix_from_6d(r6[..., i, :])
    lpos = [template[..., j, :].expand(shape + (3,)) for j in range(j_count)]
    for i, j in enumerate(layout.position_joints):
        lpos[j] = pos_joint[..., i, :]
    gr, gp = [mats[0]], [lpos[0]]
    for j in range(1, j_count):
        p = int(parents[j])
        gp.append(gp[p] + (gr[p] @ lpos[j][..., None])[..., 0])
        gr.append(gr[p] @ mats[j])
    return torch.stack(gp, -2)


def window_errors(preds, target_n, normalizer, layout, origin, template, parents, fk_weight, frames=None,
                  pos_scale=10.0, legs=None):
    """For each of ``preds`` (normalised features), per-window errors [B] over the frames where
    ``frames`` [B, N] is True (default: all): a list of (feature MSE in normalised space, global-position
    MSE in units of pos_scale cm, the planted feet's step error (``foot_step_error``) where ``legs`` are
    given, else None).  The target's global positions are computed once for all of them."""
    w = torch.ones(target_n.shape[:2], dtype=target_n.dtype) if frames is None else frames.to(target_n.dtype)
    count = w.sum(1).clamp_min(1)
    positions = fk_weight > 0 or bool(legs)
    if positions:
        tp, tr = split_features(normalizer.inverse(target_n), layout, origin)
        gt = fk_positions(tr, tp, template, layout, parents)
    out = []
    for pred_n in preds:
        feat = (((pred_n - target_n) ** 2).mean(-1) * w).sum(1) / count
        fk, foot = torch.zeros_like(feat), None
        if positions:
            pp, pr = split_features(normalizer.inverse(pred_n), layout, origin)
            gp = fk_positions(pr, pp, template, layout, parents)
            if fk_weight > 0:
                fk = ((((gp - gt) / pos_scale) ** 2).mean((-1, -2)) * w).sum(1) / count
            if legs:
                foot = foot_step_error(gp, gt, legs, template, pos_scale)
        out.append((feat, fk, foot))
    return out


def relative_pose_loss(pred_n, base_n, target_n, frames, normalizer, layout, origin, template, parents,
                       fk_weight, pos_scale=10.0):
    """Each window's error on its in-between ``frames`` divided by the interpolation base's error there.

    As the cloth in-betweener's ratio loss: with an absolute loss the long gaps dominate and the model
    is free to make short gaps (and motion it does not know) worse than the curves it starts from;
    here a window where the base is already close costs as much to spoil as a long gap.  The floor
    (1 % of the batch's mean base error) keeps near-perfect bases from dividing by zero.
    """
    (f, k, _), (bf, bk, _) = window_errors([pred_n, base_n], target_n, normalizer, layout, origin, template, parents,
                                     fk_weight, frames, pos_scale)
    base = (bf + fk_weight * bk).detach()
    floor = 0.01 * base.mean() + 1e-8
    ratio = (f + fk_weight * k) / (base + floor)
    return ratio.mean(), {"feat": f.mean().detach(), "fk": k.mean().detach(), "ratio": ratio.mean().detach()}


def planted_mask(gpos: torch.Tensor, legs, template: torch.Tensor, frame_time: float = 1 / 30) -> torch.Tensor:
    """[B, F - 1, N] bool: frame steps in which the capture ``gpos [B, F, J, 3]`` plants foot joint n (ankle,
    toes of ``legs``) at both ends, low and still as ``backend.motion.inbetween.contacts.CAPTURE`` judges it (+Y up)."""
    joints = foot_joints(legs)
    length = torch.stack([template[..., leg.knee, :].norm(dim=-1) + template[..., leg.ankle, :].norm(dim=-1)
                          for leg in legs], -1).amax(-1).reshape(len(gpos), 1, 1)
    g = gpos[:, :, joints]
    h = g[..., 1]
    low = h - h.amin(-1, keepdim=True) < CAPTURE.near_ground * length
    step = (g[:, 1:] - g[:, :-1]).norm(dim=-1) / frame_time
    still = step < CAPTURE.slow * length
    return low[:, 1:] & low[:, :-1] & still


def foot_step_error(pred_pos, true_pos, legs, template, pos_scale=10.0) -> torch.Tensor:
    """Per window [B]: mean squared difference of the fill's and the capture's foot steps (frame to frame, in
    units of pos_scale cm) over the steps in which the capture plants that foot (0 where it plants none)."""
    joints = foot_joints(legs)
    mask = planted_mask(true_pos.detach(), legs, template).to(pred_pos.dtype)
    d = torch.diff(pred_pos[:, :, joints], dim=1) - torch.diff(true_pos[:, :, joints], dim=1)
    err = ((d / pos_scale) ** 2).sum(-1)
    return (err * mask).sum((1, 2)) / mask.sum((1, 2)).clamp_min(1)


def pose_loss(pred_n, target_n, normalizer, layout, origin, template, parents, fk_weight, pos_scale=10.0,
              legs=None, foot_weight=0.0):
    """MSE in normalised feature space + fk_weight * MSE of global positions in units of pos_scale cm
    (every window has the same frames, so the mean of the windows' errors is the MSE over the batch)
    + foot_weight * the planted feet's step error (``foot_step_error``; ``legs``: backend.motion.inbetween.contacts.find_legs)."""
    feet = legs if foot_weight > 0 and legs else None
    ((feat, fk, foot),) = window_errors([pred_n], target_n, normalizer, layout, origin, template, parents,
                                        fk_weight, None, pos_scale, feet)
    loss = feat.mean()
    parts = {"feat": loss.detach()}
    if fk_weight > 0:
        parts["fk"] = fk.mean().detach()
        loss = loss + fk_weight * fk.mean()
    if feet:
        parts["foot"] = foot.mean().detach()
        loss = loss + foot_weight * foot.mean()
    return loss, parts
