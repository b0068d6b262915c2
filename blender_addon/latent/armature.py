"""The armature adapter of latent controls: decode into F-curves, Bake, Remove, Resample.

``sync`` is the one place that writes decoded motion: it decodes the segments whose signature
differs from what their keys show and writes only those frames.  Decoded segments are cached by
fingerprint, so a slider moved back decodes to the very same keys.  Every check and the backend
call come before the first write: a refusal leaves the scene exactly as it was.
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np

from .. import bridge, preferences
from ..core import latent_math as LM
from ..core.errors import Refusal
from ..io import latent as latent_io
from ..io import scene as scene_io
from . import core as latent

decoded: OrderedDict = OrderedDict()  # (token, segment, signature) -> (rot [m, J, 4], pos [m, J, 3])
DECODED_MAX = 512


def forget(token: str) -> None:
    """Drop the decoded segments of a range that is going away."""
    for k in [k for k in decoded if k[0] == token]:
        del decoded[k]


def protected(st) -> np.ndarray:
    """Scene frames never written: the keys of an in-betweened range."""
    if st.kind != "INBETWEEN":
        return np.zeros(0, dtype=np.int64)
    keys = latent.array(st, "keys", dtype=np.int64)
    return np.array([st.frame_start + LM.map_frame(k, st.source_frames, st.frames) for k in keys], dtype=np.int64)


def decode(obj, st, path: Path, settings, raw, need, bounds, sigs) -> dict:
    """Decoded ``(rot, pos)`` of the segments in ``need``, from the cache or one backend request."""
    todo = [s for s in need if (st.token, s, sigs[s]) not in decoded]
    if todo:
        m = len(latent.names(st))
        segs = [st.segments[s] for s in todo]
        keys = latent.array(st, "keys", dtype=np.int64).tolist() if st.kind == "INBETWEEN" else None
        header = {"op": "decode", "checkpoint": str(path), "task": "inbetween" if keys else "autoencoder",
                  "segments": [[seg.start, seg.end] for seg in segs],
                  "lengths": [bounds[s][1] - bounds[s][0] + 1 for s in todo],
                  "amplify": [seg.amplify for seg in segs], "timing": [seg.timing for seg in segs],
                  "principal": [list(seg.principal[:m]) for seg in segs], "keys": keys}
        j = len(st["bones"])
        arrays = {"points": raw[todo], "origins": latent.array(st, "origins", (-1, 3))[todo],
                  "template": latent.array(st, "template", (j, 3))}
        if keys:
            arrays["key_rotations"] = latent.array(st, "key_rotations", (len(keys), j, 4))
            arrays["key_positions"] = latent.array(st, "key_positions", (len(keys), j, 3))
        try:
            _, out = bridge.request(settings, header, arrays)
        except bridge.BridgeError as e:
            raise Refusal(f"the backend failed, nothing was changed: {e}") from None
        rot, pos = out["rotations"], out["positions"]
        if not (np.isfinite(rot).all() and np.isfinite(pos).all()) or len(rot) != sum(header["lengths"]):
            raise Refusal("the backend returned an unusable result (wrong size or NaN); nothing was changed")
        at = np.cumsum([0] + header["lengths"])
        for k, s in enumerate(todo):
            decoded[st.token, s, sigs[s]] = (rot[at[k]:at[k + 1]], pos[at[k]:at[k + 1]])
    parts = {}
    for s in need:
        decoded.move_to_end((st.token, s, sigs[s]))
        parts[s] = decoded[st.token, s, sigs[s]]
    while len(decoded) > DECODED_MAX:
        decoded.popitem(last=False)
    return parts


def sync(obj, context=None, force: bool = False, fresh: bool = False) -> bool:
    """Re-decode and write the segments whose keys do not show their inputs; True if any was.
    Decoded segments join their neighbours at the shared end frames (mean of both sides, as
    ``Engine.decode``) and only those frames are written."""
    st = obj.splinetween_latent
    if not st.active:
        return False
    raw = latent.read_raw(obj, st)
    bounds, sigs = latent.plan(st, raw)
    count = len(st.segments)
    changed = [s for s in range(count) if force or sigs[s] != st.segments[s].signature]
    if not changed:
        return False
    path, why = latent.checkpoint_for(st, context)
    if path is None:
        raise Refusal(why)
    seams = st.kind == "AUTOENCODER"
    need = sorted(set(changed) | ({n for s in changed for n in (s - 1, s + 1) if 0 <= n < count} if seams else set()))
    parts = decode(obj, st, path, preferences.settings(context), raw, need, bounds, sigs)
    frames = {}
    for s in changed:
        rot, pos = LM.segment_values(parts, s, count, seams)
        for k, f in enumerate(range(bounds[s][0], bounds[s][1] + 1)):
            frames[f] = (rot[k], pos[k])
    for s in (need if seams else ()):  # an unchanged neighbour eases into the seams it shares with changed ones
        if s in changed:
            continue
        sides = (s - 1 in changed, s + 1 in changed)
        rot, pos = LM.segment_values(parts, s, count, seams, sides)
        r = len(LM.ramp(len(rot)))
        for k in [*(range(r) if sides[0] else ()), *(range(len(rot) - r, len(rot)) if sides[1] else ())]:
            frames[bounds[s][0] + k] = (rot[k], pos[k])
    order = sorted(frames)
    write(obj, st, np.array(order), np.stack([frames[f][0] for f in order]),
          np.stack([frames[f][1] for f in order]), fresh)
    with latent.suspended():
        for s in changed:
            st.segments[s].signature = sigs[s]
        if st.status:
            st.status = ""
    obj.update_tag(refresh={"TIME"})
    return True


def write(obj, st, rel: np.ndarray, rot: np.ndarray, pos: np.ndarray, fresh: bool = False) -> None:
    """Decoded frames (relative to the range start) -> the driven channels' keys."""
    bag = scene_io.channelbag(obj)
    if bag is None:
        raise Refusal(f"{obj.name} has no action any more; Bake or Remove the latent controls")
    missing = [b for b in st["bones"] if b not in obj.pose.bones]
    if missing:
        raise Refusal(f"{obj.name} lost bones since encoding ({', '.join(missing[:4])}); Bake or Remove the "
                      "latent controls")
    latent_io.write_motion(obj, bag, list(st["bones"]), set(latent.array(st, "rotation_joints", dtype=int).tolist()),
                           set(latent.array(st, "position_joints", dtype=int).tolist()), st.cm_per_unit,
                           (st.frame_start + rel).astype(np.float64), rot, pos, protected(st), fresh)


def install(obj, *, kind: str, path: Path, start: int, frames: int, bones, rotation_joints, position_joints,
            cm_per_unit: float, segments, points, origins, template, principal_names, snapshot,
            keys=None, key_rotations=None, key_positions=None) -> None:
    """Store a latent range on the object: bookkeeping, raw control points, original keys."""
    st = obj.splinetween_latent
    latent.install_controls(obj, kind=kind, path=path, start=start, frames=frames, segments=segments, points=points,
                     principal_names=principal_names)
    with latent.suspended():
        st.cm_per_unit = float(cm_per_unit)
        st["bones"] = list(bones)
        st["rotation_joints"] = np.asarray(rotation_joints, dtype=np.int32)
        st["position_joints"] = np.asarray(position_joints, dtype=np.int32)
        st["origins"] = np.asarray(origins, dtype=np.float64).ravel()
        st["template"] = np.asarray(template, dtype=np.float64).ravel()
        if keys is not None:
            st["keys"] = np.asarray(keys, dtype=np.int32)
            st["key_rotations"] = np.asarray(key_rotations, dtype=np.float64).ravel()
            st["key_positions"] = np.asarray(key_positions, dtype=np.float64).ravel()
        st["original"] = LM.pack_curves(snapshot)


def original_keys(st) -> dict:
    g = st["original"]
    return LM.unpack_curves({k: g[k] for k in g.keys()}, latent_io.key_dtypes())


def bake(obj) -> str:
    st = latent.controls_of(obj)
    a, b = st.frame_start, st.frame_end
    forget(st.token)
    latent.clear(obj)
    return f"Baked frames {a}-{b}: plain keys, latent controls removed"


def remove(obj) -> str:
    st = latent.controls_of(obj)
    bag = scene_io.channelbag(obj)
    a, b = st.frame_start, st.frame_end
    note = ""
    if bag is None:
        note = " (the action is gone: nothing to restore)"
    else:
        latent_io.restore(bag, original_keys(st), a, b, a + st.source_frames - 1)
    forget(st.token)
    latent.clear(obj)
    return f"Removed the latent controls of frames {a}-{b}; the original keys are back{note}"


def resample(obj, settings, frames: int) -> str:
    """Decode the range into ``frames`` frames (2x, 4x, or any length): the range stretches or
    compresses from its start, later keys move with its end, and the sliders keep working."""
    st = obj.splinetween_latent
    path, nothing = latent.resample_checkpoint(obj, st, frames)
    if path is None:
        return nothing
    bag = scene_io.channelbag(obj)
    if bag is None:
        raise Refusal(f"{obj.name} has no action any more; Bake or Remove the latent controls")
    src = [(seg.start, seg.end) for seg in st.segments]
    raw = latent.read_raw(obj, st)
    bounds, sigs = latent.plan(st, raw, frames)
    decode(obj, st, path, settings, raw, range(len(src)), bounds, sigs)  # may refuse: nothing written yet
    if not st.snapshot_all:  # every curve is about to be re-timed: keep the originals of all
        have = {(p, int(i)) for p, i in zip(st["original"]["paths"], st["original"]["index"])}
        extra = [(fc.data_path, fc.array_index) for fc in bag.fcurves
                 if not LM.is_raw_path(fc.data_path) and (fc.data_path, fc.array_index) not in have]
        orig = original_keys(st)
        merged = [(p, i, k) for (p, i), k in orig.items()] + latent_io.snapshot(bag, extra)
        with latent.suspended():
            st["original"] = LM.pack_curves(merged)
            st.snapshot_all = True
    channels = set()
    bones = list(st["bones"])
    rj = set(np.array(st["rotation_joints"]).tolist())
    pj = set(np.array(st["position_joints"]).tolist())
    for b, p, size, _ in latent_io.driven_channels(obj, bones, rj, pj):
        channels |= {(scene_io.bone_path(b, p), i) for i in range(size)}
    keep = protected(st)
    lo, old_hi, new_hi = st.frame_start, st.frame_end, st.frame_start + frames - 1
    for fc in list(bag.fcurves):
        written = (fc.data_path, fc.array_index) in channels
        latent_io.retime_curve(fc, lo, old_hi, new_hi, keep_inside=not written, protected=keep)
    old = st.frames
    with latent.suspended():
        st.frames = frames
    sync(obj, force=True, fresh=True)
    return f"Resampled frames {lo}-{old_hi} ({old} frames) to {lo}-{new_hi} ({frames} frames)"
