"""Shift+Ctrl+I runs Inbetween in the Dope Sheet and the Graph Editor (skipped headless)."""
from __future__ import annotations

import bpy

_KEYMAPS = (("Dopesheet", "DOPESHEET_EDITOR"), ("Graph Editor", "GRAPH_EDITOR"))
_items: list = []


def register_keymaps() -> None:
    kc = bpy.context.window_manager.keyconfigs.addon
    if kc is None:  # background mode: no key configuration to add to
        return
    for name, space in _KEYMAPS:
        km = kc.keymaps.new(name=name, space_type=space)
        kmi = km.keymap_items.new("anim.splinetween_inbetween", "I", "PRESS", ctrl=True, shift=True)
        _items.append((km, kmi))


def unregister_keymaps() -> None:
    for km, kmi in _items:
        km.keymap_items.remove(kmi)
    _items.clear()
