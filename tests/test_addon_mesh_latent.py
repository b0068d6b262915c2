"""Encode Mesh and its sliders on the cloth flag (a 121-frame sequence: four segments): at neutral the
frames read, an edit the engine's own added to them; Remove, Bake, Resample, undo, save and reload, and
both backend modes (real bpy, headless)."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import bpy, disable_addon, prefs
from mesh_addon_helpers import (
    MESH_AUTOENCODER,
    cache_file,
    cached_grid,
    evaluated,
    evaluated_range,
    long_flag,
    mesh_data,
    raw_props,
    setup_scene,
    stack,
    ui_edit,
)

bpy = bpy()
from blender_addon.core import latent_math as LM  # noqa: E402
from blender_addon.core import layer_math as L  # noqa: E402
from blender_addon.latent import core as latent  # noqa: E402

pytestmark = pytest.mark.blender
N = 121


@pytest.fixture(scope="module")
def source():
    """The 121-frame flag as a PC2, and the module's scene."""
    seq = long_flag(N)
    setup_scene()
    yield seq
    disable_addon()


@pytest.fixture
def flag_obj(source):
    obj = cached_grid(source["pc2"], "Flag")
    name = obj.name
    yield obj
    if name in bpy.data.objects:
        obj = bpy.data.objects[name]
        if obj.splinetween_latent.active:
            bpy.context.view_layer.objects.active = obj
            bpy.ops.anim.splinetween_remove()
        bpy.data.objects.remove(obj)


def encode(obj, start=1, end=N):
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.anim.splinetween_mesh_encode(frame_range="CUSTOM", frame_start=start, frame_end=end) == {"FINISHED"}
    return obj.splinetween_latent


@pytest.mark.torch
def test_encode_shows_the_frames_read_and_the_sliders_layer_the_models_edit(source, flag_obj):
    obj = flag_obj
    data, mods = mesh_data(obj), stack(obj)
    st = encode(obj)
    assert st.active and st.task == "AUTOENCODER" and [(s.start, s.end) for s in st.segments] == [(0, 30), (30, 60), (60, 90), (90, 120)]
    assert obj.modifiers[-1].name == "Splinetween" and obj.modifiers[-1].type == "MESH_CACHE"
    assert stack(obj)[:-1] == mods and np.array_equal(mesh_data(obj), data)  # the mesh itself is untouched
    assert raw_props(obj) == [LM.raw_name(s, c) for s in range(4) for c in range(4)]
    neutral = evaluated_range(obj, 1, N)
    assert np.array_equal(neutral, source["frames"])  # at neutral: the frames read, bit for bit
    fit = latent.fidelity(st)  # the readout: the model's own decode against the frames read
    from backend.mesh.sequences import bbox_diagonal
    np.testing.assert_allclose(fit[:, 1], 100 * fit[:, 0] / bbox_diagonal(source["frames"]), rtol=1e-6)
    assert (fit[:, 1] > 0).all() and L.fidelity_problem(fit, mesh=True) is None
    st.segments[1].amplify = 2.0
    edited = evaluated_range(obj, 1, N)
    ramp = 31 // 4  # segment 0 (frames 0-30) eases into the seam over its last quarter
    assert np.array_equal(edited[:31 - ramp], neutral[:31 - ramp]) and np.array_equal(edited[68:], neutral[68:])
    assert np.abs(edited[32:60] - neutral[32:60]).max() > 1e-3
    from backend.mesh.engine import MeshControls, MeshEngine
    from backend.motion.edits import amplify
    engine = MeshEngine(MESH_AUTOENCODER, "cpu")
    raw = np.stack([[np.array(obj[LM.raw_name(s, c)]) for c in range(4)] for s in range(4)])
    pts = raw.copy()
    pts[1] = amplify(raw[1], 2.0)
    segs = [(0, 30), (30, 60), (60, 90), (90, 120)]
    edit = engine.decode(MeshControls(pts, segs)) - engine.decode(MeshControls(raw, segs))
    np.testing.assert_allclose(edited - neutral, edit, atol=2e-4)  # the engine's edit, added to the frames read
    st.segments[1].amplify = 1.0  # back to neutral: the frames read again
    assert np.array_equal(evaluated_range(obj, 1, N), neutral)
    st.segments[0].timing = 0.5
    assert np.abs(evaluated(obj, 20) - neutral[19]).max() > 1e-4
    st.segments[0].timing = 0.0
    name = LM.raw_name(0, 1)
    old = obj[name][0]
    ui_edit(obj, name, 0, old + 3.0)  # a raw control point typed in the UI
    assert np.abs(evaluated(obj, 15) - neutral[14]).max() > 1e-4
    ui_edit(obj, name, 0, old)
    assert np.array_equal(evaluated(obj, 15), neutral[14])


def test_principal_sliders_move_the_mesh(source, flag_obj):
    st = encode(flag_obj)
    names = [n for n in st.principal_names.split("\n") if n]
    assert names, f"{MESH_AUTOENCODER.name} has no principal directions"
    before = evaluated(flag_obj, 30)
    st.segments[0].principal[0] = 2.0
    assert st.status == "" and np.abs(evaluated(flag_obj, 30) - before).max() > 1e-3


def test_remove_puts_everything_back(source, flag_obj):
    obj = flag_obj
    data, mods, shown = mesh_data(obj), stack(obj), evaluated_range(obj, 1, N)
    st = encode(obj)
    path = cache_file(obj)
    st.segments[0].amplify = 0.2
    assert path.exists()
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    assert not obj.splinetween_latent.active and not raw_props(obj) and obj.animation_data is None
    assert stack(obj) == mods and np.array_equal(mesh_data(obj), data) and not path.exists()
    assert np.array_equal(evaluated_range(obj, 1, N), shown)


def test_bake_keeps_the_cache_and_drops_the_controls(source, flag_obj):
    obj = flag_obj
    st = encode(obj, 1, 61)
    st.segments[0].amplify = 1.8
    shown, path = evaluated_range(obj, 1, 70), cache_file(obj)
    assert bpy.ops.anim.splinetween_bake() == {"FINISHED"}
    assert not obj.splinetween_latent.active and not raw_props(obj) and path.exists()
    assert obj.modifiers[-1].name == "Splinetween Baked"
    assert obj.animation_data.drivers[0].data_path == 'modifiers["Splinetween Baked"].factor'
    assert np.array_equal(evaluated_range(obj, 1, 70), shown)  # frames 62-70 show the source again
    st = encode(obj, 1, 61)  # encodes what it shows now, into a file of its own
    assert cache_file(obj) != path and path.exists()
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    assert obj.modifiers[-1].name == "Splinetween Baked" and path.exists()


def test_resample_decodes_more_frames_and_the_range_grows(source, flag_obj):
    obj = flag_obj
    st = encode(obj, 1, 61)
    neutral = evaluated_range(obj, 1, 61)
    assert bpy.ops.anim.splinetween_resample(mode="FACTOR", factor=2.0) == {"FINISHED"}
    assert (st.frames, st.frame_end) == (121, 121)
    from backend.formats.pc2 import read_pc2
    assert read_pc2(cache_file(obj))[0].shape == (121, 5041, 3)
    dense = evaluated_range(obj, 1, 121)
    assert np.array_equal(dense[::2], neutral)  # the frames read on every other frame, the same motion twice as slow
    np.testing.assert_allclose(dense[1::2], 0.5 * (neutral[:-1] + neutral[1:]), atol=1e-5)  # halfway between
    assert np.array_equal(evaluated(obj, 122), source["frames"][-1])  # after the range: the source again
    st.segments[0].amplify = 2.0  # sliders work on the new length
    assert np.abs(evaluated(obj, 60) - dense[59]).max() > 1e-4
    assert bpy.ops.anim.splinetween_resample(mode="LENGTH", frames=61) == {"FINISHED"} and st.frame_end == 61


def test_undo_takes_the_modifier_away_and_restores_sliders(source, flag_obj):
    name = flag_obj.name
    mods, shown = stack(flag_obj), evaluated_range(flag_obj, 1, 10)
    bpy.context.view_layer.objects.active = flag_obj
    bpy.ops.ed.undo_push(message="before Encode Mesh")
    assert bpy.ops.anim.splinetween_mesh_encode("EXEC_DEFAULT", True, frame_range="CUSTOM", frame_start=1,
                                                frame_end=61) == {"FINISHED"}
    assert bpy.ops.ed.undo() == {"FINISHED"}
    obj = bpy.data.objects[name]  # undo reloads data: fetch by name again
    assert not obj.splinetween_latent.active and stack(obj) == mods and not raw_props(obj)
    assert np.array_equal(evaluated_range(obj, 1, 10), shown)
    st = encode(obj, 1, 61)
    neutral = evaluated_range(obj, 1, 61)
    bpy.ops.ed.undo_push(message="encoded")
    st.segments[0].amplify = 2.5
    bpy.ops.ed.undo_push(message="amplify")
    assert not np.array_equal(evaluated(obj, 30), neutral[29])
    assert bpy.ops.ed.undo() == {"FINISHED"}
    obj = bpy.data.objects[name]
    assert obj.splinetween_latent.segments[0].amplify == 1.0
    assert np.array_equal(evaluated_range(obj, 1, 61), neutral)  # the file was written again for the old sliders
    path = cache_file(obj)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.anim.splinetween_remove("EXEC_DEFAULT", True) == {"FINISHED"} and not path.exists()
    assert bpy.ops.ed.undo() == {"FINISHED"}
    obj = bpy.data.objects[name]
    assert obj.splinetween_latent.active and path.exists()  # undoing Remove writes the file again
    assert np.array_equal(evaluated_range(obj, 1, 61), neutral)


def test_save_next_to_the_blend_and_reload(source, tmp_path):
    folder = prefs().mesh_cache_folder
    prefs().mesh_cache_folder = ""  # the default: //splinetween/ next to the .blend
    try:
        assert bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend")) == {"FINISHED"}
        obj = cached_grid(source["pc2"], "Saved")
        st = encode(obj, 1, 61)
        mod = obj.modifiers["Splinetween"]
        assert mod.filepath == "//splinetween/scene_Saved_encoded.pc2"
        assert (tmp_path / "splinetween" / "scene_Saved_encoded.pc2").exists()
        st.segments[0].amplify = 1.5
        shown = evaluated_range(obj, 1, 61)
        assert bpy.ops.wm.save_mainfile() == {"FINISHED"}
        assert bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "scene.blend")) == {"FINISHED"}
        obj = bpy.data.objects["Saved"]
        assert obj.splinetween_latent.active and np.array_equal(evaluated_range(obj, 1, 61), shown)
        obj.splinetween_latent.segments[0].amplify = 1.0
        assert obj.splinetween_latent.status == "" and not np.array_equal(evaluated(obj, 30), shown[29])
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
        assert not (tmp_path / "splinetween" / "scene_Saved_encoded.pc2").exists()
        bpy.data.objects.remove(obj)
    finally:
        prefs().mesh_cache_folder = folder


def test_a_cache_belongs_to_its_blend_and_save_as_elsewhere_gives_the_copy_its_own(source, tmp_path):
    """Issue 29: Save As to another folder; the copy's sliders, Bake and Remove never write or delete
    the first file's cache, and the first file's cache is left byte for byte."""
    folder = prefs().mesh_cache_folder
    prefs().mesh_cache_folder = ""  # the default: //splinetween/ next to the .blend
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    try:
        assert bpy.ops.wm.save_as_mainfile(filepath=str(first / "scene.blend")) == {"FINISHED"}
        obj = cached_grid(source["pc2"], "Owned")
        st = encode(obj, 1, 61)
        st.segments[0].amplify = 1.5
        assert bpy.ops.wm.save_mainfile() == {"FINISHED"}
        old = first / "splinetween" / "scene_Owned_encoded.pc2"
        kept = old.read_bytes()
        shown = evaluated_range(obj, 1, 61)
        assert bpy.ops.wm.save_as_mainfile(filepath=str(second / "copy.blend")) == {"FINISHED"}
        obj = bpy.data.objects["Owned"]
        obj.splinetween_latent.segments[0].amplify = 2.0
        own = second / "splinetween" / "copy_Owned_encoded.pc2"
        assert old.read_bytes() == kept and own.exists()
        assert obj.modifiers["Splinetween"].filepath == "//splinetween/copy_Owned_encoded.pc2"
        assert not np.array_equal(evaluated_range(obj, 1, 61), shown)
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
        assert not own.exists() and old.read_bytes() == kept  # Remove deletes this file's cache only
        assert bpy.ops.wm.open_mainfile(filepath=str(first / "scene.blend")) == {"FINISHED"}
        obj = bpy.data.objects["Owned"]
        assert np.array_equal(evaluated_range(obj, 1, 61), shown)  # the first file as it was saved
        assert bpy.ops.wm.save_as_mainfile(filepath=str(second / "baked.blend")) == {"FINISHED"}
        obj = bpy.data.objects["Owned"]
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.anim.splinetween_bake() == {"FINISHED"}  # the baked modifier reads its own copy
        baked = second / "splinetween" / "baked_Owned_encoded.pc2"
        assert baked.read_bytes() == kept and obj.modifiers[-1].filepath.endswith("baked_Owned_encoded.pc2")
        bpy.data.objects.remove(obj)
    finally:
        prefs().mesh_cache_folder = folder


@pytest.mark.torch
def test_both_backend_modes_write_the_same_cache(source):
    from backend.formats.pc2 import read_pc2
    from blender_addon import bridge
    here = cached_grid(source["pc2"], "Here")
    encode(here, 1, 61).segments[0].amplify = 1.7
    try:
        prefs().backend_mode = "SUBPROCESS"
        there = cached_grid(source["pc2"], "There")
        encode(there, 1, 61).segments[0].amplify = 1.7
        assert bridge.backend_process() is not None and bridge.backend_process().alive()
        assert there.splinetween_latent.status == ""
        np.testing.assert_allclose(read_pc2(cache_file(there))[0], read_pc2(cache_file(here))[0], atol=1e-5)
    finally:
        prefs().backend_mode = "IN_PROCESS"
        bridge.shutdown()
    for o in (here, there):
        bpy.context.view_layer.objects.active = o
        bpy.ops.anim.splinetween_remove()
        bpy.data.objects.remove(o)


def test_a_duplicated_object_does_not_fight_over_the_cache_file(source, flag_obj):
    st = encode(flag_obj, 1, 61)
    path = cache_file(flag_obj)
    copy = flag_obj.copy()  # Shift+D: the copy has the same modifier, file and controls
    bpy.context.collection.objects.link(copy)
    before = evaluated(flag_obj, 30)
    copy.splinetween_latent.segments[0].amplify = 2.0
    assert "write the same cache file" in copy.splinetween_latent.status
    assert np.array_equal(evaluated(flag_obj, 30), before)
    bpy.context.view_layer.objects.active = copy
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    assert path.exists()  # still read by the original's modifier
    bpy.data.objects.remove(copy)
    st.segments[0].amplify = 2.0
    assert st.status == "" and not np.array_equal(evaluated(flag_obj, 30), before)
