"""Engine.inbetween: keys in, every frame out, keys kept exactly.

A clip is cut into segments that start and end on keys (at most one training window
long); the segments are batched by length, encoded from their keys only, decoded over
the SLERP/LERP base, and joined at their shared keys, which are the input's own poses.
"""
from __future__ import annotations

import numpy as np
import torch

from .features import from_features
from .keyframes import inbetween_inputs, segments_on_keys, validate_keys
from .skeleton import Clip


def key_only(clip: Clip, keys: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Copies of the clip's arrays in which only key frames hold data (the rest is never read)."""
    rot = np.zeros_like(clip.rotations)
    rot[..., 0] = 1.0
    pos = np.zeros_like(clip.positions)
    rot[keys], pos[keys] = clip.rotations[keys], clip.positions[keys]
    return rot, pos


@torch.inference_mode()
def inbetween(engine, clips: list[Clip], keys_list: list[list[int]]):
    """-> list of (clip, controls); raises ValueError naming the clip for bad keys."""
    from .engine import Controls
    ck, layout, dev = engine.ckpt, engine.layout, engine.device
    prepared, jobs = [], []
    for ci, (clip, keys) in enumerate(zip(clips, keys_list)):
        try:
            keys = validate_keys(keys, clip.num_frames, ck.window - 1)
        except ValueError as e:
            raise ValueError(f"{clip.name}: {e}") from None
        engine.check_clip(clip, keys)
        rot, pos = key_only(clip, keys)
        segs = segments_on_keys(keys, ck.window)
        prepared.append((clip, keys, rot, pos, segs))
        jobs += [(ci, si, a, b) for si, (a, b) in enumerate(segs)]
    results = {}
    groups = {}
    for j in jobs:
        groups.setdefault(j[3] - j[2] + 1, []).append(j)
    for n, group in groups.items():
        rot = torch.stack([torch.from_numpy(prepared[ci][2][a:b + 1]) for ci, _, a, b in group]).float().to(dev)
        pos = torch.stack([torch.from_numpy(prepared[ci][3][a:b + 1]) for ci, _, a, b in group]).float().to(dev)
        mask = torch.zeros(len(group), n, dtype=torch.bool, device=dev)
        for g, (ci, _, a, b) in enumerate(group):
            mask[g, [k - a for k in prepared[ci][1] if a <= k <= b]] = True
        keys_n, base_n, origin = inbetween_inputs(rot, pos, mask, layout, engine.norm)
        ctrl = engine.model.encode(keys_n, mask)
        feat = engine.norm.inverse(engine.model.decode(ctrl, base_n, mask))
        for g, (ci, si, a, b) in enumerate(group):
            results[ci, si] = (feat[g], origin[g], ctrl[g].cpu().numpy())
    out = []
    for ci, (clip, keys, rot_k, pos_k, segs) in enumerate(prepared):
        template = torch.as_tensor(clip.positions[keys[0]], dtype=torch.float32)
        rot = np.empty_like(clip.rotations)
        pos = np.empty_like(clip.positions)
        for si, (a, b) in enumerate(segs):
            feat, origin, _ = results[ci, si]
            r, p = from_features(feat, layout, origin, template.to(feat.device), clip.skeleton.num_joints)
            rot[a:b + 1], pos[a:b + 1] = r.cpu().numpy(), p.cpu().numpy()
        rot[keys], pos[keys] = clip.rotations[keys], clip.positions[keys]  # keys exactly as given
        from . import quat_np as Q
        rot = _align_to_keys(Q.fix_hemisphere(rot), clip.rotations, keys)
        meta = {}
        src = clip.meta.get("source_channels")
        if src is not None:
            ref = np.full_like(src, np.nan)
            ref[keys] = src[keys]
            meta["source_channels"] = ref  # Euler hints: keys as in the file, the rest continuous
        result = Clip(clip.skeleton, rot, pos, clip.frame_time, clip.name, meta)
        controls = Controls(np.stack([results[ci, si][2] for si in range(len(segs))]),
                            np.stack([results[ci, si][1].cpu().numpy() for si in range(len(segs))]),
                            segs, template.numpy().astype(np.float64), clip.frame_time, clip.name,
                            keys=list(keys), key_rotations=clip.rotations[keys].copy(),
                            key_positions=clip.positions[keys].copy())
        out.append((result, controls))
    return out


def _align_to_keys(rot, key_rot, keys):
    """Hemisphere fixing may flip a key's sign; put every key back exactly as it was given."""
    rot = rot.copy()
    rot[keys] = key_rot[keys]
    return rot
