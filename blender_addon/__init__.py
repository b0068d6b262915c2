"""Splinetween for Blender: select keys in the Dope Sheet, click Inbetween, get learned motion;
encode motion into latent control points and edit it with sliders.

Registration only; the work is in ``fill`` (Inbetween), ``latent`` / ``latent_edit`` (latent
editing), ``scene_io`` / ``latent_io`` (bpy <-> numpy), ``rig_math`` / ``latent_math`` (numpy)
and ``bridge`` (the backend, imported lazily).
"""
from __future__ import annotations

import bpy

from . import (bridge, keymaps, latent_panel, latent_props, op_bake, op_check_backend, op_encode, op_inbetween,
               op_latent_reset, op_redecode, op_remove, op_resample, panel, preferences, properties)

_register, _unregister = bpy.utils.register_classes_factory(
    preferences.classes + properties.classes + latent_props.classes + op_inbetween.classes
    + op_check_backend.classes + op_encode.classes + op_bake.classes + op_remove.classes
    + op_latent_reset.classes + op_redecode.classes + op_resample.classes + panel.classes + latent_panel.classes)


def register() -> None:
    _register()
    properties.register_props()
    latent_props.register_props()
    panel.register_menus()
    keymaps.register_keymaps()


def unregister() -> None:
    keymaps.unregister_keymaps()
    panel.unregister_menus()
    latent_props.unregister_props()
    properties.unregister_props()
    _unregister()
    bridge.shutdown()
