"""Per-scene panel settings (one PointerProperty namespace: ``Scene.splinetween``)."""
from __future__ import annotations

import bpy

KEY_MODES = [
    ("EVERY_FRAME", "Every Frame", "A LINEAR key on every frame inside the gaps"),
    ("EVERY_N", "Every N Frames", "BEZIER keys every N frames, handles along the model's motion"),
]


class SplinetweenSceneSettings(bpy.types.PropertyGroup):
    blend: bpy.props.FloatProperty(name="Blend", default=1.0, min=0.0, max=1.0, subtype="FACTOR",
                                   description="0 keeps the current curves, 1 writes the model's motion")
    key_mode: bpy.props.EnumProperty(name="Keys", items=KEY_MODES, default="EVERY_FRAME")
    step: bpy.props.IntProperty(name="Every", default=5, min=2, max=30, subtype="NONE",
                                description="Frames between written keys")
    all_bones: bpy.props.BoolProperty(name="All Bones", default=False,
                                      description="Fill every matched bone, not only the bones with selected keys")


def register_props() -> None:
    bpy.types.Scene.splinetween = bpy.props.PointerProperty(type=SplinetweenSceneSettings)


def unregister_props() -> None:
    del bpy.types.Scene.splinetween


classes = (SplinetweenSceneSettings,)
