""".bvh files of other skeletons (CMU, Mixamo exports, other capture systems) through a bone map.

A BVH skeleton is a rig whose rest frames are all aligned with the file's axes: as Blender's BVH
importer builds it, every bone's rest orientation is the axis change ``C`` (Y up -> Z up), its head
the joint's rest position, its rotation channels the file's local rotations and its location the
position channel minus the offset.  So the armature's conversion (``core.retarget``: chains, rest-pose
differences, proportions) serves files too; joints the model has no use for keep the file's motion,
in-between keys by SLERP (rotations) and linear interpolation (positions).
"""
from __future__ import annotations

import numpy as np

from ..core import bone_map as BM
from ..core import rest_pose, retarget
from ..core import rig_math as R
from .errors import JobError


def rig_of(skeleton) -> tuple[dict, dict]:
    """(geometry for detection, ``{joint: RigBone}``) of a BVH skeleton, in Blender's axes."""
    names, parents = list(skeleton.names), [int(p) for p in skeleton.parents]
    offsets = np.asarray(skeleton.offsets, dtype=np.float64)
    x = np.zeros_like(offsets)
    for j, p in enumerate(parents):
        x[j] = offsets[j] + (x[p] if p >= 0 else 0.0)
    heads = R.qrotate(R.BVH_TO_BLENDER, x)
    rot = R.q_to_matrix(R.BVH_TO_BLENDER)
    geometry, rig = {}, {}
    for j, n in enumerate(names):
        kids = [k for k, p in enumerate(parents) if p == j and np.linalg.norm(heads[k] - heads[j]) > 1e-9]
        tail = heads[kids[0]] if kids else heads[j] + np.array([0.0, 0.0, 1.0])
        parent = names[parents[j]] if parents[j] >= 0 else None
        geometry[n] = (parent, tuple(heads[j]), tuple(tail))
        m = np.eye(4)
        m[:3, :3], m[:3, 3] = rot, heads[j]
        rig[n] = retarget.RigBone(parent, m, True)
    return geometry, rig


def conversion(clip, info, given: dict | None) -> retarget.Retarget:
    """The file's skeleton -> the model's, through ``given`` (joint -> joint of the file) or detection."""
    names, parents = list(info.names), list(info.parents)
    geometry, rig = rig_of(clip.skeleton)
    bm = BM.detect(names, parents, geometry)
    if given:
        bm = BM.BoneMap({**bm.bones, **given}, "Custom")
    try:
        joint_bones = BM.check(names, parents, {b: g[0] for b, g in geometry.items()}, bm.bones,
                               "map them in a bone map file, --bone-map FILE.json (export one from the Bone Map panel)")
        return retarget.build(names, parents, info.offsets, joint_bones, rig, info.position_joints)
    except (BM.BoneMapError, rest_pose.RestPoseError) as e:
        how = "the given bone map" if given else f"detected as {bm.preset}"
        raise JobError(f"the skeleton does not fit the model's ({info.path.name}; {how}): {e}") from None


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
    cols = [index[b] for b in rt.bones]
    offsets = np.asarray(clip.skeleton.offsets, dtype=np.float64)
    rot, pos = between_keys(clip.rotations[k0:k1 + 1], clip.positions[k0:k1 + 1], [k - k0 for k in keys])
    basis, loc = rot[:, cols], pos[:, cols] - offsets[cols]
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
