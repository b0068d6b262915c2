"""Shared helpers for the add-on's mesh-sequence tests, tests/test_addon_mesh*.py (real bpy, in-process backend unless a test says so).

The checkpoints are the shipped cloth ones (backend/checkpoints/cloth_{autoencoder,inbetween}.json,
a 71 x 71 = 5,041-vertex grid); ``SPLINETWEEN_TEST_MESH_AUTOENCODER`` / ``..._INBETWEEN`` point the
tests elsewhere.  The cloth is the example flag (examples/cloth/cloth_flag.blend, or the same flag
made by training.mesh.cloth_gen while the example is missing), simulated once per test session.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from addon_helpers import ROOT, bpy, fresh_scene_with_addon, prefs, use_test_backend

MESH_AUTOENCODER = Path(os.environ.get("SPLINETWEEN_TEST_MESH_AUTOENCODER")
                        or ROOT / "backend" / "checkpoints" / "cloth_autoencoder.json")
MESH_INBETWEEN = Path(os.environ.get("SPLINETWEEN_TEST_MESH_INBETWEEN")
                      or ROOT / "backend" / "checkpoints" / "cloth_inbetween.json")
FLAG_BLEND = ROOT / "examples" / "cloth" / "cloth_flag.blend"
GRID = 71  # vertices per side of the cloth asset
_session: dict = {}


def session_dir() -> Path:
    if "dir" not in _session:
        _session["dir"] = Path(tempfile.mkdtemp(prefix="splinetween-mesh-"))
    return _session["dir"]


def flag() -> dict:
    """The example flag simulated over frames 1-60, once per session: ``{"frames": [60, V, 3],
    "pc2": path, "blend": path, "from_11": frames 11-20 read first (the cloth stepped from frame 1)}``.
    Call it before setting up a module's scene: it opens the flag's .blend."""
    if "flag" not in _session:
        from blender_addon.io import mesh as mesh_io
        blend = FLAG_BLEND
        if not blend.exists():
            from training.mesh import cloth_gen
            blend = cloth_gen.save_asset_blend(session_dir() / "cloth_flag.blend", frames=60)
        b = bpy()
        b.ops.wm.open_mainfile(filepath=str(blend), load_ui=False)
        obj = next(o for o in b.context.scene.objects if o.type == "MESH" and
                   any(m.type == "CLOTH" for m in o.modifiers))
        first = mesh_io.read_mesh_sequence(b.context, obj, 11, 20)  # jumps in: the cloth must be stepped from 1
        frames = mesh_io.read_mesh_sequence(b.context, obj, 1, 60)
        from backend.formats.pc2 import write_pc2
        pc2 = write_pc2(session_dir() / "flag.pc2", frames)
        _session["flag"] = {"frames": frames, "pc2": pc2, "blend": blend, "from_11": first}
    return _session["flag"]


def flag_blend_copy(path: Path) -> Path:
    """The example flag's .blend at ``path``, as this Blender saves it: the example is saved by Blender 5.0,
    which Blender 4.5 opens with "expect loss of data!" and the batch refuses to save back (what a 4.5 user
    does first: open it and save it in 4.5).  A file of this version is copied byte for byte."""
    b = bpy()
    b.ops.wm.open_mainfile(filepath=str(FLAG_BLEND), load_ui=False, use_scripts=False)
    if tuple(b.data.version[:2]) <= tuple(b.app.version[:2]):
        shutil.copy2(FLAG_BLEND, path)
    else:
        b.ops.wm.save_as_mainfile(filepath=str(path), check_existing=False, copy=True)
    return Path(path)


def setup_scene(cache_folder: Path | None = None):
    """Factory scene, add-on enabled, in-process backend, the test checkpoints, frames 1-60."""
    fresh_scene_with_addon()
    p = prefs()
    use_test_backend()
    p.mesh_autoencoder, p.mesh_inbetween = str(MESH_AUTOENCODER), str(MESH_INBETWEEN)
    p.mesh_cache_folder = str(cache_folder or session_dir() / "cache")
    scene = bpy().context.scene
    scene.frame_start, scene.frame_end = 1, 60
    return scene


def grid(name: str = "Grid", n: int = GRID):
    """A flat n x n grid (2 m square, the cloth asset's vertex order), made active."""
    b = bpy()
    b.ops.mesh.primitive_grid_add(x_subdivisions=n - 1, y_subdivisions=n - 1, size=2.0)
    obj = b.context.active_object
    obj.name = name
    assert len(obj.data.vertices) == n * n
    return obj


def cached_grid(pc2, name: str = "Flag", frame_start: int = 1, n: int = GRID):
    """A grid driven by a MeshCache modifier reading ``pc2`` (scene frame ``frame_start`` = sample 0)."""
    obj = grid(name, n)
    mod = obj.modifiers.new("Source", "MESH_CACHE")
    mod.cache_format, mod.filepath, mod.frame_start = "PC2", str(pc2), frame_start
    return obj


def evaluated(obj, frame: int) -> np.ndarray:
    """The evaluated mesh's vertex positions at a scene frame (read here, not through mesh_io)."""
    b = bpy()
    b.context.scene.frame_set(frame)
    mesh = obj.evaluated_get(b.context.evaluated_depsgraph_get()).data
    co = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def evaluated_range(obj, start: int, end: int) -> np.ndarray:
    return np.stack([evaluated(obj, f) for f in range(start, end + 1)])


def stack(obj) -> list:
    """The modifier stack as a user sees it: name, type and every property value (deep enough to compare)."""
    out = []
    for mod in obj.modifiers:
        props = {}
        for p in mod.bl_rna.properties:
            if p.identifier in ("rna_type", "is_active", "execution_time", "persistent_uid") or p.type in \
                    ("POINTER", "COLLECTION"):
                continue
            v = getattr(mod, p.identifier)
            props[p.identifier] = tuple(v) if hasattr(v, "__len__") and not isinstance(v, str) else v
        out.append((mod.name, mod.type, props))
    return out


def mesh_data(obj) -> np.ndarray:
    co = np.empty(len(obj.data.vertices) * 3, np.float32)
    obj.data.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def cache_file(obj) -> Path:
    from blender_addon.io import cache as mesh_cache
    mod = mesh_cache.find(obj, obj.splinetween_latent.cache_uid)
    return mesh_cache.file_of(obj, mod)


def ping_pong(frames: np.ndarray, count: int) -> np.ndarray:
    """A longer sequence from a short one: forwards, backwards, forwards ... ``count`` frames."""
    cycle = np.concatenate([frames, frames[-2:0:-1]])
    reps = -(-count // len(cycle))
    return np.concatenate([cycle] * reps)[:count]


def long_flag(count: int = 121) -> dict:
    """The flag played forwards and backwards for ``count`` frames (two or more segments), as a PC2."""
    key = f"long_{count}"
    if key not in _session:
        from backend.formats.pc2 import write_pc2
        frames = ping_pong(flag()["frames"], count)
        _session[key] = {"frames": frames, "pc2": write_pc2(session_dir() / f"flag_{count}.pc2", frames)}
    return _session[key]


def raw_props(obj) -> list[str]:
    return [k for k in obj.keys() if k.startswith("splinetween_s")]


def ui_edit(obj, name: str, index: int, value: float) -> None:
    """Type a value into a raw control point as the UI does, then let the depsgraph update run."""
    obj[name][index] = value
    obj.path_resolve(f'["{name}"]', False).update()
    bpy().context.view_layer.update()
