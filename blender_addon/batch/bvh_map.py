""".bvh files of other skeletons (CMU, Mixamo exports, other capture systems) through a bone map.

The file is read as a rig by ``backend.humanoid.bvh_rig`` (the conversion training and the add-on use);
joints the model has no use for keep the file's motion, in-between keys by SLERP (rotations) and
linear interpolation (positions).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import bridge
from ..core import bone_map as BM
from ..core import rest_pose
from ..core import rig_math as R
from .errors import JobError

_RIG = bridge.numpy_module("humanoid.bvh_rig")


def conversion(clip, info, given: dict | None):
    """The file's skeleton -> the model's, through ``given`` (joint -> joint of the file) or detection
    (``backend.humanoid.bvh_rig.conversion``: the same code as training's and the add-on's)."""
    try:
        return _RIG.conversion(clip, info.names, info.parents, info.offsets, info.position_joints,
                               given).retarget
    except (BM.BoneMapError, rest_pose.RestPoseError) as e:
        how = "the given bone map" if given else f"detected as {_preset(clip, info)}"
        raise JobError(f"the skeleton does not fit the model's ({info.path.name}; {how}): {e}") from None


def _preset(clip, info) -> str:
    return BM.detect(list(info.names), list(info.parents), _RIG.rig_of(clip.skeleton)[0]).preset


def between_keys(rot: np.ndarray, pos: np.ndarray, keys: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The file's motion with every frame strictly between keys replaced by SLERP / linear interpolation."""
    rot, pos = rot.copy(), pos.copy()
    for a, b in zip(keys, keys[1:]):
        if b - a < 2:
            continue
        t = (np.arange(a + 1, b) - a) / (b - a)
        rot[a + 1:b] = R.slerp(rot[a][None], rot[b][None], t[:, None])
        pos[a + 1:b] = pos[a] + t[:, None, None] * (pos[b] - pos[a])
    return rot, pos


def inbetween(bridge, settings, clip, info, keys: list[int], given: dict | None):
    """-> (rotations, positions) of the file's joints on frames ``keys[0]..keys[-1]``, the model's motion
    on the mapped joints, the interpolated file motion on the others (keys exactly as in the file)."""
    rt = conversion(clip, info, given)
    k0, k1 = keys[0], keys[-1]
    index = {n: i for i, n in enumerate(clip.skeleton.names)}
    offsets = np.asarray(clip.skeleton.offsets, dtype=np.float64)
    rot, pos = between_keys(clip.rotations[k0:k1 + 1], clip.positions[k0:k1 + 1], [k - k0 for k in keys])
    basis, loc = _RIG.file_channels(replace(clip, rotations=rot, positions=pos, meta={}), rt)
    local = [k - k0 for k in keys]
    m_rot, m_pos = rt.to_model(basis[local], loc[local])
    out_rot, out_pos = bridge.inbetween(settings, rt.offsets, local, m_rot, m_pos, clip.frame_time)
    if out_rot.shape != (k1 - k0 + 1, len(info.names), 4) or not np.isfinite(out_rot).all():
        raise JobError("the backend returned an unusable result (wrong size or NaN)")
    back_b, back_l = rt.to_rig(out_rot, out_pos, basis, loc)
    for j in rt.mapped:
        c = index[rt.bone_of(j)]
        rot[:, c] = back_b[:, j]
        if j in rt.position_joints:
            pos[:, c] = back_l[:, j] + offsets[c]
    return rot, pos
