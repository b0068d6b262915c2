"""Latent Controls: Encode, the per-segment sliders, the model's fit, Reset, Resample, Bake and Remove.

A sub-panel of the Inbetween panel in the *Splinetween* sidebar tab of the 3D Viewport, the Dope
Sheet and the Graph Editor (``VIEW3D_PT_splinetween_latent`` and its twins).  A principal direction's
description (from the checkpoint) is the tooltip of the info button beside its slider: Blender gives a
vector property one tooltip for all its elements, an operator's ``description`` can differ per button.
"""
from __future__ import annotations

import textwrap

import bpy

from ..core import latent_math, layer_math
from ..latent import core as latent_core
from ..latent.armature import take
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
            wrapped(layout, "Encode the armature's motion to edit it with sliders per segment (your keys stay as "
                            "they are until a slider moves).")
            layout.operator("anim.splinetween_encode", icon="IPO_BEZIER")
            return
        draw_controls(layout, context, obj, st)

    @staticmethod
    def draw_segments(layout: bpy.types.UILayout, obj, st) -> None:
        draw_segments(layout, obj, st)


def draw_unavailable(layout: bpy.types.UILayout, obj, st) -> None:
    """Encode, greyed out, with why and the next step right there (Bake / Remove)."""
    col = layout.column(align=True)
    row = col.row()
    row.enabled = False
    row.operator("anim.splinetween_mesh_encode" if obj.type == "MESH" else "anim.splinetween_encode",
                 icon="IPO_BEZIER")
    made = "Inbetween made" if st.task == "INBETWEEN" else "Encode made"
    wrapped(col, f"Encode is off: {made} latent controls on frames {st.frame_start}-{st.frame_end}. Bake "
                 "keeps the motion as keys, Remove puts back the keys from before; then Encode again.", icon="INFO")
    row = col.row(align=True)
    row.operator("anim.splinetween_bake", icon="CHECKMARK")
    row.operator("anim.splinetween_remove", icon="X")


EDITED = ("The layer is on top of your edited animation: the keys you changed since Encode are yours, as you "
          "left them at neutral sliders, with an edited segment's change added on top")


def draw_controls(layout: bpy.types.UILayout, context, obj, st) -> None:
    """An active latent range: its state, Encode's next step (Bake / Remove), the model's fit, Reset All,
    Resample and the segments' sliders (armatures and meshes alike)."""
    made = "in-betweened" if st.task == "INBETWEEN" else "encoded"
    layout.label(text=f"Frames {st.frame_start}-{st.frame_end}, {len(st.segments)} segments ({made})")
    draw_unavailable(layout, obj, st)
    path, why = latent_core.checkpoint_for(st, context)
    off = (take.changed(obj) or take.modes_changed(obj) or take.shared_refusal(obj, "the sliders")
           if obj.type == "ARMATURE" else None)
    fit = latent_core.fidelity(st)
    poor = layer_math.fidelity_problem(fit, mesh=obj.type == "MESH") if fit is not None else None
    edited = EDITED if st.base_edited else None
    for problem, icon in ((why, "ERROR"), (off, "ERROR"), (st.status if st.status != off else None, "ERROR"),
                          (edited, "INFO"), (poor, "INFO")):
        if problem:
            box = layout.box()
            box.alert = icon == "ERROR"
            wrapped(box, problem, icon=icon)
    row = layout.row(align=True)
    row.operator("anim.splinetween_latent_reset", text="Reset All", icon="LOOP_BACK").segment = -1
    row = layout.row(align=True)
    row.enabled = path is not None
    row.label(text="Resample")
    for factor in ((1.0, 2.0, 3.0, 4.0) if st.task == "INBETWEEN" else (0.5, 1.0, 2.0, 4.0)):
        op = row.operator("anim.splinetween_resample", text=f"{factor:g}x")
        op.mode, op.factor = "FACTOR", factor
    body = layout.column()
    body.enabled = path is not None and not off
    draw_segments(body, obj, st)


def label_of(name: str) -> str:
    """A principal direction's name as a slider label: as the checkpoint gives it, first letter up."""
    return name[:1].upper() + name[1:]


def draw_style(panel, st, seg) -> None:
    """The Style menu and its Strength, greyed (and saying why) where the checkpoint has no styles or the
    range was in-betweened."""
    col = panel.column()
    names, _ = latent_core.style_names(st.checkpoint)
    col.enabled = bool(names) and st.task == "AUTOENCODER"
    col.prop(seg, "style")
    col.prop(seg, "style_strength")
    if not names:
        panel.label(text="No styles in this checkpoint (python -m training.style adds them)", icon="INFO")
    elif st.task != "AUTOENCODER":
        panel.label(text="Style applies to encoded ranges (Bake, then Encode)", icon="INFO")


def draw_segments(layout: bpy.types.UILayout, obj, st) -> None:
    names, notes = latent_core.names(st), latent_core.descriptions(st)
    fit = latent_core.fidelity(st)
    mesh = obj.type == "MESH"
    bounds = latent_math.output_bounds([(s.start, s.end) for s in st.segments], st.source_frames, st.frames)
    for s, seg in enumerate(st.segments):
        a, b = (st.frame_start + f for f in bounds[s])
        header, panel = layout.panel(f"splinetween_latent_segment_{s}", default_closed=s > 0)
        poor = fit is not None and layer_math.fidelity_problem(fit[s:s + 1], mesh) is not None
        header.label(text=f"Segment {s + 1}: frames {a}-{b}", icon="ERROR" if poor else "NONE")
        header.operator("anim.splinetween_latent_reset", text="", icon="LOOP_BACK").segment = s
        if panel is None:
            continue
        if fit is not None:
            panel.label(text=layer_math.fidelity_text(fit[s], mesh).capitalize()
                        + (f": {layer_math.POOR}" if poor else ""),
                        icon="ERROR" if poor else "CHECKMARK")
        panel.use_property_split = True
        panel.prop(seg, "amplify")
        panel.prop(seg, "timing")
        if not mesh:
            draw_style(panel, st, seg)
        for k, name in enumerate(names[:len(seg.principal)]):
            row = panel.row(align=True)
            row.prop(seg, "principal", index=k, text=label_of(name))
            if notes[k]:
                row.operator("anim.splinetween_principal_info", text="", icon="INFO", emboss=False).index = k
        raw_header, raw = panel.panel(f"splinetween_latent_raw_{s}", default_closed=True)
        raw_header.label(text="Control Points")
        if raw is not None:
            for c in range(latent_math.POINTS):
                raw.prop(obj, f'["{latent_math.raw_name(s, c)}"]', text=f"P{c + 1}")


class ANIM_OT_splinetween_principal_info(bpy.types.Operator):
    """What a principal direction does, measured on the training motion"""

    bl_idname = "anim.splinetween_principal_info"
    bl_label = "Principal Direction"
    bl_options = {"INTERNAL"}

    index: bpy.props.IntProperty(name="Direction", default=0, min=0, options={"SKIP_SAVE"})

    @staticmethod
    def text(context, index: int) -> str:
        obj = context.active_object
        st = obj.splinetween_latent if obj is not None and hasattr(obj, "splinetween_latent") else None
        if st is None or not st.active or index >= len(latent_core.names(st)):
            return ""
        name, note = latent_core.names(st)[index], latent_core.descriptions(st)[index]
        return f"{label_of(name)}: {note}" if note else label_of(name)

    @classmethod
    def description(cls, context, properties) -> str:
        return cls.text(context, properties.index) or cls.__doc__

    def execute(self, context: bpy.types.Context) -> set[str]:
        text = self.text(context, self.index)
        if not text:
            return {"CANCELLED"}
        self.report({"INFO"}, text)
        return {"FINISHED"}


panels = sidebar_panels(LatentPanel, "latent", parent="inbetween")
VIEW3D_PT_splinetween_latent = panels[0]
classes = (ANIM_OT_splinetween_principal_info,) + panels
