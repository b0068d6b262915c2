"""The user's animation is the truth: what the layer last wrote on a curve, and the keys a user
changed since then carried into the layer's original (numpy only).

The layer writes, on the frames an edit reaches, the original moved by the edit (``layer_math``).  A
curve whose keys in the range differ from what the layer last wrote was changed by someone else (a
hand edit, a script, another tool).  Before the next write those changes become the original: a key
the user left outside the layer's frames is the original's key as it is now; a layer key whose value
the user changed is the original's key on that frame with that value (at neutral sliders it shows
exactly that value, an edit adds its offset on top); a layer key the user deleted deletes the
original's key on that frame.  The layer then writes over the new original, so nothing the user did
is reverted.
"""
from __future__ import annotations

import numpy as np

from . import latent_math, layer_math

EPS = latent_math.FRAME_EPS


def layer_keys(base_x: np.ndarray, lo: int, hi: int, shown: np.ndarray, values: np.ndarray,
               base_values: np.ndarray, holes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scene frames, values, offsets) of the keys the layer writes on one curve: its ``shown`` frames
    (scene, sorted) with ``values`` and the frames the write widens them to (``layer_math.written_frames``)
    with the original's ``base_values`` (one per frame of the range), and what the layer adds on each;
    never ``holes`` (scene frames whose key the user deleted) unless the original has a key there again."""
    if not len(shown):
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    keyed = layer_math.written_frames(base_x, shown, lo, hi)
    under = np.asarray(base_values, np.float64)[keyed - lo]
    vals = under.copy()
    vals[np.searchsorted(keyed, shown)] = values
    if holes is not None and len(holes):
        keep = ~np.isin(keyed, holes) | np.isin(keyed, _whole(base_x))
        keyed, vals, under = keyed[keep], vals[keep], under[keep]
    return keyed, vals, vals - under


def _whole(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return np.round(x[np.abs(x - np.round(x)) < EPS]).astype(np.int64)


def deleted_keys(want_x: np.ndarray, now_x: np.ndarray) -> np.ndarray:
    """Whole frames (scene) on which the curve had a key as the layer left it (``want_x``: a layer key or
    the original's) and has none now: the user deleted them."""
    had = _whole(want_x)
    return had[~np.isin(had, _whole(now_x))]


def in_range(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return (x >= lo - EPS) & (x <= hi + EPS)


def expected_co(base: dict | None, lo: int, hi: int, keyed: np.ndarray, vals: np.ndarray,
                offsets: np.ndarray) -> np.ndarray:
    """``co`` ``[n, 2]`` (float32) of the curve's keys inside the range as the layer left it."""
    keys = layer_math.layered_curve(None, base, lo, hi, keyed, vals, _NO_ENUMS, attrs=("co",), offsets=offsets)
    if keys is None:
        return np.zeros((0, 2), np.float32)
    co = keys["co"]
    return co[in_range(co[:, 0], lo, hi)]


_NO_ENUMS = {a: 0 for a in ("handle_left_type", "handle_right_type", "interpolation", "type", "easing")}


def _rows(keys: dict, mask: np.ndarray) -> dict:
    return {a: v[mask] for a, v in keys.items()}


def _under(x: np.ndarray, keyed: np.ndarray) -> np.ndarray:
    """Which of ``x`` lie within the runs of the layer's ``keyed`` frames."""
    out = np.zeros(len(x), bool)
    for a, b in layer_math.runs(np.asarray(keyed, np.int64)):
        out |= (x >= a - EPS) & (x <= b + EPS)
    return out


def _subframe_match(now: dict, base: dict, nsub: np.ndarray, bsub: np.ndarray, keyed, offsets) -> tuple:
    """The original's sub-frame keys under the layer (``bsub``) against the curve's (``nsub``): (base
    rows shown as the layer left them, now rows that are those) -- the rest were changed, inserted or
    deleted by the user."""
    b_same, n_same = np.zeros(len(bsub), bool), np.zeros(len(nsub), bool)
    bi, ni = np.flatnonzero(bsub), np.flatnonzero(nsub)
    if not len(bi) or not len(ni):
        return b_same, n_same
    shown = layer_math.moved_keys({"co": base["co"][bi]}, np.asarray(keyed, np.float64), offsets)["co"]
    nco = now["co"][ni]
    for j, (x, y) in enumerate(shown):
        hit = np.flatnonzero((np.abs(nco[:, 0] - x) < EPS) & (nco[:, 1] == y))
        if len(hit):
            b_same[bi[j]], n_same[ni[hit[0]]] = True, True
    return b_same, n_same


def carried(now: dict, base: dict | None, lo: int, hi: int, keyed: np.ndarray, vals: np.ndarray,
            keyframe: int, offsets: np.ndarray) -> dict:
    """The original's keys of one curve with the user's changes carried in: ``now`` (every attribute
    of the curve's keys now), ``base`` (the original's), the layer's ``keyed`` frames, ``vals`` and
    ``offsets`` (``layer_keys``); ``keyframe``: the integer of key type KEYFRAME (a layer key the user
    changed is the user's now).  The original's sub-frame keys under the layer are shown moved by it
    (``layer_math.moved_keys``): one left so stays the original's, one changed or inserted there is the
    user's at the value set, one deleted goes."""
    eps = EPS
    nx = now["co"][:, 0].astype(np.float64)
    inside = in_range(nx, lo, hi)
    nsub = inside & _under(nx, keyed) & (np.abs(nx - np.round(nx)) >= eps)
    at = np.searchsorted(keyed, np.round(nx)) if len(keyed) else np.zeros(len(nx), np.int64)
    at = np.minimum(at, max(len(keyed) - 1, 0))
    on_layer = inside & (len(keyed) > 0) & (np.abs(nx - np.round(nx)) < eps)
    if len(keyed):
        on_layer &= keyed[at] == np.round(nx)
    expect = np.float32(vals)[at] if len(keyed) else np.zeros(len(nx), np.float32)
    edited = on_layer & (now["co"][:, 1] != expect)
    user = inside & ~on_layer  # the user's keys as they are: kept, changed, inserted or moved
    if base is not None and len(base["co"]):
        bx = base["co"][:, 0].astype(np.float64)
        hidden = in_range(bx, lo, hi) & _under(bx, keyed)  # the original's keys under the layer's runs
        on_frame = hidden & (np.abs(bx - np.round(bx)) < eps)
        b_same, n_same = _subframe_match(now, base, nsub, hidden & ~on_frame, keyed, offsets)
        user &= ~n_same  # (a sub-frame key as the layer left it is the original's, not the user's value)
        present = np.isin(np.round(bx), np.round(nx[on_layer]))
        gone = on_frame & ~present  # a layer key the user deleted: the original's key there goes too
        kept = _rows(base, (on_frame & ~gone) | b_same)
        changed_frames = np.round(nx[edited])
        hit = np.isin(np.round(kept["co"][:, 0]), changed_frames) & \
            (np.abs(kept["co"][:, 0] - np.round(kept["co"][:, 0])) < eps)
        if hit.any():  # the original's key on an edited frame takes the user's value, its handles with it
            new_y = now["co"][edited][np.searchsorted(changed_frames, np.round(kept["co"][hit, 0])), 1]
            dy = new_y - kept["co"][hit, 1]
            kept = {a: v.copy() for a, v in kept.items()}
            for a in ("co", "handle_left", "handle_right"):
                kept[a][hit, 1] += dy
            kept["co"][hit, 1] = new_y
        parts = [_rows(now, ~inside), _rows(now, user), kept]
        fresh = edited & ~np.isin(np.round(nx), np.round(bx[on_frame]))
    else:
        parts = [_rows(now, ~inside), _rows(now, user)]
        fresh = edited
    if fresh.any():  # a layer key changed where the original had none: a key of the user's now
        rows = _rows(now, fresh)
        rows["type"] = np.full(int(fresh.sum()), keyframe, rows["type"].dtype)
        parts.append(rows)
    attrs = list(now)
    merged = {a: np.concatenate([p[a] for p in parts if a in p]) for a in attrs}
    order = np.argsort(merged["co"][:, 0], kind="stable")
    return {a: v[order] for a, v in merged.items()}
