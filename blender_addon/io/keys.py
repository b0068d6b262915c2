"""Bulk key arrays of F-curves: one ``foreach_get`` / ``foreach_set`` per attribute and curve.

A curve's keys travel as a dict of arrays, one per key attribute (``ATTRS``: ``co`` and the handles
``[n, 2]`` float32, the enums ``[n]`` int32, back / amplitude / period float32, the selection flags
bool), as Blender stores them, so writing back what was read is bit-identical.  New keys are built
as rows of the same dict (``core/key_rows.new_rows``, with :func:`new_key_enums`), merged with the
kept keys in numpy (:func:`merge`) and written with :func:`write`; Blender's own ``update()`` then
recomputes the automatic handles, and :func:`put_handles` gives back the handles that must not move.
F-curves are looked up once per operation (:class:`Curves`), not with ``fcurves.find`` per channel.

This is the one module that touches ``keyframe_points`` for Inbetween and the latent layer alike (the
layer's slider writes, whole-curve sets and re-timing are at the end), so it is longer than 300 lines.
"""
from __future__ import annotations

from functools import lru_cache

import bpy
import numpy as np

from ..core import key_rows
from .compat import new_fcurve

VEC2 = ("co", "handle_left", "handle_right")
ENUMS = ("handle_left_type", "handle_right_type", "interpolation", "type", "easing")
FLOATS = ("back", "amplitude", "period")
BOOLS = ("select_control_point", "select_left_handle", "select_right_handle")
ATTRS = {**{a: (np.float32, 2) for a in VEC2}, **{a: (np.int32, 1) for a in ENUMS},
         **{a: (np.float32, 1) for a in FLOATS}, **{a: (bool, 1) for a in BOOLS}}
# What ``keyframe_points.add`` gives a new key (ED_keyframes_add: "defaults, ignoring user
# preferences"; checked in tests/test_addon_keys.py): an attribute that keeps it needs no write.
ADDED = {"handle_left_type": "AUTO_CLAMPED", "handle_right_type": "AUTO_CLAMPED", "interpolation": "BEZIER",
         "type": "KEYFRAME", "easing": "AUTO", "back": 0.0, "amplitude": 0.0, "period": 0.0,
         "select_control_point": True, "select_left_handle": True, "select_right_handle": True}
FRAME_EPS = 1e-3  # frames closer than this are the same frame
FEW = 24  # frames below which values_at calls evaluate rather than reading the keys


@lru_cache(maxsize=None)
def enum_value(prop: str, name: str) -> int:
    return bpy.types.Keyframe.bl_rna.properties[prop].enum_items[name].value


def curve_map(bag) -> dict:
    """``(data_path, index) -> F-curve`` of a channelbag, in one pass (looked up once per operation)."""
    return {(fc.data_path, fc.array_index): fc for fc in bag.fcurves}


class Curves:
    """The F-curves of a channelbag by ``(data_path, array_index)``: one pass over the bag."""

    def __init__(self, bag):
        self.bag = bag
        self.by_channel = curve_map(bag)

    def get(self, path: str, index: int):
        return self.by_channel.get((path, index))

    def ensure(self, path: str, index: int, group: str = ""):
        """The curve, made (in channel group ``group``) when missing."""
        fc = self.by_channel.get((path, index))
        if fc is None:
            fc = self.by_channel[path, index] = new_fcurve(self.bag, path, index, group)
        return fc


class Find:
    """``Curves.get`` without the pass over the bag (each look-up searches it): for a few channels."""

    def __init__(self, bag):
        self.fcurves = bag.fcurves

    def get(self, path: str, index: int):
        return self.fcurves.find(path, index=index)


def read(fc, attrs=tuple(ATTRS)) -> dict[str, np.ndarray]:
    """The curve's keys, attribute by attribute (all of them by default)."""
    kp = fc.keyframe_points
    n = len(kp)
    out = {}
    for a in attrs:
        dtype, width = ATTRS[a]
        buf = np.empty(n * width, dtype=dtype)
        kp.foreach_get(a, buf)
        out[a] = buf.reshape(n, 2) if width == 2 else buf
    return out


def read_co(fcs) -> tuple[tuple, np.ndarray]:
    """(key counts, every curve's ``co`` one curve after the other) of ``fcs`` (None: no curve, count -1)."""
    counts = tuple(len(fc.keyframe_points) if fc is not None else -1 for fc in fcs)
    buf = np.empty(2 * sum(max(n, 0) for n in counts), np.float32)
    at = 0
    for fc, n in zip(fcs, counts, strict=True):
        if n > 0:
            fc.keyframe_points.foreach_get("co", buf[at:at + 2 * n])
            at += 2 * n
    return counts, buf


def empty() -> dict[str, np.ndarray]:
    """The keys of a curve without keys."""
    return {a: np.empty((0, 2) if w == 2 else 0, dtype=t) for a, (t, w) in ATTRS.items()}


@lru_cache(maxsize=None)
def added_value(attr: str):
    v = ADDED[attr]
    return enum_value(attr, v) if isinstance(v, str) else v


def write(fc, keys: dict[str, np.ndarray], exact_handles=False, unwritten=None) -> None:
    """Replace every key of ``fc`` by ``keys`` (sorted by frame), then ``update()``: Blender
    recomputes the automatic handles.  ``exact_handles``: then put back the handles given (all of
    them with True, or the rows of a boolean mask).  Attributes that every key has as
    ``keyframe_points.add`` makes it are not written (``unwritten``: those, when already known)."""
    kp = fc.keyframe_points
    kp.clear()
    kp.add(len(keys["co"]))
    if unwritten is None:
        unwritten = as_added(keys)
    for a, v in keys.items():
        if a not in unwritten:
            kp.foreach_set(a, v.ravel() if isinstance(v, np.ndarray) and v.flags.c_contiguous
                           else np.ascontiguousarray(v).ravel())
    fc.update()
    if exact_handles is True:
        exact_handles = np.ones(len(keys["co"]), dtype=bool)
    if exact_handles is not False and np.any(exact_handles):
        put_handles(fc, keys, exact_handles)


def as_added(keys: dict[str, np.ndarray]) -> set[str]:
    """The attributes whose every key (of one curve or of several stacked) is as ``add`` makes it;
    also the handles, where every key has AUTO_CLAMPED handles on both sides and there are two keys
    or more (``update()`` then computes them from the keys' points alone)."""
    same = {a for a in ADDED if a in keys and (np.asarray(keys[a]) == added_value(a)).all()}
    if {"handle_left_type", "handle_right_type"} <= same and np.shape(keys["co"])[-2] >= 2:
        same |= {"handle_left", "handle_right"}  # (AUTO_CLAMPED on both sides; update() skips a lone key)
    return same


def put_handles(fc, keys: dict[str, np.ndarray], rows: np.ndarray) -> None:
    """After ``update()``: the handles of ``rows`` back to those of ``keys``, the others as they are."""
    kp = fc.keyframe_points
    for a in ("handle_left", "handle_right"):
        now = np.empty((len(kp), 2), dtype=np.float32)
        kp.foreach_get(a, now.ravel())
        now[rows] = keys[a][rows]
        kp.foreach_set(a, now.ravel())


def new_key_enums(bezier: bool = False, aligned=None) -> dict[str, int | np.ndarray]:
    """The enum integers of new keys (``key_rows.new_rows``): GENERATED, easing AUTO, LINEAR (BEZIER with
    ``bezier``), handle types AUTO_CLAMPED (ALIGNED on the keys where the boolean mask ``aligned [m]``
    is set)."""
    enums = dict(_new_key_enums(bezier))
    if aligned is not None:
        htype = np.where(aligned, enum_value("handle_left_type", "ALIGNED"), enums["handle_left_type"])
        enums["handle_left_type"] = enums["handle_right_type"] = htype.astype(np.int32)
    return enums


@lru_cache(maxsize=None)
def _new_key_enums(bezier: bool) -> dict:
    clamped = enum_value("handle_left_type", "AUTO_CLAMPED")
    return {"handle_left_type": clamped, "handle_right_type": clamped,
            "interpolation": enum_value("interpolation", "BEZIER" if bezier else "LINEAR"),
            "type": enum_value("type", "GENERATED"), "easing": enum_value("easing", "AUTO")}


def merge(old: dict, keep: np.ndarray, new: dict) -> tuple[dict, np.ndarray]:
    """The kept rows of ``old`` and all of ``new`` (along the last key axis: ``[..., n]`` /
    ``[..., n, 2]``, several curves with the same frames at once), sorted by frame (stable: a kept
    key before a new one on the same frame).  -> (merged keys, the sort order)."""
    both = {a: np.concatenate([old[a][..., keep, :], new[a]], axis=-2) if w == 2 else
            np.concatenate([old[a][..., keep], new[a]], axis=-1) for a, (_, w) in ATTRS.items()}
    x = both["co"][..., 0]
    order = np.argsort(x.reshape(-1, x.shape[-1])[0] if x.ndim > 1 else x, kind="stable")
    return {a: (v[..., order, :] if ATTRS[a][1] == 2 else v[..., order]) for a, v in both.items()}, order


def replace_in_gaps(fcs, olds, gaps, frames, values, handles=None, statics=None) -> None:
    """On curves whose keys sit on the same frames (``olds``: their keys as read): drop the keys
    strictly inside ``gaps``, key ``frames [m]`` / ``values [C, m]`` there (LINEAR, or BEZIER with
    ``handles`` = (left, right) ``[C, m, 2]`` along the motion), and key each gap end that has no key
    yet with the curve's value there (``statics[c]`` on a curve without keys), so nothing outside
    moves.  Keys outside the gaps keep every attribute (their handles too); keys at a gap's ends
    keep all but their automatic handles, which Blender recomputes; new keys are GENERATED and
    unselected."""
    x = olds[0]["co"][:, 0].astype(np.float64)
    g = np.asarray(gaps, dtype=np.float64).reshape(-1, 2)
    inside = ((x[:, None] > g[:, 0]) & (x[:, None] < g[:, 1])).any(1)
    bounds = np.unique(g)
    ends = np.array([f for f in bounds if not np.any(np.abs(x - f) < 1e-4)])
    values = np.asarray(values, dtype=np.float64)
    if len(ends):  # (the curve's value there: its key frames are the same, so are its missing ends)
        end_values = np.array([[fc.evaluate(f) for f in ends] if len(x) else [s] * len(ends)
                               for fc, s in zip(fcs, statics or [0.0] * len(fcs), strict=True)])
        end_points = np.stack([np.broadcast_to(ends, end_values.shape), end_values], -1)
        frames = np.concatenate([np.asarray(frames, dtype=np.float64), ends])
        values = np.concatenate([values, end_values], -1)
        if handles is not None:
            handles = tuple(np.concatenate([h, end_points], -2) for h in handles)
    bezier = handles is not None  # (Bezier keys: the motion's handles, ALIGNED on all but the gap ends)
    aligned = np.arange(values.shape[-1]) < values.shape[-1] - len(ends) if bezier else None
    new = key_rows.new_rows(frames, values, new_key_enums(bezier, aligned), handles)
    keep = ~inside
    stacked = {a: np.stack([o[a] for o in olds]) for a in ATTRS}
    merged, order = merge(stacked, keep, new)
    # update() recomputes every automatic handle; with the default 'Continuous Acceleration'
    # smoothing that ripples out of the gaps.  Put back the exact handles of the keys that are
    # neither in nor at the end of a gap, so the curve outside the gaps is bit-identical.
    outside = np.concatenate([~np.isin(np.round(x[keep]), bounds), np.zeros(new["co"].shape[-2], dtype=bool)])[order]
    unwritten = as_added(merged)
    for c, fc in enumerate(fcs):
        write(fc, {a: v[c] for a, v in merged.items()}, outside if outside.any() else False, unwritten)


def values_at(fc, frames, co: np.ndarray | None = None) -> np.ndarray:
    """The curve's values at ``frames`` (float64), as ``fc.evaluate`` gives them.  Many frames: a
    key's value where a frame sits exactly on a key (what ``evaluate`` returns there: Blender
    evaluates in float32), ``evaluate`` elsewhere and on curves with modifiers.  ``co``: the keys'
    ``[n, 2]`` when already read."""
    frames = np.asarray(frames, dtype=np.float64)
    if frames.size < FEW or (co is None and 4 * len(fc.keyframe_points) < frames.size):
        # (evaluate costs less than reading the keys; with few keys, most frames fall between them anyway)
        flat = None if frames.size < FEW else _flat(fc, frames)
        if flat is not None:
            return np.full(frames.shape, flat)
        return np.array(list(map(fc.evaluate, frames.tolist())), dtype=np.float64).reshape(frames.shape)
    if co is None:
        co = read(fc, ("co",))["co"]
    out = np.empty(frames.shape)
    x = co[:, 0]
    on = np.zeros(frames.shape, dtype=bool)
    if len(x) and not len(fc.modifiers) and (len(x) < 2 or np.min(np.diff(x)) > 2e-4):
        f32 = frames.astype(np.float32)
        at = np.minimum(np.searchsorted(x, f32), len(x) - 1)
        on = x[at] == f32
        out[on] = co[at[on], 1]
    if not on.all():
        out[~on] = list(map(fc.evaluate, frames[~on].tolist()))
    return out


def _flat(fc, frames) -> float | None:
    """The value ``evaluate`` gives at every one of ``frames`` on a flat curve (an unanimated control keyed with
    the rest: every key and handle at one value, bit for bit, Bezier, linear or constant interpolation, no
    modifier, and constant extrapolation or no frame outside the keys), else None."""
    if len(fc.modifiers) or not len(fc.keyframe_points):
        return None
    k = read(fc, ("co", "handle_left", "handle_right", "interpolation"))
    y = np.concatenate([k["co"][:, 1], k["handle_left"][:, 1], k["handle_right"][:, 1]])
    if not np.isfinite(y[0]) or not (y.view(np.int32) == y[:1].view(np.int32)).all():
        return None
    bezier, const, linear = _INTERPOLATIONS()
    ipo = k["interpolation"][:-1]
    if not ((ipo == bezier) | (ipo == const) | ((ipo == linear) & (y[0] != 0 or not np.signbit(y[0])))).all():
        return None  # (a linear segment adds +0.0 to its first value: -0.0 becomes 0.0)
    x = k["co"][:, 0]
    if fc.extrapolation != "CONSTANT" and (frames.min() < x[0] or frames.max() > x[-1]):
        return None  # (and so may linear extrapolation)
    return float(y[0])


@lru_cache(maxsize=None)
def _INTERPOLATIONS() -> tuple:
    return tuple(enum_value("interpolation", n) for n in ("BEZIER", "CONSTANT", "LINEAR"))


# -- the latent layer's writes (io/latent and latent/ call these: the one module that touches keys) --
MOTION = ("co", "handle_left", "handle_right", "interpolation", "type")  # what a layer key changes


def read_motion(fc) -> dict:
    """The attributes of a curve's keys that the latent layer changes (``MOTION``)."""
    return read(fc, MOTION)


def overwrite_values(fcs: list, frames: np.ndarray, values: np.ndarray, co: np.ndarray | None = None) -> list[int]:
    """The slider's fast path: on each curve of ``fcs`` (None: no curve) the keys already on every one of
    ``frames`` (scene frames, sorted) get the new values ``values[:, c]``, one ``foreach_get`` and one
    ``foreach_set`` of ``co`` per curve, the checks and the assignment in numpy over all curves at once
    (``co``: every curve's ``co`` just read, one curve after the other: not read again, and updated in place).
    -> the curves left as they were because a frame has no key there (or no curve).  Handles stay: they
    belong to the layer's LINEAR keys (``key_rows.new_rows``), whose handles shape no whole frame (a
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
        for kp, row in zip(kps, grid, strict=True):
            if read:
                kp.foreach_get("co", row)
        x = grid[:, 0::2]
        # ... and the first curve's keys on the frames sit at the same rows of every curve (the common
        # case, every curve keyed alike): one search for all, checked where it is used
        rows = np.minimum(np.searchsorted(x[0], frames - FRAME_EPS), counts[0] - 1)
        if not len(frames) or (np.abs(x[:, rows] - frames) < FRAME_EPS).all():
            grid[:, 2 * rows + 1] = values.T
            for kp, row in zip(kps, grid, strict=True):
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
        rows[c] = start[c] + np.minimum(np.searchsorted(x[start[c]:start[c + 1]], frames - FRAME_EPS), sizes[c] - 1)
    ok &= (np.abs(x[rows] - frames[None]) < FRAME_EPS).all(1) if len(frames) else ok
    co[2 * rows[ok] + 1] = values.T[ok]
    for c in np.flatnonzero(ok).tolist():
        kps[c].foreach_set("co", co[at[c]:at[c + 1]])
    return np.flatnonzero(~ok).tolist()


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
    buf = {a: np.empty((int(start[-1]), 2) if a in VEC2 else int(start[-1]),
                       np.float32 if a in VEC2 else np.int32) for a in MOTION}
    ok = blocks["ok"] & (sizes >= n)
    for c in np.flatnonzero(ok):
        fcs[c].keyframe_points.foreach_get("co", buf["co"][start[c]:start[c + 1]].ravel())
    at = np.zeros(len(fcs), dtype=np.int64)
    want = np.arange(lo, hi + 1, dtype=np.float32)
    for c in np.flatnonzero(ok):  # where each curve's keys of the range begin, and that they are all there
        x = buf["co"][start[c]:start[c + 1], 0]
        i0 = int(np.searchsorted(x, lo - FRAME_EPS))
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


def retime_curve(fc, lo: float, old_hi: float, new_hi: float, keep_inside: bool, protected=()) -> None:
    """Stretch ``[lo, old_hi]`` to ``[lo, new_hi]`` on one curve: keys inside are re-timed in
    proportion (all of them with ``keep_inside``, else only those on ``protected`` frames; the
    rest are dropped), keys after move by the change in length, keys before stay."""
    keys = read(fc)
    if not len(keys["co"]):
        return
    x = keys["co"][:, 0].astype(np.float64)
    inside = (x >= lo - FRAME_EPS) & (x <= old_hi + FRAME_EPS)
    after = x > old_hi + FRAME_EPS
    keep = ~inside | (keep_inside & inside)
    if not keep_inside and len(protected):
        keep |= inside & np.isin(np.round(x), np.asarray(protected)) & (np.abs(x - np.round(x)) < FRAME_EPS)
    r = (new_hi - lo) / (old_hi - lo)
    out = {a: v[keep].copy() for a, v in keys.items()}
    xi = x[keep]
    ins, aft = inside[keep], after[keep]
    for a in ("co", "handle_left", "handle_right"):
        col = out[a][:, 0].astype(np.float64)
        moved = np.where(ins, lo + (xi - lo) * r + (col - xi) * r, col)
        out[a][:, 0] = np.where(aft, col + (new_hi - old_hi), moved).astype(np.float32)
    write(fc, out, exact_handles=True)


def set_changed(fc, current: dict, keys: dict) -> None:
    """Keys on the same frames as ``current`` (the attributes read): only the attributes that differ are set."""
    kp = fc.keyframe_points
    for a, v in current.items():  # (only the attributes read: the others stay as they are)
        if not np.array_equal(v, keys[a]):
            kp.foreach_set(a, np.ascontiguousarray(keys[a]).ravel())


# -- counts, selection and inserted keys (Inbetween's reads, the batch's key choice) --------------------
def count(fc) -> int:
    """How many keys the curve has (0: no curve)."""
    return len(fc.keyframe_points) if fc is not None else 0


def select(fc, on) -> None:
    """Select exactly the keys where the boolean mask ``on [n]`` is set (True: every key)."""
    kp = fc.keyframe_points
    kp.foreach_set("select_control_point", np.ones(len(kp), bool) if on is True else np.asarray(on, bool))


def insert_selected(fc, frames) -> None:
    """Key ``fc`` on each of ``frames`` with its own value there, as Blender inserts a key, selected; then
    ``update()``, and the handles of the keys it had are put back, so the curve around them does not move."""
    old = read(fc, VEC2)
    kp = fc.keyframe_points
    for f in frames:
        kp.insert(f, fc.evaluate(f), options={"FAST"}).select_control_point = True
    fc.update()
    new = read(fc, VEC2)
    idx = np.searchsorted(new["co"][:, 0], old["co"][:, 0])
    for a in ("handle_left", "handle_right"):
        new[a][idx] = old[a]
        kp.foreach_set(a, new[a].ravel())
