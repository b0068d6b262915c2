"""Resample an armature's latent range (2x, 4x, or any length), carrying the edit layer along.

The layer's original becomes the original curves evaluated at the new times, keyed on every frame of
the new range: for an encoded range the user's F-curves as they were before Encode (2x: their values
at half frames), for an in-betweened range the fill (its keys move to whole multiples of their
offset, bit for bit).  The edits are decoded at the new length and layered on that, as before.
Other channels' keys inside the range are re-timed in proportion and keys after it move with its end.
"""
from __future__ import annotations

import numpy as np

from ...core import latent_math, layer_math
from ...core.errors import Refusal
from ...io import keys as keys_io
from ...io import latent as latent_io
from ...io import scene as scene_io
from .. import core as latent_core
from .. import decode, state
from . import adapter, carry, layer, take


def _prefetch(obj, st, path, settings, raw, bounds, sigs, edits, nsigs) -> None:
    """Decode the edited segments at the new length before anything changes (the backend may refuse)."""
    edited = layer_math.edited_segments(sigs, nsigs)
    if not edited:
        return
    prot = [latent_math.map_frame(k, st.source_frames, bounds[-1][1] + 1)
            for k in latent_core.array(st, "keys", dtype=int)] if st.task == "INBETWEEN" else ()
    frames = layer_math.reach(bounds, edited, st.task == "AUTOENCODER", protected=prot)
    _, need = layer_math.needed_parts(bounds, frames, st.task == "AUTOENCODER")
    jobs = decode.jobs(raw, layer.stored(st)[2], bounds, sigs, nsigs, edits, need)
    decode.decoded(st, path, settings, jobs, layer.REQUEST)


def original_at(obj, st, bag, channels, frames: int) -> np.ndarray:
    """The layer's original at the new frames ``[frames, C]``: an encoded range's curves as they were
    before Encode, an in-betweened range's fill, evaluated at the new frames' times."""
    lo = st.frame_start
    k = np.arange(frames, dtype=np.float64)
    if st.task == "INBETWEEN" or st.base_edited:  # (keys changed since Encode: the original is ``base`` now)
        curves, times = adapter.base_keys(st), lo + k * (st.frames - 1) / (frames - 1)
    else:
        curves, times = adapter.original_keys(st), lo + k * (st.source_frames - 1) / (frames - 1)
    out = np.empty((frames, len(channels)))
    for c, (bone, prop, i, _) in enumerate(channels):
        static = getattr(obj.pose.bones[bone], prop)[i]
        out[:, c] = latent_io.evaluate_keys(bag, curves.get((scene_io.bone_path(bone, prop), i)), times, static)
    return out


def resample(obj, settings, frames: int) -> str:
    """Decode the range into ``frames`` frames (2x, 4x, or any length): the range stretches or
    compresses from its start, later keys move with its end, and the sliders keep working."""
    st = obj.splinetween_latent
    path, nothing = latent_core.resample_checkpoint(obj, st, frames)
    if path is None:
        return nothing
    take.check(obj)
    bag = scene_io.channelbag(obj)
    if bag is None:
        raise Refusal(f"{obj.name} has no action any more; Bake or Remove the latent controls")
    channels = adapter.channels_of(obj, st)
    adapter.settle(obj, st, bag)  # keys changed since the last write are the original now
    raw = latent_core.read_raw(obj, st)
    bounds, sigs, edits = latent_core.plan(st, raw, frames)
    nsigs = latent_core.neutral_signatures(st, bounds)
    _prefetch(obj, st, path, settings, raw, bounds, sigs, edits, nsigs)  # may refuse: nothing written yet
    values = original_at(obj, st, bag, channels, frames)
    if not st.snapshot_all:  # every curve is about to be re-timed: keep the originals of all (Remove)
        have = {(p, int(i)) for p, i in zip(st["original"]["paths"], st["original"]["index"], strict=True)}
        extra = [(fc.data_path, fc.array_index) for fc in bag.fcurves
                 if not latent_math.is_raw_path(fc.data_path) and (fc.data_path, fc.array_index) not in have]
        merged = [(p, i, k) for (p, i), k in adapter.original_keys(st).items()] + latent_io.snapshot(bag, extra)
        with latent_core.suspended():
            latent_core.store(st, "original", latent_math.pack_curves(merged))
            st.snapshot_all = True
    driven = {(scene_io.bone_path(b, p), i) for b, p, i, _ in channels}
    keep = adapter.protected(st) + st.frame_start
    lo, old_hi, new_hi = st.frame_start, st.frame_end, st.frame_start + frames - 1
    for fc in list(bag.fcurves):
        written = (fc.data_path, fc.array_index) in driven
        keys_io.retime_curve(fc, lo, old_hi, new_hi, keep_inside=not written, protected=keep)
    old = st.frames
    with latent_core.suspended():
        st.frames = frames
    keys_at = adapter.protected(st) + lo
    keyed = np.setdiff1d(np.arange(lo, new_hi + 1), keys_at)
    curves, enums, base = keys_io.curve_map(bag), keys_io.new_key_enums(), []
    deleted = carry.gone(st)
    for c, (bone, prop, i, _) in enumerate(channels):
        p = scene_io.bone_path(bone, prop)
        if (p, i) in deleted:  # a curve the user deleted is not made again
            continue
        fc = curves.get((p, i))
        now = scene_io.read_keys(fc) if fc is not None else None
        keys = layer_math.layered_curve(now, now, lo, new_hi, keyed, values[keyed - lo, c], enums)
        latent_io.set_curve(bag, curves, p, i, bone, keys)
        base.append((p, i, keys))
    with latent_core.suspended():
        latent_core.store(st, "base", latent_math.pack_curves(base))
        latent_core.store(st, "base_values", values.ravel())
        if "holes" in st:  # (every frame of the new range is keyed: the deletions are in the values read)
            del st["holes"]
        latent_core.new_base_version(st)
        for seg, sig in zip(st.segments, nsigs, strict=True):
            seg.signature = sig  # the curves show the new original: every segment at neutral
    carry.record(st, np.zeros(0, np.int64), np.zeros((0, 0)), True)
    state.of(st).seen = None
    adapter.sync(obj)
    return f"Resampled frames {lo}-{old_hi} ({old} frames) to {lo}-{new_hi} ({frames} frames)"
