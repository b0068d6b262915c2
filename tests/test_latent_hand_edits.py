"""The user's animation is the truth (issue 29): keys changed, inserted or deleted by hand after
Encode survive the sliders in any segment, save and reload, Bake, Resample and undo; a deleted curve
is not made again; another take is never written; a renamed bone is named and never re-created
(real bpy, headless).

Longer than 300 lines: one scene and one encoded walk serve every case of the promise, read together."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import assert_same_keys, bpy, channelbag, snapshot
from latent_helpers import (
    EDIT_CURVE,
    edit_by_hand,
    encoded_copy,
    key_value,
    segment_frames,
    source_fixture,  # noqa: F401  (the module fixture `source`: the example armature)
    temporary,
)

bpy = bpy()

pytestmark = pytest.mark.blender
PATH, INDEX = EDIT_CURVE


@pytest.fixture
def enc(source):
    with temporary(encoded_copy(source)) as obj:
        yield obj


def curve(obj, path=PATH, index=INDEX):
    return channelbag(obj).fcurves.find(path, index=index)


def middle(obj, s: int) -> int:
    a, b = segment_frames(obj, s)
    return (a + b) // 2


def test_the_example_curve_is_a_driven_one(enc):
    assert curve(enc) is not None and len(curve(enc).keyframe_points) >= enc.splinetween_latent.frames


def test_a_key_changed_by_hand_survives_slider_moves_in_any_segment(enc):
    st = enc.splinetween_latent
    f1, f5 = middle(enc, 1), middle(enc, 5)
    hips = ('pose.bones["Hips"].location', 1)  # (a location: the edit adds to it)
    neutral = float(key_value(enc, f1, *hips))
    st.segments[1].amplify = 1.5
    offset = float(key_value(enc, f1, *hips)) - neutral  # what the edit adds on that frame
    assert abs(offset) > 1e-3
    v1 = edit_by_hand(enc, f1, float(key_value(enc, f1, *hips)) + 0.3, *hips)  # a layer key (segment 2 is edited)
    v5 = edit_by_hand(enc, f5, float(key_value(enc, f5)) - 0.4)  # the user's own key (segment 6 neutral)
    st.segments[8].amplify = 2.0  # a segment that reaches neither frame
    assert key_value(enc, f5) == v5  # the user's key, as it is
    assert abs(float(key_value(enc, f1, *hips)) - (v1 + offset)) < 1e-5  # the user's key, the edit on top
    assert st.base_edited  # (the panel says the layer is on top of an edited animation)
    st.segments[1].amplify = 1.6  # the edited segment itself: the user's value moved by the edit
    assert key_value(enc, f5) == v5 and abs(float(key_value(enc, f1, *hips)) - v1) > 1e-4
    st.segments[1].amplify = 1.0  # neutral: exactly the value the user set
    assert key_value(enc, f1, *hips) == v1 and key_value(enc, f5) == v5
    st.segments[5].timing = 0.5
    st.segments[5].timing = 0.0
    st.segments[8].amplify = 1.0
    assert key_value(enc, f1, *hips) == v1 and key_value(enc, f5) == v5


def test_neutral_sliders_give_the_current_animation_bit_for_bit(enc):
    st = enc.splinetween_latent
    f = middle(enc, 4)
    edit_by_hand(enc, f, 0.7)
    fc = curve(enc)
    fc.keyframe_points.insert(f + 2.5, 0.1)  # a key inserted between two frames
    edit_by_hand(enc, f + 1, -0.2, 'pose.bones["Hips"].location', 1)
    bpy.context.view_layer.update()
    mine = snapshot(enc)
    st.segments[1].amplify = 2.0
    st.segments[7].timing = -0.5
    after = snapshot(enc)
    for k in mine:  # segment 5 is neutral: its frames are the user's, every attribute
        a, b = segment_frames(enc, 4)
        rows_a = (mine[k]["co"][:, 0] >= a + 8) & (mine[k]["co"][:, 0] <= b - 8)
        rows_b = (after[k]["co"][:, 0] >= a + 8) & (after[k]["co"][:, 0] <= b - 8)
        assert_same_keys(mine[k], after[k], rows_a, rows_b)
    assert bpy.ops.anim.splinetween_latent_reset(segment=-1) == {"FINISHED"}
    now = snapshot(enc)
    assert now.keys() == mine.keys()
    for k in mine:
        assert_same_keys(mine[k], now[k])


def test_a_key_deleted_by_hand_stays_deleted(enc):
    st = enc.splinetween_latent
    f = middle(enc, 6)
    fc = curve(enc)
    fc.keyframe_points.remove(next(k for k in fc.keyframe_points if abs(k.co.x - f) < 1e-3))
    bpy.context.view_layer.update()
    st.segments[2].amplify = 2.5
    assert key_value(enc, f) is None
    st.segments[6].amplify = 1.5  # its own segment edited: the layer keys its frames, never that one
    assert key_value(enc, f) is None and key_value(enc, f + 1) is not None
    st.segments[6].amplify = 1.0
    st.segments[2].amplify = 1.0
    assert key_value(enc, f) is None


def test_a_layer_key_deleted_in_an_edited_segment_stays_deleted(enc):
    """A key the layer wrote (its segment edited) deleted by hand: not keyed again by the next slider
    change of that segment or any other, nor at neutral, nor after Bake; a key inserted there later is
    the user's again (the edit on top of it)."""
    st = enc.splinetween_latent
    st.segments[3].amplify = 2.0
    f = middle(enc, 3)
    fc = curve(enc)
    fc.keyframe_points.remove(next(k for k in fc.keyframe_points if abs(k.co.x - f) < 1e-3))
    bpy.context.view_layer.update()
    st.segments[3].amplify = 2.5
    assert key_value(enc, f) is None and key_value(enc, f - 1) is not None and key_value(enc, f + 1) is not None
    st.segments[0].amplify = 0.5
    st.segments[3].amplify = 1.0
    assert key_value(enc, f) is None
    st.segments[3].amplify = 1.5
    assert key_value(enc, f) is None
    curve(enc).keyframe_points.insert(f, 0.25)
    bpy.context.view_layer.update()
    st.segments[3].amplify = 1.0
    assert key_value(enc, f) == np.float32(0.25)
    st.segments[3].amplify = 1.5
    assert key_value(enc, f) is not None and key_value(enc, f) != np.float32(0.25)
    curve(enc).keyframe_points.remove(next(k for k in curve(enc).keyframe_points if abs(k.co.x - f) < 1e-3))
    bpy.context.view_layer.update()
    assert bpy.ops.anim.splinetween_bake() == {"FINISHED"}
    assert key_value(enc, f) is None


def test_a_deleted_curve_is_not_made_again(enc):
    st = enc.splinetween_latent
    bag = channelbag(enc)
    bag.fcurves.remove(curve(enc, PATH, 1))
    st.segments[0].amplify = 2.0
    st.segments[4].amplify = 0.5
    assert curve(enc, PATH, 1) is None and curve(enc, PATH, 0) is not None
    assert bpy.ops.anim.splinetween_latent_reset(segment=-1) == {"FINISHED"}
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    assert curve(enc, PATH, 1) is None


def test_save_reload_then_slider_keeps_the_edit(enc, tmp_path):
    st = enc.splinetween_latent
    st.segments[2].amplify = 1.5
    name, f2, f6 = enc.name, middle(enc, 2), middle(enc, 6)
    v2 = edit_by_hand(enc, f2, float(key_value(enc, f2)) + 0.25)
    v6 = edit_by_hand(enc, f6, float(key_value(enc, f6)) + 0.5)
    path = tmp_path / "edited.blend"
    assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {"FINISHED"}
    assert bpy.ops.wm.open_mainfile(filepath=str(path)) == {"FINISHED"}
    obj = bpy.data.objects[name]
    obj.splinetween_latent.segments[8].amplify = 2.0
    obj.splinetween_latent.segments[2].amplify = 1.0
    assert key_value(obj, f2) == v2 and key_value(obj, f6) == v6


def test_bake_after_sliders_keeps_the_edit(enc):
    st = enc.splinetween_latent
    st.segments[3].amplify = 2.0
    f = middle(enc, 7)
    v = edit_by_hand(enc, f, 0.9)
    st.segments[3].amplify = 2.2
    assert bpy.ops.anim.splinetween_bake() == {"FINISHED"}
    assert key_value(enc, f) == v


def test_resample_keeps_the_edit(enc):
    st = enc.splinetween_latent
    lo = st.frame_start
    f = middle(enc, 5)
    v = edit_by_hand(enc, f, 1.1)
    assert bpy.ops.anim.splinetween_resample(frames=2 * st.frames - 1) == {"FINISHED"}
    assert key_value(enc, lo + 2 * (f - lo)) == v  # the frame's new place shows the user's value


def test_undo_and_redo_keep_keys_and_edit_in_step(enc):
    st = enc.splinetween_latent
    name, f = enc.name, middle(enc, 5)
    bpy.ops.ed.undo_push(message="encoded")
    v = edit_by_hand(enc, f, 0.6)
    bpy.ops.ed.undo_push(message="by hand")
    st.segments[1].amplify = 2.0
    bpy.ops.ed.undo_push(message="slider")
    assert bpy.ops.ed.undo() == {"FINISHED"}
    obj = bpy.data.objects[name]
    assert key_value(obj, f) == v and obj.splinetween_latent.segments[1].amplify == 1.0
    obj.splinetween_latent.segments[3].amplify = 1.5  # after the undo: the edit is still the user's
    assert key_value(obj, f) == v
    assert bpy.ops.ed.undo() == {"FINISHED"}  # back before the edit: the layer does not bring it back
    obj = bpy.data.objects[name]
    obj.splinetween_latent.segments[2].amplify = 1.5
    assert key_value(obj, f) != v
    assert bpy.ops.ed.redo() == {"FINISHED"}  # the edit again: the next slider keeps it
    obj = bpy.data.objects[name]
    assert key_value(obj, f) == v
    obj.splinetween_latent.segments[7].amplify = 1.5
    assert key_value(obj, f) == v


def test_another_take_is_never_written(enc):
    st = enc.splinetween_latent
    first = enc.animation_data.action
    second = first.copy()
    second.name = "take 2"
    enc.animation_data.action = second
    before = snapshot(enc)
    st.segments[1].amplify = 2.0
    assert "take 2" in st.status and first.name in st.status and "Encode" in st.status
    after = snapshot(enc)
    for k in before:
        assert_same_keys(before[k], after[k])
    with pytest.raises(RuntimeError, match="take 2"):
        bpy.ops.anim.splinetween_resample(frames=2 * st.frames - 1)
    st.segments[1].amplify = 1.0
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}  # acts on the first take only
    after = snapshot(enc)
    for k in before:
        assert_same_keys(before[k], after[k])


def test_a_renamed_bone_is_named_and_never_made_again(enc):
    st = enc.splinetween_latent
    st.segments[1].amplify = 2.0
    bpy.context.view_layer.objects.active = enc
    enc.data.bones["Foot_L"].name = "Foot_L.renamed"
    st.segments[2].amplify = 2.0
    assert "lost bones" in st.status and "Foot_L" in st.status
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    paths = {fc.data_path for fc in channelbag(enc).fcurves}
    assert not any('"Foot_L"' in p for p in paths)
    assert any('"Foot_L.renamed"' in p for p in paths)


def test_shared_action_is_refused_the_same_way_by_the_sliders(enc, source):
    other = bpy.data.objects[source].copy()
    bpy.context.collection.objects.link(other)
    other.animation_data.action = enc.animation_data.action
    try:
        enc.splinetween_latent.segments[1].amplify = 2.0
        assert f"shares its action with {other.name}" in enc.splinetween_latent.status
    finally:
        bpy.data.objects.remove(other)
    enc.splinetween_latent.segments[1].amplify = 2.5
    assert enc.splinetween_latent.status == ""


def test_a_range_saved_before_writes_were_recorded_is_not_mistaken_for_hand_edits(enc):
    """A file from the add-on before this layer (no record of what the sliders wrote): its layer keys are
    not carried into the original; the next slider change writes whole and records from then on, and at
    neutral the keys are the original ones, every attribute."""
    from blender_addon.latent import state
    st = enc.splinetween_latent
    original = snapshot(enc)
    st.segments[2].amplify = 2.0
    for key in ("shown_frames", "shown_values"):
        if key in st:
            del st[key]
    st.shown_id = ""
    state.forget(st.token)
    st.segments[2].amplify = 2.1
    assert not st.base_edited and st.shown_id
    st.segments[2].amplify = 1.0
    now = snapshot(enc)
    assert now.keys() == original.keys()
    for k in original:
        assert_same_keys(original[k], now[k])


def test_a_rotation_mode_changed_after_encode_is_refused_by_name_and_nothing_written(enc):
    """A bone's rotation mode changed after Encode: its keys in the new mode cannot be compared with the
    original (kept in the old one), so the sliders refuse, naming the bone and the fix, and write nothing;
    the mode set back, they go on."""
    st = enc.splinetween_latent
    bone = enc.pose.bones["UpperLeg_L"]
    old = bone.rotation_mode
    new = "XYZ" if old != "XYZ" else "ZXY"
    bone.rotation_mode = new
    before = snapshot(enc)
    st.segments[1].amplify = 2.0
    assert "UpperLeg_L" in st.status and new in st.status and old in st.status and "back to" in st.status
    after = snapshot(enc)
    assert after.keys() == before.keys()
    for k in before:
        assert_same_keys(before[k], after[k])
    with pytest.raises(RuntimeError, match="the rotation mode of UpperLeg_L on"):
        bpy.ops.anim.splinetween_resample(frames=2 * st.frames - 1)
    bone.rotation_mode = old
    st.segments[1].amplify = 2.1
    f = middle(enc, 1)
    assert st.status == "" and key_value(enc, f, 'pose.bones["Hips"].location', 1) != \
        before['pose.bones["Hips"].location', 1]["co"][f - 1, 1]


def test_a_sub_frame_key_inside_an_edited_segment_is_shown_with_the_edit_and_kept_at_bake(enc):
    """A key inserted between two whole frames where the layer writes: kept while the segment is edited
    (moved by the edit there, as the layer keys around it are), exactly as set at neutral, and through
    Bake."""
    st = enc.splinetween_latent
    st.segments[4].amplify = 2.0
    f = middle(enc, 4)
    x = f + 0.5
    curve(enc).keyframe_points.insert(x, 0.123)
    bpy.context.view_layer.update()
    v = key_value(enc, x)
    st.segments[4].amplify = 2.5
    shown = key_value(enc, x)
    assert shown is not None and shown != v  # the edit on top of the user's key
    st.segments[1].amplify = 1.5  # another segment: the key stays as it was shown
    assert key_value(enc, x) == shown
    st.segments[4].amplify = 1.0
    assert key_value(enc, x) == v  # neutral: exactly as the user set it
    st.segments[4].amplify = 2.5
    assert key_value(enc, x) == shown
    assert bpy.ops.anim.splinetween_bake() == {"FINISHED"}
    assert key_value(enc, x) == shown


def test_a_rotation_mode_changed_on_a_range_from_before_the_modes_were_remembered_is_refused(enc):
    """A range saved before Encode remembered the rotation modes: a change of channels (Euler to
    quaternion) is still refused by name, never skipped."""
    from blender_addon.latent import state
    st = enc.splinetween_latent
    del st["rotation_modes"]
    state.forget(st.token)
    enc.pose.bones["UpperLeg_L"].rotation_mode = "QUATERNION"
    before = snapshot(enc)
    st.segments[1].amplify = 2.0
    assert "rotation mode" in st.status and "Set it back" in st.status
    after = snapshot(enc)
    for k in before:
        assert_same_keys(before[k], after[k])


def test_a_deleted_layer_key_stays_deleted_after_save_and_reload(enc, tmp_path):
    st = enc.splinetween_latent
    st.segments[5].amplify = 2.0
    name, f = enc.name, middle(enc, 5)
    fc = curve(enc)
    fc.keyframe_points.remove(next(k for k in fc.keyframe_points if abs(k.co.x - f) < 1e-3))
    bpy.context.view_layer.update()
    st.segments[8].amplify = 1.5  # (the deletion is seen and remembered with the range)
    path = tmp_path / "deleted.blend"
    assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {"FINISHED"}
    assert bpy.ops.wm.open_mainfile(filepath=str(path)) == {"FINISHED"}
    obj = bpy.data.objects[name]
    obj.splinetween_latent.segments[5].amplify = 2.5
    assert key_value(obj, f) is None and key_value(obj, f + 1) is not None
