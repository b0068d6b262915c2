"""Read a mesh sequence from a .blend file through Blender (bpy), for ``training.train mesh``.

The file is opened with scripts disabled (a .blend from elsewhere must not run code); the
mesh object's evaluated vertices are read in bulk per frame over the scene's frame range,
whatever animates them (armature, shape keys, cloth cache, MeshCache, Alembic).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data import DataError


def _pick_object(bpy, path: Path, name: str):
    meshes = [o for o in bpy.context.scene.objects if o.type == "MESH"]
    if name:
        obj = bpy.context.scene.objects.get(name)
        if obj is None or obj.type != "MESH":
            raise DataError(f"{path}: no mesh object named {name!r} in the scene (meshes: "
                            f"{', '.join(o.name for o in meshes) or 'none'})")
        return obj
    animated = [o for o in meshes if o.animation_data or o.modifiers or
                (o.data.shape_keys and o.data.shape_keys.animation_data)]
    pick = animated or meshes
    if len(pick) != 1:
        raise DataError(f"{path}: {len(pick)} candidate mesh objects ({', '.join(o.name for o in pick) or 'none'}); "
                        "choose one with --object=NAME")
    return pick[0]


def read_blend_sequence(path, object_name: str = "") -> np.ndarray:
    """[F, V, 3] float32 object-space positions over the scene range of ``path``."""
    import bpy
    path = Path(path)
    try:
        bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False, use_scripts=False)
    except RuntimeError as e:
        raise DataError(f"{path}: Blender cannot open it ({str(e).strip()[:200]})") from None
    scene = bpy.context.scene
    obj = _pick_object(bpy, path, object_name)
    frames = []
    count = None
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        mesh = obj.evaluated_get(dg).data
        n = len(mesh.vertices)
        if count is not None and n != count:
            raise DataError(f"{path}: object {obj.name!r} has {count} vertices before frame {f} and {n} at it; "
                            "a sequence needs a fixed topology")
        count = n
        buf = np.empty(n * 3, np.float32)
        mesh.attributes["position"].data.foreach_get("vector", buf)
        frames.append(buf.reshape(n, 3))
    if not frames:
        raise DataError(f"{path}: the scene's frame range is empty")
    return np.stack(frames)
