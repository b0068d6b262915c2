"""ANIM_OT_splinetween_check_backend: start the backend, load the model, say where it runs."""
from __future__ import annotations

import bpy

from .. import bridge, preferences
from ..backend_start import StartsBackend


class ANIM_OT_splinetween_check_backend(StartsBackend, bpy.types.Operator):
    """Start the Splinetween backend and load the model, to check the preferences"""

    bl_idname = "anim.splinetween_check_backend"
    bl_label = "Check Backend"
    bl_options = {"REGISTER"}

    def execute(self, context: bpy.types.Context) -> set[str]:
        try:
            message = bridge.check(preferences.settings(context))
        except (bridge.BridgeError, ValueError) as e:
            self.report({"ERROR"}, f"Splinetween backend: {e}")
            return {"CANCELLED"}
        self.report({"INFO"}, message)
        return {"FINISHED"}


classes = (ANIM_OT_splinetween_check_backend,)
