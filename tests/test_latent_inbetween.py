"""From in-betweening: Inbetween keeps the model's control points, so the filled range is editable
at once; its keys never change, Remove gives back the keys as they were before Inbetween (or, when the fill
was edited by hand, keeps the fill with the edits and takes only the sliders' offset away)."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import (
    TEST_CLIP,
    assert_same_keys,
    bpy,
    copy_armature,
    disable_addon,
    driven,
    keys_on,
    select_keys,
    snapshot,
    thin_every,
)
from latent_helpers import changed_frames, curves, edit_by_hand, key_value, segment_frames, setup_scene

bpy = bpy()

pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_inbetween


@pytest.fixture(scope="module")
def walk():
    obj = setup_scene(TEST_CLIP)
    n, keys = thin_every(obj)
    yield {"name": obj.name, "n": n, "keys": keys}
    disable_addon()


@pytest.fixture
def thinned(walk):
    arm = copy_armature(bpy.data.objects[walk["name"]])
    name = arm.name
    yield arm
    if name in bpy.data.objects:
        bpy.data.objects.remove(bpy.data.objects[name])


def test_inbetween_leaves_editable_controls(walk, thinned):
    assert OP() == {"FINISHED"}
    st = thinned.splinetween_latent
    assert st.active and st.task == "INBETWEEN" and (st.frame_start, st.frames) == (1, walk["n"])
    assert st.principal_names == "" and all(s.signature for s in st.segments)
    assert st.segments[0].start == 0 and all(walk["keys"][0] - 1 <= s.start for s in st.segments)
    assert bpy.ops.anim.splinetween_redecode() == {"FINISHED"}  # the keys already show the controls


def test_sliders_write_between_the_keys_and_never_the_keys(walk, thinned):
    assert OP() == {"FINISHED"}
    st = thinned.splinetween_latent
    before, full = curves(thinned), snapshot(thinned)
    st.segments[1].amplify = 2.5
    st.segments[1].timing = 0.5
    a, b = segment_frames(thinned, 1)
    frames = changed_frames(before, curves(thinned))
    assert len(frames) and frames.min() > a and frames.max() < b and not set(frames) & set(walk["keys"])
    after = snapshot(thinned)
    for k in full:
        assert_same_keys(full[k], after[k], keys_on(full[k], walk["keys"]), keys_on(after[k], walk["keys"]))
    st.segments[1].amplify, st.segments[1].timing = 1.0, 0.0
    for k, v in snapshot(thinned).items():  # back to the fill Inbetween wrote, every attribute of every key
        assert_same_keys(full[k], v)


def test_remove_gives_back_the_keys_before_inbetween(walk, thinned):
    before = snapshot(thinned)
    assert OP() == {"FINISHED"}
    thinned.splinetween_latent.segments[0].amplify = 0.3
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    after = snapshot(thinned)
    assert after.keys() == before.keys()
    for k in before:
        assert_same_keys(before[k], after[k])


def test_remove_after_hand_edits_of_the_fill_keeps_them_and_takes_the_offset_away(walk, thinned):
    """Remove on an in-betweened range whose fill was edited by hand: nothing the user did is lost (the
    fill with the hand edits, exactly as set); only the sliders' offset goes (every other key is the
    fill as Inbetween wrote it, every attribute)."""
    assert OP() == {"FINISHED"}
    st = thinned.splinetween_latent
    fill = snapshot(thinned)
    st.segments[1].amplify = 2.0
    a, b = segment_frames(thinned, 1)
    f1 = next(f for f in range(a + 2, b) if f not in walk["keys"])  # a layer key (segment 2 is edited)
    f3 = next(f for f in range(segment_frames(thinned, 3)[0] + 2, b + 200) if f not in walk["keys"])  # neutral
    v1 = edit_by_hand(thinned, f1, float(key_value(thinned, f1)) + 0.3)
    v3 = edit_by_hand(thinned, f3, float(key_value(thinned, f3)) - 0.2)
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    assert not thinned.splinetween_latent.active
    assert key_value(thinned, f1) == v1 and key_value(thinned, f3) == v3
    after = snapshot(thinned)
    assert after.keys() == fill.keys()
    edited = 'pose.bones["UpperLeg_L"].rotation_euler', 0
    for k in fill:
        if k == edited:  # (moving a key by hand, Blender recomputes the curve's auto handles: the user's now)
            rows_a = ~np.isin(np.round(fill[k]["co"][:, 0]), [f1, f3])
            rows_b = ~np.isin(np.round(after[k]["co"][:, 0]), [f1, f3])
            assert_same_keys(fill[k], after[k], rows_a, rows_b, skip=("handle_left", "handle_right"))
        else:
            assert_same_keys(fill[k], after[k])


def test_resample_by_whole_factors_moves_the_keys_exactly(walk, thinned):
    assert OP() == {"FINISHED"}
    full = snapshot(thinned)
    with pytest.raises(RuntimeError, match="stretches only by whole factors"):
        bpy.ops.anim.splinetween_resample(mode="LENGTH", frames=300)
    assert bpy.ops.anim.splinetween_resample(mode="FACTOR", factor=2.0) == {"FINISHED"}
    after = snapshot(thinned)
    moved = [2 * (k - 1) + 1 for k in walk["keys"]]
    for k in full:
        old, new = full[k], after[k]
        every = list(range(1, 2 * walk["n"])) if driven(k[0]) else moved
        assert new["co"][:, 0].tolist() == every, k
        o, n = keys_on(old, walk["keys"]), keys_on(new, moved)
        assert np.array_equal(old["co"][o, 1], new["co"][n, 1]) and np.array_equal(old["type"][o], new["type"][n])


def test_partial_fills_are_not_kept_editable(walk, thinned):
    select_keys(thinned, None, {"UpperArm_L", "LowerArm_L", "Hand_L"})
    assert OP() == {"FINISHED"}
    assert not thinned.splinetween_latent.active
    select_keys(thinned, walk["keys"])
    assert OP(blend=0.5, all_bones=True) == {"FINISHED"}
    assert not thinned.splinetween_latent.active
    assert OP(key_mode="EVERY_N", all_bones=True) == {"FINISHED"}
    assert not thinned.splinetween_latent.active
    assert OP(editable=False) == {"FINISHED"} and not thinned.splinetween_latent.active
    assert OP() == {"FINISHED"} and thinned.splinetween_latent.active


def test_inbetween_over_latent_controls_is_refused_in_scripts_unless_asked(walk, thinned):
    assert OP() == {"FINISHED"}
    thinned.splinetween_latent.segments[2].amplify = 2.0
    select_keys(thinned, [k for k in walk["keys"] if k <= 31], {"Hips"})
    edited, full = curves(thinned), snapshot(thinned)
    with pytest.raises(RuntimeError, match=r"has latent controls on frames 1-\d+ \(from Inbetween \(Editable\)\); "
                                           r"Inbetween would bake them .* or run Inbetween with replace_latent=True "
                                           r"\(the batch: --replace-latent\); nothing was changed"):
        OP()
    assert thinned.splinetween_latent.active
    for k, v in snapshot(thinned).items():
        assert_same_keys(full[k], v)
    assert OP(replace_latent=True) == {"FINISHED"}
    assert not thinned.splinetween_latent.active  # baked; only Hips was filled: the new fill is not editable
    later = curves(thinned)
    assert changed_frames({k: v for k, v in edited.items()}, later).max() < 31


def test_inbetween_over_latent_controls_asks_first_in_the_ui(walk, thinned):
    """The button (invoke) asks before it bakes; without latent controls it runs at once.  Headless Blender
    never calls invoke, so the operator's own invoke is called with stand-ins for the dialog."""
    from types import SimpleNamespace

    from blender_addon.inbetween.op_inbetween import ANIM_OT_splinetween_inbetween as Op
    asked, ran = [], []
    wm = SimpleNamespace(invoke_confirm=lambda op, event, **kw: asked.append(kw) or {"RUNNING_MODAL"})
    me = SimpleNamespace(replace_latent=False, execute=lambda context: ran.append(True) or {"FINISHED"})
    me.start_backend_then_execute = lambda context: Op.start_backend_then_execute(me, context)
    context = SimpleNamespace(active_object=thinned, window_manager=wm, window=None)  # (no window: no modal start)
    assert Op.invoke(me, context, None) == {"FINISHED"} and ran and not asked
    assert OP() == {"FINISHED"} and thinned.splinetween_latent.active
    ran.clear()
    assert Op.invoke(me, context, None) == {"RUNNING_MODAL"} and not ran
    assert me.replace_latent and asked[0]["confirm_text"] == "Bake and Inbetween"
    assert f"Frames 1-{walk['n']} have latent controls" in asked[0]["message"]


def test_a_shared_action_is_refused_by_inbetween_editable_as_by_encode(walk, thinned):
    """Issue 32 item 6: two armatures on one action; Inbetween (Editable) refuses with Encode's message
    and changes nothing; untick Editable and it fills (plain keys, no latent controls)."""
    other = bpy.data.objects[walk["name"]].copy()
    bpy.context.collection.objects.link(other)
    other.animation_data.action = thinned.animation_data.action
    bpy.context.view_layer.objects.active = thinned
    try:
        before = snapshot(thinned)
        with pytest.raises(RuntimeError, match=f"shares its action with {other.name}.*Inbetween \\(Editable\\)"):
            OP()
        after = snapshot(thinned)
        assert after.keys() == before.keys() and not thinned.splinetween_latent.active
        for k in before:
            assert_same_keys(before[k], after[k])
        with pytest.raises(RuntimeError, match=f"shares its action with {other.name}.*Encode"):
            bpy.ops.anim.splinetween_encode()
        assert OP(editable=False) == {"FINISHED"} and not thinned.splinetween_latent.active
    finally:
        bpy.data.objects.remove(other)


def test_a_file_saved_before_kind_became_task_keeps_its_in_betweened_range(walk, thinned, tmp_path):
    """Files saved before the range's model task was called ``task`` hold it as the ID property ``kind``
    of the property group (the old EnumProperty's number: INBETWEEN is 1).  Reloaded, the range is still
    an in-betweened one: a slider writes what it writes on a range saved today, between the keys and never
    the keys; Remove then drops the old property with the rest."""
    assert OP() == {"FINISHED"}
    name, st = thinned.name, thinned.splinetween_latent
    full = snapshot(thinned)
    st.segments[1].amplify = 2.5
    want = curves(thinned)
    st.segments[1].amplify = 1.0
    assert st["task"] == 1  # (today's name, the old number)
    del st["task"]
    st["kind"] = 1  # as the code before the rename stored it
    path = tmp_path / "saved-before-the-rename.blend"
    assert bpy.ops.wm.save_as_mainfile(filepath=str(path)) == {"FINISHED"}
    assert bpy.ops.wm.open_mainfile(filepath=str(path)) == {"FINISHED"}
    obj = bpy.data.objects[name]
    st = obj.splinetween_latent
    assert "task" not in st.keys() and st["kind"] == 1 and st.task == "INBETWEEN"
    before = curves(obj)
    st.segments[1].amplify = 2.5
    got = curves(obj)
    a, b = segment_frames(obj, 1)
    frames = changed_frames(before, got)
    assert len(frames) and frames.min() > a and frames.max() < b and not set(frames) & set(walk["keys"])
    for k in want:  # (the same decode: equal to float32 rounding)
        assert np.array_equal(got[k][:, 0], want[k][:, 0])
        assert np.allclose(got[k][:, 1], want[k][:, 1], rtol=0, atol=1e-5)
    after = snapshot(obj)
    for k in full:
        assert_same_keys(full[k], after[k], keys_on(full[k], walk["keys"]), keys_on(after[k], walk["keys"]))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    assert "kind" not in st.keys() and "task" not in st.keys() and st.task == "AUTOENCODER"
