"""The user's animation is the truth: before the layer writes, keys changed on its curves since its
last write (by hand, a script, another tool) are carried into its original (``core.carry_math``).

What the layer last wrote is saved with the range (``shown_frames``, ``shown_values``: the frames
its edits reach and their values, ``shown_id`` naming the write), so the check holds across undo,
redo, save and reload; the curves' ``co`` as last seen is kept in memory, so a slider change finds
an untouched range in one read of every driven curve.
"""
from __future__ import annotations

import uuid

import numpy as np

from ...core import carry_math, latent_math
from ...io import keys as keys_io
from ...io import latent as latent_io
from ...io import scene as scene_io
from .. import core as latent_core
from .. import state


def gone(st) -> set:
    """``(data_path, index)`` of the curves the user deleted since Encode: never written again."""
    return {(p, int(i)) for p, i in (s.rsplit("|", 1) for s in st["gone"])} if "gone" in st else set()


def holes(st) -> dict:
    """``(data_path, index)`` -> scene frames whose layer key the user deleted: the layer never keys them
    again (``carry_math.layer_keys``), so a deletion stays in an edited segment too."""
    if "holes" not in st:
        return {}
    out: dict = {}
    for entry in st["holes"]:
        path, i, f = entry.rsplit("|", 2)
        out.setdefault((path, int(i)), []).append(int(f))
    return {k: np.array(sorted(v), np.int64) for k, v in out.items()}


def remember(st, fcs, read: tuple | None = None) -> None:
    """After a write: the curves as the layer left them (the next check's fast path); ``read``: (key counts,
    their ``co`` one curve after the other) as the write left them, when it has them (``reconcile``'s)."""
    if read is None:
        read = keys_io.read_co(fcs)
    state.of(st).seen = (st.shown_id, *read)  # (``co`` is the caller's to give: a new buffer every check)


def record(st, frames: np.ndarray, values: np.ndarray, whole: bool) -> None:
    """Save what a write put on the curves: ``values [n, C]`` at ``frames`` (relative, sorted); ``whole``:
    these are all the layer's frames now, else they replace the values of those frames."""
    with latent_core.suspended():
        if whole and not len(frames):
            for key in ("shown_frames", "shown_values"):
                if key in st:
                    del st[key]
        elif whole or "shown_frames" not in st:
            latent_core.store(st, "shown_frames", np.asarray(frames, np.int32))
            latent_core.store(st, "shown_values", np.asarray(values, np.float64).ravel())
        elif len(frames):  # (in place: an ID property array lends numpy its buffer)
            have = np.asarray(st["shown_frames"])
            np.asarray(st["shown_values"]).reshape(len(have), -1)[np.searchsorted(have, frames)] = values
        st.shown_id = uuid.uuid4().hex[:16]


def _shown(st, count: int) -> tuple[np.ndarray, np.ndarray] | None:
    if "shown_frames" not in st:
        return np.zeros(0, np.int64), np.zeros((0, count))
    frames = np.asarray(st["shown_frames"], np.int64)
    values = np.asarray(st["shown_values"], np.float64)
    if values.size != len(frames) * count:
        return None  # written for another set of channels (a rotation mode changed): nothing to compare
    return frames, values.reshape(len(frames), count)


def reconcile(obj, st, bag, channels, cols, fcs, base_keys, base_values) -> tuple[bool, tuple]:
    """Carry the user's changes on the written ``channels`` (columns ``cols`` of the range's channel
    list, their curves ``fcs``) into the original: (whether it changed (the caller writes whole), (key
    counts, every curve's ``co`` one curve after the other) as read)."""
    counts, buf = keys_io.read_co(fcs)
    if not st.shown_id:  # a range saved before writes were recorded: nothing to compare with (sync writes whole)
        return False, (counts, buf)
    memory = state.of(st)
    seen = memory.seen  # (shown_id, key counts, every driven curve's ``co``) as last written
    if seen is not None and seen[0] == st.shown_id and seen[1] == counts and np.array_equal(seen[2], buf):
        return False, (counts, buf)
    shown = _shown(st, len(channels))
    if shown is None:
        return False, (counts, buf)
    lo, hi = st.frame_start, st.frame_end
    frames, values = shown
    keyframe = keys_io.enum_value("type", "KEYFRAME")
    new_keys, new_cols, deleted, new_holes, had = {}, {}, [], [], holes(st)
    for k, ((bone, prop, i, _), fc) in enumerate(zip(channels, fcs, strict=True)):
        key = (scene_io.bone_path(bone, prop), i)
        base = base_keys.get(key)
        bx = base["co"][:, 0].astype(np.float64) if base is not None else np.zeros(0)
        keyed, vals, offsets = carry_math.layer_keys(bx, lo, hi, frames + lo, values[:, k], base_values[:, cols[k]],
                                             had.get(key))
        want = carry_math.expected_co(base, lo, hi, keyed, vals, offsets)
        if fc is None:
            if len(want):
                deleted.append(key)
            continue
        co = keys_io.read(fc, ("co",))["co"]
        co = co[carry_math.in_range(co[:, 0].astype(np.float64), lo, hi)]
        if co.shape == want.shape and np.array_equal(co, want):
            continue
        now = keys_io.read(fc)
        new_keys[key] = carry_math.carried(now, base, lo, hi, keyed, vals, keyframe, offsets)
        new_holes += [f"{key[0]}|{key[1]}|{f}" for f in carry_math.deleted_keys(want[:, 0], now["co"][:, 0])]
        times = np.arange(lo, hi + 1, dtype=np.float64)
        new_cols[cols[k]] = latent_io.evaluate_keys(bag, new_keys[key], times, base_values[0, cols[k]])
    if not new_keys and not deleted:
        memory.seen = (st.shown_id, counts, buf)
        return False, (counts, buf)
    with latent_core.suspended():
        if deleted:
            latent_core.store(st, "gone", [f"{p}|{i}" for p, i in sorted(gone(st) | set(deleted))])
        if new_holes:
            latent_core.store(st, "holes", sorted(set(st["holes"] if "holes" in st else ()) | set(new_holes)))
        if new_keys:
            merged = dict(base_keys)
            merged.update(new_keys)
            latent_core.store(st, "base", latent_math.pack_curves([(p, i, v) for (p, i), v in merged.items()]))
            allv = np.array(base_values, np.float64)
            for c, v in new_cols.items():
                allv[:, c] = v
            latent_core.store(st, "base_values", allv.ravel())
            st.base_edited = True
            latent_core.new_base_version(st)
    memory.seen = None
    return True, (counts, buf)
