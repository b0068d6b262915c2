"""Registration of the mesh-sequence operators, panels and preferences, and the Mesh Sequence panel's
drawing code run headless against a recording layout (every property must resolve, every operator exist)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from addon_helpers import bpy, disable_addon, fresh_scene_with_addon, prefs
from mesh_addon_helpers import cached_grid, flag, setup_scene
from test_latent_ui import Recorder, texts

bpy = bpy()
pytestmark = pytest.mark.blender
CLASSES = ("ANIM_OT_splinetween_mesh_encode", "ANIM_OT_splinetween_mesh_inbetween", "VIEW3D_PT_splinetween_mesh",
           "DOPESHEET_PT_splinetween_mesh", "GRAPH_PT_splinetween_mesh")


def draw(obj) -> list:
    from blender_addon.ui.mesh_panel import VIEW3D_PT_splinetween_mesh as P
    log = []
    ctx = SimpleNamespace(active_object=obj, preferences=bpy.context.preferences, scene=bpy.context.scene)
    P.draw(SimpleNamespace(layout=Recorder(log)), ctx)
    for kind, args, _kw in [e for e in log if e[0] in ("prop", "operator")]:
        if kind == "prop":
            data, name = args[:2]
            assert (data.path_resolve(name, False) is not None) if name.startswith("[") else hasattr(data, name), name
        else:
            assert hasattr(bpy.types, "ANIM_OT_" + args[0].split(".")[1]), args[0]
    return log


def test_classes_and_preferences_come_and_go():
    fresh_scene_with_addon()
    assert all(hasattr(bpy.types, c) for c in CLASSES)
    p = prefs()
    assert (p.mesh_autoencoder, p.mesh_inbetween, p.mesh_cache_folder) == ("", "", "")
    from blender_addon import bridge, preferences
    assert preferences.mesh_checkpoint_path("autoencoder") == bridge.default_mesh_checkpoint("autoencoder")
    assert preferences.mesh_checkpoint_path("inbetween").name == "cloth_inbetween.json"
    s = bpy.context.scene.splinetween
    assert (s.mesh_key_mode, s.mesh_key_step, s.mesh_key_frames) == ("EVERY", 5, "")
    assert bpy.types.VIEW3D_PT_splinetween_mesh.bl_category == "Splinetween"
    disable_addon()
    assert not any(hasattr(bpy.types, c) for c in CLASSES)


def test_the_panel_draws_every_state():
    f = flag()
    setup_scene()
    obj = cached_grid(f["pc2"], "Drawn")
    log = draw(obj)
    ops = [e[1][0] for e in log if e[0] == "operator"]
    assert ops == ["anim.splinetween_mesh_encode", "anim.splinetween_mesh_inbetween"]
    assert [e[1][1] for e in log if e[0] == "prop"] == ["mesh_key_mode", "mesh_key_step", "mesh_key_frames"]
    assert bpy.ops.anim.splinetween_mesh_encode(frame_range="CUSTOM", frame_start=1, frame_end=60) == {"FINISHED"}
    log = draw(obj)
    assert "Frames 1-60, 2 segments (encoded)" in texts(log) and "Segment 2: frames 31-60" in texts(log)
    assert "Shown by modifier 'Splinetween': untitled_Drawn_encoded.pc2" in texts(log)
    props = [e[1][1] for e in log if e[0] == "prop"]
    assert props.count("amplify") == 2 and props.count('["splinetween_s00_c3"]') == 1
    assert {"anim.splinetween_bake", "anim.splinetween_remove", "anim.splinetween_resample"} <= \
        {e[1][0] for e in log if e[0] == "operator"}
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    disable_addon()
