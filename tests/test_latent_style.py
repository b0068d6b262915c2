"""The latent panel's Style menu and Strength slider (real bpy, headless, the shipped autoencoder): strength 0
gives the user's keys bit for bit, a style moves the segment's keys and keeps the root's ground path,
undo and save/reload keep it, a checkpoint without styles offers only None; the batch's ``edit --style``
on a .blend is the same as the slider by hand."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

import batch_helpers
from addon_helpers import bpy, snapshot
from latent_helpers import (
    AUTOENCODER,
    changed_frames,
    curves,
    encoded_copy,
    reach,
    same,
    source_fixture,  # noqa: F401  (the module fixture `source`: the example armature)
    temporary,
)

bpy = bpy()
from blender_addon import preferences  # noqa: E402
from blender_addon.latent import core as latent_core  # noqa: E402
from blender_addon.latent import slider  # noqa: E402
from blender_addon.latent.armature import encode  # noqa: E402

pytestmark = pytest.mark.blender


def _root_ground(obj) -> dict:
    """The Hips' location curves along the ground (every local axis of the bone but the one nearest world
    up: a style may change the height) -> values [n]."""
    m = obj.pose.bones["Hips"].bone.matrix_local
    up = int(np.argmax([abs(m.col[k][2]) for k in range(3)]))
    return {k: v["co"][:, 1].copy() for k, v in snapshot(obj).items()
            if k[0] == 'pose.bones["Hips"].location' and k[1] != up}


def test_style_menu_lists_the_checkpoints_styles_with_their_lines(source):
    from blender_addon.latent import props
    with temporary(encoded_copy(source)) as obj:
        seg = obj.splinetween_latent.segments[0]
        items = props.style_items(seg, bpy.context)
        assert [i[0] for i in items] == ["NONE", "active", "elderly", "exhausted", "feminine", "masculine", "youthful"]
        assert items[2][2].startswith("An old person")
        obj.splinetween_latent.checkpoint = str(AUTOENCODER.with_name("no-such.json"))  # unreadable: None only
        assert [i[0] for i in props.style_items(seg, bpy.context)] == ["NONE"]


def test_a_checkpoint_without_styles_offers_none_and_strength_moves_nothing(source, tmp_path):
    from addon_helpers import prefs
    from backend.runtime import checkpoint
    from blender_addon.latent import props
    ck = checkpoint.load(AUTOENCODER)
    del ck.extra["style.directions"]
    for k in ("style_names", "style_descriptions", "style_source"):
        ck.info.pop(k)
    plain = checkpoint.save(tmp_path / "plain.json", ck)
    prefs().autoencoder = str(plain)
    with temporary(encoded_copy(source)) as obj:
        seg = obj.splinetween_latent.segments[1]
        assert [i[0] for i in props.style_items(seg, bpy.context)] == ["NONE"]
        assert latent_core.style_names(obj.splinetween_latent.checkpoint) == ((), ())  # the panel greys the menu
        original = snapshot(obj)
        seg.style_strength = 1.0  # no style chosen (none to choose): the keys as they are
        same(original, snapshot(obj))


def test_style_menu_strength_layered_undo_and_reload(source, tmp_path):
    with temporary(encoded_copy(source)) as obj:
        seg = obj.splinetween_latent.segments
        original, ground = snapshot(obj), _root_ground(obj)
        seg[2].style = "elderly"  # strength still 0: nothing moves
        same(original, snapshot(obj))
        seg[2].style_strength = 1.0
        assert obj.splinetween_latent.status == ""
        styled = snapshot(obj)
        moved = changed_frames(curves(obj), {k: v["co"] for k, v in original.items()})
        a, b = reach(obj, 2)
        assert moved.size and moved.min() >= a and moved.max() <= b  # the segment and its seams
        assert len(ground) == 2
        for k, v in _root_ground(obj).items():  # the root's path over the ground kept
            np.testing.assert_allclose(v, ground[k], atol=1e-3)
        bpy.ops.ed.undo_push(message="elderly 1")
        seg[2].style = "youthful"
        bpy.ops.ed.undo_push(message="youthful 1")
        name = obj.name
        assert snapshot(obj).keys() == styled.keys()
        assert bpy.ops.ed.undo() == {"FINISHED"}
        obj = bpy.data.objects[name]  # (undo reloads data)
        seg = obj.splinetween_latent.segments
        assert seg[2].style == "elderly"
        same(styled, snapshot(obj))
        path = tmp_path / "styled.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
        seg[2].style_strength = 0.0  # neutral again: the user's keys, bit for bit
        same(original, snapshot(obj))
        seg[2].style_strength = 2.0
        assert bpy.ops.anim.splinetween_latent_reset(segment=2) == {"FINISHED"}
        assert seg[2].style_strength == 0.0
        same(original, snapshot(obj))
        assert bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False, use_scripts=False) == {"FINISHED"}
        obj = bpy.data.objects[name]  # saved and read again: the style, its strength and the styled keys
        assert (obj.splinetween_latent.segments[2].style, obj.splinetween_latent.segments[2].style_strength) == \
            ("elderly", 1.0)
        same(styled, snapshot(obj))


@pytest.mark.torch
def test_batch_edit_style_on_a_blend_is_the_slider_by_hand(source, tmp_path):  # (source: the add-on on)
    src, out = tmp_path / "in", tmp_path / "out"
    made = batch_helpers.build_blends(src, [batch_helpers.EXAMPLES[2]], dense=True)
    (name,) = made
    r = batch_helpers.run_batch("edit", src, "--style", "exhausted", "--style-strength", 0.8, "--out-dir", out,
                                "--jobs", 1, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert bpy.ops.wm.open_mainfile(filepath=str(out / f"{name}.blend"), load_ui=False, use_scripts=False) == {"FINISHED"}
    theirs = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    st = theirs.splinetween_latent
    assert [(s.style, round(s.style_strength, 6)) for s in st.segments] == [("exhausted", 0.8)] * len(st.segments)
    got = snapshot(theirs)
    shutil.copy2(made[name]["path"], tmp_path / "ours.blend")
    assert bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "ours.blend"), load_ui=False, use_scripts=False) == {"FINISHED"}
    ours = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    encode.encode(ours, preferences.settings(), preferences.autoencoder_path(), 1, made[name]["frames"], 30.0)
    with latent_core.suspended():
        for seg in ours.splinetween_latent.segments:
            seg.style, seg.style_strength = "exhausted", 0.8
    slider.sync(ours)
    same(snapshot(ours), got)
