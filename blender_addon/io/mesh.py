"""bpy -> numpy for mesh sequences: a mesh object's evaluated vertex positions over a frame range.

Whatever animates the mesh (armature, shape keys, cloth or soft-body cache, a MeshCache
modifier, an Alembic cache, geometry nodes) the evaluated mesh is read, in bulk, per frame,
in object space.  The scene's current frame is put back afterwards.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..core.errors import Refusal


class MeshReadError(Refusal, ValueError):
    """The sequence cannot be read; the message names the problem and the fix."""


class NoVertices(MeshReadError):
    def __init__(self, message: str, frame: int):
        super().__init__(message)
        self.frame = frame


class TopologyChange(MeshReadError):
    """The vertex count changes in the range: ``count`` at frame ``first``, ``now`` at ``frame``."""

    def __init__(self, message: str, count: int, first: int, now: int, frame: int):
        super().__init__(message)
        self.count, self.first, self.now, self.frame = count, first, now, frame


_SIMULATIONS = ("CLOTH", "SOFT_BODY")


def require_mesh(obj) -> None:
    if obj is None:
        raise MeshReadError("no active object: make a mesh object active")
    if obj.type != "MESH":
        raise MeshReadError(f"{obj.name} is not a mesh object (it is of type {obj.type.replace('_', ' ').title()}): "
                            "make a mesh object active")


def check_range(start: int, end: int) -> None:
    if end < start:
        raise MeshReadError(f"the frame range {start}-{end} is empty (its end is before its start): choose a "
                            "range whose last frame is at or after its first")


def evaluated_positions(obj, depsgraph) -> np.ndarray:
    """The evaluated mesh's vertex positions now: float32 ``[V, 3]`` (object space)."""
    mesh = obj.evaluated_get(depsgraph).data
    n = len(mesh.vertices)
    buf = np.empty(n * 3, dtype=np.float32)
    if n:
        mesh.attributes["position"].data.foreach_get("vector", buf)
    return buf.reshape(n, 3)


@contextmanager
def frame_kept(scene):
    """Run a block that changes the scene's frame; the frame (and subframe) is put back after it."""
    frame, sub = scene.frame_current, scene.frame_subframe
    try:
        yield
    finally:
        scene.frame_set(frame, subframe=sub)


def _warm_up(scene, obj, start: int) -> None:
    """Simulations (cloth, soft body) that are not baked must be stepped from their cache's start:
    jumping to ``start`` would skip the frames they integrate over."""
    first = start
    for mod in obj.modifiers:
        if mod.type in _SIMULATIONS and mod.show_viewport:
            pc = mod.point_cache
            if not pc.is_baked and pc.frame_start < start:
                first = min(first, pc.frame_start)
    for f in range(first, start):
        scene.frame_set(f)


def read_mesh_sequence(context, obj, start: int, end: int, frames=None) -> np.ndarray:
    """Evaluated vertex positions of ``obj`` on scene frames ``start..end``: float32 ``[F, V, 3]``.

    ``frames``: only these scene frames (sorted, inside the range) are copied out, though every
    frame of the range is still evaluated (so simulations step and a topology change anywhere in
    the range is found).  Refuses an empty range, a non-mesh object and a vertex count that changes,
    naming the frame where it does."""
    require_mesh(obj)
    check_range(start, end)
    if obj.name not in context.view_layer.objects:
        raise MeshReadError(f"{obj.name} is not in the current view layer, so Blender does not evaluate it: "
                            "link it to the scene (or switch to a view layer that has it)")
    scene = context.scene
    wanted = None if frames is None else {int(f) for f in frames}
    out, count, at = [], None, None
    with frame_kept(scene):
        _warm_up(scene, obj, start)
        for f in range(start, end + 1):
            scene.frame_set(f)
            dg = context.evaluated_depsgraph_get()
            mesh = obj.evaluated_get(dg).data
            n = len(mesh.vertices)
            if count is None:
                count, at = n, f
                if n == 0:
                    raise NoVertices(f"{obj.name} has no vertices at frame {f}", f)
            elif n != count:
                raise TopologyChange(
                    f"{obj.name} has {count} vertices at frame {at} but {n} at frame {f}: its topology changes "
                    f"in frames {start}-{end}, and a sequence needs the same vertices on every frame. Choose a "
                    "range where the vertex count stays the same, or turn off the modifier that changes it "
                    "(Remesh, Decimate, Geometry Nodes, ...)", count, at, n, f)
            if wanted is None or f in wanted:
                buf = np.empty(n * 3, dtype=np.float32)
                mesh.attributes["position"].data.foreach_get("vector", buf)
                out.append(buf.reshape(n, 3))
    return np.stack(out)

