"""The mesh-sequence commands on a .blend file, in a worker (real bpy): Inbetween Mesh and Encode Mesh.

Each chosen mesh object goes through the operators' own code (``latent_core.mesh.inbetween`` /
``encode``: the evaluated mesh read over the frames, the model, a MeshCache modifier added last
and the decode written as PC2).  The PC2 files go to ``splinetween/`` beside the *output* .blend
(``<name>_<object>_<what>.pc2``, the add-on's own layout), and the modifier reads them through a
path relative to that .blend.  Files are opened with scripts disabled (``blend_file.open_blend``);
the dependency graph is evaluated to read the meshes, where Python drivers do not run.
"""
from __future__ import annotations

from pathlib import Path

import bpy

from ..core import layer_math, mesh_math
from ..core.errors import Refusal
from ..io import cache as mesh_cache
from ..io import mesh_checkpoints
from ..latent import core as latent_core
from ..latent.mesh import adapter as mesh_adapter
from .blend_file import blend_writer, open_blend
from .errors import JobError
from .job_blend import objects_of_type

CACHE_FOLDER = "splinetween"  # beside the output .blend, as the add-on's default (//splinetween)


def meshes(patterns: list[str], entry: dict) -> list:
    return objects_of_type(patterns, entry, "MESH", "a mesh")


def _scene_range(scene) -> tuple[int, int]:
    return (scene.frame_preview_start, scene.frame_preview_end) if scene.use_preview_range else \
        (scene.frame_start, scene.frame_end)


def _frames(opts: dict, scene) -> list[int]:
    """The key frames (mesh-inbetween) or [first, last] (mesh-encode), inside the scene's frame range."""
    lo, hi = _scene_range(scene)
    keys = opts.get("keys") or {}
    if keys.get("frames") is not None:
        frames = sorted({int(f) for f in keys["frames"]})
    else:
        a, b = opts["range"] if opts.get("range") else (lo, hi)
        frames = mesh_math.every_k(a, b, int(keys["every"])) if keys.get("every") else [a, b]
    if frames[0] < lo or frames[-1] > hi:
        raise JobError(f"frames {frames[0]}-{frames[-1]} reach outside the scene's frame range {lo}-{hi} (scene "
                       f"{scene.name}): choose frames inside it (--range, --keys)")
    return frames


def _caches(obj) -> str | None:
    st = obj.splinetween_latent
    mod = mesh_cache.find(obj, st.cache_uid) if st.active else None
    return str(mesh_cache.file_of(obj, mod)) if mod is not None else None


def _run(job: dict, state, entry: dict, progress, what: str):
    opts = job["options"]
    open_blend(job["source"], entry)
    dest = Path(job["output"])
    state.prefs.mesh_cache_folder = str(dest.parent / CACHE_FOLDER)
    context = bpy.context
    frames = _frames(opts, context.scene)
    task = "inbetween" if what == "inbetween" else "autoencoder"
    from .. import preferences
    ckpt = preferences.mesh_checkpoint_path(task, context)
    written: list[str] = []
    for obj in meshes(opts.get("objects") or [], entry):
        try:  # --checkpoint for every mesh, else each mesh's own (Train Mesh Model's), else the preference's
            path = ckpt if opts.get("checkpoint") else mesh_checkpoints.for_object(obj, task, context)
            if what == "inbetween":
                message = mesh_adapter.inbetween(context, obj, state.backend, path, frames)
            else:
                message = mesh_adapter.encode(context, obj, state.backend, path, frames[0], frames[-1])
        except Refusal as e:
            rec = {"name": obj.name, "status": "skipped", "reason": str(e)}
            entry["objects"].append(rec)
            entry["warnings"].append(f"{obj.name}: skipped, {e}")
            continue
        st = obj.splinetween_latent
        cache = _caches(obj)
        written.append(cache)
        rec = {"name": obj.name, "status": "ok", "vertices": st.num_vertices, "frames": [st.frame_start, st.frame_end],
               "frames_written": st.frames, "segments": len(st.segments), "cache": cache, "message": message}
        if what == "inbetween":
            rec["keys"] = frames
            rec["gaps"] = len(frames) - 1
        else:  # the panel's readout: how well the model reconstructs each segment
            fit = latent_core.fidelity(st)
            rec["fidelity"] = {"vertex_error": [round(float(r[0]), 6) for r in fit],
                               "percent_of_size": [round(float(r[1]), 4) for r in fit],
                               "warning": layer_math.fidelity_problem(fit, mesh=True)}
        entry["objects"].append(rec)
        progress(rec["frames_written"])
    if not any(o["status"] == "ok" for o in entry["objects"]) and not entry["errors"]:
        reasons = "; ".join(f"{o['name']}: {o['reason']}" for o in entry["objects"]) or "the file has no mesh object" \
            + (" matching --objects" if opts.get("objects") else "")
        entry["errors"].append(f"no mesh was {'in-betweened' if what == 'inbetween' else 'encoded'} ({reasons})")
    entry["caches"] = written
    return blend_writer(job["source"])


def inbetween(job: dict, state, entry: dict, progress):
    return _run(job, state, entry, progress, "inbetween")


def encode(job: dict, state, entry: dict, progress):
    return _run(job, state, entry, progress, "encode")


def preload(state, task: str) -> str:
    """Load the mesh model before the first file: a request on a still mesh of the checkpoint's size (the
    protocol has no mesh 'load'); -> a status line."""
    import numpy as np

    from .. import bridge, preferences
    path = preferences.mesh_checkpoint_path(task)
    try:
        m = mesh_adapter.meta(path, task)
    except Refusal as e:
        return f"not loaded: {e}"
    still = np.zeros((max(2, m["min_frames"]), m["vertices"], 3), np.float32)
    if task == "inbetween":
        header, arrays = {"op": "mesh_inbetween", "keys": [0, len(still) - 1]}, {"key_frames": still[[0, -1]]}
    else:
        header, arrays = {"op": "mesh_encode", "decode": False}, {"frames": still}
    reply, _ = bridge.request(state.backend, dict(header, checkpoint=str(path), name="preload"), arrays)
    return f"{path.name} on {reply['device']}"
