"""Registration: operators, panel, menus, preferences, keymaps in; and all of it out again."""
from __future__ import annotations

import pytest

from addon_helpers import ADDON, bpy, disable_addon, fresh_scene_with_addon, prefs

bpy = bpy()
pytestmark = pytest.mark.blender


def _keymap_items():
    kc = bpy.context.window_manager.keyconfigs.addon
    return [(km.name, i.type, i.ctrl, i.shift) for km in kc.keymaps for i in km.keymap_items
            if i.idname == "anim.splinetween_inbetween"]


def test_register_and_unregister():
    fresh_scene_with_addon(test_backend=False)
    from blender_addon.ui import panel
    assert hasattr(bpy.types, "ANIM_OT_splinetween_inbetween")
    for editor in ("VIEW3D", "DOPESHEET", "GRAPH"):  # the Splinetween sidebar tab of all three editors
        for name in ("inbetween", "latent"):
            panel_cls = getattr(bpy.types, f"{editor}_PT_splinetween_{name}")
            assert panel_cls.bl_category == "Splinetween" and panel_cls.bl_region_type == "UI"
    assert hasattr(bpy.types, "ANIM_OT_splinetween_check_backend")
    for menu in panel.MENUS:  # Key menus and right-click menus of both editors
        assert panel.menu_entry in getattr(bpy.types, menu).draw._draw_funcs
    assert sorted(_keymap_items()) == [("Dopesheet", "I", True, True), ("Graph Editor", "I", True, True)]
    p = prefs()
    assert (p.backend_mode, p.device, p.checkpoint, p.interpreter) == ("BUILTIN", "auto", "", "")
    s = bpy.context.scene.splinetween
    assert (s.blend, s.key_mode, s.step, s.all_bones) == (1.0, "EVERY_FRAME", 5, False)
    p.backend_mode = "AUTO"  # PyTorch in-process where it imports (5.0's test Python), else the backend process
    assert bpy.ops.anim.splinetween_check_backend() == {"FINISHED"}
    disable_addon()
    assert not hasattr(bpy.types, "ANIM_OT_splinetween_inbetween")
    for menu in panel.MENUS:
        assert panel.menu_entry not in getattr(bpy.types, menu).draw._draw_funcs
    assert _keymap_items() == [] and ADDON not in bpy.context.preferences.addons
    assert not hasattr(bpy.types.Scene, "splinetween")


def test_settings_without_preferences_fall_back_to_defaults():
    from blender_addon import bridge, preferences
    assert preferences.settings(bpy.context) == bridge.BackendSettings()


def test_shortcut_clashes_with_nothing_in_blenders_keymap():
    """Shift+Ctrl+I is free in every default keymap that is active in the Dope Sheet or Graph Editor."""
    default = bpy.context.window_manager.keyconfigs.default
    spaces = {"DOPESHEET_EDITOR", "GRAPH_EDITOR", "EMPTY"}
    clashes = [(km.name, i.idname) for km in default.keymaps if km.space_type in spaces
               for i in km.keymap_items
               if i.type == "I" and i.ctrl and i.shift and not i.alt and not i.oskey and i.active]
    assert len([km for km in default.keymaps if km.space_type in spaces]) > 10
    assert clashes == []


def test_register_unregister_register_leaves_nothing_behind():
    fresh_scene_with_addon()
    disable_addon()
    before = (sorted(dir(bpy.types)), _keymap_items())
    fresh_scene_with_addon()
    disable_addon()
    assert (sorted(dir(bpy.types)), _keymap_items()) == before


@pytest.mark.skipif(__import__("os").name == "nt", reason="a POSIX shell wrapper")
def test_the_start_up_allowance_stops_a_backend_that_hangs_before_it_starts(tmp_path):
    """Preferences > Start-up Allowance 2 s with the request timeout at 120 s: Check Backend on an
    interpreter that hangs before Python starts fails after the allowance, saying what it printed."""
    import stat
    import sys

    from blender_addon import bridge, preferences
    fresh_scene_with_addon(test_backend=False)
    p = prefs()
    assert p.startup == 60.0 and preferences.settings(bpy.context).startup == 60.0
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho "waiting for the network drive" >&2\nsleep 600\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    p.backend_mode, p.interpreter, p.timeout, p.startup = "SUBPROCESS", str(wrapper), 120.0, 2.0
    try:
        assert preferences.settings(bpy.context).startup == 2.0
        with pytest.raises(RuntimeError, match=r"did not start within 2 s .*it printed: waiting for the network drive"):
            bpy.ops.anim.splinetween_check_backend()
    finally:
        bridge.shutdown()
        p.backend_mode, p.interpreter, p.startup = "BUILTIN", "", 60.0
        disable_addon()
