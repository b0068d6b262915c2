"""The edit layer of a mesh sequence's latent range: its original, the decoded segments, the frames
the cache file shows (``mesh`` writes them).

The original is the evaluated vertices Encode Mesh read (to float32), or the fill Inbetween Mesh made,
at the range's length (linearly resampled after Resample).  Where a segment's raw points and sliders
are the encoded ones the file shows the original exactly; an edited segment adds decode(edited) -
decode(encoded) on every frame it reaches, easing into its neighbours at the seams as the segments'
decodes join (``backend.mesh.join_frames``).
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import numpy as np

from ... import bridge
from ...core import latent_math as LM
from ...core import layer_math as L
from ...core.errors import Refusal
from .. import core as latent

_parts: OrderedDict = OrderedDict()  # (token, segment, signature) -> vertices float32 [m, V, 3]
_PARTS_BYTES = 512 << 20


def request(settings, header: dict, arrays: dict) -> tuple[dict, dict]:
    try:
        return bridge.request(settings, header, arrays)
    except bridge.BridgeError as e:
        raise Refusal(f"the backend failed, nothing was changed: {e}") from None


def _keep(st, s: int, sig: str, vertices: np.ndarray) -> None:
    _parts[st.token, s, sig] = vertices
    _parts.move_to_end((st.token, s, sig))
    total = sum(v.nbytes for v in _parts.values())
    while total > _PARTS_BYTES and len(_parts) > 1:
        _, old = _parts.popitem(last=False)
        total -= old.nbytes


def forget(token: str) -> None:
    for k in [k for k in _parts if k[0] == token]:
        del _parts[k]
    for k in [k for k in _bases if k[0] == token]:
        del _bases[k]


def prime(st, vertices: np.ndarray) -> None:
    """The backend's neutral decode of an encoded range's segments, laid one after the other (as
    ``mesh_decode`` answers): what the sliders at neutral decode to, cached per segment."""
    bounds = LM.output_bounds([(g.start, g.end) for g in st.segments], st.source_frames, st.frames)
    at = np.cumsum([0] + [b - a + 1 for a, b in bounds])
    for s, sig in enumerate(latent.neutral_signatures(st, bounds)):
        _keep(st, s, sig, np.ascontiguousarray(vertices[at[s]:at[s + 1]]))


def _key_frames(st) -> np.ndarray:
    return np.asarray(st["key_frames"], dtype=np.float32).reshape(-1, st.num_vertices, 3)


_bases: dict = {}  # (token, base_version, frames) -> the original at the range's length, float32 [F, V, 3]


def base_frames(st) -> np.ndarray:
    """The layer's original at the range's length now: the frames read (or the fill), linearly
    resampled after Resample.  Read from the object once per version."""
    key = (st.token, st.base_version, st.frames)
    if key not in _bases:
        for k in [k for k in _bases if k[0] == st.token]:
            del _bases[k]
        if "base_frames" not in st:
            latent.encoded_points(st)  # an earlier Splinetween's range: refused with what to do
        src = np.array(st["base_frames"], dtype=np.float32).reshape(st.source_frames, st.num_vertices, 3)
        _bases[key] = L.resample_frames(src, st.frames)
    return _bases[key]


def protected(st) -> np.ndarray:
    """Frames (relative) never written: an in-betweened range's key frames."""
    if st.kind != "INBETWEEN":
        return np.zeros(0, dtype=np.int64)
    return np.array([LM.map_frame(k, st.source_frames, st.frames) for k in np.asarray(st["keys"])], np.int64)


def decode(st, path: Path, settings, jobs) -> dict:
    """``jobs``: (segment, signature, points, amplify, timing, principal, frames) -> ``{(segment,
    signature): vertices}``, from the cache or one backend request for the missing ones."""
    todo = list({(j[0], j[1]): j for j in jobs if (st.token, j[0], j[1]) not in _parts}.values())
    if todo:
        segs = [st.segments[j[0]] for j in todo]
        keys = np.asarray(st["keys"], dtype=np.int64).tolist() if st.kind == "INBETWEEN" else None
        header = {"op": "mesh_decode", "checkpoint": str(path), "task": "inbetween" if keys else "autoencoder",
                  "segments": [[seg.start, seg.end] for seg in segs], "lengths": [j[6] for j in todo],
                  "amplify": [j[3] for j in todo], "timing": [j[4] for j in todo],
                  "principal": [list(j[5]) for j in todo], "keys": keys}
        arrays = {"points": np.stack([j[2] for j in todo])}
        if keys:
            arrays["key_frames"] = _key_frames(st)
        _, out = request(settings, header, arrays)
        v = out["vertices"]
        if v.shape[1:] != (st.num_vertices, 3) or len(v) != sum(header["lengths"]) or not np.isfinite(v).all():
            raise Refusal("the backend returned an unusable result (wrong size or NaN); nothing was changed")
        at = np.cumsum([0] + header["lengths"])
        for k, j in enumerate(todo):
            _keep(st, j[0], j[1], v[at[k]:at[k + 1]])
    out = {}
    for j in jobs:
        _parts.move_to_end((st.token, j[0], j[1]))
        out[j[0], j[1]] = _parts[st.token, j[0], j[1]]
    return out


def layered(st, path: Path, settings, raw, bounds, sigs, nsigs) -> np.ndarray:
    """The frames the cache file shows: the original, plus decode(edited) - decode(encoded) on every frame
    an edited segment reaches (with its neighbours' easing into the seams)."""
    frames = base_frames(st)
    seams = st.kind == "AUTOENCODER"
    edited = L.edited_segments(sigs, nsigs)
    reach = L.reach(bounds, edited, seams, ramp=L.mesh_ramp, protected=protected(st))
    if not len(reach):
        return frames
    plan, need = L.needed_parts(bounds, reach, seams, ramp=L.mesh_ramp)
    pts, m = latent.encoded_points(st), len(latent.names(st))
    jobs = []
    for s in need:
        seg, length = st.segments[s], bounds[s][1] - bounds[s][0] + 1
        jobs.append((s, sigs[s], raw[s], seg.amplify, seg.timing, [x + 0.0 for x in seg.principal[:m]], length))
        jobs.append((s, nsigs[s], pts[s], 1.0, 0.0, [0.0] * m, length))
    got = decode(st, path, settings, jobs)
    e = L.mesh_joined({s: got[s, sigs[s]] for s in need}, bounds, plan, seams)
    n = L.mesh_joined({s: got[s, nsigs[s]] for s in need}, bounds, plan, seams)
    np.subtract(e, n, out=e)
    out = frames.copy()
    at = 0
    for a, b in L.runs(reach):  # runs of frames: slices, not a gather and a scatter
        out[a:b + 1] += e[at:at + b - a + 1]
        at += b - a + 1
    return out
