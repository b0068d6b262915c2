"""The *Splinetween* sidebar tab (3D Viewport, Dope Sheet, Graph Editor) and the Key menu entries."""
from __future__ import annotations

import bpy

from ..inbetween.op_inbetween import ANIM_OT_splinetween_inbetween, draw_options


def _inbetween_button(layout: bpy.types.UILayout, context: bpy.types.Context) -> None:
    s = context.scene.splinetween
    op = layout.operator(ANIM_OT_splinetween_inbetween.bl_idname, icon="IPO_BEZIER")
    op.blend, op.key_mode, op.step, op.all_bones = s.blend, s.key_mode, s.step, s.all_bones


EDITORS = (("VIEW3D", "VIEW_3D"), ("DOPESHEET", "DOPESHEET_EDITOR"), ("GRAPH", "GRAPH_EDITOR"))


def sidebar_panels(mixin, name: str, parent: str | None = None) -> tuple:
    """One panel class per editor's sidebar, in the Splinetween tab: ``VIEW3D_PT_splinetween_<name>`` ..."""
    out = []
    for prefix, space in EDITORS:
        attrs = {"bl_space_type": space, "bl_region_type": "UI", "bl_category": "Splinetween"}
        if parent:
            attrs["bl_parent_id"] = f"{prefix}_PT_splinetween_{parent}"
        out.append(type(f"{prefix}_PT_splinetween_{name}", (mixin, bpy.types.Panel), attrs))
    return tuple(out)


def poll_armature(cls, context: bpy.types.Context) -> bool:
    obj = context.active_object
    return obj is not None and obj.type == "ARMATURE"


class InbetweenPanel:
    bl_label = "Inbetween"
    poll = classmethod(poll_armature)

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        draw_options(layout, context.scene.splinetween)
        _inbetween_button(layout, context)


def menu_entry(self, context: bpy.types.Context) -> None:
    self.layout.separator()
    _inbetween_button(self.layout, context)


MENUS = ("DOPESHEET_MT_key", "GRAPH_MT_key", "DOPESHEET_MT_context_menu", "GRAPH_MT_context_menu")
classes = sidebar_panels(InbetweenPanel, "inbetween")
VIEW3D_PT_splinetween_inbetween = classes[0]


def register_menus() -> None:
    for name in MENUS:
        getattr(bpy.types, name).append(menu_entry)


def unregister_menus() -> None:
    for name in MENUS:
        getattr(bpy.types, name).remove(menu_entry)
