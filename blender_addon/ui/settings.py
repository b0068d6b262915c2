"""Per-scene panel settings (one PointerProperty namespace: ``Scene.splinetween``)."""
from __future__ import annotations

import bpy

from ..inbetween.op_inbetween import KEY_MODES
from ..latent.op_mesh_inbetween import MESH_KEY_MODES


class SplinetweenSceneSettings(bpy.types.PropertyGroup):
    blend: bpy.props.FloatProperty(name="Blend", default=1.0, min=0.0, max=1.0, subtype="FACTOR",
                                   description="0 keeps the current curves, 1 writes the model's motion")
    key_mode: bpy.props.EnumProperty(name="Keys", items=KEY_MODES, default="EVERY_FRAME")
    step: bpy.props.IntProperty(name="Every", default=5, min=2, max=30, subtype="NONE",
                                description="Frames between written keys")
    all_bones: bpy.props.BoolProperty(name="All Bones", default=False,
                                      description="Fill every matched bone, not only the bones with selected keys")

    # Inbetween Mesh (sidebar defaults, copied into the operator)
    mesh_key_mode: bpy.props.EnumProperty(name="Key Frames", items=MESH_KEY_MODES, default="EVERY")
    mesh_key_step: bpy.props.IntProperty(name="Every", default=5, min=1, max=60,
                                         description="Keep every N-th frame of the range as a key frame")
    mesh_key_frames: bpy.props.StringProperty(name="Frames", default="",
                                              description="Scene frames to keep, e.g. 1, 8, 20-40/5")


def register_props() -> None:
    bpy.types.Scene.splinetween = bpy.props.PointerProperty(type=SplinetweenSceneSettings)


def unregister_props() -> None:
    del bpy.types.Scene.splinetween


classes = (SplinetweenSceneSettings,)
