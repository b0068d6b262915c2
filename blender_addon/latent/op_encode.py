"""ANIM_OT_splinetween_encode: encode a frame range into editable latent control points."""
from __future__ import annotations

import bpy

from .. import preferences
from ..backend_start import StartsBackend
from ..core.errors import run_reported
from .armature import encode
from .common import poll_animated_armature

RANGES = [
    ("ACTION", "Action", "Every keyed frame of the armature's action"),
    ("SCENE", "Scene", "The scene's frame range (its preview range when that is on)"),
    ("CUSTOM", "Custom", "From Frame Start to Frame End"),
]


def draw_range(layout: bpy.types.UILayout, op, active: bool = True) -> None:
    """The Range enum and, for a custom range, its first and last frame (operator redo panels)."""
    col = layout.column(align=True)
    col.active = active
    col.prop(op, "frame_range")
    sub = col.column(align=True)
    sub.active = active and op.frame_range == "CUSTOM"
    sub.prop(op, "frame_start")
    sub.prop(op, "frame_end")


def frame_range(context: bpy.types.Context, obj, which: str, start: int, end: int) -> tuple[int, int]:
    if which == "ACTION":
        return encode.action_range(obj)
    if which == "SCENE":
        s = context.scene
        if s.use_preview_range:
            return s.frame_preview_start, s.frame_preview_end
        return s.frame_start, s.frame_end
    return start, end


class ANIM_OT_splinetween_encode(StartsBackend, bpy.types.Operator):
    """Encode a frame range of the active armature into latent controls edited with sliders; its keys stay as they are"""

    bl_idname = "anim.splinetween_encode"
    bl_label = "Encode"
    bl_options = {"REGISTER", "UNDO"}

    frame_range: bpy.props.EnumProperty(name="Range", items=RANGES, default="ACTION")
    frame_start: bpy.props.IntProperty(name="Frame Start", default=1, description="First frame (Custom range)")
    frame_end: bpy.props.IntProperty(name="Frame End", default=250, description="Last frame (Custom range)")

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not poll_animated_armature(cls, context, "import or key some motion first"):
            return False
        st = context.active_object.splinetween_latent
        if st.active:
            made = "Inbetween (Editable)" if st.task == "INBETWEEN" else "Encode"
            cls.poll_message_set(f"Frames {st.frame_start}-{st.frame_end} already have latent controls from {made}: "
                                 "Bake keeps the motion as keys, Remove puts back the keys from before; then Encode")
            return False
        return True

    def draw(self, context: bpy.types.Context) -> None:
        self.layout.use_property_split = True
        draw_range(self.layout, self)

    def backend_checkpoint(self, context: bpy.types.Context):
        return preferences.autoencoder_path(context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        start, end = frame_range(context, obj, self.frame_range, self.frame_start, self.frame_end)
        fps = context.scene.render.fps / context.scene.render.fps_base
        settings, checkpoint = preferences.settings(context), preferences.autoencoder_path(context)
        return run_reported(self, lambda: encode.encode(obj, settings, checkpoint, start, end, fps))


classes = (ANIM_OT_splinetween_encode,)
