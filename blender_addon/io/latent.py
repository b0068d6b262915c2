"""bpy <-> numpy for latent editing: channel reads, whole-curve key writes, retiming, snapshots.

Complements ``scene_io`` (same key-array format, ``scene_io.read_keys``).  F-curves are looked up
once per operation (``curve_map``).  A slider change whose frames already carry keys rewrites their
values in place (``overwrite_values``: ``foreach_set`` of ``co`` and the handles, no handle
recalculation); anything else sets a curve's whole key array at once (``set_curve``), handles exact.
"""
from __future__ import annotations

import numpy as np

from ..core import latent_math as LM
from ..core import rig_math
from . import keys as keys_io
from . import scene as scene_io
from .compat import new_fcurve

_EPS = 1e-3


def rig_for(obj, bones: list[str], cm_per_unit: float) -> rig_math.RigFrames:
    data = obj.data.bones
    mats = np.array([np.array(data[b].matrix_local) for b in bones])
    pmats = np.array([np.array(data[b].parent.matrix_local) if data[b].parent else np.eye(4) for b in bones])
    local = np.array([data[b].use_local_location for b in bones])
    return rig_math.RigFrames.from_rest(mats, pmats, local, cm_per_unit)


def curve_map(bag) -> dict:
    """``(data_path, index) -> F-curve`` of a channelbag, in one pass (looked up once per operation)."""
    return {(fc.data_path, fc.array_index): fc for fc in bag.fcurves}


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


def channel_list(obj, bones, rotation_joints, position_joints) -> list[tuple[str, str, int, str]]:
    """(bone, property, index, rotation mode) of every F-curve channel the model drives, in the order
    of the columns of a range's original values (``driven_channels``, element by element)."""
    return [(b, p, i, obj.pose.bones[b].rotation_mode) for b, p, size, _ in
            driven_channels(obj, bones, rotation_joints, position_joints) for i in range(size)]


def read_values(obj, bag, channels, frames, curves: dict | None = None) -> np.ndarray:
    """Channel values ``[n, C]`` at scene ``frames``: a curve's keys directly where it has one on every
    frame asked for, else ``fc.evaluate``; the pose value where the channel has no curve."""
    curves = curve_map(bag) if curves is None else curves
    frames = np.asarray(frames, dtype=np.float64)
    out = np.empty((len(frames), len(channels)))
    for c, (bone, prop, i, _) in enumerate(channels):
        fc = curves.get((scene_io.bone_path(bone, prop), i))
        if fc is None or not len(fc.keyframe_points):
            out[:, c] = getattr(obj.pose.bones[bone], prop)[i]
            continue
        co = np.zeros(2 * len(fc.keyframe_points), dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        x = co[0::2]
        at = np.minimum(np.searchsorted(x, frames - _EPS), len(x) - 1)
        if np.all(np.abs(x[at] - frames) < 1e-6):
            out[:, c] = co[2 * at + 1]
        else:
            out[:, c] = [fc.evaluate(f) for f in frames]
    return out


def channel_groups(channels, bones: list[str]) -> list[tuple[bool, str, list[int], np.ndarray]]:
    """Channels grouped for bulk conversion: (location?, rotation mode, joints, columns ``[B, size]``)."""
    index = {b: j for j, b in enumerate(bones)}
    groups: dict = {}
    for c, (bone, prop, i, mode) in enumerate(channels):
        groups.setdefault((prop == "location", "" if prop == "location" else mode), {}).setdefault(bone, []).append(c)
    return [(loc, mode, [index[b] for b in by_bone], np.array(list(by_bone.values())))
            for (loc, mode), by_bone in groups.items()]


def values_to_pose(channels, bones: list[str], values: np.ndarray, groups=None) -> tuple[np.ndarray, np.ndarray]:
    """Channel values ``[n, C]`` -> rotation quaternions ``[n, J, 4]`` and locations ``[n, J, 3]`` (identity
    and zero where a bone has no driven channel of that kind), each rotation mode converted at once."""
    n = len(values)
    basis, loc = np.zeros((n, len(bones), 4)), np.zeros((n, len(bones), 3))
    basis[..., 0] = 1.0
    for is_loc, mode, joints, cols in groups or channel_groups(channels, bones):
        if is_loc:
            loc[:, joints] = values[:, cols]
        else:
            basis[:, joints] = rig_math.channels_to_quat(values[:, cols], mode)
    return basis, loc


_ENUMS: dict = {}


def new_key_enums() -> dict:
    """The integers Blender gives LINEAR, GENERATED, AUTO_CLAMPED and AUTO (``layer_math.new_rows``)."""
    if not _ENUMS:
        ev = scene_io.enum_value
        _ENUMS.update({"handle_left_type": ev("handle_left_type", "AUTO_CLAMPED"),
                       "handle_right_type": ev("handle_right_type", "AUTO_CLAMPED"),
                       "interpolation": ev("interpolation", "LINEAR"), "type": ev("type", "GENERATED"),
                       "easing": ev("easing", "AUTO")})
    return _ENUMS


def write_keys_exact(fc, keys: dict) -> None:
    """Replace every key of a curve; handles come back exactly as given (not recomputed)."""
    scene_io.write_keys(fc, keys)
    if len(keys["co"]):
        for a in ("handle_left", "handle_right"):
            fc.keyframe_points.foreach_set(a, np.ascontiguousarray(keys[a], dtype=np.float32).ravel())


def set_curve(bag, curves: dict, path: str, index: int, group: str, keys: dict | None,
              current: dict | None = None) -> None:
    """A curve's whole key array (``None``: the curve goes), created when missing; handles exact.
    ``current``: the curve's keys now (``scene_io.read_keys``); when the new keys sit on the same frames,
    only the attributes that differ are set (no ``clear``, ``add`` or handle recalculation)."""
    fc = curves.get((path, index))
    if keys is None:
        if fc is not None:
            bag.fcurves.remove(fc)
            del curves[path, index]
        return
    if fc is None:
        fc = curves[path, index] = new_fcurve(bag, path, index, group)
    elif current is not None and len(current["co"]) == len(keys["co"]) and \
            np.array_equal(current["co"][:, 0], keys["co"][:, 0]):
        kp = fc.keyframe_points
        for a, v in current.items():  # (only the attributes read: the others stay as they are)
            if not np.array_equal(v, keys[a]):
                kp.foreach_set(a, np.ascontiguousarray(keys[a]).ravel())
        return
    write_keys_exact(fc, keys)


MOTION = ("co", "handle_left", "handle_right", "interpolation", "type")  # what a layer key changes


def read_motion(fc) -> dict:
    """The attributes of a curve's keys that the layer changes (``MOTION``)."""
    return keys_io.read(fc, MOTION)


def overwrite_values(fcs: list, frames: np.ndarray, values: np.ndarray, co: np.ndarray | None = None) -> list[int]:
    """The slider's fast path: on each curve of ``fcs`` (None: no curve) the keys already on every one of
    ``frames`` (scene frames, sorted) get the new values ``values[:, c]``, one ``foreach_get`` and one
    ``foreach_set`` of ``co`` per curve, the checks and the assignment in numpy over all curves at once
    (``co``: every curve's ``co`` just read, one curve after the other: not read again, and updated in place).
    -> the curves left as they were because a frame has no key there (or no curve).  Handles stay: they
    belong to the layer's LINEAR keys (``layer_math.new_rows``), whose handles shape no whole frame (a
    run of them starts on the frame after an original key)."""
    kps = [fc.keyframe_points if fc is not None else () for fc in fcs]
    counts = [len(kp) for kp in kps]
    at = [0]
    for n in counts:
        at.append(at[-1] + 2 * n)
    read = co is None or len(co) != at[-1]  # ``co``: every curve's keys read just before, one after the other
    if read:
        co = np.empty(at[-1], dtype=np.float32)
    if counts and counts[0] and counts.count(counts[0]) == len(counts):  # the common case: one grid
        grid = co.reshape(len(kps), -1)
        for kp, row in zip(kps, grid):
            if read:
                kp.foreach_get("co", row)
        x = grid[:, 0::2]
        # ... and the first curve's keys on the frames sit at the same rows of every curve (the common
        # case, every curve keyed alike): one search for all, checked where it is used
        rows = np.minimum(np.searchsorted(x[0], frames - _EPS), counts[0] - 1)
        if not len(frames) or (np.abs(x[:, rows] - frames) < _EPS).all():
            grid[:, 2 * rows + 1] = values.T
            for kp, row in zip(kps, grid):
                kp.foreach_set("co", row)
            return []
    elif read:
        for c, kp in enumerate(kps):
            if counts[c]:
                kp.foreach_get("co", co[at[c]:at[c + 1]])
    sizes = np.array(counts, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(sizes)])
    x = co[0::2]
    rows = np.zeros((len(fcs), len(frames)), dtype=np.int64)
    ok = sizes > 0
    if not ok.any():
        return list(range(len(fcs)))
    for c in np.flatnonzero(ok):
        rows[c] = start[c] + np.minimum(np.searchsorted(x[start[c]:start[c + 1]], frames - _EPS), sizes[c] - 1)
    ok &= (np.abs(x[rows] - frames[None]) < _EPS).all(1) if len(frames) else ok
    co[2 * rows[ok] + 1] = values.T[ok]
    for c in np.flatnonzero(ok).tolist():
        kps[c].foreach_set("co", co[at[c]:at[c + 1]])
    return np.flatnonzero(~ok).tolist()


def evaluate_keys(bag, keys: dict | None, times, static: float) -> np.ndarray:
    """What a curve with ``keys`` (e.g. a stored original) shows at ``times``, as Blender evaluates it:
    written to a temporary curve of ``bag``, evaluated, removed; ``static`` where there are no keys."""
    if keys is None or not len(keys["co"]):
        return np.full(len(times), float(static))
    fc = new_fcurve(bag, '["splinetween_evaluate"]', 0, "")
    try:
        write_keys_exact(fc, keys)
        return np.array([fc.evaluate(float(t)) for t in times])
    finally:
        bag.fcurves.remove(fc)


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


def snapshot(bag, curves, found: dict | None = None) -> list[tuple[str, int, dict | None]]:
    """``[(data_path, index)]`` -> the curves' keys now (None where a curve does not exist); ``found``:
    the channelbag's ``curve_map``, when already made."""
    found = curve_map(bag) if found is None else found
    out = []
    for path, index in curves:
        fc = found.get((path, index))
        out.append((path, index, None if fc is None else scene_io.read_keys(fc)))
    return out


def key_dtypes() -> dict:
    """(dtype, width) of each key attribute, to unpack stored snapshots (``keys.ATTRS``)."""
    return dict(keys_io.ATTRS)


def restore(bag, original: dict, lo: float, cur_hi: float, orig_hi: float) -> None:
    """Remove: every snapshotted curve back to its original keys over the range (see
    ``latent_math.merge_restore``); curves the encoding created and left empty are deleted."""
    found = curve_map(bag)
    for (path, index), orig in original.items():
        fc = found.get((path, index))
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


def every_frame_blocks(originals: list, lo: int, hi: int) -> dict | None:
    """The originals of curves keyed on every frame ``lo..hi`` (a BVH import, an in-betweened fill, a
    resampled range), as stacked in-range ``MOTION`` arrays ``{attr: [C, F, ...]}`` plus ``ok [C]`` (which
    curves qualify), for :func:`set_every_frame`; None when none does."""
    frames = np.arange(lo, hi + 1, dtype=np.float32)
    n = len(frames)
    ok = np.zeros(len(originals), bool)
    out = {a: np.zeros((len(originals), n, 2) if a in keys_io.VEC2 else (len(originals), n),
                       np.float32 if a in keys_io.VEC2 else np.int32) for a in MOTION}
    for c, keys in enumerate(originals):
        if keys is None or not len(keys["co"]):
            continue
        x = keys["co"][:, 0]
        i0 = int(np.searchsorted(x, lo - _EPS))
        if i0 + n <= len(x) and np.array_equal(x[i0:i0 + n], frames):
            ok[c] = True
            for a in MOTION:
                out[a][c] = keys[a][i0:i0 + n]
    return dict(out, ok=ok) if ok.any() else None


def set_every_frame(fcs: list, blocks: dict, lo: int, hi: int, frames: np.ndarray, values: np.ndarray,
                    enums: dict) -> list[int]:
    """A layout change on curves whose original is keyed on every frame of the range and that still have
    exactly those keys: inside the range the original's ``MOTION`` attributes, the layer's (``values[:, c]``
    on scene ``frames``: LINEAR, Generated, flat handles) where it reaches, for every curve in one numpy
    pass; then per curve one ``foreach_set`` per attribute that changed.  Keys outside the range and the
    attributes a layer key keeps are not touched.  -> the curves this cannot do (the caller sets them whole)."""
    n = hi - lo + 1
    sizes = np.array([len(fc.keyframe_points) if fc is not None else 0 for fc in fcs], dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(sizes)])
    buf = {a: np.empty((int(start[-1]), 2) if a in keys_io.VEC2 else int(start[-1]),
                       np.float32 if a in keys_io.VEC2 else np.int32) for a in MOTION}
    ok = blocks["ok"] & (sizes >= n)
    for c in np.flatnonzero(ok):
        fcs[c].keyframe_points.foreach_get("co", buf["co"][start[c]:start[c + 1]].ravel())
    at = np.zeros(len(fcs), dtype=np.int64)
    want = np.arange(lo, hi + 1, dtype=np.float32)
    for c in np.flatnonzero(ok):  # where each curve's keys of the range begin, and that they are all there
        x = buf["co"][start[c]:start[c + 1], 0]
        i0 = int(np.searchsorted(x, lo - _EPS))
        ok[c] = i0 + n <= len(x) and np.array_equal(x[i0:i0 + n], want)
        at[c] = start[c] + i0
    cs = np.flatnonzero(ok)
    for c in cs:
        for a in MOTION[1:]:
            fcs[c].keyframe_points.foreach_get(a, buf[a][start[c]:start[c + 1]].ravel())
    rows = at[cs, None] + np.arange(n)[None]  # [C', F]: each curve's keys of the range in the buffers
    rel = np.asarray(frames, np.int64) - lo
    target = {a: blocks[a][cs].copy() for a in MOTION}
    target["co"][:, rel, 1] = values.T[cs]
    for a in ("handle_left", "handle_right"):
        target[a][:, rel] = target["co"][:, rel]
    target["interpolation"][:, rel] = enums["interpolation"]
    target["type"][:, rel] = enums["type"]
    changed = {a: (buf[a][rows] != target[a]).reshape(len(cs), -1).any(1) for a in MOTION}
    for a in MOTION:
        buf[a][rows] = target[a]
    for k, c in enumerate(cs):
        for a in MOTION:
            if changed[a][k]:
                fcs[c].keyframe_points.foreach_set(a, buf[a][start[c]:start[c + 1]].ravel())
    return np.flatnonzero(~ok).tolist()
