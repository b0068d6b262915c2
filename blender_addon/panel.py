"""VIEW3D_PT_splinetween_inbetween (sidebar, Animation tab) and the Key menu entries."""
from __future__ import annotations

import bpy

from .op_inbetween import ANIM_OT_splinetween_inbetween


def _inbetween_button(layout: bpy.types.UILayout, context: bpy.types.Context) -> None:
    s = context.scene.splinetween
    op = layout.operator(ANIM_OT_splinetween_inbetween.bl_idname, icon="IPO_BEZIER")
    op.blend, op.key_mode, op.step, op.all_bones = s.blend, s.key_mode, s.step, s.all_bones


class VIEW3D_PT_splinetween_inbetween(bpy.types.Panel):
    bl_label = "Splinetween"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Animation"

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        obj = context.active_object
        return obj is not None and obj.type == "ARMATURE"

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        s = context.scene.splinetween
        layout.prop(s, "blend")
        layout.prop(s, "key_mode")
        row = layout.row()
        row.active = s.key_mode == "EVERY_N"
        row.prop(s, "step")
        layout.prop(s, "all_bones")
        _inbetween_button(layout, context)


def menu_entry(self, context: bpy.types.Context) -> None:
    self.layout.separator()
    _inbetween_button(self.layout, context)


MENUS = ("DOPESHEET_MT_key", "GRAPH_MT_key", "DOPESHEET_MT_context_menu", "GRAPH_MT_context_menu")
classes = (VIEW3D_PT_splinetween_inbetween,)


def register_menus() -> None:
    for name in MENUS:
        getattr(bpy.types, name).append(menu_entry)


def unregister_menus() -> None:
    for name in MENUS:
        getattr(bpy.types, name).remove(menu_entry)
