"""Bad input to Encode Mesh and Inbetween Mesh: a clear message naming the problem and the fix, and
the mesh, its modifiers and the cache folder exactly as they were (real bpy, headless)."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

from addon_helpers import ROOT, bpy, disable_addon, prefs
from mesh_addon_helpers import (
    MESH_AUTOENCODER,
    MESH_INBETWEEN,
    cached_grid,
    evaluated,
    evaluated_range,
    flag,
    grid,
    mesh_data,
    raw_props,
    setup_scene,
    stack,
)

bpy = bpy()
pytestmark = pytest.mark.blender
ENCODE = bpy.ops.anim.splinetween_mesh_encode
INBETWEEN = bpy.ops.anim.splinetween_mesh_inbetween


@pytest.fixture(scope="module", autouse=True)
def truth(tmp_path_factory):
    f = flag()
    setup_scene(tmp_path_factory.mktemp("cache"))
    yield f
    disable_addon()


@pytest.fixture
def flag_obj(truth):
    obj = cached_grid(truth["pc2"], "Flag")
    yield obj
    if obj.name in bpy.data.objects:
        bpy.data.objects.remove(obj)


@contextlib.contextmanager
def unchanged(obj):
    """The object, its modifiers, its evaluated frames and the cache folder are the same afterwards."""
    from pathlib import Path
    folder = Path(prefs().mesh_cache_folder)
    files = sorted(folder.glob("*")) if folder.is_dir() else []
    shown = [evaluated(obj, f) for f in range(1, 13)]
    bpy.context.scene.frame_set(1)
    data, mods = mesh_data(obj), stack(obj)
    yield
    assert bpy.context.scene.frame_current == 1  # the frame is put back too
    assert np.array_equal(mesh_data(obj), data) and stack(obj) == mods
    assert not obj.splinetween_latent.active and not raw_props(obj)
    assert all(np.array_equal(evaluated(obj, f), v) for f, v in zip(range(1, 13), shown, strict=True))
    assert (sorted(folder.glob("*")) if folder.is_dir() else []) == files


def refused(op, obj, match, **kw):
    bpy.context.view_layer.objects.active = obj
    with unchanged(obj), pytest.raises(RuntimeError, match=match):
        op(**kw)


def test_a_mesh_with_another_vertex_count(truth):
    small = grid("Small", 10)
    small.shape_key_add(name="Basis")
    refused(ENCODE, small, f"Small has 100 vertices, but the mesh checkpoint {MESH_AUTOENCODER.name} was trained on "
                           "a mesh of 5041: a mesh model is per asset")
    refused(INBETWEEN, small, f"Small has 100 vertices, but the mesh checkpoint {MESH_INBETWEEN.name} was trained on "
                              "a mesh of 5041")
    bpy.data.objects.remove(small)


def test_an_empty_or_too_short_range(flag_obj):
    refused(ENCODE, flag_obj, "the frame range 30-10 is empty", frame_range="CUSTOM", frame_start=30, frame_end=10)
    refused(ENCODE, flag_obj, r"frames 10-12 are 3 frames; the model needs at least \d+ \(encode a longer range\)",
            frame_range="CUSTOM", frame_start=10, frame_end=12)
    refused(INBETWEEN, flag_obj, "the frame range 30-10 is empty", frame_range="CUSTOM", frame_start=30, frame_end=10)
    refused(INBETWEEN, flag_obj, "1 key frame: in-betweening needs at least two", key_mode="LIST", key_frames="7")
    refused(INBETWEEN, flag_obj, "the key frames 1 and 70 are 69 frames apart; the model fills at most 60",
            key_mode="LIST", key_frames="1, 70")
    refused(INBETWEEN, flag_obj, r"'5x' is not a frame", key_mode="LIST", key_frames="1, 5x")


def test_a_topology_change_names_the_frame(flag_obj):
    dec = flag_obj.modifiers.new("Decimate", "DECIMATE")
    dec.keyframe_insert("ratio", frame=1)
    dec.ratio = 0.3
    dec.keyframe_insert("ratio", frame=9)
    from blender_addon.io.compat import assigned_channelbag
    for kp in assigned_channelbag(flag_obj.animation_data).fcurves[0].keyframe_points:
        kp.interpolation = "CONSTANT"
    refused(ENCODE, flag_obj, r"Flag has 5041 vertices at frame 1 but \d+ at frame 9: its topology changes",
            frame_range="CUSTOM", frame_start=1, frame_end=40)
    refused(INBETWEEN, flag_obj, r"at frame 9: its topology changes in frames 1-40", key_mode="LIST",
            key_frames="1, 10, 40")


def test_an_unwritable_cache_folder(flag_obj, tmp_path):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file where the cache folder should be")
    folder = prefs().mesh_cache_folder
    prefs().mesh_cache_folder = str(blocker / "cache")
    try:
        refused(ENCODE, flag_obj, f"cannot create the mesh cache folder {blocker / 'cache'} .*choose a writable folder "
                                  "in Preferences > Add-ons > Splinetween > Mesh Cache Folder")
        refused(INBETWEEN, flag_obj, "cannot create the mesh cache folder")
        prefs().mesh_cache_folder = ""
        refused(ENCODE, flag_obj, "the .blend has not been saved, so there is no folder next to it for the mesh cache: "
                                  "save the file first, or set Preferences > Add-ons > Splinetween > Mesh Cache Folder")
    finally:
        prefs().mesh_cache_folder = folder


def test_wrong_checkpoints(flag_obj):
    try:
        prefs().mesh_autoencoder = str(ROOT / "backend" / "checkpoints" / "motion_autoencoder.json")
        refused(ENCODE, flag_obj, r"motion_autoencoder.json is a motion \(armature\) checkpoint; mesh sequences need "
                                  "a mesh checkpoint")
        prefs().mesh_autoencoder = str(MESH_INBETWEEN)
        refused(ENCODE, flag_obj, f"{MESH_INBETWEEN.name} is a mesh inbetween checkpoint; this needs a mesh "
                                  "autoencoder one")
        prefs().mesh_autoencoder = str(ROOT / "nowhere" / "cloth.json")
        refused(ENCODE, flag_obj, "cannot read the mesh checkpoint .*cloth.json")
    finally:
        prefs().mesh_autoencoder = str(MESH_AUTOENCODER)


def test_not_a_mesh_and_already_encoded(flag_obj):
    bpy.ops.object.empty_add()
    empty = bpy.context.active_object
    for op in (ENCODE, INBETWEEN):
        assert not op.poll()
        with pytest.raises(RuntimeError, match="Make a mesh object the active object"):
            op()
    bpy.data.objects.remove(empty)
    bpy.context.view_layer.objects.active = flag_obj
    assert ENCODE(frame_range="CUSTOM", frame_start=1, frame_end=40) == {"FINISHED"}
    for op in (ENCODE, INBETWEEN):
        with pytest.raises(RuntimeError, match="already have latent controls: Bake keeps what the mesh shows, Remove puts it back"):
            op()
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}


def test_a_missing_checkpoint_turns_the_sliders_off_and_remove_still_works(flag_obj, tmp_path):
    import shutil

    from backend.formats import json_limits
    from blender_addon.core import latent_math
    # config, weights and the asset's shared basis
    for f in latent_math.checkpoint_files(MESH_AUTOENCODER, json_limits.read):
        shutil.copy(f, tmp_path / f.name)
    prefs().mesh_autoencoder = str(tmp_path / MESH_AUTOENCODER.name)
    try:
        data, mods, shown = mesh_data(flag_obj), stack(flag_obj), evaluated_range(flag_obj, 1, 12)
        bpy.context.view_layer.objects.active = flag_obj
        assert ENCODE(frame_range="CUSTOM", frame_start=1, frame_end=40) == {"FINISHED"}
        (tmp_path / MESH_AUTOENCODER.name).unlink()
        prefs().mesh_autoencoder = str(tmp_path / "elsewhere.json")
        before = evaluated_range(flag_obj, 1, 12)
        flag_obj.splinetween_latent.segments[0].amplify = 2.0  # refused quietly: the panel says why
        assert "is missing: sliders are off" in flag_obj.splinetween_latent.status
        assert np.array_equal(evaluated_range(flag_obj, 1, 12), before)
        assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
        assert np.array_equal(mesh_data(flag_obj), data) and stack(flag_obj) == mods
        assert np.array_equal(evaluated_range(flag_obj, 1, 12), shown)
    finally:
        prefs().mesh_autoencoder = str(MESH_AUTOENCODER)


def test_a_cache_file_that_cannot_be_written_undoes_everything(flag_obj):
    from pathlib import Path
    in_the_way = Path(prefs().mesh_cache_folder) / "untitled_Flag_encoded.pc2"
    in_the_way.mkdir(parents=True)  # a folder where the cache file should go: the write fails after the checks
    try:
        refused(ENCODE, flag_obj, "untitled_Flag_encoded.pc2: could not write .*; the mesh was left as it was",
                frame_range="CUSTOM", frame_start=1, frame_end=40)
        assert in_the_way.is_dir() and flag_obj.animation_data is None
    finally:
        in_the_way.rmdir()
