"""Latent controls for mesh sequences: Encode Mesh, Inbetween Mesh, their re-decode, Bake, Remove, Resample.

The same bookkeeping as armatures (``Object.splinetween_latent``: segments, sliders, raw control
points ``splinetween_sNN_cK`` as ID properties, see ``latent``), but the decode is written to a PC2
file read by a MeshCache modifier (``mesh_cache``) instead of F-curves.  The mesh data and the
other modifiers are never changed.  Edits are a layer, as for armatures: the file holds the
range's original (the evaluated vertices Encode Mesh read, to float32, or the fill Inbetween Mesh made)
wherever the sliders and raw points are the encoded ones, and original + (decode(edited) -
decode(encoded)) where they are not.  ``cache_fingerprint`` names what the file holds; when the
file no longer holds it (an undo restored older sliders, the file was deleted, another session)
every segment is decoded and written again.  Every check and the backend call come before the
first change: a refusal leaves the object, its modifiers and the files as they were.
"""
from __future__ import annotations

import time
from pathlib import Path

import bpy
import numpy as np

from ... import bridge
from ...core import latent_math, layer_math, mesh_math
from ...core.errors import Refusal
from ...io import cache as mesh_cache
from ...io import mesh as mesh_io
from .. import core as latent_core
from . import cache
from .layer import layered, prime


def meta(path: Path, task: str) -> dict:
    """A mesh checkpoint's task, vertex count, window, minimum frames: ``bridge.read_model`` (the one
    reader, within the JSON limits, no torch), with the mesh preference named where it cannot be read."""
    where = "Mesh Inbetween" if task == "inbetween" else "Mesh Autoencoder"
    if not Path(path).with_suffix(".json").is_file():
        raise Refusal(f"cannot read the mesh checkpoint {path} (no such file); set Preferences > Add-ons > "
                      f"Splinetween > {where} to a mesh checkpoint trained on this mesh")
    info = bridge.read_model(path)
    out = {"mesh": info.mesh, "vertices": info.vertices, "task": info.task, "window": info.window,
           "min_frames": info.min_frames}
    if not out["mesh"]:
        raise Refusal(f"{Path(path).name} is a motion (armature) checkpoint; mesh sequences need a mesh checkpoint "
                      f"(Preferences > Add-ons > Splinetween > {where}; train one with python -m training.train mesh)")
    if out["task"] != task:
        raise Refusal(f"{Path(path).name} is a mesh {out['task']} checkpoint; this needs a mesh {task} one "
                      f"(Preferences > Add-ons > Splinetween > {where})")
    return out


def request(settings, header: dict, arrays: dict) -> tuple[dict, dict]:
    try:
        return bridge.request(settings, header, arrays)
    except bridge.BridgeError as e:
        raise Refusal(f"the backend failed, nothing was changed: {e}") from None


def _free_mesh(obj) -> None:
    try:
        mesh_io.require_mesh(obj)
    except mesh_io.MeshReadError as e:
        raise Refusal(str(e)) from None
    if obj.mode == "EDIT":
        raise Refusal(f"{obj.name} is in Edit Mode: switch to Object Mode first")
    st = obj.splinetween_latent
    if st.active:
        raise Refusal(f"{obj.name} already has latent controls (frames {st.frame_start}-{st.frame_end}); Bake or "
                      "Remove them first")


def _read(context, obj, start: int, end: int, frames=None) -> np.ndarray:
    try:
        return mesh_io.read_mesh_sequence(context, obj, start, end, frames)
    except mesh_io.MeshReadError as e:
        raise Refusal(str(e)) from None


def _check_vertices(obj, count: int, m: dict, path: Path) -> None:
    if count != m["vertices"]:
        raise Refusal(f"{obj.name} has {count} vertices, but the mesh checkpoint {Path(path).name} was trained on a "
                      f"mesh of {m['vertices']}: a mesh model is per asset (same vertices, same order); choose this "
                      "mesh's checkpoint in Preferences > Add-ons > Splinetween, or train one on it")


def sync(obj, context=None, force: bool = False) -> bool:
    """Write the cache file when it does not show the raw points and sliders (the original where they
    are the encoded ones, the layer elsewhere); True if written."""
    from ... import preferences
    st = obj.splinetween_latent
    raw = latent_core.read_raw(obj, st)
    bounds, sigs, edits = latent_core.plan(st, raw)
    mod = cache.modifier(obj, st)
    path = cache.owned_cache(obj, st, mod, context)
    stale = force or mesh_cache.fingerprint(path) != st.cache_fingerprint
    if not stale and all(sigs[s] == seg.signature for s, seg in enumerate(st.segments)):
        return False
    other = cache.sharing(obj, path)
    if other:
        raise Refusal(f"{obj.name} and {other} write the same cache file ({path.name}), as a duplicated object does: "
                      f"Remove or Bake the latent controls of one of them (and Encode it again)")
    nsigs = latent_core.neutral_signatures(st, bounds)
    ckpt = None
    if layer_math.edited_segments(sigs, nsigs):
        ckpt, why = latent_core.checkpoint_for(st, context)
        if ckpt is None:
            raise Refusal(why)
    frames = layered(st, ckpt, preferences.settings(context), raw, bounds, sigs, edits, nsigs)
    try:
        fp = mesh_cache.write(path, frames, st.frame_start)
    except mesh_cache.CacheRefusal as e:
        raise Refusal(str(e)) from None
    with latent_core.suspended():
        for s, seg in enumerate(st.segments):
            seg.signature = sigs[s]
        st.cache_fingerprint = fp
        if st.status:
            st.status = ""
        mesh_cache.set_range(obj, mod, st.frame_start, st.frame_end)
    mesh_cache.refresh(obj)
    return True


def _install(context, obj, *, task, ckpt, start, frames, segments, points, principal_names, base, pc2,
             num_vertices, neutral=None, keys=None, key_frames=None, principal_descriptions=(),
             fidelity=None) -> None:
    """Bookkeeping, raw points, the original (``base``: the frames read, or the fill), the modifier, then
    the file; undone when the file cannot be written (a file that was there before, unused, stays)."""
    existed = pc2.exists()
    latent_core.install_controls(obj, task=task, path=ckpt, start=start, frames=frames, segments=segments,
                            points=points, principal_names=principal_names,
                            principal_descriptions=principal_descriptions, fidelity=fidelity)
    st = obj.splinetween_latent
    with latent_core.suspended():
        st.num_vertices = int(num_vertices)
        latent_core.store(st, "base_frames", np.ascontiguousarray(base, dtype=np.float32).ravel())
        if keys is not None:
            latent_core.store(st, "keys", np.asarray(keys, dtype=np.int32))
            latent_core.store(st, "key_frames", np.ascontiguousarray(key_frames, dtype=np.float32).ravel())
        st.cache_uid, st.made_animation_data = mesh_cache.attach(obj, pc2, start, start + frames - 1)
        st.cache_blend = bpy.data.filepath
    if neutral is not None:
        prime(st, neutral)
    try:
        sync(obj, context, force=True)
    except Refusal:
        _drop(obj, delete_file=not existed)
        raise


def encode(context, obj, settings, ckpt: Path, start: int, end: int) -> str:
    """Encode the evaluated mesh on scene frames ``start..end`` and show its decode through the cache."""
    t0 = time.perf_counter()
    _free_mesh(obj)
    m = meta(ckpt, "autoencoder")
    try:
        mesh_io.check_range(start, end)
    except mesh_io.MeshReadError as e:
        raise Refusal(str(e)) from None
    n = end - start + 1
    if n < m["min_frames"]:
        raise Refusal(f"frames {start}-{end} are {n} frame{'s' * (n != 1)}; the model needs at least "
                      f"{m['min_frames']} (encode a longer range)")
    pc2 = cache.new_path(context, obj, "encoded")
    frames = _read(context, obj, start, end)
    _check_vertices(obj, frames.shape[1], m, ckpt)
    reply, out = request(settings, {"op": "mesh_encode", "checkpoint": str(ckpt), "name": obj.name, "decode": True},
                          {"frames": frames})
    t1 = time.perf_counter()
    _install(context, obj, task="AUTOENCODER", ckpt=ckpt, start=start, frames=n, segments=reply["segments"],
             points=out["points"], principal_names=reply["principal_names"], base=frames, neutral=out["vertices"],
             pc2=pc2, num_vertices=frames.shape[1], fidelity=reply.get("fidelity"),
             principal_descriptions=reply.get("principal_descriptions", ()))
    s = len(reply["segments"])
    poor = layer_math.fidelity_problem(reply["fidelity"], mesh=True)
    return (f"Encoded frames {start}-{end} of {obj.name} into {s} segment{'s' * (s != 1)} of {latent_math.POINTS} "
            "control "
            f"points in {1e3 * (time.perf_counter() - t0):.0f} ms (model {1e3 * reply.get('seconds', 0):.0f} ms, "
            f"cache {1e3 * (time.perf_counter() - t1):.0f} ms); the mesh shows its own frames from {pc2.name} "
            "until a slider moves" + (f". {poor}" if poor else ""))


def key_frames(mode: str, start: int, end: int, step: int, text: str) -> list[int]:
    """Scene key frames: every ``step`` frames of ``start..end`` (its end included), or the listed ones."""
    if mode == "EVERY":
        try:
            mesh_io.check_range(start, end)
        except mesh_io.MeshReadError as e:
            raise Refusal(str(e)) from None
        return mesh_math.every_k(start, end, step)
    try:
        return mesh_math.parse_frames(text)
    except ValueError as e:
        raise Refusal(f"key frames: {e}") from None


def inbetween(context, obj, settings, ckpt: Path, keys: list[int]) -> str:
    """Keep the evaluated mesh on the scene ``keys`` only and fill every frame between them."""
    t0 = time.perf_counter()
    _free_mesh(obj)
    m = meta(ckpt, "inbetween")
    why = mesh_math.check_gaps(keys, m["window"] - 1)
    if why:
        raise Refusal(why)
    start, end = keys[0], keys[-1]
    pc2 = cache.new_path(context, obj, "inbetween")
    frames = _read(context, obj, start, end, frames=keys)
    _check_vertices(obj, frames.shape[1], m, ckpt)
    rel = [k - start for k in keys]
    reply, out = request(settings, {"op": "mesh_inbetween", "checkpoint": str(ckpt), "keys": rel, "name": obj.name},
                          {"key_frames": frames})
    _install(context, obj, task="INBETWEEN", ckpt=ckpt, start=start, frames=end - start + 1,
             segments=reply["segments"], points=out["points"], principal_names=[], base=out["vertices"],
             pc2=pc2, num_vertices=frames.shape[1], keys=rel, key_frames=frames)
    return (f"Filled frames {start}-{end} of {obj.name} between {len(keys)} key frames in "
            f"{1e3 * (time.perf_counter() - t0):.0f} ms; the mesh shows them from {pc2.name}")


def _drop(obj, delete_file: bool) -> str:
    """Detach the modifier; its file is deleted only when this .blend made it (never another file's)."""
    st = obj.splinetween_latent
    delete_file = delete_file and st.cache_blend == bpy.data.filepath
    note = mesh_cache.detach(obj, mesh_cache.find(obj, st.cache_uid), delete_file, st.made_animation_data)
    latent_core.clear(obj)
    return note


def bake(obj) -> str:
    """Keep the cache file and its modifier (renamed "... Baked"); drop the latent controls."""
    st = latent_core.controls_of(obj)
    a, b = st.frame_start, st.frame_end
    mod = mesh_cache.find(obj, st.cache_uid)
    kept = ""
    if mod is not None:
        cache.owned_cache(obj, st, mod)  # (the baked modifier reads this .blend's own file)
        mod.name = f"{mesh_cache.MODIFIER} Baked"  # Blender renames the driver's path with it
        kept = f": the MeshCache modifier '{mod.name}' keeps reading {mesh_cache.file_of(obj, mod)}"
    latent_core.clear(obj)
    return f"Baked frames {a}-{b}{kept}; latent controls removed"


def remove(obj) -> str:
    """Take the modifier, its driver and the cache file away: the mesh evaluates as before Encode."""
    st = latent_core.controls_of(obj)
    a, b = st.frame_start, st.frame_end
    note = _drop(obj, delete_file=True)
    return f"Removed the latent controls of frames {a}-{b} of {obj.name}, their modifier and cache file{note}"


def resample(obj, settings, frames: int) -> str:
    """Decode into ``frames`` frames (2x, 4x: slow motion with a sample on every frame); the range grows
    or shrinks from its start, and frames after it show the original animation again.  The layer's
    original is resampled linearly (the frames read, or the fill, at the new frames' times)."""
    st = obj.splinetween_latent
    ckpt, nothing = latent_core.resample_checkpoint(obj, st, frames)
    if ckpt is None:
        return nothing
    cache.modifier(obj, st)
    raw = latent_core.read_raw(obj, st)
    old = st.frames
    with latent_core.suspended():
        st.frames = frames
    try:  # the layer at the new length, decoded before anything changes (the backend may refuse)
        bounds, sigs, edits = latent_core.plan(st, raw)
        layered(st, ckpt, settings, raw, bounds, sigs, edits, latent_core.neutral_signatures(st, bounds))
    finally:
        with latent_core.suspended():
            st.frames = old
    with latent_core.suspended():
        st.frames = frames
    try:
        sync(obj, force=True)
    except Refusal:
        with latent_core.suspended():
            st.frames = old
        raise
    return (f"Resampled frames {st.frame_start}-{st.frame_start + old - 1} ({old} frames) to "
            f"{st.frame_start}-{st.frame_end} ({frames} frames)")
