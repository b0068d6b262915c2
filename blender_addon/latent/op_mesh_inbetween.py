"""ANIM_OT_splinetween_mesh_inbetween: keep key frames of a mesh sequence and fill the frames between them."""
from __future__ import annotations

import bpy

from .. import preferences
from ..backend_start import StartsBackend
from ..core.errors import run_reported
from ..io import mesh_checkpoints
from .mesh import adapter as mesh_latent
from .op_encode import draw_range
from .op_mesh_encode import MeshRange, poll_mesh

MESH_KEY_MODES = [
    ("EVERY", "Every N Frames", "Keep every N-th frame of the range (and its last frame) as a key frame"),
    ("LIST", "Listed Frames", "Keep the listed scene frames as key frames (the range is from the first to the last)"),
]


def draw_key_options(layout: bpy.types.UILayout, data, prefix: str = "") -> None:
    """The key-frame options, from the operator (redo panel) or the scene (sidebar, ``mesh_`` prefix)."""
    layout.prop(data, prefix + "key_mode")
    every = getattr(data, prefix + "key_mode") == "EVERY"
    row = layout.row()
    row.active = every
    row.prop(data, prefix + "key_step")
    row = layout.row()
    row.active = not every
    row.prop(data, prefix + "key_frames")


class ANIM_OT_splinetween_mesh_inbetween(StartsBackend, MeshRange, bpy.types.Operator):
    """Keep the active mesh's evaluated shape on key frames (every N frames, or listed frames) and fill every frame
    between them with the mesh in-betweening model; shown through a MeshCache modifier, keys exactly as they were"""

    bl_idname = "anim.splinetween_mesh_inbetween"
    bl_label = "Inbetween Mesh"
    bl_options = {"REGISTER", "UNDO"}

    key_mode: bpy.props.EnumProperty(name="Key Frames", items=MESH_KEY_MODES, default="EVERY")
    key_step: bpy.props.IntProperty(name="Every", default=5, min=1, max=60,
                                    description="Keep every N-th frame of the range as a key frame")
    key_frames: bpy.props.StringProperty(name="Frames", default="",
                                         description="Scene frames to keep, e.g. 1, 8, 20-40/5")

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_mesh(cls, context)

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        draw_key_options(layout, self)
        draw_range(layout, self, active=self.key_mode == "EVERY")

    def backend_checkpoint(self, context: bpy.types.Context):
        return mesh_checkpoints.for_object(context.active_object, "inbetween", context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        start, end = self.chosen_range(context)
        settings = preferences.settings(context)

        def run():
            ckpt = mesh_checkpoints.for_object(obj, "inbetween", context)
            keys = mesh_latent.key_frames(self.key_mode, start, end, self.key_step, self.key_frames)
            return mesh_latent.inbetween(context, obj, settings, ckpt, keys)
        return run_reported(self, run)


classes = (ANIM_OT_splinetween_mesh_inbetween,)
