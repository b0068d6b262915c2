"""ANIM_OT_splinetween_bake: keep the edited motion as plain keys and drop the latent controls."""
from __future__ import annotations

import bpy

from ..core.errors import run_reported
from . import slider
from .common import poll_latent


class ANIM_OT_splinetween_bake(bpy.types.Operator):
    """Keep the current motion as plain keys and remove the latent controls (works without the checkpoint)"""

    bl_idname = "anim.splinetween_bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_latent(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        return run_reported(self, lambda: slider.bake(context.active_object))


classes = (ANIM_OT_splinetween_bake,)
