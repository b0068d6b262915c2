"""Mesh Sequence: Encode Mesh, Inbetween Mesh and, once a range has latent controls, the same sliders,
Reset, Bake, Remove and Resample as for armatures.

A panel of the *Splinetween* sidebar tab of the 3D Viewport, the Dope Sheet and the Graph Editor
(``VIEW3D_PT_splinetween_mesh`` and its twins), shown when a mesh object is active.
"""
from __future__ import annotations

import bpy

from ..io import cache as mesh_cache
from ..latent.op_mesh_inbetween import draw_key_options
from .latent_panel import draw_controls, wrapped
from .panel import sidebar_panels


def poll_mesh_object(cls, context: bpy.types.Context) -> bool:
    obj = context.active_object
    return obj is not None and obj.type == "MESH"


class MeshPanel:
    bl_label = "Mesh Sequence"
    poll = classmethod(poll_mesh_object)

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        obj = context.active_object
        st = obj.splinetween_latent
        if st.active:
            draw_controls(layout, context, obj, st)
            mod = mesh_cache.find(obj, st.cache_uid)
            if mod is not None:
                layout.label(text=f"Shown by modifier '{mod.name}': {bpy.path.basename(mod.filepath)}",
                             icon="MOD_MESHDEFORM")
            return
        wrapped(layout, "Encode the mesh's frames (scene range) to edit them with sliders per segment, or keep "
                         "key frames and fill the frames between them.")
        layout.operator("anim.splinetween_mesh_encode", icon="IPO_BEZIER")
        col = layout.column()
        col.use_property_split = True
        col.use_property_decorate = False
        s = context.scene.splinetween
        draw_key_options(col, s, "mesh_")
        op = layout.operator("anim.splinetween_mesh_inbetween", icon="KEYFRAME")
        op.key_mode, op.key_step, op.key_frames = s.mesh_key_mode, s.mesh_key_step, s.mesh_key_frames


classes = sidebar_panels(MeshPanel, "mesh")
VIEW3D_PT_splinetween_mesh = classes[0]
