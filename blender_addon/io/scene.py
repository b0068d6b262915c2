"""bpy <-> numpy for pose-bone F-curves: selection, rest pose, evaluated channels, bulk key writes.

Works on the action slot assigned to the object (slotted actions of Blender 4.5 and 5.x, through
the channelbag) and never needs an editor: selection is read from the keys' own select flags.
"""
from __future__ import annotations

import bpy
import numpy as np

from .. import humanoid
from ..core import rig_math
from ..core.errors import Refusal
from . import keys as keys_io
from .compat import assigned_channelbag


def channelbag(obj):
    """The channelbag of the object's assigned action slot, or None."""
    ad = obj.animation_data
    if ad is None or ad.action is None:
        return None
    return assigned_channelbag(ad)


MAKE_LOCAL = "make it local first: Object > Relations > Make Local > All, then try again"


def action_problem(obj) -> str | None:
    """Why the object's keys cannot be changed here, or None: a linked object, or an action linked
    from a library or a library override (whose F-curves cannot lose or gain keys).  Check it
    before the first write, so a refusal leaves the scene exactly as it was."""
    if obj.library is not None:
        return f"{obj.name} is linked from {obj.library.filepath}; nothing was changed ({MAKE_LOCAL})"
    ad = obj.animation_data
    act = ad.action if ad is not None else None
    if act is None:
        return None
    if act.library is not None:
        return (f"the action '{act.name}' of {obj.name} is linked from {act.library.filepath}, so its keys cannot "
                f"be changed; nothing was changed ({MAKE_LOCAL})")
    if act.override_library is not None:
        ref = act.override_library.reference
        lib = ref.library.filepath if ref is not None and ref.library is not None else "a library"
        return (f"the action '{act.name}' of {obj.name} is a library override of {lib}, whose keys cannot be "
                f"removed or added; nothing was changed ({MAKE_LOCAL})")
    return None


def editable_keys(obj):
    """The active action's channelbag of an armature whose keys may be changed, or a Refusal that
    names what is wrong (not an armature, linked or overridden, no keys): checked before any write."""
    if obj is None or obj.type != "ARMATURE":
        raise Refusal("the active object is not an armature")
    problem = action_problem(obj)
    if problem:
        raise Refusal(problem)
    bag = channelbag(obj)
    if bag is None or not len(bag.fcurves):
        raise Refusal(f"{obj.name} has no keys in its active action")
    return bag


def bone_path(bone: str, prop: str) -> str:
    return f'pose.bones["{bpy.utils.escape_identifier(bone)}"].{prop}'


def rotation_property(mode: str) -> tuple[str, int]:
    if mode == "QUATERNION":
        return "rotation_quaternion", 4
    if mode == "AXIS_ANGLE":
        return "rotation_axis_angle", 4
    return "rotation_euler", 3


def curves_by_bone(bag, bones: list[str]) -> dict[str, list]:
    """Every F-curve of each bone (all its channels), in one pass over the channelbag."""
    prefix = {bone_path(b, ""): b for b in bones}
    out: dict[str, list] = {b: [] for b in bones}
    for fc in bag.fcurves:
        head = fc.data_path.rsplit(".", 1)[0] + "." if fc.data_path.startswith("pose.bones[") else None
        if head in prefix:
            out[prefix[head]].append(fc)
    return out


def selected_frames(curves) -> list[float]:
    frames = set()
    for fc in curves:
        if keys_io.count(fc):
            k = keys_io.read(fc, ("co", "select_control_point"))
            frames.update(float(f) for f in k["co"][k["select_control_point"], 0])
    return sorted(frames)


def bone_parents(obj) -> dict:
    return {b.name: (b.parent.name if b.parent else None) for b in obj.data.bones}


def rig_frames(obj, bones: list[str], skeleton_offsets: np.ndarray) -> rig_math.RigFrames:
    data = obj.data.bones
    mats = np.array([np.array(data[b].matrix_local) for b in bones])
    pmats = np.array([np.array(data[b].parent.matrix_local) if data[b].parent else np.eye(4) for b in bones])
    local = np.array([data[b].use_local_location for b in bones])
    rig = rig_math.RigFrames.from_rest(mats, pmats, local)
    rig.cm_per_unit = humanoid.axes.cm_per_unit(rig.offsets, skeleton_offsets)
    return rig


def read_channel(obj, bag, bone: str, prop: str, size: int, frames, curves=None) -> np.ndarray:
    """Channel values ``[n, size]`` at ``frames``: the F-curve where there is one, else the pose value.
    ``curves``: a ``keys.Curves`` of ``bag`` when the caller has one (looked up once)."""
    frames = np.asarray(frames, dtype=np.float64)
    rows: list = []
    _channel(rows, obj.pose.bones[bone], bone, prop, size, frames, None, curves or keys_io.Find(bag))
    return np.array(rows, dtype=np.float64).reshape(size, frames.size).T


def read_pose(obj, bag, bones: list[str], frames) -> tuple[np.ndarray, np.ndarray]:
    """Rotation quaternions ``[n, J, 4]`` and locations ``[n, J, 3]`` of the bones at ``frames``
    (``read_channel``'s values, gathered in one list and made an array once: a few thousand values)."""
    frames = np.asarray(frames, dtype=np.float64)
    n = frames.size
    if not n or not bones:
        return np.zeros((n, len(bones), 4)) + [1.0, 0, 0, 0], np.zeros((n, len(bones), 3))
    few = frames.tolist() if n < keys_io.FEW else None  # values_at evaluates these one by one
    curves = keys_io.Curves(bag) if len(bones) > 4 else keys_io.Find(bag)  # (the bones in between: a few)
    rows, modes = [], []  # per bone: location x, y, z, then its rotation channels
    pose_bones = obj.pose.bones
    for b in bones:
        pb = pose_bones[b]
        mode = pb.rotation_mode
        prop, size = rotation_property(mode)
        modes.append((mode, size))
        _channel(rows, pb, b, "location", 3, frames, few, curves)
        _channel(rows, pb, b, prop, size, frames, few, curves)
    values = np.array(rows, dtype=np.float64).reshape(-1, n).T  # [n, channels]
    basis, loc = np.zeros((n, len(bones), 4)), np.zeros((n, len(bones), 3))
    by_mode, starts, at = {}, [], 0
    for j, (mode, size) in enumerate(modes):
        loc[:, j] = values[:, at:at + 3]
        starts.append(at + 3)
        by_mode.setdefault(mode, []).append(j)
        at += 3 + size
    for mode, js in by_mode.items():  # one conversion per rotation mode
        size = modes[js[0]][1]
        basis[:, js] = rig_math.channels_to_quat(np.stack([values[:, starts[j]:starts[j] + size] for j in js], 1), mode)
    return basis, loc


def _channel(rows: list, pb, bone: str, prop: str, size: int, frames, few, curves) -> None:
    """``read_channel`` for a pose bone already looked up, one list of ``frames.size`` values per
    index appended to ``rows`` (``few``: ``frames`` as a list when ``values_at`` evaluates them one by one;
    ``map`` looks ``evaluate`` up once per curve, not once per frame)."""
    path, static = bone_path(bone, prop), None
    for i in range(size):
        fc = curves.get(path, i)
        if keys_io.count(fc):
            rows.append(list(map(fc.evaluate, few)) if few is not None else keys_io.values_at(fc, frames))
        else:
            static = getattr(pb, prop) if static is None else static
            rows.append([static[i]] * frames.size if few is not None else np.full(frames.size, static[i]))


def read_keys(fc) -> dict[str, np.ndarray]:
    """All of a curve's keys as arrays (float32 as stored, so a write-back is bit-identical)."""
    return keys_io.read(fc)


def fcurve_arrays(bag) -> dict[tuple[str, int], dict[str, np.ndarray]]:
    """Every key attribute of every F-curve: a snapshot to compare before and after (tests, undo)."""
    return {(fc.data_path, fc.array_index): read_keys(fc) for fc in bag.fcurves}
