"""ANIM_OT_splinetween_remove: take the sliders' offset away and drop the latent controls."""
from __future__ import annotations

import bpy

from ..core.errors import run_reported
from . import slider
from .common import poll_latent


class ANIM_OT_splinetween_remove(bpy.types.Operator):
    """Remove the latent controls and the sliders' offset: the keys from before Encode (or Inbetween) come back, or, where you changed keys by hand since, your keys as they are now"""

    bl_idname = "anim.splinetween_remove"
    bl_label = "Remove"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_latent(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        return run_reported(self, lambda: slider.remove(context.active_object))


classes = (ANIM_OT_splinetween_remove,)
