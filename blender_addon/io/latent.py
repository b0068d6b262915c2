"""bpy <-> numpy for latent editing: channel reads, whole-curve sets, snapshots, Remove's restore.

Every key is read and written through ``io/keys.py`` (the one module that touches ``keyframe_points``;
the slider's in-place value writes, ``keys.overwrite_values``, and re-timing live there too); F-curves
are looked up once per operation (``keys.curve_map``).  A curve's whole key array is set at once
(``set_curve``), handles exact.
"""
from __future__ import annotations

import numpy as np

from ..core import latent_math, rig_math
from . import keys as keys_io
from . import scene as scene_io
from .compat import new_fcurve


def rig_for(obj, bones: list[str], cm_per_unit: float) -> rig_math.RigFrames:
    data = obj.data.bones
    mats = np.array([np.array(data[b].matrix_local) for b in bones])
    pmats = np.array([np.array(data[b].parent.matrix_local) if data[b].parent else np.eye(4) for b in bones])
    local = np.array([data[b].use_local_location for b in bones])
    return rig_math.RigFrames.from_rest(mats, pmats, local, cm_per_unit)


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
    curves = keys_io.curve_map(bag) if curves is None else curves
    frames = np.asarray(frames, dtype=np.float64)
    out = np.empty((len(frames), len(channels)))
    for c, (bone, prop, i, _) in enumerate(channels):
        fc = curves.get((scene_io.bone_path(bone, prop), i))
        co = keys_io.read(fc, ("co",))["co"].ravel() if fc is not None else ()
        if not len(co):
            out[:, c] = getattr(obj.pose.bones[bone], prop)[i]
            continue
        x = co[0::2]
        at = np.minimum(np.searchsorted(x, frames - keys_io.FRAME_EPS), len(x) - 1)
        if np.all(np.abs(x[at] - frames) < 1e-6):
            out[:, c] = co[2 * at + 1]
        else:
            out[:, c] = [fc.evaluate(f) for f in frames]
    return out


def channel_groups(channels, bones: list[str]) -> list[tuple[bool, str, list[int], np.ndarray]]:
    """Channels grouped for bulk conversion: (location?, rotation mode, joints, columns ``[B, size]``)."""
    index = {b: j for j, b in enumerate(bones)}
    groups: dict = {}
    for c, (bone, prop, _i, mode) in enumerate(channels):
        groups.setdefault((prop == "location", "" if prop == "location" else mode), {}).setdefault(bone, []).append(c)
    return [(loc, mode, [index[b] for b in by_bone], np.array(list(by_bone.values())))
            for (loc, mode), by_bone in groups.items()]


def values_to_pose(channels, bones: list[str], values: np.ndarray, groups=None) -> tuple[np.ndarray, np.ndarray]:
    """Channel values ``[n, C]`` -> rotation quaternions ``[n, J, 4]`` and locations ``[n, J, 3]`` (identity
    and zero where a bone has no driven rotation or location channel), each rotation mode converted at once."""
    n = len(values)
    basis, loc = np.zeros((n, len(bones), 4)), np.zeros((n, len(bones), 3))
    basis[..., 0] = 1.0
    for is_loc, mode, joints, cols in groups or channel_groups(channels, bones):
        if is_loc:
            loc[:, joints] = values[:, cols]
        else:
            basis[:, joints] = rig_math.channels_to_quat(values[:, cols], mode)
    return basis, loc


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
        keys_io.set_changed(fc, current, keys)
        return
    keys_io.write(fc, keys, exact_handles=True)


def evaluate_keys(bag, keys: dict | None, times, static: float) -> np.ndarray:
    """What a curve with ``keys`` (e.g. a stored original) shows at ``times``, as Blender evaluates it:
    written to a temporary curve of ``bag``, evaluated, removed; ``static`` where there are no keys."""
    if keys is None or not len(keys["co"]):
        return np.full(len(times), float(static))
    fc = new_fcurve(bag, '["splinetween_evaluate"]', 0, "")
    try:
        keys_io.write(fc, keys, exact_handles=True)
        return np.array([fc.evaluate(float(t)) for t in times])
    finally:
        bag.fcurves.remove(fc)


def snapshot(bag, curves, found: dict | None = None) -> list[tuple[str, int, dict | None]]:
    """``[(data_path, index)]`` -> the curves' keys now (None where a curve does not exist); ``found``:
    the channelbag's ``curve_map``, when already made."""
    found = keys_io.curve_map(bag) if found is None else found
    out = []
    for path, index in curves:
        fc = found.get((path, index))
        out.append((path, index, None if fc is None else keys_io.read(fc)))
    return out


def key_dtypes() -> dict:
    """(dtype, width) of each key attribute, to unpack stored snapshots (``keys.ATTRS``)."""
    return dict(keys_io.ATTRS)


def restore(bag, original: dict, lo: float, cur_hi: float, orig_hi: float) -> None:
    """Remove: every snapshotted curve back to its original keys over the range (see
    ``latent_math.merge_restore``); curves the encoding created and left empty are deleted."""
    found = keys_io.curve_map(bag)
    for (path, index), orig in original.items():
        fc = found.get((path, index))
        cur = None if fc is None else keys_io.read(fc)
        merged = latent_math.merge_restore(cur, orig, lo, cur_hi, orig_hi)
        if merged is None:
            if fc is not None:
                bag.fcurves.remove(fc)
            continue
        if fc is None:
            group = path.split('"')[1] if path.startswith("pose.bones[") else ""
            fc = new_fcurve(bag, path, index, group)
        keys_io.write(fc, merged, exact_handles=True)


def every_frame_blocks(originals: list, lo: int, hi: int) -> dict | None:
    """The originals of curves keyed on every frame ``lo..hi`` (a BVH import, an in-betweened fill, a
    resampled range), as stacked in-range ``keys_io.MOTION`` arrays ``{attr: [C, F, ...]}`` plus ``ok [C]`` (which
    curves qualify), for :func:`set_every_frame`; None when none does."""
    frames = np.arange(lo, hi + 1, dtype=np.float32)
    n = len(frames)
    ok = np.zeros(len(originals), bool)
    out = {a: np.zeros((len(originals), n, 2) if a in keys_io.VEC2 else (len(originals), n),
                       np.float32 if a in keys_io.VEC2 else np.int32) for a in keys_io.MOTION}
    for c, keys in enumerate(originals):
        if keys is None or not len(keys["co"]):
            continue
        x = keys["co"][:, 0]
        i0 = int(np.searchsorted(x, lo - keys_io.FRAME_EPS))
        if i0 + n <= len(x) and np.array_equal(x[i0:i0 + n], frames):
            ok[c] = True
            for a in keys_io.MOTION:
                out[a][c] = keys[a][i0:i0 + n]
    return dict(out, ok=ok) if ok.any() else None
