"""The latent state of an object and its re-decode: raw points + sliders -> backend -> F-curves.

``sync`` is the one place that writes decoded motion: it fingerprints each segment's inputs
(raw control points, amplify, timing, principal offsets, output length), decodes the segments
whose fingerprint differs from what their keys show, joins them with their neighbours at the
shared end frames (mean of both sides, as ``Engine.decode``) and writes only those frames.
Decoded segments are cached by fingerprint, so a slider moved back decodes to the very same keys.
Every check and the backend call come before the first write: a refusal changes nothing.
"""
from __future__ import annotations

import json
import uuid
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .. import bridge
from ..io import latent as latent_io
from .. import preferences
from ..io import scene as scene_io
from ..core import latent_math as LM


class Refusal(Exception):
    """Why nothing was done, for ``self.report({'ERROR'}, ...)`` or the panel's status line."""


_parts: OrderedDict = OrderedDict()  # (token, segment, signature) -> (rot [m, J, 4], pos [m, J, 3])
_PARTS_MAX = 512
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


def names(st) -> list[str]:
    return [n for n in st.principal_names.split("\n") if n]


def checkpoint_meta(path) -> dict:
    """Task, minimum frames, latent size and principal-direction names, from a checkpoint's JSON."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        info = doc.get("info", {})
        return {"task": info.get("task", "autoencoder"), "min_frames": int(info.get("config", {}).get("min_window", 2)),
                "latent": int(doc["model"]["latent"]), "principal_names": list(info.get("principal_names", []))}
    except OSError as e:
        raise Refusal(f"cannot read the checkpoint {path} ({e.strerror}); check Preferences > Add-ons > "
                      "Splinetween") from None
    except (ValueError, KeyError, TypeError) as e:
        raise Refusal(f"{path} is not a Splinetween checkpoint ({e})") from None


def configured_checkpoint(kind: str, context=None, mesh: bool = False) -> Path:
    if mesh:
        return preferences.mesh_checkpoint_path("autoencoder" if kind == "AUTOENCODER" else "inbetween", context)
    if kind == "AUTOENCODER":
        return preferences.autoencoder_path(context)
    s = preferences.settings(context)
    return bridge.describe(s).path if s.checkpoint else bridge.default_checkpoint()


def checkpoint_for(st, context=None) -> tuple[Path | None, str]:
    """The checkpoint file that encoded ``st`` (its stored path, else the configured one with the
    same hash), or None and why not."""
    stored = Path(st.checkpoint)
    try:
        candidates = [stored, configured_checkpoint(st.kind, context, st.id_data.type == "MESH")]
    except bridge.BridgeError:
        candidates = [stored]
    for c in candidates:
        if LM.checkpoint_hash(c) == st.checkpoint_hash:
            return c, ""
    what = "is missing" if LM.checkpoint_hash(stored) is None else "has changed since encoding"
    return None, (f"the checkpoint that encoded this range ({stored.name}) {what}: sliders are off; "
                  "Bake keeps the motion, Remove restores the original keys")


def resample_checkpoint(obj, st, frames: int) -> tuple[Path | None, str]:
    """Resample's checks before anything changes, for armatures and meshes alike: (the checkpoint to
    decode with, "") or (None, why there is nothing to do); refuses a range that cannot take ``frames``."""
    if not st.active:
        raise Refusal(f"{obj.name} has no latent controls")
    why = LM.check_length([(seg.start, seg.end) for seg in st.segments], st.source_frames, frames,
                          st.kind == "INBETWEEN")
    if why:
        raise Refusal(why)
    if frames == st.frames:
        return None, f"The range already has {frames} frames"
    path, why = checkpoint_for(st)
    if path is None:
        raise Refusal(why)
    return path, ""


def read_raw(obj, st) -> np.ndarray:
    """The raw control points ``[S, 4, d]`` from the object's ID properties."""
    d = st.latent_size
    out = np.empty((len(st.segments), LM.POINTS, d))
    for s in range(len(st.segments)):
        for c in range(LM.POINTS):
            name = LM.raw_name(s, c)
            v = obj.get(name)
            try:
                a = np.array(v, dtype=np.float64).ravel()
            except (TypeError, ValueError):
                a = None
            if v is None or a is None or a.size != d:
                raise Refusal(f"the custom property {name} is missing or has the wrong size (it needs {d} "
                              "numbers); Remove or Bake the latent controls")
            out[s, c] = a
    bad = LM.bad_values(out)
    if bad:
        raise Refusal(bad)
    return out


def _array(st, key, shape=None, dtype=np.float64):
    a = np.array(st[key], dtype=dtype)
    return a.reshape(shape) if shape is not None else a


def _protected(st) -> np.ndarray:
    """Scene frames never written: the keys of an in-betweened range."""
    if st.kind != "INBETWEEN":
        return np.zeros(0, dtype=np.int64)
    keys = _array(st, "keys", dtype=np.int64)
    return np.array([st.frame_start + LM.map_frame(k, st.source_frames, st.frames) for k in keys], dtype=np.int64)


def plan(st, raw: np.ndarray, frames: int | None = None):
    """(output bounds, signatures) of every segment for ``frames`` output frames (default: now)."""
    frames = st.frames if frames is None else frames
    src = [(seg.start, seg.end) for seg in st.segments]
    bounds = LM.output_bounds(src, st.source_frames, frames)
    m = len(names(st))
    sigs = [LM.signature(raw[s], seg.amplify, seg.timing, tuple(seg.principal[:m]), bounds[s][1] - bounds[s][0] + 1)
            for s, seg in enumerate(st.segments)]
    return bounds, sigs


def decode(obj, st, path: Path, settings, raw, need, bounds, sigs) -> dict:
    """Decoded ``(rot, pos)`` of the segments in ``need``, from the cache or one backend request."""
    todo = [s for s in need if (st.token, s, sigs[s]) not in _parts]
    if todo:
        m = len(names(st))
        segs = [st.segments[s] for s in todo]
        keys = _array(st, "keys", dtype=np.int64).tolist() if st.kind == "INBETWEEN" else None
        header = {"op": "decode", "checkpoint": str(path), "task": "inbetween" if keys else "autoencoder",
                  "segments": [[seg.start, seg.end] for seg in segs],
                  "lengths": [bounds[s][1] - bounds[s][0] + 1 for s in todo],
                  "amplify": [seg.amplify for seg in segs], "timing": [seg.timing for seg in segs],
                  "principal": [list(seg.principal[:m]) for seg in segs], "keys": keys}
        j = len(st["bones"])
        arrays = {"points": raw[todo], "origins": _array(st, "origins", (-1, 3))[todo],
                  "template": _array(st, "template", (j, 3))}
        if keys:
            arrays["key_rotations"] = _array(st, "key_rotations", (len(keys), j, 4))
            arrays["key_positions"] = _array(st, "key_positions", (len(keys), j, 3))
        try:
            _, out = bridge.request(settings, header, arrays)
        except bridge.BridgeError as e:
            raise Refusal(f"the backend failed, nothing was changed: {e}") from None
        rot, pos = out["rotations"], out["positions"]
        if not (np.isfinite(rot).all() and np.isfinite(pos).all()) or len(rot) != sum(header["lengths"]):
            raise Refusal("the backend returned an unusable result (wrong size or NaN); nothing was changed")
        at = np.cumsum([0] + header["lengths"])
        for k, s in enumerate(todo):
            _parts[st.token, s, sigs[s]] = (rot[at[k]:at[k + 1]], pos[at[k]:at[k + 1]])
    parts = {}
    for s in need:
        _parts.move_to_end((st.token, s, sigs[s]))
        parts[s] = _parts[st.token, s, sigs[s]]
    while len(_parts) > _PARTS_MAX:
        _parts.popitem(last=False)
    return parts


def sync(obj, context=None, force: bool = False, fresh: bool = False) -> bool:
    """Re-decode and write the segments whose keys (a mesh: its cache file) do not show their
    inputs; True if any was."""
    st = obj.splinetween_latent
    if not st.active:
        return False
    if obj.type == "MESH":  # a mesh sequence: the decode goes to its PC2 file, not to F-curves
        from . import mesh as mesh_latent
        return mesh_latent.sync(obj, context, force)
    raw = read_raw(obj, st)
    bounds, sigs = plan(st, raw)
    count = len(st.segments)
    changed = [s for s in range(count) if force or sigs[s] != st.segments[s].signature]
    if not changed:
        return False
    path, why = checkpoint_for(st, context)
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
    with suspended():
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
    latent_io.write_motion(obj, bag, list(st["bones"]), set(_array(st, "rotation_joints", dtype=int).tolist()),
                           set(_array(st, "position_joints", dtype=int).tolist()), st.cm_per_unit,
                           (st.frame_start + rel).astype(np.float64), rot, pos, _protected(st), fresh)


def sync_quietly(obj, context=None) -> None:
    """``sync`` from a callback or handler: a refusal becomes the panel's status line."""
    try:
        sync(obj, context)
    except Exception as e:  # a handler must never raise into Blender: the panel says what went wrong
        message = str(e) if isinstance(e, Refusal) else f"the latent controls failed ({type(e).__name__}: {e})"
        st = obj.splinetween_latent
        if st.status != message:
            with suspended():
                st.status = message
            print(f"Splinetween: {obj.name}: {message}")
            if not isinstance(e, Refusal):
                import traceback
                traceback.print_exc()


def on_slider(obj, context=None) -> None:
    if not busy():
        sync_quietly(obj, context)


def install(obj, *, kind: str, path: Path, start: int, frames: int, bones, rotation_joints, position_joints,
            cm_per_unit: float, segments, points, origins, template, principal_names, snapshot,
            keys=None, key_rotations=None, key_positions=None) -> None:
    """Store a latent range on the object: bookkeeping, raw control points, original keys."""
    st = obj.splinetween_latent
    install_controls(obj, kind=kind, path=path, start=start, frames=frames, segments=segments, points=points,
                     principal_names=principal_names)
    with suspended():
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


def install_controls(obj, *, kind: str, path: Path, start: int, frames: int, segments, points,
                     principal_names) -> None:
    """What every latent range has (armature or mesh): bookkeeping, segments, raw control points."""
    st = obj.splinetween_latent
    points = np.asarray(points, dtype=np.float64)
    with suspended():
        st.active, st.kind = True, kind
        st.checkpoint, st.checkpoint_hash = str(path), LM.checkpoint_hash(path) or ""
        st.token = uuid.uuid4().hex[:16]
        st.frame_start, st.source_frames, st.frames = int(start), int(frames), int(frames)
        st.latent_size = points.shape[-1]
        st.principal_names, st.status, st.snapshot_all = "\n".join(principal_names), "", False
        st.segments.clear()
        for a, b in segments:
            seg = st.segments.add()
            seg.start, seg.end = int(a), int(b)
        soft, hard = LM.soft_limits(points)
        for s, (a, b) in enumerate(segments):
            for c in range(LM.POINTS):
                name = LM.raw_name(s, c)
                obj[name] = points[s, c]
                obj.id_properties_ui(name).update(
                    min=-hard, max=hard, soft_min=-soft, soft_max=soft, precision=4,
                    description=f"Segment {s + 1} (frames {start + a}-{start + b}), control point {c + 1} of "
                                f"{LM.POINTS}: {points.shape[-1]} latent values; editing re-decodes the "
                                f"{'mesh sequence' if obj.type == 'MESH' else 'motion'}")


def clear(obj) -> None:
    """Drop every trace of the latent range (raw properties, their keys and drivers, bookkeeping)."""
    st = obj.splinetween_latent
    with suspended():
        for key in [k for k in obj.keys() if k.startswith(LM.RAW_PREFIX)]:
            del obj[key]
        latent_io.drop_raw_animation(obj, scene_io.channelbag(obj))
        for k in [k for k in _parts if k[0] == st.token]:
            del _parts[k]
        obj.property_unset("splinetween_latent")
    obj.update_tag(refresh={"TIME"})


def original_keys(st) -> dict:
    g = st["original"]
    return LM.unpack_curves({k: g[k] for k in g.keys()}, latent_io.key_dtypes())
