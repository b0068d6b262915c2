"""bpy <-> numpy for latent editing: fast channel reads, per-frame key writes, retiming, snapshots.

Complements ``scene_io`` (same key-array format, ``scene_io.read_keys``).  A slider change writes
the values of keys that already sit on every written frame (``foreach_set`` on ``co`` and the
handles, no handle recalculation); anything else (the first write, a range whose keys were
edited, a re-timed range) goes through a general merge that leaves other keys bit-identical.
"""
from __future__ import annotations

import numpy as np

from ..core import latent_math as LM
from ..core import rig_math
from . import scene as scene_io
from .compat import new_fcurve

_EPS = 1e-3


def rig_for(obj, bones: list[str], cm_per_unit: float) -> rig_math.RigFrames:
    data = obj.data.bones
    mats = np.array([np.array(data[b].matrix_local) for b in bones])
    pmats = np.array([np.array(data[b].parent.matrix_local) if data[b].parent else np.eye(4) for b in bones])
    local = np.array([data[b].use_local_location for b in bones])
    return rig_math.RigFrames.from_rest(mats, pmats, local, cm_per_unit)


def _keys_xy(fc) -> tuple[np.ndarray, np.ndarray]:
    kp = fc.keyframe_points
    co = np.zeros(2 * len(kp), dtype=np.float32)
    kp.foreach_get("co", co)
    return co[0::2].astype(np.float64), co[1::2].astype(np.float64)


def read_channel(obj, bag, bone: str, prop: str, size: int, frames: np.ndarray) -> np.ndarray:
    """``scene_io.read_channel``, reading key values directly where every frame has a key."""
    out = np.empty((len(frames), size))
    static = getattr(obj.pose.bones[bone], prop)
    for i in range(size):
        fc = bag.fcurves.find(scene_io.bone_path(bone, prop), index=i)
        if fc is None or not len(fc.keyframe_points):
            out[:, i] = static[i]
            continue
        x, y = _keys_xy(fc)
        at = np.minimum(np.searchsorted(x, frames - _EPS), len(x) - 1)
        if np.all(np.abs(x[at] - frames) < 1e-6):
            out[:, i] = y[at]
        else:
            out[:, i] = [fc.evaluate(f) for f in frames]
    return out


def read_pose(obj, bag, bones: list[str], frames) -> tuple[np.ndarray, np.ndarray]:
    """Rotation quaternions ``[n, J, 4]`` and locations ``[n, J, 3]`` at ``frames``."""
    frames = np.asarray(frames, dtype=np.float64)
    basis, loc = np.zeros((len(frames), len(bones), 4)), np.zeros((len(frames), len(bones), 3))
    for j, b in enumerate(bones):
        mode = obj.pose.bones[b].rotation_mode
        prop, size = scene_io.rotation_property(mode)
        basis[:, j] = rig_math.channels_to_quat(read_channel(obj, bag, b, prop, size, frames), mode)
        loc[:, j] = read_channel(obj, bag, b, "location", 3, frames)
    return basis, loc


def driven_channels(obj, bones, rotation_joints, position_joints) -> list[tuple[str, str, int, int]]:
    """(bone, property, size, joint) of every channel the model writes."""
    out = []
    for j, bone in enumerate(bones):
        if j in rotation_joints:
            prop, size = scene_io.rotation_property(obj.pose.bones[bone].rotation_mode)
            out.append((bone, prop, size, j))
        if j in position_joints:
            out.append((bone, "location", 3, j))
    return out


def _new_rows(frames: np.ndarray, values: np.ndarray) -> dict:
    m = len(frames)
    co = np.stack([frames, values], -1).astype(np.float32)
    rows = {"co": co, "handle_left": co.copy(), "handle_right": co.copy()}
    ev = scene_io.enum_value
    rows["handle_left_type"] = rows["handle_right_type"] = np.full(m, ev("handle_left_type", "AUTO_CLAMPED"), np.int32)
    rows["interpolation"] = np.full(m, ev("interpolation", "LINEAR"), np.int32)
    rows["type"] = np.full(m, ev("type", "GENERATED"), np.int32)
    rows["easing"] = np.full(m, ev("easing", "AUTO"), np.int32)
    rows["back"], rows["amplitude"], rows["period"] = (np.full(m, v, np.float32) for v in (1.70158, 0.8, 4.1))
    for a in ("select_control_point", "select_left_handle", "select_right_handle"):
        rows[a] = np.zeros(m, dtype=bool)
    return rows


def write_keys_exact(fc, keys: dict) -> None:
    """Replace every key of a curve; handles come back exactly as given (not recomputed)."""
    scene_io.write_keys(fc, keys)
    if len(keys["co"]):
        for a in ("handle_left", "handle_right"):
            fc.keyframe_points.foreach_set(a, np.ascontiguousarray(keys[a], dtype=np.float32).ravel())


def channel_keys(bag, path: str, index: int):
    """(F-curve or None, its keys' ``co`` as a flat float32 array or None): read once per write."""
    fc = bag.fcurves.find(path, index=index)
    if fc is None or not len(fc.keyframe_points):
        return fc, None
    co = np.zeros(2 * len(fc.keyframe_points), dtype=np.float32)
    fc.keyframe_points.foreach_get("co", co)
    return fc, co


def value_at(fc, co, frame: float, static: float) -> float:
    """A channel's value at ``frame``: its key there, else the curve, else the static pose value."""
    if co is None:
        return static
    x = co[0::2]
    i = min(int(np.searchsorted(x, frame - _EPS)), len(x) - 1)
    return float(co[2 * i + 1]) if abs(x[i] - frame) < 1e-6 else fc.evaluate(frame)


def write_values(bag, path: str, index: int, group: str, frames: np.ndarray, values: np.ndarray,
                 fresh: bool = False, protected: np.ndarray | None = None, fc=None, co=None) -> None:
    """Key ``values`` on scene ``frames`` (sorted) of one channel.  Fast path: each frame already
    has a key, whose value (and flat handles) are overwritten in place.  Otherwise (or ``fresh``)
    keys on and between the written frames are replaced by LINEAR Generated keys, except keys on
    ``protected`` frames; every other key keeps its attributes, handles included.  ``fc``, ``co``:
    the curve and its ``co`` from :func:`channel_keys`, when already read."""
    if fc is None:
        fc, co = channel_keys(bag, path, index)
    if fc is None:
        fc = new_fcurve(bag, path, index, group)
    kp = fc.keyframe_points
    n = len(kp)
    if n and not fresh:
        if co is None:
            co = np.zeros(2 * n, dtype=np.float32)
            kp.foreach_get("co", co)
        x = co[0::2]
        m, i0 = len(frames), int(np.searchsorted(x, frames[0] - _EPS))
        if i0 + m <= n and x[i0 + m - 1] == frames[-1] and np.array_equal(x[i0:i0 + m], frames):
            rows = slice(2 * i0, 2 * (i0 + m))  # one key per written frame, in one block: slices
        else:
            at = np.minimum(np.searchsorted(x, frames - _EPS), n - 1)
            rows = np.stack([2 * at, 2 * at + 1], -1).ravel() if np.all(np.abs(x[at] - frames) < _EPS) else None
        if rows is not None:
            hl, hr = np.empty(2 * n, dtype=np.float32), np.empty(2 * n, dtype=np.float32)
            kp.foreach_get("handle_left", hl)
            kp.foreach_get("handle_right", hr)
            if isinstance(rows, slice):
                co[rows.start + 1:rows.stop:2] = values
            else:
                co[rows[1::2]] = values
            hl[rows] = hr[rows] = co[rows]
            kp.foreach_set("co", co)
            kp.foreach_set("handle_left", hl)
            kp.foreach_set("handle_right", hr)
            return
    old = scene_io.read_keys(fc)
    x = old["co"][:, 0].astype(np.float64)
    keep_mask = np.ones(len(x), dtype=bool)
    prot = np.zeros(len(x), dtype=bool)
    if protected is not None and len(protected):
        prot = np.isin(np.round(x), protected) & (np.abs(x - np.round(x)) < _EPS)
    starts = np.flatnonzero(np.diff(frames, prepend=frames[0] - 2) > 1.5)
    ends = np.append(starts[1:] - 1, len(frames) - 1)
    for a, b in zip(frames[starts], frames[ends]):  # each run of consecutive frames
        keep_mask &= ~((x >= a - _EPS) & (x <= b + _EPS))
    keep_mask |= prot
    new = _new_rows(np.asarray(frames, np.float64), values)
    merged = {a: np.concatenate([old[a][keep_mask], new[a]]) for a in old}
    order = np.argsort(merged["co"][:, 0], kind="stable")
    merged = {a: v[order] for a, v in merged.items()}
    # fc.update() recomputes every automatic handle: put back the kept keys' handles exactly, and
    # give the written keys flat handles on their points, as the fast path does (they are LINEAR)
    restore = np.concatenate([keep_mask[keep_mask] & ~prot[keep_mask], np.ones(len(frames), bool)])[order]
    scene_io.write_keys(fc, merged)
    fixed = scene_io.read_keys(fc)
    for a in ("handle_left", "handle_right"):
        fixed[a][restore] = merged[a][restore]
        kp.foreach_set(a, fixed[a].ravel())


def retime_curve(fc, lo: float, old_hi: float, new_hi: float, keep_inside: bool, protected=()) -> None:
    """Stretch ``[lo, old_hi]`` to ``[lo, new_hi]`` on one curve: keys inside are re-timed in
    proportion (all of them with ``keep_inside``, else only those on ``protected`` frames; the
    rest are dropped), keys after move by the change in length, keys before stay."""
    keys = scene_io.read_keys(fc)
    if not len(keys["co"]):
        return
    x = keys["co"][:, 0].astype(np.float64)
    inside = (x >= lo - _EPS) & (x <= old_hi + _EPS)
    after = x > old_hi + _EPS
    keep = ~inside | (keep_inside & inside)
    if not keep_inside and len(protected):
        keep |= inside & np.isin(np.round(x), np.asarray(protected)) & (np.abs(x - np.round(x)) < _EPS)
    r = (new_hi - lo) / (old_hi - lo)
    out = {a: v[keep].copy() for a, v in keys.items()}
    xi = x[keep]
    ins, aft = inside[keep], after[keep]
    for a in ("co", "handle_left", "handle_right"):
        col = out[a][:, 0].astype(np.float64)
        moved = np.where(ins, lo + (xi - lo) * r + (col - xi) * r, col)
        out[a][:, 0] = np.where(aft, col + (new_hi - old_hi), moved).astype(np.float32)
    write_keys_exact(fc, out)


def snapshot(bag, curves) -> list[tuple[str, int, dict | None]]:
    """``[(data_path, index)]`` -> the curves' keys now (None where a curve does not exist)."""
    out = []
    for path, index in curves:
        fc = bag.fcurves.find(path, index=index)
        out.append((path, index, None if fc is None else scene_io.read_keys(fc)))
    return out


def key_dtypes() -> dict:
    """(dtype, width) of each read_keys attribute, to unpack stored snapshots."""
    out = {a: (np.float32, 2) for a in scene_io._VEC2}
    out.update({a: (np.int32, 1) for a in scene_io._ENUMS})
    out.update({a: (np.float32, 1) for a in scene_io._FLOATS})
    out.update({a: (bool, 1) for a in scene_io._BOOLS})
    return out


def restore(bag, original: dict, lo: float, cur_hi: float, orig_hi: float) -> None:
    """Remove: every snapshotted curve back to its original keys over the range (see
    ``latent_math.merge_restore``); curves the encoding created and left empty are deleted."""
    for (path, index), orig in original.items():
        fc = bag.fcurves.find(path, index=index)
        cur = None if fc is None else scene_io.read_keys(fc)
        merged = LM.merge_restore(cur, orig, lo, cur_hi, orig_hi)
        if merged is None:
            if fc is not None:
                bag.fcurves.remove(fc)
            continue
        if fc is None:
            group = path.split('"')[1] if path.startswith("pose.bones[") else ""
            fc = new_fcurve(bag, path, index, group)
        write_keys_exact(fc, merged)


def drop_raw_animation(obj, bag) -> None:
    """Delete F-curves and drivers on the raw control-point properties."""
    if bag is not None:
        for fc in [fc for fc in bag.fcurves if LM.is_raw_path(fc.data_path)]:
            bag.fcurves.remove(fc)
    ad = obj.animation_data
    if ad is not None:
        for fc in [fc for fc in ad.drivers if LM.is_raw_path(fc.data_path)]:
            ad.drivers.remove(fc)


def write_motion(obj, bag, bones, rotation_joints, position_joints, cm_per_unit: float, frames: np.ndarray,
                 rot: np.ndarray, pos: np.ndarray, protected: np.ndarray, fresh: bool = False) -> None:
    """Decoded poses (checkpoint convention, ``[n, J, 4]``, ``[n, J, 3]``) at scene ``frames`` ->
    the driven channels' keys, skipping ``protected`` frames.  Rotations continue, run by run of
    consecutive frames, from the values the run's first frame holds now (no 360-degree flips)."""
    basis, loc = rig_math.bvh_to_blender(rig_for(obj, bones, cm_per_unit), rot, pos)
    keep = ~np.isin(frames, protected)
    frames, basis, loc = frames[keep], basis[keep], loc[keep]
    if not len(frames):
        return
    runs = np.split(np.arange(len(frames)), np.flatnonzero(np.diff(frames) > 1.5) + 1)
    channels = driven_channels(obj, bones, rotation_joints, position_joints)
    keys = {(b, p, i): channel_keys(bag, scene_io.bone_path(b, p), i) for b, p, size, _ in channels
            for i in range(size)}
    values, by_mode = {}, {}
    for bone, prop, size, j in channels:
        if prop == "location":
            values[bone, prop] = loc[:, j]
        else:
            by_mode.setdefault(obj.pose.bones[bone].rotation_mode, []).append((bone, prop, size, j))
    for mode, group in by_mode.items():
        js = [j for _, _, _, j in group]
        out = np.empty((len(frames), len(group), group[0][2]))
        for run in runs:
            f0 = frames[run[0]]
            start = np.array([[value_at(*keys[b, p, i], f0, getattr(obj.pose.bones[b], p)[i]) for i in range(n)]
                              for b, p, n, _ in group])
            out[run] = LM.to_channels(basis[run][:, js], mode, start)
        for k, (bone, prop, _, _) in enumerate(group):
            values[bone, prop] = out[:, k]
    for bone, prop, size, _ in channels:
        for i in range(size):
            fc, co = keys[bone, prop, i]
            write_values(bag, scene_io.bone_path(bone, prop), i, bone, frames, values[bone, prop][:, i], fresh,
                         protected, fc=fc, co=co)
