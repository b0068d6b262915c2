"""Latent Controls: Encode, the per-segment sliders, Reset, Resample, Bake and Remove.

A sub-panel of the Inbetween panel in the *Splinetween* sidebar tab of the 3D Viewport, the Dope
Sheet and the Graph Editor (``VIEW3D_PT_splinetween_latent`` and its twins).
"""
from __future__ import annotations

import textwrap

import bpy

from ..core import latent_math as LM
from ..latent import core as latent
from .panel import poll_armature, sidebar_panels


def wrapped(layout: bpy.types.UILayout, text: str, icon: str = "NONE", width: int = 44) -> None:
    for i, line in enumerate(textwrap.wrap(text, width) or [""]):
        layout.label(text=line, icon=icon if i == 0 else "BLANK1")


class LatentPanel:
    bl_label = "Latent Controls"

    poll = classmethod(poll_armature)

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        obj = context.active_object
        st = obj.splinetween_latent
        if not st.active:
            wrapped(layout, "Encode the armature's motion to edit it with sliders per segment.")
            layout.operator("anim.splinetween_encode", icon="IPO_BEZIER")
            return
        draw_controls(layout, context, obj, st)

    @staticmethod
    def draw_segments(layout: bpy.types.UILayout, obj, st) -> None:
        draw_segments(layout, obj, st)


def draw_controls(layout: bpy.types.UILayout, context, obj, st) -> None:
    """An active latent range: its state, Reset All / Bake / Remove, Resample and the segments' sliders
    (armatures and meshes alike)."""
    kind = "in-betweened" if st.kind == "INBETWEEN" else "encoded"
    layout.label(text=f"Frames {st.frame_start}-{st.frame_end}, {len(st.segments)} segments ({kind})")
    path, why = latent.checkpoint_for(st, context)
    for problem in (why, st.status):
        if problem:
            box = layout.box()
            box.alert = True
            wrapped(box, problem, icon="ERROR")
    row = layout.row(align=True)
    row.operator("anim.splinetween_latent_reset", text="Reset All", icon="LOOP_BACK").segment = -1
    row.operator("anim.splinetween_bake", icon="CHECKMARK")
    row.operator("anim.splinetween_remove", icon="X")
    row = layout.row(align=True)
    row.enabled = path is not None
    row.label(text="Resample")
    for factor in ((1.0, 2.0, 3.0, 4.0) if st.kind == "INBETWEEN" else (0.5, 1.0, 2.0, 4.0)):
        op = row.operator("anim.splinetween_resample", text=f"{factor:g}x")
        op.mode, op.factor = "FACTOR", factor
    body = layout.column()
    body.enabled = path is not None
    draw_segments(body, obj, st)


def draw_segments(layout: bpy.types.UILayout, obj, st) -> None:
    names = latent.names(st)
    bounds = LM.output_bounds([(s.start, s.end) for s in st.segments], st.source_frames, st.frames)
    for s, seg in enumerate(st.segments):
        a, b = (st.frame_start + f for f in bounds[s])
        header, panel = layout.panel(f"splinetween_latent_segment_{s}", default_closed=s > 0)
        header.label(text=f"Segment {s + 1}: frames {a}-{b}")
        header.operator("anim.splinetween_latent_reset", text="", icon="LOOP_BACK").segment = s
        if panel is None:
            continue
        panel.use_property_split = True
        panel.prop(seg, "amplify")
        panel.prop(seg, "timing")
        for k, name in enumerate(names[:len(seg.principal)]):
            panel.prop(seg, "principal", index=k, text=name.capitalize())
        raw_header, raw = panel.panel(f"splinetween_latent_raw_{s}", default_closed=True)
        raw_header.label(text="Control Points")
        if raw is not None:
            for c in range(LM.POINTS):
                raw.prop(obj, f'["{LM.raw_name(s, c)}"]', text=f"P{c + 1}")


classes = sidebar_panels(LatentPanel, "latent", parent="inbetween")
VIEW3D_PT_splinetween_latent = classes[0]
