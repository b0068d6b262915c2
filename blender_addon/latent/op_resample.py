"""ANIM_OT_splinetween_resample: decode the latent range into more or fewer frames."""
from __future__ import annotations

import bpy

from .. import preferences
from ..core.errors import run_reported
from . import slider
from .common import poll_latent

MODES = [
    ("FACTOR", "Factor", "A multiple of the encoded length: 2 and 4 decode 2x / 4x as many frames (slow motion)"),
    ("LENGTH", "Length", "An exact number of frames"),
]


def target_frames(source_frames: int, mode: str, factor: float, frames: int) -> int:
    return int(round((source_frames - 1) * factor)) + 1 if mode == "FACTOR" else frames


class ANIM_OT_splinetween_resample(bpy.types.Operator):
    """Decode the latent range into more frames (2x, 4x: denser motion, slow motion at the scene's rate) or fewer;
    the range grows or shrinks from its start and later keys move with its end"""

    bl_idname = "anim.splinetween_resample"
    bl_label = "Resample"
    bl_options = {"REGISTER", "UNDO"}

    mode: bpy.props.EnumProperty(name="By", items=MODES, default="FACTOR")
    factor: bpy.props.FloatProperty(name="Factor", default=2.0, min=0.1, max=16.0,
                                    description="New length as a multiple of the encoded length")
    frames: bpy.props.IntProperty(name="Frames", default=121, min=2, description="New length in frames")

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_latent(cls, context)

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "mode")
        layout.prop(self, "factor" if self.mode == "FACTOR" else "frames")

    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        n = target_frames(obj.splinetween_latent.source_frames, self.mode, self.factor, self.frames)
        return run_reported(self, lambda: slider.resample(obj, preferences.settings(context), n))


classes = (ANIM_OT_splinetween_resample,)
