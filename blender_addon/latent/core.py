"""The latent state of an object of either object kind (armature, mesh): bookkeeping, raw points, segment plans.

Each segment's ``signature`` fingerprints its inputs (raw control points, amplify, timing,
principal offsets, output length); an adapter (``armature.adapter``, ``mesh.adapter``, chosen in ``slider``)
re-decodes the segments whose signature differs from what the scene shows.  Nothing here
knows how an object kind writes its frames.
"""
from __future__ import annotations

import functools
import uuid
from contextlib import contextmanager
from pathlib import Path

import bpy
import numpy as np

from .. import bridge, preferences
from ..core import latent_math
from ..core.errors import Refusal
from . import animation, state

MAX_PRINCIPAL = 16  # principal-direction sliders per segment (a checkpoint stores 8 by default)
# what the raw properties' tooltips call an object kind's decoded frames
NOUN = {"ARMATURE": "motion", "MESH": "mesh sequence"}
_busy = [0]


@contextmanager
def suspended():
    """No re-decode from callbacks or handlers while the add-on itself changes the state."""
    _busy[0] += 1
    try:
        yield
    finally:
        _busy[0] -= 1


def busy() -> bool:
    return _busy[0] > 0


def is_mesh(st) -> bool:
    """Whether the range is a mesh sequence's (its checkpoints are mesh ones)."""
    return st.id_data.type == "MESH"


def names(st) -> list[str]:
    return [n for n in st.principal_names.split("\n") if n]


def descriptions(st) -> list[str]:
    """One sentence per principal direction (from the checkpoint), or "" where it has none."""
    out = st.principal_descriptions.split("\n") if st.principal_descriptions else []
    return (out + [""] * len(names(st)))[:len(names(st))]


def checkpoint_meta(path) -> dict:
    """Task, minimum frames, latent size, principal-direction names and descriptions and the model's frame
    time of a checkpoint: ``bridge.read_model`` (the one reader, within the JSON limits), as a dict."""
    info = bridge.read_model(path)
    return {"task": info.task, "min_frames": info.min_frames, "latent": info.latent,
            "principal_names": list(info.principal_names), "principal_descriptions": list(info.principal_descriptions),
            "frame_time": info.frame_time}


def configured_checkpoint(task: str, context=None, mesh: bool = False) -> Path:
    """The checkpoint the preferences name for ``task`` ("AUTOENCODER", "INBETWEEN"); ``mesh``: a mesh one."""
    if mesh:
        return preferences.mesh_checkpoint_path("autoencoder" if task == "AUTOENCODER" else "inbetween", context)
    if task == "AUTOENCODER":
        return preferences.autoencoder_path(context)
    s = preferences.settings(context)
    return bridge.describe(s).path if s.checkpoint else bridge.default_checkpoint()


def checkpoint_hash(path, max_age: float = 0.0) -> str | None:
    """``latent_math.checkpoint_hash`` with the add-on's limited JSON reader."""
    return latent_math.checkpoint_hash(path, max_age, read_json=bridge.numpy_module("formats.json_limits").read)


def checkpoint_for(st, context=None, max_age: float = 0.0) -> tuple[Path | None, str]:
    """The checkpoint file that encoded ``st`` (its stored path, else the configured one with the
    same hash), or None and why not.  ``max_age``: as ``latent_math.checkpoint_hash`` (slider changes)."""
    stored = st.checkpoint
    found = checkpoint_hash(stored, max_age)
    if found == st.checkpoint_hash:
        return Path(stored), ""
    try:
        configured = configured_checkpoint(st.task, context, is_mesh(st))
    except bridge.BridgeError:
        configured = None
    if configured is not None and checkpoint_hash(configured, max_age) == st.checkpoint_hash:
        return configured, ""
    what = "is missing" if found is None else "has changed since encoding"
    return None, (f"the checkpoint that encoded this range ({Path(stored).name}) {what}: sliders are off; "
                  "Bake keeps the motion, Remove restores the original keys")


def controls_of(obj):
    """The object's latent-controls property group, or a Refusal when it has none."""
    st = obj.splinetween_latent
    if not st.active:
        raise Refusal(f"{obj.name} has no latent controls")
    return st


def resample_checkpoint(obj, st, frames: int) -> tuple[Path | None, str]:
    """Resample's checks before anything changes, for armatures and meshes alike: (the checkpoint to
    decode with, "") or (None, why there is nothing to do); refuses a range that cannot take ``frames``."""
    controls_of(obj)
    why = latent_math.check_length([(seg.start, seg.end) for seg in st.segments], st.source_frames, frames,
                          st.task == "INBETWEEN")
    if why:
        raise Refusal(why)
    if frames == st.frames:
        return None, f"The range already has {frames} frames"
    path, why = checkpoint_for(st)
    if path is None:
        raise Refusal(why)
    return path, ""


@functools.lru_cache(maxsize=16)
def _raw_names(segments: int) -> tuple[str, ...]:
    return tuple(latent_math.raw_name(s, c) for s in range(segments) for c in range(latent_math.POINTS))


def read_raw(obj, st) -> np.ndarray:
    """The raw control points ``[S, 4, d]`` from the object's ID properties."""
    d = st.latent_size
    out = np.empty((len(st.segments) * latent_math.POINTS, d))
    get = obj.get
    for k, name in enumerate(_raw_names(len(st.segments))):
        v = get(name)
        try:  # (an ID property array lends numpy its buffer, copied straight into the row; anything else is
            if len(v) != d:  # converted or refused)
                raise ValueError
            out[k] = v
        except (TypeError, ValueError):
            raise Refusal(f"the custom property {name} is missing or has the wrong size (it needs {d} "
                          "numbers); Remove or Bake the latent controls") from None
    out = out.reshape(len(st.segments), latent_math.POINTS, d)
    bad = latent_math.bad_values(out)
    if bad:
        raise Refusal(bad)
    return out


def store(group, key: str, value) -> None:
    """``group[key] = value`` for an ID property, an existing one deleted first: bpy 5.0.1 copies a longer
    numpy array into the old, shorter buffer in place (a heap overflow that aborts Blender later on)."""
    if key in group:
        del group[key]
    group[key] = value


def array(st, key, shape=None, dtype=np.float64):
    a = np.array(st[key], dtype=dtype)
    return a.reshape(shape) if shape is not None else a


def style_names(path: str) -> tuple[tuple, tuple]:
    """(names, one line each) of the styles checkpoint ``path`` knows; empty when it has none or cannot be read."""
    if not path:
        return (), ()
    try:
        info = bridge.read_model(bpy.path.abspath(path))
    except bridge.BridgeError:
        return (), ()
    return info.style_names, info.style_descriptions


def segment_edits(st, m: int) -> list[tuple[float, float, tuple, tuple]]:
    """(amplify, timing, the first ``m`` principal offsets, the style as ``((name, strength),)`` or ``()``)
    of every segment: one ``foreach_get`` per property for all segments (a slider change asks every
    time), -0.0 read as 0.0; a style at strength 0 is no style."""
    segs = st.segments
    n = len(segs)
    amp, tim, strength = np.empty(n, np.float32), np.empty(n, np.float32), np.empty(n, np.float32)
    pr = np.empty((n, MAX_PRINCIPAL), np.float32)
    segs.foreach_get("amplify", amp)
    segs.foreach_get("timing", tim)
    segs.foreach_get("principal", pr.ravel())
    segs.foreach_get("style_strength", strength)
    styles = [((seg.style, float(s)),) if s != 0.0 and seg.style != "NONE" else ()
              for seg, s in zip(segs, strength.tolist(), strict=True)]
    return list(zip(amp.tolist(), tim.tolist(), map(tuple, (pr[:, :m].astype(np.float64) + 0.0).tolist()), styles,
                    strict=True))


def plan(st, raw: np.ndarray, frames: int | None = None):
    """(output bounds, signatures, edits) of every segment for ``frames`` output frames (default: now);
    ``edits``: (amplify, timing, principal offsets, style) as read once for this change (``segment_edits``).  A
    segment whose inputs equal those of the range's last plan keeps its signature (a slider change edits
    one or two of a dozen segments; each signature hashes kilobytes)."""
    frames = st.frames if frames is None else frames
    src = [(seg.start, seg.end) for seg in st.segments]
    bounds = latent_math.output_bounds(src, st.source_frames, frames)
    m = len(names(st))
    edits = segment_edits(st, m)
    memory = state.of(st)
    last = memory.last_plan  # (raw, edits, bounds, signatures) of the range's last plan
    same = [False] * len(edits)
    raw = np.ascontiguousarray(raw, dtype=np.float64)  # (as the signature hashes it)
    if last is not None and last[0].shape == raw.shape and last[2] == bounds:
        same = (last[0].view(np.int64) == raw.view(np.int64)).all(axis=(1, 2)).tolist()  # (bit for bit)
    sigs = [last[3][s] if same[s] and last[1][s] == e
            else latent_math.signature(raw[s], *e[:3], bounds[s][1] - bounds[s][0] + 1, e[3])
            for s, e in enumerate(edits)]
    memory.last_plan = (raw.copy(), edits, bounds, sigs)
    return bounds, list(sigs), edits


def encoded_points(st) -> np.ndarray:
    """The control points Encode (or Inbetween) made ``[S, 4, d]``: the layer's neutral."""
    if "encoded_points" not in st:
        raise Refusal("this range was encoded by an earlier Splinetween, before latent edits became a layer; "
                      "Bake keeps its motion as keys, Remove restores the original keys (then Encode again)")
    return array(st, "encoded_points", (len(st.segments), latent_math.POINTS, st.latent_size))


def neutral_signatures(st, bounds) -> list[str]:
    """What each segment's signature is when its inputs are the encoded ones (the layer adds nothing);
    cached per range and layout (a slider change asks for them every time)."""
    key = (tuple(bounds), len(names(st)))
    table = state.of(st).table("neutral signatures", 8)  # (a range's encoded points never change)
    if key not in table:
        pts, zeros = encoded_points(st), (0.0,) * key[1]
        table[key] = [latent_math.signature(pts[s], 1.0, 0.0, zeros, b - a + 1) for s, (a, b) in enumerate(bounds)]
    return list(table[key])


def fidelity(st) -> np.ndarray | None:
    """Per segment ``[deg, cm]`` (a mesh: ``[error, percent]``) of the model's neutral decode against the
    encoded motion, or None (an in-betweened range: its original is the model's own fill)."""
    return array(st, "fidelity", (-1, 2)) if "fidelity" in st else None


def new_base_version(st) -> None:
    """The original (base) of the layer changed: decoded and unpacked copies keyed by the old one go stale."""
    st.base_version = uuid.uuid4().hex[:16]


def install_controls(obj, *, task: str, path: Path, start: int, frames: int, segments, points,
                     principal_names, principal_descriptions=(), fidelity=None) -> None:
    """What every latent range has (armature or mesh): bookkeeping, segments, raw control points and
    the encoded ones (the layer's neutral), and the fidelity readout when there is one."""
    st = obj.splinetween_latent
    points = np.asarray(points, dtype=np.float64)
    with suspended():
        animation.drop(obj)  # keys left on these properties by an earlier range would drive this one
        st.active, st.task = True, task
        store(st, "encoded_points", points.ravel())
        if fidelity is not None:
            store(st, "fidelity", np.asarray(fidelity, dtype=np.float64).ravel())
        st.principal_descriptions = "\n".join(str(d).replace("\n", " ") for d in principal_descriptions)
        new_base_version(st)
        st.checkpoint, st.checkpoint_hash = str(path), checkpoint_hash(path) or ""
        st.token = uuid.uuid4().hex[:16]
        st.frame_start, st.source_frames, st.frames = int(start), int(frames), int(frames)
        st.latent_size = points.shape[-1]
        st.principal_names, st.status, st.snapshot_all = "\n".join(principal_names), "", False
        st.segments.clear()
        for a, b in segments:
            seg = st.segments.add()
            seg.start, seg.end = int(a), int(b)
        soft, hard = latent_math.soft_limits(points)
        for s, (a, b) in enumerate(segments):
            for c in range(latent_math.POINTS):
                name = latent_math.raw_name(s, c)
                store(obj, name, points[s, c])
                obj.id_properties_ui(name).update(
                    min=-hard, max=hard, soft_min=-soft, soft_max=soft, precision=4,
                    description=f"Segment {s + 1} (frames {start + a}-{start + b}), control point {c + 1} of "
                                f"{latent_math.POINTS}: {points.shape[-1]} latent values; editing re-decodes the "
                                f"{NOUN.get(obj.type, 'motion')}")
    obj.update_tag(refresh={"TIME"})  # new animatable properties: evaluated (keys, drivers) from the next update


def clear(obj) -> None:
    """Drop every trace of the latent range (raw properties, their keys and drivers, bookkeeping);
    what the add-on keeps in memory for it goes too (``state.forget``).  The property group itself stays, emptied and
    inactive: scripts and add-ons hold Python references to it, and freeing it under them
    (``property_unset``) crashed Blender on their next read."""
    state.forget(obj.splinetween_latent.token)
    with suspended():
        for key in [k for k in obj.keys() if k.startswith(latent_math.RAW_PREFIX)]:
            del obj[key]
        animation.drop(obj)  # (the raw points' and sliders' keys end with the range)
        st = obj.splinetween_latent
        rna = {p.identifier: p for p in st.bl_rna.properties if p.identifier != "rna_type"}
        for key in [k for k in st.keys() if k not in rna]:  # the bookkeeping arrays
            del st[key]
        for name, prop in rna.items():
            if prop.type == "COLLECTION":
                getattr(st, name).clear()
            elif not prop.is_readonly:
                st.property_unset(name)
                if name in st:  # (a property with its own getter and setter, ``task``: unset leaves its value)
                    del st[name]
    obj.update_tag(refresh={"TIME"})
