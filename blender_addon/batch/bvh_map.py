""".bvh files of other skeletons (CMU, Mixamo exports, other capture systems) through a bone map.

The file is read as a rig by ``backend.humanoid.bvh_rig`` (the conversion training and the add-on use);
joints the model has no use for keep the file's motion, in-between keys by SLERP (rotations) and
linear interpolation (positions).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import bridge
from ..core import rig_math
from ..humanoid import bone_map
from .errors import JobError

_RIG = bridge.numpy_module("humanoid.bvh_rig")
_Q = bridge.numpy_module("maths.quat_np")


def conversion(clip, info, given: dict | None, known=None):
    """The file's skeleton -> the model's (``bvh_rig.Found``: the conversion and the map), through ``given``
    (joint -> joint of the file) or detection (``backend.humanoid.bvh_rig.conversion``: the same code as
    training's and the add-on's); ``known``: the frames the motion is known on (the keys; None: all)."""
    try:
        return _RIG.conversion(clip, info.names, info.parents, info.offsets, info.position_joints, given,
                               known=known)
    except bone_map.BoneMapError as e:
        how = "the given bone map" if given else f"detected as {_preset(clip, info)}"
        raise JobError(f"the skeleton does not fit the model's ({info.path.name}; {how}): {e}") from None


def record(found, info) -> dict:
    """What a report says of the map: model joint -> the file's joint, and how each was found."""
    rt, bm = found.retarget, found.bone_map
    return {"bone_map": {info.names[j]: rt.bone_of(j) for j in rt.mapped},
            "found_by": {info.names[j]: bm.reasons.get(info.names[j], "given") for j in rt.mapped}}


def _preset(clip, info) -> str:
    return bone_map.detect(list(info.names), list(info.parents), _RIG.rig_of(clip.skeleton)[0], _RIG.posed(clip)).preset


def between_keys(rot: np.ndarray, pos: np.ndarray, keys: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The file's motion with every frame strictly between keys replaced by SLERP / linear interpolation."""
    rot, pos = rot.copy(), pos.copy()
    for a, b in zip(keys, keys[1:], strict=False):
        if b - a < 2:
            continue
        t = (np.arange(a + 1, b) - a) / (b - a)
        rot[a + 1:b] = rig_math.slerp(rot[a][None], rot[b][None], t[:, None])
        pos[a + 1:b] = pos[a] + t[:, None, None] * (pos[b] - pos[a])
    return rot, pos


def inbetween(bridge, settings, clip, info, keys: list[int], given: dict | None, contacts: bool = True):
    """-> (rotations, positions) of the file's joints on frames ``keys[0]..keys[-1]``, the model's motion
    on the mapped joints, the interpolated file motion on the others (keys exactly as in the file), and
    the report's record of the map."""
    found = conversion(clip, info, given, known=keys)
    rt = found.retarget
    k0, k1 = keys[0], keys[-1]
    rot, pos = between_keys(clip.rotations[k0:k1 + 1], clip.positions[k0:k1 + 1], [k - k0 for k in keys])
    local = [k - k0 for k in keys]
    m_rot, m_pos = rt.to_model(*_RIG.file_channels(replace(clip, rotations=rot[local], positions=pos[local],
                                                           meta={}), rt))
    out_rot, out_pos = bridge.inbetween(settings, rt.offsets, local, m_rot, m_pos, clip.frame_time, contacts)
    if out_rot.shape != (k1 - k0 + 1, len(info.names), 4) or not np.isfinite(out_rot).all():
        raise JobError("the backend returned an unusable result (wrong size or NaN)")
    return (*_RIG.from_model(rt, clip.skeleton, out_rot, out_pos, rot, pos), record(found, info))


def on_model(clip, info, given: dict | None, skeleton_of):
    """(the clip on the model's skeleton, its conversion, the report's record) for encode and edit of a file
    of another skeleton; ``skeleton_of(names, parents, offsets)`` makes the backend's Skeleton (the rig's
    proportions as offsets)."""
    found = conversion(clip, info, given)
    rt = found.retarget
    rot, pos = rt.to_model(*_RIG.file_channels(clip, rt))
    return replace(clip, skeleton=skeleton_of(info.names, info.parents, rt.offsets), rotations=rot,
                   positions=pos, meta={}), rt, record(found, info)


def back_on_file(out, clip, rt, timebase):
    """An edited clip on the model's skeleton (``out``, any frame count) back on the file's skeleton: the file's
    own motion spread over the same frames (SLERP) for the joints the model does not carry."""
    if out.num_frames == clip.num_frames:
        file_rot, file_pos = clip.rotations, clip.positions
    else:
        file_rot, file_pos = timebase.resample_uniform(_Q.fix_hemisphere(clip.rotations),
                                                       clip.positions, out.num_frames)
    rot, pos = _RIG.from_model(rt, clip.skeleton, out.rotations, out.positions, file_rot, file_pos)
    return replace(out, skeleton=clip.skeleton, rotations=rot, positions=pos, meta={})
