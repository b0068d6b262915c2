"""bpy <-> numpy for pose-bone F-curves: selection, rest pose, evaluated channels, bulk key writes.

Works on the action slot assigned to the object (slotted actions of Blender 4.5 and 5.x, through
the channelbag) and never needs an editor: selection is read from the keys' own select flags.
"""
from __future__ import annotations

import bpy
import numpy as np

from ..core import rig_math
from ..core.errors import Refusal
from .compat import assigned_channelbag, new_fcurve

_VEC2 = ("co", "handle_left", "handle_right")
_ENUMS = ("handle_left_type", "handle_right_type", "interpolation", "type", "easing")
_FLOATS = ("back", "amplitude", "period")
_BOOLS = ("select_control_point", "select_left_handle", "select_right_handle")


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
        kp = fc.keyframe_points
        n = len(kp)
        if n:
            sel = np.zeros(n, dtype=bool)
            co = np.zeros(2 * n, dtype=np.float32)
            kp.foreach_get("select_control_point", sel)
            kp.foreach_get("co", co)
            frames.update(float(f) for f in co[0::2][sel])
    return sorted(frames)


def bone_parents(obj) -> dict:
    return {b.name: (b.parent.name if b.parent else None) for b in obj.data.bones}


def rig_frames(obj, bones: list[str], skeleton_offsets: np.ndarray) -> rig_math.RigFrames:
    data = obj.data.bones
    mats = np.array([np.array(data[b].matrix_local) for b in bones])
    pmats = np.array([np.array(data[b].parent.matrix_local) if data[b].parent else np.eye(4) for b in bones])
    local = np.array([data[b].use_local_location for b in bones])
    rig = rig_math.RigFrames.from_rest(mats, pmats, local)
    rig.cm_per_unit = rig_math.cm_per_unit(rig.offsets, skeleton_offsets)
    return rig


def read_channel(obj, bag, bone: str, prop: str, size: int, frames) -> np.ndarray:
    """Channel values ``[n, size]`` at ``frames``: the F-curve where there is one, else the pose value."""
    frames = np.asarray(frames, dtype=np.float64)
    out = np.empty((frames.size, size))
    static = getattr(obj.pose.bones[bone], prop)
    for i in range(size):
        fc = bag.fcurves.find(bone_path(bone, prop), index=i)
        if fc is not None and len(fc.keyframe_points):
            out[:, i] = [fc.evaluate(f) for f in frames]
        else:
            out[:, i] = static[i]
    return out


def read_pose(obj, bag, bones: list[str], frames) -> tuple[np.ndarray, np.ndarray]:
    """Rotation quaternions ``[n, J, 4]`` and locations ``[n, J, 3]`` of the bones at ``frames``."""
    n = len(frames)
    basis, loc = np.zeros((n, len(bones), 4)), np.zeros((n, len(bones), 3))
    for j, b in enumerate(bones):
        mode = obj.pose.bones[b].rotation_mode
        prop, size = rotation_property(mode)
        basis[:, j] = rig_math.channels_to_quat(read_channel(obj, bag, b, prop, size, frames), mode)
        loc[:, j] = read_channel(obj, bag, b, "location", 3, frames)
    return basis, loc


def enum_value(prop: str, name: str) -> int:
    return bpy.types.Keyframe.bl_rna.properties[prop].enum_items[name].value


def read_keys(fc) -> dict[str, np.ndarray]:
    """All of a curve's keys as arrays (float32 as stored, so a write-back is bit-identical)."""
    kp = fc.keyframe_points
    n = len(kp)
    out = {}
    for a in _VEC2:
        buf = np.zeros(2 * n, dtype=np.float32)
        kp.foreach_get(a, buf)
        out[a] = buf.reshape(n, 2)
    for a in _ENUMS:
        out[a] = np.zeros(n, dtype=np.int32)
        kp.foreach_get(a, out[a])
    for a in _FLOATS:
        out[a] = np.zeros(n, dtype=np.float32)
        kp.foreach_get(a, out[a])
    for a in _BOOLS:
        out[a] = np.zeros(n, dtype=bool)
        kp.foreach_get(a, out[a])
    return out


def write_keys(fc, keys: dict[str, np.ndarray]) -> None:
    kp = fc.keyframe_points
    kp.clear()
    kp.add(len(keys["co"]))
    for a, v in keys.items():
        kp.foreach_set(a, np.ascontiguousarray(v).ravel())
    fc.update()


def replace_in_gaps(obj, bag, bone: str, prop: str, index: int, gaps, frames, values,
                    handles=None, static: float = 0.0) -> None:
    """On one channel: drop the keys strictly inside ``gaps``, key ``frames``/``values`` there
    (LINEAR, or BEZIER with ``handles`` = (left [m, 2], right [m, 2]) along the motion), and key a
    gap's end that has no key yet with the channel's value there, so nothing outside moves.
    Keys outside the gaps keep every attribute (their handles too); keys at a gap's ends keep all
    but their automatic handles, which Blender recomputes; new keys are GENERATED and unselected."""
    path = bone_path(bone, prop)
    fc = bag.fcurves.find(path, index=index)
    if fc is None:
        fc = new_fcurve(bag, path, index, bone)
    old = read_keys(fc)
    x = old["co"][:, 0].astype(np.float64)
    inside = np.zeros(len(x), dtype=bool)
    for a, b in gaps:
        inside |= (x > a) & (x < b)
    ends = sorted({f for g in gaps for f in g if not np.any(np.abs(x - f) < 1e-4)})
    end_values = [fc.evaluate(f) if len(x) else static for f in ends]
    frames = np.concatenate([np.asarray(frames, dtype=np.float64), ends])
    values = np.concatenate([np.asarray(values, dtype=np.float64), end_values])
    m, k = len(frames), len(frames) - len(ends)
    bezier = handles is not None
    new = {"co": np.stack([frames, values], -1).astype(np.float32)}
    if bezier:
        hl = np.concatenate([handles[0], np.stack([ends, end_values], -1).reshape(-1, 2)])
        hr = np.concatenate([handles[1], np.stack([ends, end_values], -1).reshape(-1, 2)])
    else:
        hl = hr = new["co"]
    new["handle_left"], new["handle_right"] = hl.astype(np.float32), hr.astype(np.float32)
    htype = np.full(m, enum_value("handle_left_type", "AUTO_CLAMPED"), dtype=np.int32)
    if bezier:
        htype[:k] = enum_value("handle_left_type", "ALIGNED")
    new["handle_left_type"] = new["handle_right_type"] = htype
    new["interpolation"] = np.full(m, enum_value("interpolation", "BEZIER" if bezier else "LINEAR"), np.int32)
    new["type"] = np.full(m, enum_value("type", "GENERATED"), dtype=np.int32)
    new["easing"] = np.full(m, enum_value("easing", "AUTO"), dtype=np.int32)
    new["back"], new["amplitude"], new["period"] = (np.full(m, v, np.float32) for v in (1.70158, 0.8, 4.1))
    for a in _BOOLS:
        new[a] = np.zeros(m, dtype=bool)
    keep = ~inside
    merged = {a: np.concatenate([old[a][keep], new[a]]) for a in old}
    order = np.argsort(merged["co"][:, 0], kind="stable")
    merged = {a: v[order] for a, v in merged.items()}
    write_keys(fc, merged)
    # fc.update() recomputed every automatic handle; with the default 'Continuous Acceleration'
    # smoothing that ripples out of the gaps.  Put back the exact handles of the keys that are
    # neither in nor at the end of a gap, so the curve outside the gaps is bit-identical.
    bounds = np.array(sorted({f for g in gaps for f in g}), dtype=np.float64)
    outside = np.concatenate([~np.isin(np.round(x[keep]), bounds), np.zeros(m, dtype=bool)])[order]
    if outside.any():
        fixed = read_keys(fc)
        for a in ("handle_left", "handle_right"):
            fixed[a][outside] = merged[a][outside]
            fc.keyframe_points.foreach_set(a, fixed[a].ravel())


def fcurve_arrays(bag) -> dict[tuple[str, int], dict[str, np.ndarray]]:
    """Every key attribute of every F-curve: a snapshot to compare before and after (tests, undo)."""
    return {(fc.data_path, fc.array_index): read_keys(fc) for fc in bag.fcurves}
