"""The *Bone Map* panel of the Splinetween tab: which bone carries each of the model's joints."""
from __future__ import annotations

import bpy

from ..humanoid import bone_map
from .op_bone_map import (
    ANIM_OT_splinetween_bone_map_clear,
    ANIM_OT_splinetween_bone_map_detect,
    ANIM_OT_splinetween_bone_map_export,
    ANIM_OT_splinetween_bone_map_import,
)
from .panel import poll_armature, sidebar_panels


class BoneMapPanel:
    bl_label = "Bone Map"
    bl_options = {"DEFAULT_CLOSED"}
    poll = classmethod(poll_armature)

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        arm = context.active_object.data
        st = arm.splinetween_bone_map
        row = layout.row(align=True)
        row.operator(ANIM_OT_splinetween_bone_map_detect.bl_idname, text="Detect", icon="VIEWZOOM")
        row.operator(ANIM_OT_splinetween_bone_map_import.bl_idname, text="Import...", icon="IMPORT")
        row.operator(ANIM_OT_splinetween_bone_map_export.bl_idname, text="Export...", icon="EXPORT")
        if not len(st.entries):
            layout.label(text="Not saved: detected each time (Detect to see and edit it)", icon="INFO")
            return
        row = layout.row()
        row.label(text=f"Detected: {st.preset or 'Custom'}")
        row.operator(ANIM_OT_splinetween_bone_map_clear.bl_idname, text="", icon="X")
        col = layout.column(align=True)
        for e in st.entries:
            row = col.row(align=True)
            required = e.joint not in bone_map.OPTIONAL
            row.alert = (required and not e.bone) or (bool(e.bone) and e.bone not in arm.bones)
            row.prop_search(e, "bone", arm, "bones", text=e.joint + ("" if required else " (optional)"))
            if e.bone and e.why:  # how it was found: a wrong guess is seen (and fixed) here
                row.label(text=e.why)


classes = sidebar_panels(BoneMapPanel, "bone_map")
VIEW3D_PT_splinetween_bone_map = classes[0]
