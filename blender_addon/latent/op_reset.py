"""ANIM_OT_splinetween_latent_reset: sliders of one segment (or all) back to neutral."""
from __future__ import annotations

import bpy

from ..core.errors import run_reported
from . import slider
from .common import poll_latent


class ANIM_OT_splinetween_latent_reset(bpy.types.Operator):
    """Set a segment's sliders (or every segment's) back to amplify 1, timing 0 and no principal offsets"""

    bl_idname = "anim.splinetween_latent_reset"
    bl_label = "Reset"
    bl_options = {"REGISTER", "UNDO"}

    segment: bpy.props.IntProperty(name="Segment", default=-1, min=-1,
                                   description="0-based segment to reset; -1 resets every segment")

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_latent(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        segment = None if self.segment < 0 else self.segment
        return run_reported(self, lambda: slider.reset(context.active_object, segment))


classes = (ANIM_OT_splinetween_latent_reset,)
