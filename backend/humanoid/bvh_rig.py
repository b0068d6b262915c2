"""A BVH skeleton as a rig, and a whole clip of any humanoid converted to the model's skeleton.

A BVH skeleton is a rig whose rest frames are all aligned with the file's axes: as Blender's BVH
importer builds it, every bone's rest orientation is the axis change ``C`` (Y up -> Z up), its head
the joint's rest position, its rotation channels the file's local rotations and its location the
position channel minus the offset.  So the armature's conversion (``retarget``: chains, rest-pose
differences, proportions) serves files too, and a file gets the answer its import into Blender gets.

``to_model`` is the one call for every path that reads motion of another skeleton: the batch's
``.bvh`` commands and training's data pipeline (a CMU clip, say) call it; the add-on reaches the same
``bone_map``/``retarget`` through the bridge.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..maths import quat_np
from ..motion.skeleton import Clip, Skeleton
from . import axes, bone_map, hinges, rest_pose, retarget

FILE_HINT = "map them in a bone map file, --bone-map FILE.json (export one from the Bone Map panel)"


def rig_of(skeleton: Skeleton) -> tuple[dict, dict]:
    """(geometry for detection ``{bone: (parent, head, tail)}``, ``{bone: RigBone}``) of a BVH skeleton,
    in Blender's axes."""
    names, parents = list(skeleton.names), [int(p) for p in skeleton.parents]
    offsets = np.asarray(skeleton.offsets, dtype=np.float64)
    x = np.zeros_like(offsets)
    for j, p in enumerate(parents):
        x[j] = offsets[j] + (x[p] if p >= 0 else 0.0)
    heads = axes.qrotate(axes.BVH_TO_BLENDER, x)
    rot = axes.q_to_matrix(axes.BVH_TO_BLENDER)
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


@dataclass(frozen=True)
class Found:
    """A file's skeleton against the model's: the conversion and the map it was built from."""
    retarget: retarget.Retarget
    bone_map: bone_map.BoneMap


def conversion(clip: Clip, names, parents, offsets, position_joints=(1,), given: dict | None = None,
               hint: str = FILE_HINT, known=None) -> Found:
    """The file's skeleton -> the model's (``names``, ``parents``, rest ``offsets``), through ``given``
    (model joint -> joint of the file) or detection, stood up when the file's world is another axis up,
    its knees and elbows turned onto the model's axes as its frames ``known`` (None: all; the keys when
    in-betweening, as the add-on reads a rig's keyed poses) show them (``retarget.Retarget.hinged``).
    Raises ``bone_map.BoneMapError`` naming the bones and the fix (``hint``: where a map is given)."""
    names, parents = list(names), [int(p) for p in parents]
    geometry, rig = rig_of(clip.skeleton)
    moving = posed(clip)
    bm = bone_map.detect(names, parents, geometry, moving)
    if given:
        bm = bone_map.BoneMap({**bm.bones, **given}, "Custom",
                        reasons={**bm.reasons, **{j: "given" for j, b in given.items() if b}})
    joint_bones = bone_map.check(names, parents, {b: g[0] for b, g in geometry.items()}, bm.bones, hint)
    rt = retarget.build(names, parents, np.asarray(offsets, dtype=np.float64), joint_bones, rig,
                        tuple(position_joints))
    frames = np.arange(clip.num_frames) if known is None else np.unique(np.asarray(known, dtype=int))
    frames = frames[hinges.pick(len(frames))]
    rt = rt.hinged(names, *(x[frames] for x in file_channels(clip, rt)))
    turn = up_turn(names, joint_bones, {b: g[1] for b, g in geometry.items()}, moving)
    return Found(rt if turn is None else rt.upright(turn), bm)


def posed(clip: Clip, frames: int = 8) -> dict:
    """``{joint: heads [F, 3]}`` on ``frames`` frames spread over the clip, in Blender's axes (as ``rig_of``)."""
    at = np.unique(np.linspace(0, clip.num_frames - 1, min(clip.num_frames, frames)).astype(int))
    _, x = quat_np.fk(clip.rotations[at], clip.positions[at], clip.skeleton.parents)
    x = axes.qrotate(np.broadcast_to(axes.BVH_TO_BLENDER, x.shape[:-1] + (4,)), x)
    return {n: x[:, j] for j, n in enumerate(clip.skeleton.names)}


UP = np.array([0.0, 1.0, 0.0])


def up_turn(names, joint_bones, rest: dict, posed: dict) -> np.ndarray | None:
    """The turn that stands a capture on the model's Y up when its world is another axis up (Vicon's Z), or
    None: both its rest pose and its motion have the head over the feet along that axis.  ``rest``:
    ``{bone: head}``, ``posed``: ``{bone: heads [F, 3]}`` (Blender's axes, as ``bone_map.detect`` reads them).
    A rest lying down under upright motion is the rest-pose difference's business; motion lying or
    crawling over a standing rest is motion, and stays."""
    axis = rest_axis(names, joint_bones, rest)
    return None if axis is None else motion_turn(names, joint_bones, axis, posed)


def rest_axis(names, joint_bones, rest: dict) -> np.ndarray | None:
    """``up_turn``'s half that reads the rest pose alone (kept with a rig's conversion): the axis its head
    stands over the feet along, or None when that is Y or no axis within 45 degrees (no turn, whatever
    the motion)."""
    if not all(n in _ends(names, joint_bones) for n in ("Head", "Foot_L", "Foot_R")):
        return None
    rest_up = _up(names, joint_bones, rest)
    k = int(np.argmax(np.abs(rest_up)))
    axis = np.zeros(3)
    axis[k] = np.sign(rest_up[k])
    return None if k == 1 or _angle(rest_up, axis) > 45.0 else axis


def motion_turn(names, joint_bones, axis: np.ndarray, posed: dict) -> np.ndarray | None:
    """``up_turn``'s half that reads the motion, for a rest standing along ``axis`` (``rest_axis``)."""
    return None if _angle(_up(names, joint_bones, posed), axis) > 45.0 else rest_pose.swing(axis, UP)


def _ends(names, joint_bones) -> dict:
    return {n: b for n, b in zip(names, joint_bones, strict=True) if b}


def _up(names, joint_bones, x) -> np.ndarray:
    """Head over the feet, BVH axes (``x``: ``{bone: head(s)}``)."""
    at = _ends(names, joint_bones)
    v = np.asarray(x[at["Head"]], dtype=np.float64) - (np.asarray(x[at["Foot_L"]]) + np.asarray(x[at["Foot_R"]])) / 2
    return axes.qrotate(axes.qconj(axes.BVH_TO_BLENDER), np.reshape(v, (-1, 3)).mean(0))


def _angle(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    c = np.dot(a, b) / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-12)
    return float(np.degrees(np.arccos(np.clip(c, -1.0, 1.0))))


def file_channels(clip: Clip, rt: retarget.Retarget) -> tuple[np.ndarray, np.ndarray]:
    """The clip's channels of the bones the conversion reads: (rotations ``[F, B, 4]``, locations
    ``[F, B, 3]``, the position channel minus the rest offset, as Blender's importer keys it)."""
    index = {n: i for i, n in enumerate(clip.skeleton.names)}
    cols = [index[b] for b in rt.bones]
    offsets = np.asarray(clip.skeleton.offsets, dtype=np.float64)
    return clip.rotations[:, cols], clip.positions[:, cols] - offsets[cols]


def from_model(rt: retarget.Retarget, skeleton: Skeleton, rot: np.ndarray, pos: np.ndarray, file_rot: np.ndarray,
               file_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The model's motion (``rot``, ``pos`` ``[F, J, ...]``) back on the file's joints: the mapped joints'
    channels from the model, every other joint's (and the bones in between, which the way back reads)
    from the file's own ``file_rot``/``file_pos`` on the same frames."""
    like = Clip(skeleton, file_rot, file_pos)
    back_b, back_l = rt.to_rig(rot, pos, *file_channels(like, rt))
    index = {n: i for i, n in enumerate(skeleton.names)}
    offsets = np.asarray(skeleton.offsets, dtype=np.float64)
    out_rot, out_pos = file_rot.copy(), file_pos.copy()
    for j in rt.mapped:
        c = index[rt.bone_of(j)]
        out_rot[:, c] = back_b[:, j]
        if j in rt.position_joints:
            out_pos[:, c] = back_l[:, j] + offsets[c]
    return out_rot, out_pos


def to_model(clip: Clip, model: Skeleton, position_joints=(1,), given: dict | None = None) -> Clip:
    """Any humanoid BVH clip -> the same motion on the model's skeleton ``model`` (its names, parents and
    offsets: the result's skeleton), same frames and frame time.

    Rotations are the model's local quaternions (BVH axes, Y up); ``position_joints`` (the hips) move in
    centimetres, scaled by the model's leg length over the file's; every other joint keeps ``model``'s
    offset, so clips of any body share one skeleton (the poses carry over as world-space bone
    directions).  ``meta["bone_map"]`` says which joint of the file became which joint of the model,
    ``meta["found_by"]`` the preset or structure that found it.  Raises ``bone_map.BoneMapError``
    (a ``ValueError``, the message names the bones) for a skeleton that is no humanoid."""
    found = conversion(clip, model.names, model.parents, model.offsets, position_joints, given)
    rt = found.retarget
    rot, pos = rt.to_model(*file_channels(clip, rt))
    still = [j for j in range(len(model.names)) if j not in set(position_joints)]
    pos[:, still] = np.asarray(model.offsets, dtype=np.float64)[still]
    meta = {"bone_map": {model.names[j]: rt.bone_of(j) for j in rt.mapped}, "found_by": found.bone_map.preset}
    return Clip(model, rot, pos, clip.frame_time, clip.name, meta)
