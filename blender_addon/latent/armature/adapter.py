"""The armature adapter of latent controls: the edit layer on F-curves, Bake, Remove (the layer's
frames are computed in ``layer``, Resample is ``resample``).

Latent edits are a layer over the range's original motion (``core.layer_math``): Encode writes no
key; a segment whose raw points and sliders are the encoded ones shows the original keys themselves
(``base``: the user's keys, or the fill an in-betweened range was made with), and an edited one shows
original + (decode(edited) - decode(encoded)) on every frame it reaches.  ``sync`` is the one place
that writes: it compares each segment's signature (what its frames show) with its inputs, decodes
what it needs (cached by fingerprint, so a slider moved back decodes to the very same numbers) and
writes only changed frames when the layout of written frames stays, whole curves when it changes.
Every check and the backend call come before the first write: a refusal leaves the scene as it was.

A little over 300 lines: the one writer of the layer with Bake and Remove, which must read the same frames.
"""
from __future__ import annotations

import functools

import numpy as np

from ... import preferences
from ...core import carry_math, latent_math, layer_math
from ...core.errors import Refusal
from ...io import keys as keys_io
from ...io import latent as latent_io
from ...io import scene as scene_io
from .. import core as latent_core
from .. import state
from . import carry, layer, take


def protected(st) -> np.ndarray:
    """Frames (relative to the range start) never written: the keys of an in-betweened range."""
    if st.task != "INBETWEEN":
        return np.zeros(0, dtype=np.int64)
    keys = latent_core.array(st, "keys", dtype=np.int64)
    return np.array([latent_math.map_frame(k, st.source_frames, st.frames) for k in keys], dtype=np.int64)


def bones_of(st) -> tuple[list[str], set, set]:
    return (list(st["bones"]), set(latent_core.array(st, "rotation_joints", dtype=int).tolist()),
            set(latent_core.array(st, "position_joints", dtype=int).tolist()))


def channels_of(obj, st) -> list:
    """The driven channels (``latent_io.channel_list``); cached while the armature's bones and their
    rotation modes stay (one ``foreach_get`` checks them: a slider change asks every time)."""
    pose = obj.pose.bones
    modes = np.zeros(len(pose), dtype=np.int32)
    pose.foreach_get("rotation_mode", modes)

    def make():
        bones, rj, pj = bones_of(st)
        missing = [b for b in bones if b not in pose]
        if missing:
            raise Refusal(f"{obj.name} lost bones since encoding ({', '.join(missing[:4])}); Bake or Remove the "
                          "latent controls")
        got = latent_io.channel_list(obj, bones, rj, pj)
        why = take.modes_changed(obj, len(got))  # (the original is in the encoded modes' channels: never mixed)
        if why:
            raise Refusal(why)
        return got
    return state.of(st).memo("channels", (tuple(pose.keys()), modes.tobytes()), make)


def curve_keys(st, channels) -> list[tuple[str, int]]:
    """``(data_path, index)`` of each channel, made once per channel list (``channels_of`` keeps it)."""
    got = state.of(st).memo("curve keys", id(channels), lambda: (channels, [(scene_io.bone_path(b, p), i)
                                                                            for b, p, i, _ in channels]))
    return got[1]  # (the list is kept with its keys: its id names it while it lives)


def base_values(st, channels) -> np.ndarray:
    """The original's channel values on every frame of the range ``[frames, C]`` (read-only), read from
    the range once per version of the original (a slider change asks every time; 300 x 69 numbers)."""
    def make():
        got = latent_core.array(st, "base_values", (st.frames, len(channels)))
        got.setflags(write=False)
        return got
    return state.of(st).memo("base values", (st.base_version, st.frames, len(channels)), make)


def base_keys(st) -> dict:
    """The original's keys per curve (the user's curves, or the in-betweened fill), unpacked once per version."""
    def make():
        g = st["base"] if "base" in st else st["original"]
        return latent_math.unpack_curves({k: g[k] for k in g.keys()}, latent_io.key_dtypes())
    return state.of(st).memo("base keys", st.base_version, make)


def subframe_curves(st) -> set:
    """``(data_path, index)`` of the curves whose original has keys between whole frames inside the range
    (the layer moves them with it: ``layer_math.moved_keys``), found once per version of the original."""
    def make():
        eps, lo, hi = latent_math.FRAME_EPS, st.frame_start, st.frame_end
        out = set()
        for key, keys in base_keys(st).items():
            x = keys["co"][:, 0].astype(np.float64)
            if ((x > lo + eps) & (x < hi - eps) & (np.abs(x - np.round(x)) >= eps)).any():
                out.add(key)
        return out
    return state.of(st).memo("sub-frame curves", (st.base_version, st.frame_start, st.frame_end), make)


def every_frame(st, channels, originals) -> dict | None:
    """The original's keys of the range, stacked for a layout change in one pass (``keys_io.set_every_frame``)."""
    return state.of(st).memo("every frame", (st.base_version, st.frames, tuple(c[3] for c in channels)),
                             lambda: latent_io.every_frame_blocks([originals.get((scene_io.bone_path(b, p), i))
                                                                   for b, p, i, _ in channels],
                                                                  st.frame_start, st.frame_end))


def original_keys(st) -> dict:
    g = st["original"]
    return latent_math.unpack_curves({k: g[k] for k in g.keys()}, latent_io.key_dtypes())


def sync(obj, context=None, force: bool = False) -> bool:
    """Write the frames whose keys do not show their segment's inputs; True if any was.  A segment at
    its encoded inputs shows the original keys, bit for bit; keys the user changed since the last
    write are carried into the original first (``carry``), so the layer never reverts them."""
    st = obj.splinetween_latent
    if not st.active:
        return False
    raw = latent_core.read_raw(obj, st)
    bounds, sigs, edits = latent_core.plan(st, raw)
    nsigs = latent_core.neutral_signatures(st, bounds)
    shown = [seg.signature for seg in st.segments]
    changed = [s for s in range(len(bounds)) if force or sigs[s] != shown[s]]
    if not changed:
        return False
    take.check(obj)
    bag = scene_io.channelbag(obj)
    if bag is None:
        raise Refusal(f"{obj.name} has no action any more; Bake or Remove the latent controls")
    if not st.shown_id:  # a range saved before the layer recorded its writes: one whole write records them
        force, changed = True, list(range(len(bounds)))
    everything = channels_of(obj, st)
    base = base_values(st, everything)
    cols = writable(st, everything)
    channels = everything if len(cols) == len(everything) else [everything[c] for c in cols]
    curves = keys_io.curve_map(bag)
    fcs = [curves.get(k) for k in curve_keys(st, everything)]
    written = fcs if len(cols) == len(fcs) else [fcs[c] for c in cols]
    carried, read = carry.reconcile(obj, st, bag, channels, cols, written, base_keys(st), base)
    if carried:
        base = base_values(st, everything)  # (the original changed: every driven curve is written again)
        cols = writable(st, everything)
        channels = everything if len(cols) == len(everything) else [everything[c] for c in cols]
        force, changed = True, list(range(len(bounds)))
    seams, prot = st.task == "AUTOENCODER", protected(st)
    edited = layer_math.edited_segments(sigs, nsigs)
    whole = force or set(edited) != set(layer_math.edited_segments(shown, nsigs))
    frames = _reach(tuple(bounds), tuple(edited if whole else changed), seams, prot.tobytes())
    values = np.zeros((0, len(everything)))
    if len(frames):
        path, why = latent_core.checkpoint_for(st, context, latent_math.STAT_EVERY)  # (a drag asks every change)
        if path is None:
            raise Refusal(why)
        frames, values = layer.layer_frames(obj, st, path, preferences.settings(context), (raw, bounds, sigs, edits),
                                            nsigs, frames, everything, base)
    if len(cols) < len(everything):  # bones under constraints, curves deleted: never written
        values, base = values[:, cols], base[:, cols]
    current = write(obj, st, bag, channels, frames, values, base, whole, None if whole else read[1], curves)
    carry.record(st, frames, values, whole)
    if current:  # (the partial write: the same curves, their ``co`` as written in place)
        carry.remember(st, None, read)
    else:  # (curves may have been made)
        curves = keys_io.curve_map(bag)
        carry.remember(st, [curves.get(k) for k in curve_keys(st, channels)])
    with latent_core.suspended():
        for s in changed:
            st.segments[s].signature = sigs[s]
        if st.status:
            st.status = ""
    obj.update_tag(refresh={"TIME"})
    return True


@functools.lru_cache(maxsize=64)
def _reach(bounds: tuple, segments: tuple, seams: bool, protected: bytes) -> np.ndarray:
    """``layer_math.reach`` (``protected``: int64 bytes), made once per layout: a dragged slider asks for
    the same frames every change; a pure function of its arguments, so shared by every range."""
    frames = layer_math.reach(list(bounds), segments, seams, protected=np.frombuffer(protected, dtype=np.int64))
    frames.setflags(write=False)
    return frames


def writable(st, channels) -> list[int]:
    """Columns of ``channels`` the layer may write: not those of bones Encode found driven by constraints,
    nor curves the user deleted since (``carry.gone``)."""
    left = set(st["left"]) if "left" in st else set()
    deleted = carry.gone(st)
    if not left and not deleted:
        return list(range(len(channels)))
    return [c for c, ch in enumerate(channels)
            if ch[0] not in left and (scene_io.bone_path(ch[0], ch[1]), ch[2]) not in deleted]


def write(obj, st, bag, channels, frames: np.ndarray, values: np.ndarray, base: np.ndarray, whole: bool,
          co: np.ndarray | None = None, curves: dict | None = None) -> bool:
    """Layered values at ``frames`` (relative) -> the curves.  Not ``whole``: only those frames' values
    change (each already has a key; ``co``: the curves' ``co`` just read, updated in place); ``whole``:
    every driven curve is set to the original keys of the range with the layer keyed on its frames (and
    the frames between them and the original's nearest keys, keyed with the original's own values).
    ``curves``: the bag's ``curve_map`` when already made.  -> whether ``co`` is what the curves hold now."""
    curves = keys_io.curve_map(bag) if curves is None else curves
    lo, hi = st.frame_start, st.frame_end
    absolute = frames + lo
    fcs = [curves.get(k) for k in curve_keys(st, channels)]
    originals, enums, holes = base_keys(st), keys_io.new_key_enums(), carry.holes(st)
    if not whole:
        redo = keys_io.overwrite_values(fcs, absolute, values, co)
        subs = subframe_curves(st)
        if subs:  # (curves with sub-frame keys in the range: set whole, those keys move with the layer)
            redo = sorted(set(redo) | {c for c, k in enumerate(curve_keys(st, channels)) if k in subs})
    else:
        blocks = every_frame(st, channels, originals)
        redo = keys_io.set_every_frame(fcs, blocks, lo, hi, absolute, values, enums) if blocks else \
            list(range(len(channels)))
    if not redo:
        return not whole and co is not None
    for c in redo:
        bone, prop, i, _ = channels[c]
        path = scene_io.bone_path(bone, prop)
        fc = curves.get((path, i))
        orig = originals.get((path, i))
        base_x = orig["co"][:, 0].astype(np.float64) if orig is not None else np.zeros(0)
        keyed, vals, offsets = carry_math.layer_keys(base_x, lo, hi, absolute, values[:, c], base[:, c],
                                                     holes.get((path, i)))
        now = keys_io.read_motion(fc) if fc is not None else None  # what a layer key changes ...
        keys = layer_math.layered_curve(now, orig, lo, hi, keyed, vals, enums, keys_io.MOTION, offsets) \
            if now is not None else None
        if keys is None or not np.array_equal(keys["co"][:, 0], now["co"][:, 0]):
            now = scene_io.read_keys(fc) if fc is not None else None  # ... unless keys come or go: every
            keys = layer_math.layered_curve(now, orig, lo, hi, keyed, vals, enums,
                                            offsets=offsets)  # attribute, to set all
        latent_io.set_curve(bag, curves, path, i, bone, keys, now)
    return False


def replace_refusal(obj) -> str:
    """Why Inbetween stops on an armature with latent controls, and the option that lets it go on: what
    Replace Latent Controls would bake, in the action the controls belong to (another take, maybe)."""
    st = obj.splinetween_latent
    made = "Inbetween (Editable)" if st.task == "INBETWEEN" else "Encode"
    ad = obj.animation_data
    now = ad.action if ad is not None else None
    fix = "or run Inbetween with replace_latent=True (the batch: --replace-latent); nothing was changed"
    if st.action is not None and st.action != now:
        here = f"'{now.name}'" if now is not None else "no action"
        return (f"{obj.name} has latent controls on frames {st.frame_start}-{st.frame_end} of the action "
                f"'{st.action.name}' (from {made}), not of {here}, which it plays now; Replace Latent Controls "
                f"would bake them into '{st.action.name}' (its motion stays as keys there, the sliders go) and then "
                f"in-between {here}. Bake or Remove them first (they act on '{st.action.name}'), {fix}")
    return (f"{obj.name} has latent controls on frames {st.frame_start}-{st.frame_end} (from {made}); Inbetween "
            f"would bake them (keep their motion as keys, drop the sliders). Bake or Remove them first, {fix}")


def replace_question(obj) -> str:
    """The confirmation Inbetween asks before Replace Latent Controls bakes a range (the UI)."""
    st = obj.splinetween_latent
    ad = obj.animation_data
    if st.action is not None and (ad is None or st.action != ad.action):
        return (f"Frames {st.frame_start}-{st.frame_end} of '{st.action.name}' (another action) have latent "
                f"controls: Inbetween bakes them into '{st.action.name}' and removes the sliders")
    return (f"Frames {st.frame_start}-{st.frame_end} have latent controls: Inbetween keeps their motion as keys "
            "and removes the sliders")


def bake(obj) -> str:
    st = latent_core.controls_of(obj)
    a, b = st.frame_start, st.frame_end
    latent_core.clear(obj)
    return f"Baked frames {a}-{b}: plain keys, latent controls removed"


def settle(obj, st, bag) -> None:
    """Carry keys changed since the layer's last write into its original (``carry``) before an operation
    that reads the original (Remove, Resample); nothing to do when a bone of the range is gone."""
    try:
        everything = channels_of(obj, st)
    except Refusal:
        return
    cols = writable(st, everything)
    curves = keys_io.curve_map(bag)
    carry.reconcile(obj, st, bag, [everything[c] for c in cols], cols,
                    [curves.get(k) for k in (curve_keys(st, everything)[c] for c in cols)],
                    base_keys(st), base_values(st, everything))


def remove(obj) -> str:
    """The layer goes and nothing the user did is lost: the sliders' offset is taken away.  Keys changed
    by hand since the range was made (``st.base_edited``): the original as it is now, those changes
    carried in (the user's keys, or Inbetween's fill, with every hand edit; a Resample stays).  None: the
    keys from before (Encode: the user's keys; Inbetween: the keys it filled between; a Resample undone).
    The take the range was made on is restored, whichever action the armature plays now, and no curve is
    made for a bone that is gone."""
    st = latent_core.controls_of(obj)
    bag = take.channelbag(obj)
    a, b = st.frame_start, st.frame_end
    note, edited = "", False
    if bag is None:
        note = " (the action is gone: nothing to restore)"
    else:
        settle(obj, st, bag)
        edited = st.base_edited
        keys = base_keys(st) if edited else original_keys(st)
        lost = sorted({p.split('"')[1] for p, _ in keys if p.startswith("pose.bones[")
                       and p.split('"')[1] not in obj.pose.bones})
        deleted = carry.gone(st)  # curves the user deleted since: not made again
        keys = {k: v for k, v in keys.items() if k not in deleted
                and not (k[0].startswith("pose.bones[") and k[0].split('"')[1] in lost)}
        latent_io.restore(bag, keys, a, b, b if edited else a + st.source_frames - 1)
        if lost:
            note = f" (not for {', '.join(lost[:4])}{' …' if len(lost) > 4 else ''}: no such bone any more)"
    st_task = st.task
    latent_core.clear(obj)
    if edited:
        made = "Inbetween's fill" if st_task == "INBETWEEN" else "your keys"
        return (f"Removed the latent controls of frames {a}-{b}: {made} with the keys you changed since, without "
                f"the sliders' offset{note}")
    return f"Removed the latent controls of frames {a}-{b}; the original keys are back{note}"

