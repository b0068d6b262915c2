"""Evaluation metrics and the LERP/SLERP baseline: pure numpy functions in float64.

Conventions: quaternions are (w, x, y, z) ``[..., J, 4]``, positions ``[..., J, 3]`` in the
data's unit (centimetres for the Bandai-Namco data), angles in degrees.
"""
from __future__ import annotations

import numpy as np

from backend.maths import quat_np


def _f64(*xs):
    return [np.asarray(x, dtype=np.float64) for x in xs]


def rotation_errors_deg(pred_rot, true_rot) -> tuple[float, float]:
    """Local joint-rotation error over every frame and joint given.

    Returns (mean geodesic angle in degrees, mean squared geodesic angle in deg^2); the
    second is the "MSE between joint angles [deg]" style of the paper's Table 4.
    Sign-invariant (q and -q are the same rotation).
    """
    pred_rot, true_rot = _f64(pred_rot, true_rot)
    ang = np.rad2deg(quat_np.angle_between(pred_rot, true_rot))
    return float(ang.mean()), float(np.square(ang).mean())


def mpjpe_cm(pred_gpos, true_gpos) -> float:
    """Mean per-joint position error: mean Euclidean distance of global joint positions
    ``[..., J, 3]`` over all frames and joints, in the data's unit (cm here)."""
    pred_gpos, true_gpos = _f64(pred_gpos, true_gpos)
    return float(np.linalg.norm(pred_gpos - true_gpos, axis=-1).mean())


def align_signs(pred_q, true_q):
    """Flip each predicted quaternion into the ground truth's hemisphere (q ~ -q)."""
    pred_q, true_q = _f64(pred_q, true_q)
    return np.where(np.sum(pred_q * true_q, -1, keepdims=True) < 0, -pred_q, pred_q)


def l2q(pred_grot, true_grot) -> float:
    """L2Q (unitless): per frame, the L2 norm of the difference of all global joint
    quaternions ``[..., J, 4]`` stacked in one vector, averaged over frames (all leading
    axes).  Each predicted quaternion is sign-aligned to the ground truth first."""
    pred_grot, true_grot = _f64(pred_grot, true_grot)
    d = align_signs(pred_grot, true_grot) - true_grot
    return float(np.sqrt(np.sum(np.square(d), axis=(-2, -1))).mean())


def npss(pred, true) -> float:
    """Normalised Power Spectrum Similarity (Gopalakrishnan et al. 2019), unitless, >= 0.

    ``pred``/``true`` are ``[B, T, ...]`` (sequences, time, features, e.g. joints x 4 global
    quaternion components); trailing axes are flattened into features.  Same computation
    as ``fast_npss(gt_seq, pred_seq)`` in ubisoft/ubisoft-laforge-animation-dataset,
    lafan1/benchmarks.py: real part of the FFT over time per feature, squared, normalised
    per feature by its total power, cumulative sums over frequency, EMD = L1 of the
    difference of the cumsums, averaged over (sequence, feature) weighted by the ground
    truth's total power.  Quaternions should be made continuous in time and the prediction
    sign-aligned to the ground truth beforehand (the benchmark's data has no sign flips).

    One deviation, for features that are identically zero (e.g. x, y, z of a joint that
    never rotates): the benchmark divides by a zero total power and returns NaN; such
    features have weight 0 here, and a zero-power prediction has a zero spectrum.
    """
    pred, true = _f64(pred, true)
    pred = pred.reshape(pred.shape[0], pred.shape[1], -1)
    true = true.reshape(true.shape[0], true.shape[1], -1)
    gt_power = np.square(np.real(np.fft.fft(true, axis=1)))
    pr_power = np.square(np.real(np.fft.fft(pred, axis=1)))
    gt_total, pr_total = gt_power.sum(1), pr_power.sum(1)  # [B, D]
    keep = gt_total > 0
    if not keep.any():
        return 0.0
    gt_cdf = np.cumsum(gt_power / np.where(gt_total > 0, gt_total, 1.0)[:, None], axis=1)
    pr_cdf = np.cumsum(pr_power / np.where(pr_total > 0, pr_total, 1.0)[:, None], axis=1)
    emd = np.abs(pr_cdf - gt_cdf).sum(1)  # [B, D]
    return float(np.average(emd[keep], weights=gt_total[keep]))


def protocol_keys(length: int = 61, k: int = 15) -> np.ndarray:
    """Key frame indices of the protocol: 0, k, 2k, ... plus the last frame (length - 1)."""
    if k < 1 or length < 1:
        raise ValueError(f"key spacing {k} and length {length} must be positive")
    return np.unique(np.append(np.arange(0, length, k), length - 1))


def lerp_slerp_inbetween(rot, pos, key_idx):
    """Baseline in-betweening of windows ``rot [W, F, J, 4]``, ``pos [W, F, J, 3]`` (local).

    Between consecutive keys, every joint's local position is linearly interpolated and
    its local rotation spherically interpolated; key frames are copied unchanged and
    frames outside the first/last key hold that key.  Non-key input frames are not read.
    Returns float64 (rot, pos) of the input shapes.
    """
    rot, pos = _f64(rot, pos)
    keys = np.asarray(key_idx, dtype=np.int64)
    frames = np.arange(rot.shape[-3])
    if len(keys) == 1:
        return np.repeat(rot[..., keys, :, :], len(frames), -3), np.repeat(pos[..., keys, :, :], len(frames), -3)
    seg = np.clip(np.searchsorted(keys, frames, side="right") - 1, 0, len(keys) - 2)
    a, b = keys[seg], keys[seg + 1]
    t = np.clip((frames - a) / (b - a), 0.0, 1.0)[:, None]  # [F, 1] broadcasts over joints
    out_pos = pos[..., a, :, :] + t[..., None] * (pos[..., b, :, :] - pos[..., a, :, :])
    out_rot = quat_np.slerp(rot[..., a, :, :], rot[..., b, :, :], t)
    # Exact keys: slerp renormalises and may flip the sign at t = 1.
    out_rot[..., keys, :, :], out_pos[..., keys, :, :] = rot[..., keys, :, :], pos[..., keys, :, :]
    return out_rot, out_pos
