"""ANIM_OT_splinetween_redecode: re-decode after raw control points were changed by script."""
from __future__ import annotations

import bpy

from ..core.errors import Refusal
from . import core as latent_core
from . import slider
from .common import poll_latent


class ANIM_OT_splinetween_redecode(bpy.types.Operator):
    """Decode the latent controls again and write the frames whose control points or sliders changed"""

    bl_idname = "anim.splinetween_redecode"
    bl_label = "Re-decode"
    bl_options = {"REGISTER", "UNDO"}

    force: bpy.props.BoolProperty(name="All Segments", default=False,
                                  description="Write every segment, not only the ones that changed")

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_latent(cls, context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        try:
            changed = slider.sync(obj, context, force=self.force)
        except Refusal as e:
            with latent_core.suspended():
                obj.splinetween_latent.status = str(e)
            self.report({"ERROR"}, f"Re-decode: {e}")
            return {"CANCELLED"}
        self.report({"INFO"}, "Re-decoded the changed segments" if changed else "Nothing changed")
        return {"FINISHED"}


classes = (ANIM_OT_splinetween_redecode,)
