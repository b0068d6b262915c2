"""What happens around the sliders: undo, save and reload, two armatures, Bake, Remove, Resample,
a missing or swapped checkpoint, and both backend modes (real bpy, headless)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from addon_helpers import ROOT, assert_same_keys, bpy, channelbag, driven, prefs, snapshot, thin_keys
from latent_helpers import (
    AUTOENCODER,
    changed_frames,
    curves,
    encoded_copy,
    encoded_segments,
    fresh_copy,
    reach,
    same,
    source_fixture,  # noqa: F401  (the module fixture `source`: the example armature)
    temporary,
)

bpy = bpy()
from blender_addon import bridge  # noqa: E402
from blender_addon.core import latent_math as LM  # noqa: E402

pytestmark = pytest.mark.blender


@pytest.fixture
def enc(source):
    with temporary(encoded_copy(source)) as obj:
        yield obj


def test_undo_restores_the_keys_and_the_slider(enc):
    name = enc.name
    bpy.ops.ed.undo_push(message="before the slider")
    before = snapshot(enc)
    enc.splinetween_latent.segments[1].amplify = 2.5
    bpy.ops.ed.undo_push(message="amplify")
    assert changed_frames(curves(enc), {k: v["co"] for k, v in before.items()}).size
    assert bpy.ops.ed.undo() == {"FINISHED"}
    obj = bpy.data.objects[name]  # undo reloads data: fetch by name again
    assert obj.splinetween_latent.segments[1].amplify == 1.0
    same(before, snapshot(obj))
    assert bpy.ops.anim.splinetween_redecode() == {"FINISHED"}  # keys and sliders agree after the undo
    same(before, snapshot(obj))
    bpy.ops.ed.undo_push(message="before Bake")
    assert bpy.ops.anim.splinetween_bake("EXEC_DEFAULT", True) == {"FINISHED"}
    assert not bpy.data.objects[name].splinetween_latent.active
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert bpy.data.objects[name].splinetween_latent.active and LM.raw_name(0, 0) in bpy.data.objects[name]


def test_save_reload_and_the_slider_still_works(source, tmp_path):
    original = snapshot(bpy.data.objects[source])
    obj = encoded_copy(source)
    name = obj.name
    obj.splinetween_latent.segments[0].timing = 0.4
    path = tmp_path / "latent.blend"
    assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {"FINISHED"}
    saved = curves(obj)
    assert bpy.ops.wm.open_mainfile(filepath=str(path)) == {"FINISHED"}
    obj = bpy.data.objects[name]
    st = obj.splinetween_latent
    assert st.active and abs(st.segments[0].timing - 0.4) < 1e-6
    same_keys = curves(obj)
    assert changed_frames(saved, same_keys).size == 0
    st.segments[3].amplify = 2.0
    a, b = reach(obj, 3)
    frames = changed_frames(same_keys, curves(obj))
    assert len(frames) and frames.min() >= a and frames.max() <= b
    st.segments[3].amplify, st.segments[0].timing = 1.0, 0.0  # the original, kept in the file, comes back
    same(original, snapshot(obj))
    bpy.data.objects.remove(obj)
    assert source in bpy.data.objects  # the reloaded file has the module's source armature too


def test_two_armatures_keep_separate_controls(source):
    a = encoded_copy(source)
    b = encoded_copy(source, frame_range="CUSTOM", frame_start=30, frame_end=150)
    assert a.splinetween_latent.token != b.splinetween_latent.token
    # 5 and 2 segments of 61 frames, 10 and 4 of 31
    assert len(a.splinetween_latent.segments) == len(encoded_segments(273))
    assert len(b.splinetween_latent.segments) == len(encoded_segments(121))
    before_a, before_b = curves(a), curves(b)
    b.splinetween_latent.segments[0].amplify = 2.0
    b[LM.raw_name(1, 1)][3] += 2.0
    bpy.context.view_layer.objects.active = b
    assert bpy.ops.anim.splinetween_redecode() == {"FINISHED"}
    assert changed_frames(before_a, curves(a)).size == 0
    assert set(changed_frames(before_b, curves(b))) <= set(range(30, 151))
    shared = fresh_copy(source)
    shared.animation_data.action = a.animation_data.action
    with pytest.raises(RuntimeError, match=f"shares its action with {a.name}"):
        bpy.ops.anim.splinetween_encode()
    for o in (a, b, shared):
        bpy.data.objects.remove(o)


def test_bake_keeps_the_edited_keys_as_plain_keys(enc):
    enc.splinetween_latent.segments[2].amplify = 2.0
    enc[LM.raw_name(0, 1)][0] += 1.0
    enc.keyframe_insert(f'["{LM.raw_name(0, 1)}"]', index=0, frame=1)
    assert bpy.ops.anim.splinetween_redecode() == {"FINISHED"}
    edited = snapshot(enc)
    assert bpy.ops.anim.splinetween_bake() == {"FINISHED"}
    assert not enc.splinetween_latent.active and not [k for k in enc.keys() if k.startswith(LM.RAW_PREFIX)]
    after = snapshot(enc)
    assert after.keys() == {k for k in edited if not LM.is_raw_path(k[0])}
    for k in after:
        assert_same_keys(edited[k], after[k])
    bpy.context.scene.frame_set(5)
    assert curves(enc).keys() == after.keys()


def test_remove_restores_the_original_keys_exactly(source, enc):
    original = snapshot(bpy.data.objects[source])
    enc.splinetween_latent.segments[1].amplify = 3.0
    enc[LM.raw_name(4, 3)][9] -= 2.0
    enc.keyframe_insert(f'["{LM.raw_name(4, 3)}"]', index=9, frame=3)
    assert bpy.ops.anim.splinetween_redecode() == {"FINISHED"}
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    assert not enc.splinetween_latent.active and not [k for k in enc.keys() if k.startswith(LM.RAW_PREFIX)]
    same(original, snapshot(enc))


@pytest.mark.parametrize("factor, frames", [(2.0, 545), (4.0, 1089), (0.5, 137)])
def test_resample_stretches_the_range_and_remove_undoes_it(source, factor, frames):
    obj = fresh_copy(source)
    hips_x = channelbag(obj).fcurves.find('pose.bones["Hips"].location', index=0)
    hips_x.keyframe_points.insert(300, 7.0)  # a key after the range, which must move with its end
    original = snapshot(obj)
    assert bpy.ops.anim.splinetween_encode(frame_range="CUSTOM", frame_start=1, frame_end=273) == {"FINISHED"}
    assert bpy.ops.anim.splinetween_resample(mode="FACTOR", factor=factor) == {"FINISHED"}
    st = obj.splinetween_latent
    assert (st.frames, st.frame_end) == (frames, frames)
    keys = curves(obj)
    hips = keys['pose.bones["Hips"].location', 0]
    assert hips[:, 0].tolist()[:frames] == list(range(1, frames + 1)) and hips[-1].tolist() == [300 + frames - 273, 7.0]
    st.segments[2].amplify = 2.0  # the sliders work on the new length
    a, b = reach(obj, 2)
    changed = changed_frames(keys, curves(obj))
    assert len(changed) and changed.min() >= a and changed.max() <= b
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    same(original, snapshot(obj))
    bpy.data.objects.remove(obj)


def test_resample_twice_at_neutral_is_the_original_curves_at_half_frames(source):
    """The layer's original after 2x: the user's own curves (sparse BEZIER keys here) evaluated at half frames,
    keyed on every frame; an edit and its undoing come back to exactly that."""
    obj = fresh_copy(source)
    thin_keys(obj, range(1, 274, 6), select=False)
    bezier = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["BEZIER"].value
    for fc in channelbag(obj).fcurves:
        fc.keyframe_points.foreach_set("interpolation", np.full(len(fc.keyframe_points), bezier, np.int32))
        fc.update()
    user = fresh_copy(obj.name)  # the user's curves, kept apart to evaluate
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.anim.splinetween_encode() == {"FINISHED"}  # frames 1-271
    assert bpy.ops.anim.splinetween_resample(mode="FACTOR", factor=2.0) == {"FINISHED"}
    st = obj.splinetween_latent
    assert (st.frames, st.frame_end) == (541, 541)
    mine, theirs = curves(obj), {(fc.data_path, fc.array_index): fc for fc in channelbag(user).fcurves}
    for key, fc in theirs.items():
        if not driven(key[0]):
            continue
        keys = mine[key]
        assert keys[:, 0].tolist() == list(range(1, 542)), key
        want = np.array([fc.evaluate(1 + 0.5 * (f - 1)) for f in range(1, 542)], np.float32)
        assert np.array_equal(keys[:, 1], want), key
    resampled = snapshot(obj)
    st.segments[4].amplify = 2.0
    assert changed_frames(curves(obj), {k: v["co"] for k, v in resampled.items()}).size
    st.segments[4].amplify = 1.0
    same(resampled, snapshot(obj))
    for o in (obj, user):
        bpy.data.objects.remove(o)


def test_a_script_reference_survives_bake_remove_and_undo(tmp_path):
    """A Python reference to Object.splinetween_latent held across Bake and Remove reads an empty,
    inactive group (Bake freed it under the reference, and Blender crashed); after undo, Blender wants
    data fetched again, and the group read then has the controls back.  Run in its own process, so a
    crash is a failure with its output, not the end of the test session."""
    script = tmp_path / "hold.py"
    script.write_text(HOLD)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tests"))
    run = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0 and "held reference read" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]


HOLD = """
from latent_helpers import bpy, encoded_copy, setup_scene
b = bpy()
name = encoded_copy(setup_scene().name).name
for op in ("bake", "remove"):
    b.ops.ed.undo_push(message="before " + op)
    obj = b.data.objects[name]
    b.context.view_layer.objects.active = obj
    held = obj.splinetween_latent
    assert held.active and len(held.segments) == 10 and "bones" in held
    assert getattr(b.ops.anim, "splinetween_" + op)("EXEC_DEFAULT", True) == {"FINISHED"}
    for _ in range(3):  # the same reference, read again and again: empty, inactive, no crash
        assert not held.active and len(held.segments) == 0 and held.frame_start == 0 and "bones" not in held
        assert held.checkpoint == "" and [s.amplify for s in held.segments] == []
    assert b.ops.ed.undo() == {"FINISHED"}
    again = b.data.objects[name].splinetween_latent
    assert again.active and len(again.segments) == 10 and list(again["bones"])[0] == "joint_Root"
    print("held reference read after " + op)
"""


def test_resample_refuses_lengths_it_cannot_make(enc):
    with pytest.raises(RuntimeError, match="without frames"):
        bpy.ops.anim.splinetween_resample(mode="LENGTH", frames=3)


@pytest.mark.parametrize("damage", ["missing", "swapped"])
def test_a_missing_or_swapped_checkpoint_turns_the_sliders_off(source, tmp_path, damage):
    for f in AUTOENCODER.parent.glob(AUTOENCODER.stem + ".*"):
        shutil.copy(f, tmp_path / f.name)
    prefs().autoencoder = str(tmp_path / AUTOENCODER.name)
    obj = encoded_copy(source)
    original = snapshot(bpy.data.objects[source])
    if damage == "missing":
        (tmp_path / AUTOENCODER.name).unlink()
        prefs().autoencoder = str(tmp_path / "elsewhere.json")
    else:
        doc = (tmp_path / AUTOENCODER.name).read_text().replace('"steps"', '"steps_"', 1)
        (tmp_path / AUTOENCODER.name).write_text(doc)
    from blender_addon.latent import core as latent
    path, why = latent.checkpoint_for(obj.splinetween_latent)
    assert path is None and ("is missing" if damage == "missing" else "has changed since encoding") in why
    before = snapshot(obj)
    obj.splinetween_latent.segments[0].amplify = 2.0  # refused quietly: the panel shows why
    assert "sliders are off" in obj.splinetween_latent.status
    same(before, snapshot(obj))
    with pytest.raises(RuntimeError, match="Bake keeps the motion, Remove restores the original keys"):
        bpy.ops.anim.splinetween_resample()
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    same(original, snapshot(obj))
    prefs().autoencoder = str(AUTOENCODER)
    bpy.data.objects.remove(obj)


@pytest.mark.torch
def test_both_backend_modes_write_the_same_keys(source):
    here = encoded_copy(source)
    here.splinetween_latent.segments[1].amplify = 1.7
    try:
        prefs().backend_mode = "SUBPROCESS"
        there = encoded_copy(source)
        there.splinetween_latent.segments[1].amplify = 1.7
        assert bridge.backend_process() is not None and bridge.backend_process().alive()
        assert there.splinetween_latent.status == ""
        same(snapshot(here), snapshot(there))
    finally:
        prefs().backend_mode = "IN_PROCESS"
        bridge.shutdown()
    for o in (here, there):
        bpy.data.objects.remove(o)


def test_the_plan_keeps_a_signature_only_while_its_inputs_are_the_same(enc):
    # plan() reuses the last plan's signature of a segment whose inputs did not change; each one must
    # still be the signature of the segment's current inputs
    from blender_addon.latent import core as latent
    st = enc.splinetween_latent

    def fresh(raw, bounds):
        m = len(latent.names(st))
        return [LM.signature(raw[s], seg.amplify, seg.timing, tuple(x + 0.0 for x in seg.principal[:m]),
                             bounds[s][1] - bounds[s][0] + 1) for s, seg in enumerate(st.segments)]
    raw = latent.read_raw(enc, st)
    bounds, first, _ = latent.plan(st, raw)
    assert first == fresh(raw, bounds)
    raw2 = raw.copy()
    raw2[0, 1, 3] += 0.25
    st.segments[1].amplify = 1.5
    bounds, second, _ = latent.plan(st, raw2)
    assert second == fresh(raw2, bounds)
    assert second[0] != first[0] and second[1] != first[1] and second[2:] == first[2:]
    bounds, third, _ = latent.plan(st, raw)  # (back: the first segment's signature as before)
    assert third[0] == first[0] and third == fresh(raw, bounds)
