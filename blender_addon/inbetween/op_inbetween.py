"""ANIM_OT_splinetween_inbetween: fill the gaps between the selected keys with the model's motion."""
from __future__ import annotations

import bpy

from .. import preferences
from ..backend_start import StartsBackend
from ..core.errors import run_reported
from ..latent.armature import adapter
from ..latent.common import poll_animated_armature
from . import fill

KEY_MODES = [
    ("EVERY_FRAME", "Every Frame", "A LINEAR key on every frame inside the gaps"),
    ("EVERY_N", "Every N Frames", "BEZIER keys every N frames, handles along the model's motion"),
]


def draw_options(layout: bpy.types.UILayout, data) -> None:
    """The Inbetween options, from the operator (redo panel) or the scene (sidebar)."""
    layout.prop(data, "blend")
    layout.prop(data, "key_mode")
    row = layout.row()
    row.active = data.key_mode == "EVERY_N"
    row.prop(data, "step")
    layout.prop(data, "all_bones")


class ANIM_OT_splinetween_inbetween(StartsBackend, bpy.types.Operator):
    """Fill every frame between the selected keys of the active armature with learned motion"""

    bl_idname = "anim.splinetween_inbetween"
    bl_label = "Inbetween"
    bl_options = {"REGISTER", "UNDO"}

    blend: bpy.props.FloatProperty(name="Blend", default=1.0, min=0.0, max=1.0, subtype="FACTOR",
                                   description="0 keeps the current curves, 1 writes the model's motion")
    key_mode: bpy.props.EnumProperty(name="Keys", items=KEY_MODES, default="EVERY_FRAME")
    step: bpy.props.IntProperty(name="Every", default=5, min=2, max=30, description="Frames between written keys")
    all_bones: bpy.props.BoolProperty(name="All Bones", default=False,
                                      description="Fill every matched bone, not only the bones with selected keys")
    contacts: bpy.props.BoolProperty(
        name="Plant Feet", default=True,
        description="A foot planted at two keys (or by the model) stays planted between them: the leg is "
                    "solved so the foot does not slide")
    editable: bpy.props.BoolProperty(
        name="Editable", default=True,
        description="Keep the model's control points as Latent Controls (sliders per segment) when every frame "
                    "of every bone between the first and last key is filled (Every Frame, Blend 1)")
    replace_latent: bpy.props.BoolProperty(
        name="Replace Latent Controls", default=False, options={"SKIP_SAVE"},
        description="Bake the armature's latent controls (their motion stays as keys) and in-between; without it "
                    "an armature with latent controls is refused (in the UI, Inbetween asks first)")

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return poll_animated_armature(cls, context, "key a few poses first")

    def draw(self, context: bpy.types.Context) -> None:
        self.layout.use_property_split = True
        draw_options(self.layout, self)
        self.layout.prop(self, "contacts")
        self.layout.prop(self, "editable")

    def invoke(self, context: bpy.types.Context, event) -> set[str]:
        st = context.active_object.splinetween_latent
        if st.active and not self.replace_latent:  # ask before the latent controls are baked
            self.replace_latent = True
            return context.window_manager.invoke_confirm(
                self, event, title="Bake the latent controls?", confirm_text="Bake and Inbetween", icon="WARNING",
                message=adapter.replace_question(context.active_object))
        return self.start_backend_then_execute(context)

    def execute(self, context: bpy.types.Context) -> set[str]:
        options = fill.Options(self.blend, self.key_mode, self.step, self.all_bones, editable=self.editable,
                               replace_latent=self.replace_latent, contacts=self.contacts)
        fps = context.scene.render.fps / context.scene.render.fps_base
        wm = context.window_manager
        started = []

        def progress(done: int, total: int) -> None:  # status-bar progress on long fills
            if not started:
                wm.progress_begin(0, total)
                started.append(True)
            wm.progress_update(done)

        try:
            return run_reported(self, lambda: fill.run(context.active_object, preferences.settings(context),
                                                       options, fps, progress))
        finally:
            if started:
                wm.progress_end()


classes = (ANIM_OT_splinetween_inbetween,)
