"""The commands on a .bvh or .amc file: the backend's own file path, no Blender scene involved.

In-betweening goes through ``bridge.inbetween`` (in-process or the backend process, as for the
operator) with the key poses read by ``backend.formats.bvh``; the output is written by ``backend.formats.bvh``
with the input's hierarchy, channel layout, frame time and frame count, keys as in the file --
the same file ``python -m backend inbetween`` writes.  (Blender's BVH importer/exporter would
not keep them: its exporter writes Z-up offsets and the scene's frame rate.)  An Acclaim take (``.amc``,
its skeleton the ``.asf`` found by ``backend.formats.asf.skeleton_for``) takes the same path: read as a
clip of another skeleton, written back as an ``.amc`` of its own skeleton.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from .. import bridge
from . import backend_direct, bvh_map, safe_io
from .errors import JobError


def read(path: str, finite: bool = True, options: dict | None = None):
    """The file as a clip; an ``.amc`` on its ASF skeleton (``options["asf"]``: ``--asf``, else found by name
    or as the one beside it)."""
    if Path(path).suffix.lower() == ".amc":
        return _read_amc(path, (options or {}).get("asf") or None)
    bvh = bridge.backend_module("formats.bvh")
    try:
        return bvh.read_bvh(path, finite=finite)
    except bvh.BVHError as e:
        raise JobError(e.problem) from None


def _read_amc(path: str, given: str | None):
    asf = bridge.backend_module("formats.asf")
    try:
        return asf.read_asf_amc(asf.skeleton_for(path, given), path)
    except asf.ASFError as e:  # the take's own problems by line; the skeleton's with the .asf's name
        if Path(e.path) != Path(path):
            raise JobError(str(e)) from None
        raise JobError((f"line {e.line}: " if e.line else "") + e.problem) from None


def _text(clip, source):
    """The output file's text in the input's format: a BVH, or an AMC for the take's own ASF (frames numbered
    from the input's first)."""
    if "asf" not in source.meta:
        return bridge.backend_module("formats.bvh").format_bvh(clip)
    numbers = source.meta.get("frame_numbers")
    first = int(numbers[0]) if numbers is not None and len(numbers) else 1
    return bridge.backend_module("formats.asf").format_amc(clip, source.meta["asf"], first_frame=first)


def _amc_hints(clip, keys, k0, k1) -> dict:
    """An AMC's Euler hints for the output (``inbetween``): keys and untouched frames as in the file, the filled
    frames continuous; the skeleton and its column layout as read."""
    meta = {k: clip.meta[k] for k in ("asf", "amc_order", "amc_degrees", "frame_numbers") if k in clip.meta}
    ref = clip.meta["amc_channels"].copy()
    ref[np.setdiff1d(np.arange(k0, k1 + 1), keys)] = np.nan
    return {**meta, "amc_channels": ref}


def key_frames(clip, keys: dict, info: bridge.ModelInfo) -> list[int]:
    """The job's key frames, checked; the gap limit is the model's 2 s in frames of the file's Frame Time."""
    if keys["source"] == "every":
        # from the first frame of motion: a capture's calibration frames (CMU's T-pose) are copied as they are
        frames = bridge.backend_module("motion.calibration").motion_keys(clip.rotations, clip.frame_time, int(keys["every"]))
    elif keys["source"] == "frames":
        frames = [int(k) for k in keys["frames"]]
    else:
        raise JobError(f"a .bvh or .amc file has no {'selected' if keys['source'] == 'selected' else keys['source']} keys; "
                       "give --every K or --keys F,F,... (0-based frames)")
    n = clip.num_frames
    if n < 2 or len(frames) < 2:
        raise JobError(f"in-betweening needs at least two keys ({n} frames, keys {frames})")
    if any(not 0 <= k < n for k in frames):
        raise JobError(f"keys {[k for k in frames if not 0 <= k < n]} are out of range (frames are 0..{n - 1})")
    if frames != sorted(set(frames)):
        raise JobError(f"keys must be increasing and distinct, got {frames}")
    gaps = np.diff(frames)
    fps = 1.0 / clip.frame_time
    max_gap = info.scene_max_gap(fps)
    if gaps.max() > max_gap:
        i = int(np.argmax(gaps))
        raise JobError(f"the gap between keys {frames[i]} and {frames[i + 1]} is {gaps[i]} frames; the model "
                       f"fills gaps of up to {max_gap} frames ({info.max_gap * info.frame_time:.3g} s at {fps:.4g} fps)")
    return frames


def _text_writer(text: str):
    def write(tmp: Path) -> None:
        safe_io.write_checked(tmp, text.encode("utf-8"))
    return write


def _fits(clip, info: bridge.ModelInfo) -> bool:
    return tuple(clip.skeleton.names) == tuple(info.names) and \
        tuple(int(p) for p in clip.skeleton.parents) == tuple(info.parents)


def inbetween(job: dict, state, entry: dict, progress):
    clip = read(job["source"], finite=False, options=job["options"])  # the frames between keys are never read
    info = bridge.describe(state.backend)
    given = job["options"].get("bone_map")
    keys = key_frames(clip, job["options"]["keys"], info)
    contacts = bool(job["options"].get("contacts", True))
    k0, k1 = keys[0], keys[-1]
    ok = np.isfinite(clip.rotations).all((-1, -2)) & np.isfinite(clip.positions).all((-1, -2))
    if not ok[keys].all():
        raise JobError(f"NaN or infinite values in key frame(s) {np.asarray(keys)[~ok[keys]][:5].tolist()}")
    outside = [f for f in np.flatnonzero(~ok).tolist() if f < k0 or f > k1]
    if outside:
        raise JobError(f"NaN or infinite values in frame(s) {outside[:5]}, outside the keys {k0}..{k1} (they would "
                       "be copied as they are; add keys that cover them)")
    found = {}
    if _fits(clip, info) and not given:  # the model's own skeleton: its poses as they are
        rot, pos = bridge.inbetween(state.backend, clip.skeleton.offsets, [k - k0 for k in keys],
                                    clip.rotations[keys], clip.positions[keys], clip.frame_time, contacts)
    else:  # another skeleton: through a bone map (--bone-map, else detected)
        rot, pos, found = bvh_map.inbetween(bridge, state.backend, clip, info, keys, given, contacts)
    if rot.shape != (k1 - k0 + 1,) + clip.rotations.shape[1:] or not np.isfinite(rot).all():
        raise JobError("the backend returned an unusable result (wrong size or NaN)")
    out_rot, out_pos = clip.rotations.copy(), clip.positions.copy()
    out_rot[k0:k1 + 1], out_pos[k0:k1 + 1] = rot, pos
    out_rot[keys], out_pos[keys] = clip.rotations[keys], clip.positions[keys]  # keys exactly as in the file
    meta = {}
    src = clip.meta.get("source_channels")
    if src is not None:  # Euler hints: keys (and untouched frames) as in the file, the filled frames continuous
        ref = src.copy()
        filled = np.setdiff1d(np.arange(k0, k1 + 1), keys)
        ref[filled] = np.nan
        meta["source_channels"] = ref
    if "amc_channels" in clip.meta:
        meta = _amc_hints(clip, keys, k0, k1)
    skeleton_mod = bridge.backend_module("motion.skeleton")
    result = skeleton_mod.Clip(clip.skeleton, out_rot, out_pos, clip.frame_time, clip.name, meta)
    frames = int(k1 - k0 + 1 - len(keys))
    entry["objects"].append({"name": clip.name or Path(job["source"]).stem, "status": "ok", "keys": keys,
                             "gaps": int((np.diff(keys) > 1).sum()), "frames_written": frames, **found})
    progress(frames)
    return _text_writer(_text(result, clip))


def _on_model(job: dict, state, clip):
    """(the clip as the autoencoder reads it, its conversion or None, the record's bone map): a file of
    another skeleton (or one given ``--bone-map``) through the bone map, as ``inbetween`` reads it."""
    info = bridge.describe(dataclasses.replace(state.backend, checkpoint=str(state.autoencoder)))
    given = job["options"].get("bone_map")
    if _fits(clip, info) and not given:
        return clip, None, {}
    skeleton_mod = bridge.backend_module("motion.skeleton")
    return bvh_map.on_model(clip, info, given, lambda n, p, o: skeleton_mod.Skeleton(
        tuple(n), np.asarray(p, dtype=np.int64), np.asarray(o, dtype=np.float64)))


def encode(job: dict, state, entry: dict, progress):
    clip = read(job["source"], options=job["options"])
    engine = backend_direct.autoencoder(state)
    work, _, found = _on_model(job, state, clip)
    controls = backend_direct.encode(engine, work)
    entry["objects"].append({"name": clip.name, "status": "ok", "frames": [0, clip.num_frames - 1],
                             "segments": len(controls.segments), **found})
    return backend_direct.json_writer(job, engine, {clip.name: backend_direct.controls_json(controls)})


def edit(job: dict, state, entry: dict, progress):
    clip = read(job["source"], options=job["options"])
    engine = backend_direct.autoencoder(state)
    work, rt, found = _on_model(job, state, clip)
    out = backend_direct.edit(engine, work, job["options"])
    if rt is not None:  # the edit on the file's own skeleton: the model's joints mapped back, the rest kept
        out = bvh_map.back_on_file(out, clip, rt, bridge.numpy_module("maths.timebase"))
    entry["objects"].append({"name": clip.name, "status": "ok", "frames": [0, out.num_frames - 1], "gaps": 0,
                             "frames_written": out.num_frames, **found})
    progress(out.num_frames)
    return _text_writer(_text(out, clip))


def info(job: dict, state, entry: dict, progress):
    clip = read(job["source"], options=job["options"])
    model = bridge.describe(state.backend)
    rec = {"name": clip.name, "frames": clip.num_frames, "frame_time": clip.frame_time,
           "joints": clip.skeleton.num_joints, "fits_model": True}
    try:
        if not _fits(clip, model) or job["options"].get("bone_map"):
            rec.update(bvh_map.record(bvh_map.conversion(clip, model, job["options"].get("bone_map")), model))
    except JobError as e:
        rec.update(fits_model=False, reason=str(e))
    entry["objects"].append(rec)
    return None


