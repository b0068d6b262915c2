"""Latent editing without bpy: property names, frame maps, seams, signatures, key merges.

Pure Python + numpy (tested on its own in tests/test_latent_math.py).  Frames here are 0-based
and relative to the start of the encoded range.

Longer than 300 lines: the range bookkeeping both wings share (names, frame maps, seams, signatures),
whose parts use each other.
"""
from __future__ import annotations

import functools
import hashlib
import math
import os
import struct
import time
from pathlib import Path

import numpy as np

from . import quat

POINTS = 4  # cubic Bezier control points per segment
RAW_PREFIX = "splinetween_s"
FRAME_EPS = 1e-3


def raw_name(segment: int, point: int) -> str:
    """The object's ID property holding control point ``point`` of segment ``segment``."""
    return f"{RAW_PREFIX}{segment:02d}_c{point}"


def is_raw_path(data_path: str) -> bool:
    """An F-curve or driver path that animates a raw control point."""
    return data_path.startswith(f'["{RAW_PREFIX}')


# -- frames ---------------------------------------------------------------------------------------
def output_bounds(segments, source_frames: int, frames: int) -> list[tuple[int, int]]:
    """Output range (inclusive, sharing end frames) of each source segment when a range of
    ``source_frames`` frames is decoded into ``frames`` frames (stretched or compressed)."""
    r = (frames - 1) / (source_frames - 1)
    cuts = [math.floor(a * r + 0.5) for a, _ in segments] + [frames - 1]
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def map_frame(frame: int, source_frames: int, frames: int) -> int:
    return int(np.floor(frame * (frames - 1) / (source_frames - 1) + 0.5))


def check_length(segments, source_frames: int, frames: int, whole_factors: bool) -> str | None:
    """Why a range cannot be decoded into ``frames`` frames, or None."""
    if whole_factors and (frames - 1) % (source_frames - 1):
        return (f"an in-betweened range stretches only by whole factors: {source_frames} frames -> "
                f"{', '.join(str((source_frames - 1) * s + 1) for s in (1, 2, 3, 4))}, ...")
    short = [i for i, (a, b) in enumerate(output_bounds(segments, source_frames, frames)) if b - a < 1]
    if short:
        least = max(2, int(np.ceil((source_frames - 1) / min(b - a for a, b in segments))) + 1)
        return f"{frames} frames leave segment {short[0] + 1} without frames (use at least {least})"
    return None


# -- what the F-curves show -----------------------------------------------------------------------
def signature(points: np.ndarray, amplify: float, timing: float, principal, length: int, style=()) -> str:
    """A fingerprint of everything that decides one segment's decoded frames; ``style``: ``((name, strength),
    ...)``, no style (or strength 0) hashing nothing, so a range saved before styles keeps its signatures."""
    h = hashlib.sha1(np.ascontiguousarray(points, dtype=np.float64).tobytes())
    h.update(struct.pack(f"={3 + len(principal)}d", amplify, timing, length, *principal))  # (float64s, native order)
    for name, strength in style:
        if strength != 0.0:
            h.update(name.encode("utf-8") + b"\0" + struct.pack("=d", strength))
    return h.hexdigest()[:24]


def bad_values(raw: np.ndarray) -> str | None:
    """A message naming the first raw control point that is NaN or infinite, or None."""
    finite = np.isfinite(raw)
    if finite.all():
        return None
    bad = np.argwhere(~finite)
    s, c, i = (int(x) for x in bad[0])
    return (f"{raw_name(s, c)}[{i}] is {raw[s, c, i]}; the motion was left as it was (type a number, "
            "or Reset the segment)")


SEAM_RAMP = 0.25  # share of a segment over which it eases into the pose at a shared end frame


@functools.lru_cache(maxsize=256)
def ramp(m: int) -> np.ndarray:
    """Weights (1 at the shared end frame, easing to 0) of the frames a segment of ``m`` frames
    blends towards a seam: a quarter of the segment, at most half of it, at least the seam itself.
    Cached (a slider change asks a dozen times) and read-only."""
    r = max(1, min(int(round(SEAM_RAMP * (m - 1))), (m - 1) // 2))
    x = np.arange(r) / r
    w = 1.0 - x * x * (3.0 - 2.0 * x)
    w.setflags(write=False)
    return w


def midpoint(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Halfway along the shorter arc between unit quaternions: ``slerp(a, b, 0.5)``, which for unit
    quaternions is the normalised sum (with ``b`` on ``a``'s side), in a third of the operations."""
    s = a + np.where(np.einsum("...i,...i->...", a, b)[..., None] < 0, -b, b)
    return s / np.sqrt(np.einsum("...i,...i->...", s, s))[..., None]


def seam_pose(parts: dict, left: int) -> tuple[np.ndarray, np.ndarray]:
    """The pose at the frame segments ``left`` and ``left + 1`` share: the mean of both sides."""
    (lr, lp), (rr, rp) = parts[left], parts[left + 1]
    return midpoint(lr[-1], rr[0]), 0.5 * (lp[-1] + rp[0])


# (a_i b_j) -> (a * b)_k: the products of the basis quaternions, by the one ``mul`` (``+ 0.0``: no negative zeros)
_HAMILTON = (quat.mul(np.eye(4)[:, None], np.eye(4)[None]) + 0.0).reshape(16, 4)


def _qmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Hamilton product as one outer product and one matrix product: on the few hundred quaternions
    of a seam ramp, twice as fast as the component-wise product (equal to float rounding)."""
    prod = a[..., :, None] * b[..., None, :]  # (broadcasts the leading axes)
    return (prod.reshape(-1, 16) @ _HAMILTON).reshape(prod.shape[:-2] + (4,))  # (one product, not one per row)


def _seam_turns(seam: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The turn that takes each seam frame's rotation ``seam [..., J, 4]`` to its seam pose ``q``, the
    shorter way round, as (half angle ``[..., J]``, unit axis ``[..., J, 3]``)."""
    delta = _qmul(quat.conj(seam), q)
    delta = np.where(delta[..., :1] < 0, -delta, delta)
    half = np.arccos(np.clip(delta[..., 0], -1.0, 1.0))
    s = np.sin(half)
    return half, delta[..., 1:] / np.where(s > 1e-12, s, 1.0)[..., None]


def _turned(rows: np.ndarray, half: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """``rows [..., 4]`` turned by the half angles ``half`` about ``axis`` (the slerp from the identity
    towards a seam's turn, written out: ``(cos, sin * axis)``), normalised."""
    step = np.empty(half.shape + (4,))
    step[..., 0] = np.cos(half)
    step[..., 1:] = np.sin(half)[..., None] * axis
    moved = _qmul(rows, step)
    moved /= np.maximum(np.sqrt(np.einsum("...i,...i->...", moved, moved)), 1e-12)[..., None]
    return moved


def _ease(rot, pos, idx, q, p, w) -> None:
    """Move frames ``idx`` (``idx[0]`` the seam) towards the seam pose ``q``, ``p`` with weights ``w``:
    each frame turns by the fraction ``w`` of the turn that takes the seam frame to ``q``."""
    half, axis = _seam_turns(rot[idx[0]], q)  # [J], [J, 3]
    rot[idx] = _turned(rot[idx], w[:, None] * half[None], axis[None])
    pos[idx] += w[:, None, None] * (p - pos[idx[0]])
    rot[idx[0]], pos[idx[0]] = q, p


def segment_values(parts: dict, s: int, count: int, seams: bool, sides=(True, True)) -> tuple[np.ndarray, np.ndarray]:
    """Frames to write for segment ``s`` (``parts[s] = (rot, pos)`` its own decode).  With ``seams``,
    each end frame it shares with a neighbour becomes the mean of both sides (as Engine.decode joins
    segments) and the segment eases into that pose over :func:`ramp` frames, so the motion has no
    step at the seam (neighbours decoded apart, or edited apart, need not meet).  ``sides``: which
    ends to ease (frames outside a ramp are never touched)."""
    rot, pos = parts[s][0].copy(), parts[s][1].copy()
    if not seams:
        return rot, pos
    w = ramp(len(rot))
    if s > 0 and sides[0]:
        _ease(rot, pos, np.arange(len(w)), *seam_pose(parts, s - 1), w)
    if s < count - 1 and sides[1]:
        _ease(rot, pos, len(rot) - 1 - np.arange(len(w)), *seam_pose(parts, s), w)
    return rot, pos


def segments_values(parts: dict, items, count: int, seams: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`segment_values` of several ``(segment, sides)`` at once (equal to float rounding): the
    segments laid end to end in one array, the seam poses in one pass and every ease in one more, its
    rows gathered with one index whatever the ramps' lengths (a slider change joins its segments and their
    neighbours: six eases, three seams, in ~20 array operations instead of ~25 per ramp length).
    A segment's two ramps never overlap, so both of its ends ease at once.  The segments' arrays are views
    of the one array."""
    segs = [s for s, _ in items]
    at = [0]
    for s in segs:
        at.append(at[-1] + len(parts[s][0]))
    rot = np.concatenate([parts[s][0] for s in segs]) if segs else np.zeros((0, 0, 4))
    pos = np.concatenate([parts[s][1] for s in segs]) if segs else np.zeros((0, 0, 3))
    out = [(rot[at[k]:at[k + 1]], pos[at[k]:at[k + 1]]) for k in range(len(segs))]
    if not seams:
        return out
    eases = []  # (left segment of the seam, the ease's rows in ``rot`` (the seam first), its weights)
    for k, (s, sides) in enumerate(items):
        m = at[k + 1] - at[k]
        w = ramp(m)  # (the weights depend on the segment's length only)
        if s > 0 and sides[0]:
            eases.append((s - 1, at[k] + np.arange(len(w)), w))
        if s < count - 1 and sides[1]:
            eases.append((s, at[k] + m - 1 - np.arange(len(w)), w))
    if not eases:
        return out
    lefts = sorted({a for a, _, _ in eases})
    q = midpoint(np.stack([parts[a][0][-1] for a in lefts]), np.stack([parts[a + 1][0][0] for a in lefts]))
    p = 0.5 * (np.stack([parts[a][1][-1] for a in lefts]) + np.stack([parts[a + 1][1][0] for a in lefts]))
    where = {a: i for i, a in enumerate(lefts)}
    seam = np.array([where[a] for a, _, _ in eases])  # [E]: each ease's seam pose
    first = np.array([rows[0] for _, rows, _ in eases])  # [E]: each ease's seam frame
    idx = np.concatenate([rows for _, rows, _ in eases])  # [R]: every eased row
    w = np.concatenate([w for _, _, w in eases])  # [R]
    of = np.repeat(np.arange(len(eases)), [len(rows) for _, rows, _ in eases])  # [R]: the ease of each row
    half, axis = _seam_turns(rot[first], q[seam])  # [E, J], [E, J, 3]
    moved = _turned(rot[idx], w[:, None] * half[of], axis[of])
    locs = pos[idx]
    locs += w[:, None, None] * (p[seam] - pos[first])[of]
    rot[idx], pos[idx] = moved, locs
    rot[first], pos[first] = q[seam], p[seam]  # (the seam frames exactly the seam pose)
    return out


# -- key arrays (scene_io.read_keys dicts) --------------------------------------------------------
def _rows(keys: dict, mask: np.ndarray) -> dict:
    return {a: v[mask] for a, v in keys.items()}


def _shift(keys: dict, delta: float) -> dict:
    out = dict(keys)
    for a in ("co", "handle_left", "handle_right"):
        out[a] = keys[a].copy()
        out[a][:, 0] += np.float32(delta)
    return out


def merge_restore(cur: dict | None, orig: dict | None, lo: float, cur_hi: float, orig_hi: float) -> dict | None:
    """A curve's keys after Remove: the original keys inside ``[lo, orig_hi]`` and the current keys
    outside ``[lo, cur_hi]`` (those after it moved back by ``cur_hi - orig_hi``).  A current key
    that still is the original key of its frame (same frame, same value) takes back every original
    attribute, so an untouched curve comes back bit-identical; keys edited since stay as they are.
    None: the curve did not exist and nothing is left on it."""
    parts = []
    if orig is not None:
        x = orig["co"][:, 0]
        parts.append(_rows(orig, (x >= lo - FRAME_EPS) & (x <= orig_hi + FRAME_EPS)))
    if cur is not None and len(cur["co"]):
        x = cur["co"][:, 0]
        before, after = x < lo - FRAME_EPS, x > cur_hi + FRAME_EPS
        kept = [_rows(cur, before)]
        if after.any():
            kept.append(_shift(_rows(cur, after), orig_hi - cur_hi) if cur_hi != orig_hi else _rows(cur, after))
        outside = {a: np.concatenate([k[a] for k in kept]) for a in cur}
        if orig is not None and len(outside["co"]):
            ox = orig["co"][:, 0]
            o_out = np.flatnonzero((ox < lo - FRAME_EPS) | (ox > orig_hi + FRAME_EPS))
            at = {int(round(float(ox[i]) * 1000)): i for i in o_out}
            for r, (f, v) in enumerate(outside["co"]):
                i = at.get(int(round(float(f) * 1000)))
                if i is not None and orig["co"][i, 1] == v and abs(ox[i] - f) < FRAME_EPS:
                    for a in outside:
                        outside[a][r] = orig[a][i]
        parts.append(outside)
    if orig is None and (not parts or not len(parts[-1]["co"])):
        return None
    merged = {a: np.concatenate([p[a] for p in parts]) for a in parts[0]}
    order = np.argsort(merged["co"][:, 0], kind="stable")
    return {a: v[order] for a, v in merged.items()}


def pack_curves(curves: list[tuple[str, int, dict | None]]) -> dict:
    """[(data_path, index, keys or None)] -> flat arrays for ID properties (floats as float64,
    the rest as int32: exact round trip of read_keys' float32 / int / bool arrays)."""
    attrs = next((list(k) for _, _, k in curves if k is not None), [])
    out = {"paths": [p for p, _, _ in curves], "index": np.array([i for _, i, _ in curves], np.int32),
           "count": np.array([-1 if k is None else len(k["co"]) for _, _, k in curves], np.int32),
           "attrs": attrs}
    for a in attrs:
        vals = [k[a].reshape(len(k["co"]), -1) for _, _, k in curves if k is not None]
        flat = np.concatenate(vals).ravel() if vals else np.zeros(0)
        out["v_" + a] = flat.astype(np.float64 if flat.dtype.kind == "f" else np.int32)
    return out


def unpack_curves(packed: dict, dtypes: dict) -> dict[tuple[str, int], dict | None]:
    """The inverse of :func:`pack_curves`; ``dtypes`` maps each attribute to (dtype, width)."""
    out: dict[tuple[str, int], dict | None] = {}
    offset = 0
    paths, index, count = list(packed["paths"]), np.asarray(packed["index"]), np.asarray(packed["count"])
    arrays = {a: np.asarray(packed["v_" + a]) for a in packed["attrs"]}
    for p, i, n in zip(paths, index, count, strict=True):
        if n < 0:
            out[p, int(i)] = None
            continue
        keys = {}
        for a, flat in arrays.items():
            dt, w = dtypes[a]
            v = flat[offset * w:(offset + n) * w].astype(dt)
            keys[a] = v.reshape(n, w) if w > 1 else v
        out[p, int(i)] = keys
        offset += n
    return out


# -- checkpoints ------------------------------------------------------------------------------------
_hashes: dict = {}


_weights: dict = {}


_configs: dict = {}  # a path as given -> its config file's path


def checkpoint_files(path, read_json) -> tuple[Path, ...]:
    """A checkpoint's config, the weights file it names and, for a mesh asset, its shared vertex
    basis file (read again when the config changes; a slider change asks every time).  ``read_json``:
    the add-on's limited JSON reader (``backend.formats.json_limits.read``, which ``core`` cannot import)."""
    given = os.fspath(path)
    j = _configs.get(given)
    if j is None:
        p = Path(given)
        j = _configs[given] = p if p.suffix == ".json" else p.with_suffix(".json")
    try:
        key = (str(j), os.stat(j).st_mtime_ns)
    except OSError:
        return j, j.with_suffix(".safetensors")
    if key not in _weights:
        default = j.with_suffix(".safetensors").name
        try:
            doc = read_json(j)
            basis = (doc.get("asset") or {}).get("basis")
            names = (str(doc.get("weights", default)),) + ((str(basis),) if basis else ())
        except (OSError, ValueError, AttributeError):
            names = (default,)
        _weights[key] = (j,) + tuple(j.with_name(n) for n in names)
    return _weights[key]


STAT_EVERY = 0.25  # seconds: how old a look at a checkpoint's files a slider change may use (``checkpoint_hash``)


_looked: dict = {}  # a path as given -> (when its files were last looked at, their hash)


def checkpoint_hash(path, max_age: float = 0.0, *, read_json) -> str | None:
    """SHA-256 of a checkpoint's config and weights (None when either cannot be read); a file's
    hash is computed once per size and modification time.  ``max_age`` > 0: the answer of a look at
    the files (three stats) at most that many seconds old will do (a dragged slider asks every change;
    a file replaced meanwhile is noticed a moment later); every other caller looks now.  ``read_json``: as
    in :func:`checkpoint_files`."""
    given, now = os.fspath(path), time.monotonic()
    got = _looked.get(given)
    if max_age > 0 and got is not None and now - got[0] < max_age:
        return got[1]
    out = _hash_now(path, read_json)
    if len(_looked) > 64:
        _looked.clear()
    _looked[given] = (now, out)
    return out


def _hash_now(path, read_json) -> str | None:
    files = checkpoint_files(path, read_json)
    try:
        stamp = tuple((f, s.st_size, s.st_mtime_ns) for f in files for s in (os.stat(f),))
    except OSError:
        return None
    if stamp not in _hashes:
        h = hashlib.sha256()
        try:
            for f in files:
                h.update(Path(f).read_bytes())
        except OSError:
            return None
        _hashes[stamp] = h.hexdigest()[:32]
    return _hashes[stamp]


def soft_limits(points: np.ndarray) -> tuple[float, float]:
    """Slider range for raw control points: (soft, hard) magnitudes from the encoded values."""
    m = float(np.nanmax(np.abs(points))) if np.size(points) else 1.0
    soft = float(np.ceil(max(1.0, 1.5 * m)))
    return soft, 10.0 * soft
