"""ANIM_OT_splinetween_mesh_encode: encode a mesh object's evaluated frames into editable latent control points."""
from __future__ import annotations

import bpy

from .. import preferences
from ..backend_start import StartsBackend
from ..core.errors import run_reported
from ..io import mesh_checkpoints
from .mesh import adapter as mesh_latent
from .op_encode import draw_range

RANGES = [
    ("SCENE", "Scene", "The scene's frame range (its preview range when that is on)"),
    ("CUSTOM", "Custom", "From Frame Start to Frame End"),
]


def scene_range(context: bpy.types.Context) -> tuple[int, int]:
    s = context.scene
    return (s.frame_preview_start, s.frame_preview_end) if s.use_preview_range else (s.frame_start, s.frame_end)


def poll_mesh(cls, context: bpy.types.Context, free: bool = True) -> bool:
    """An active mesh object (without latent controls when ``free``); otherwise say why not."""
    obj = context.active_object
    if obj is None or obj.type != "MESH":
        cls.poll_message_set("Make a mesh object the active object")
        return False
    if free and obj.splinetween_latent.active:
        st = obj.splinetween_latent
        cls.poll_message_set(f"Frames {st.frame_start}-{st.frame_end} already have latent controls: Bake keeps what "
                             "the mesh shows, Remove puts it back as it was; then Encode again")
        return False
    return True


class MeshRange:
    """The frame-range properties both mesh operators take (the scene's range by default)."""

    frame_range: bpy.props.EnumProperty(name="Range", items=RANGES, default="SCENE")
    frame_start: bpy.props.IntProperty(name="Frame Start", default=1, description="First frame (Custom range)")
    frame_end: bpy.props.IntProperty(name="Frame End", default=60, description="Last frame (Custom range)")

    def chosen_range(self, context: bpy.types.Context) -> tuple[int, int]:
        return scene_range(context) if self.frame_range == "SCENE" else (self.frame_start, self.frame_end)


class ANIM_OT_splinetween_mesh_encode(StartsBackend, MeshRange, bpy.types.Operator):
    """Encode the active mesh's evaluated frames (whatever animates them) into latent control points you can edit
    with sliders; the decode is shown through a MeshCache modifier, the mesh itself is not changed"""

    bl_idname = "anim.splinetween_mesh_encode"
    bl_label = "Encode Mesh"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_mesh(cls, context)

    def draw(self, context: bpy.types.Context) -> None:
        self.layout.use_property_split = True
        draw_range(self.layout, self)

    def backend_checkpoint(self, context: bpy.types.Context):
        return mesh_checkpoints.for_object(context.active_object, "autoencoder", context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        start, end = self.chosen_range(context)
        settings = preferences.settings(context)
        return run_reported(self, lambda: mesh_latent.encode(
            context, obj, settings, mesh_checkpoints.for_object(obj, "autoencoder", context), start, end))


classes = (ANIM_OT_splinetween_mesh_encode,)
