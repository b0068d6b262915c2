"""The edit layer of a mesh sequence's latent range: its original, the decoded segments, the frames
the cache file shows (``mesh`` writes them).

The original is the evaluated vertices Encode Mesh read (to float32), or the fill Inbetween Mesh made,
at the range's length (linearly resampled after Resample).  Where a segment's raw points and sliders
are the encoded ones the file shows the original exactly; an edited segment adds decode(edited) -
decode(encoded) on every frame it reaches, easing into its neighbours at the seams as the segments'
decodes join (``backend.mesh.sequences.join_frames``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...core import latent_math, layer_math
from ...core.errors import Refusal
from .. import core as latent_core
from .. import decode, state


def prime(st, vertices: np.ndarray) -> None:
    """The backend's neutral decode of an encoded range's segments, laid one after the other (as
    ``mesh_decode`` answers): what the sliders at neutral decode to, cached per segment."""
    bounds = latent_math.output_bounds([(g.start, g.end) for g in st.segments], st.source_frames, st.frames)
    nsigs = latent_core.neutral_signatures(st, bounds)
    for s, k in enumerate(decode.pieces([b - a + 1 for a, b in bounds])):
        decode.keep(st.token, s, nsigs[s], np.ascontiguousarray(vertices[k]))


def _key_frames(st) -> np.ndarray:
    return np.asarray(st["key_frames"], dtype=np.float32).reshape(-1, st.num_vertices, 3)


def base_frames(st) -> np.ndarray:
    """The layer's original at the range's length now: the frames read (or the fill), linearly
    resampled after Resample.  Read from the object once per version."""
    def make():  # (float32 [F, V, 3], kept per range: ``state``)
        if "base_frames" not in st:
            latent_core.encoded_points(st)  # an earlier Splinetween's range: refused with what to do
        src = np.array(st["base_frames"], dtype=np.float32).reshape(st.source_frames, st.num_vertices, 3)
        return layer_math.resample_frames(src, st.frames)
    return state.of(st).memo("original frames", (st.base_version, st.frames), make)


def protected(st) -> np.ndarray:
    """Frames (relative) never written: an in-betweened range's key frames."""
    if st.task != "INBETWEEN":
        return np.zeros(0, dtype=np.int64)
    return np.array([latent_math.map_frame(k, st.source_frames, st.frames) for k in np.asarray(st["keys"])], np.int64)


def _ask(st, todo) -> tuple[dict, dict]:
    """The mesh's ``mesh_decode`` request for ``todo`` (``decode.Request``)."""
    keys = np.asarray(st["keys"], dtype=np.int64).tolist() if st.task == "INBETWEEN" else None
    header = {"op": "mesh_decode", "task": "inbetween" if keys else "autoencoder", "keys": keys}
    return header, ({"key_frames": _key_frames(st)} if keys else {})


def _split(st, out, lengths) -> list:
    v = out["vertices"]
    if v.shape[1:] != (st.num_vertices, 3) or len(v) != sum(lengths) or not np.isfinite(v).all():
        raise Refusal("the backend returned an unusable result (wrong size or NaN); nothing was changed")
    return [v[k] for k in decode.pieces(lengths)]


REQUEST = decode.Request(_ask, _split)


def layered(st, path: Path, settings, raw, bounds, sigs, edits, nsigs) -> np.ndarray:
    """The frames the cache file shows: the original, plus decode(edited) - decode(encoded) on every frame
    an edited segment reaches (with its neighbours' easing into the seams)."""
    frames = base_frames(st)
    seams = st.task == "AUTOENCODER"
    edited = layer_math.edited_segments(sigs, nsigs)
    reach = layer_math.reach(bounds, edited, seams, ramp=layer_math.mesh_ramp, protected=protected(st))
    if not len(reach):
        return frames
    plan, need = layer_math.needed_parts(bounds, reach, seams, ramp=layer_math.mesh_ramp)
    jobs = decode.jobs(raw, latent_core.encoded_points(st), bounds, sigs, nsigs, edits, need)
    got = decode.decoded(st, path, settings, jobs, REQUEST)
    e = layer_math.mesh_joined({s: got[s, sigs[s]] for s in need}, bounds, plan, seams)
    n = layer_math.mesh_joined({s: got[s, nsigs[s]] for s in need}, bounds, plan, seams)
    np.subtract(e, n, out=e)
    out = frames.copy()
    at = 0
    for a, b in layer_math.runs(reach):  # runs of frames: slices, not a gather and a scatter
        out[a:b + 1] += e[at:at + b - a + 1]
        at += b - a + 1
    return out
