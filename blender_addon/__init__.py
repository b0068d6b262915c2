"""Splinetween for Blender: select keys in the Dope Sheet, click Inbetween, get learned motion.

Registration only; the work is in ``fill`` (operator logic), ``scene_io`` (bpy <-> numpy),
``rig_math`` (Blender <-> model conventions, numpy) and ``bridge`` (the backend, imported lazily).
"""
from __future__ import annotations

import bpy

from . import bridge, keymaps, op_check_backend, op_inbetween, panel, preferences, properties

_register, _unregister = bpy.utils.register_classes_factory(
    preferences.classes + properties.classes + op_inbetween.classes + op_check_backend.classes + panel.classes)


def register() -> None:
    _register()
    properties.register_props()
    panel.register_menus()
    keymaps.register_keymaps()


def unregister() -> None:
    keymaps.unregister_keymaps()
    panel.unregister_menus()
    properties.unregister_props()
    _unregister()
    bridge.shutdown()
