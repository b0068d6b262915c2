"""A range's keyed sliders end with it (issue 45): Bake, Remove and a new Encode delete the F-curves of
the range's properties, in the action and in its NLA strips' copies, and undo brings them back with
the range; an old slider key never drives a range it was not keyed on (real bpy, headless)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from addon_helpers import ROOT, assert_same_keys, bpy, channelbag, select_keys, snapshot, thin_every
from latent_helpers import (
    AUTOENCODER,
    curves,
    encoded_copy,
    fresh_copy,
    source_fixture,  # noqa: F401  (the module fixture `source`: the example armature)
    temporary,
)

bpy = bpy()
from blender_addon import bridge  # noqa: E402

pytestmark = pytest.mark.blender
AMPLIFY = "splinetween_latent.segments[1].amplify"


def range_curves(obj, *more) -> list[str]:
    """Paths of the F-curves on the range's own properties in the object's actions (the active one, its
    NLA strips') and the actions ``more``, every layer and slot."""
    from blender_addon.latent.animation import is_range_path
    ad = obj.animation_data
    acts = {a for a in [ad.action, *(s.action for t in ad.nla_tracks for s in t.strips), *more] if a is not None}
    out = []
    for act in acts:
        for layer in act.layers:
            for strip in layer.strips:
                for bag in strip.channelbags:
                    out += [f"{act.name}: {fc.data_path}" for fc in bag.fcurves if is_range_path(fc.data_path)]
    return sorted(out)


def key_amplify(obj) -> None:
    """Segment 1's Amplify keyed 2.0 at frame 1 and 1.0 at frame 50, as in the user's report."""
    seg = obj.splinetween_latent.segments[1]
    seg.amplify = 2.0
    seg.keyframe_insert("amplify", frame=1)
    seg.amplify = 1.0
    seg.keyframe_insert("amplify", frame=50)


def play(frames=range(1, 60, 7)) -> None:
    for f in frames:
        bpy.context.scene.frame_set(f)


def bone_keys(obj) -> dict:
    return {k: v for k, v in curves(obj).items() if k[0].startswith("pose.bones")}


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), k


@pytest.mark.parametrize("op", ["bake", "remove"])
def test_bake_and_remove_delete_the_slider_keys_and_a_new_encode_is_not_driven(source, op):
    with temporary(encoded_copy(source)) as obj:
        name = obj.name
        key_amplify(obj)
        pushed = obj.animation_data.action.copy()  # the take pushed down to an NLA strip: a copy of its keys
        track = obj.animation_data.nla_tracks.new()
        track.strips.new("pushed", 1, pushed)
        play()
        assert f"{obj.animation_data.action.name}: {AMPLIFY}" in range_curves(obj)
        assert f"{pushed.name}: {AMPLIFY}" in range_curves(obj)
        bpy.ops.ed.undo_push(message="keyed")
        assert getattr(bpy.ops.anim, f"splinetween_{op}")("EXEC_DEFAULT", True) == {"FINISHED"}
        assert range_curves(obj) == []  # the action's slider curve and the strip's copy are gone
        assert any(fc.data_path.startswith("pose.bones") for fc in channelbag(obj).fcurves)  # bones' keys stay
        kept = bone_keys(obj)

        assert bpy.ops.ed.undo() == {"FINISHED"}  # undo: the range and its keyed slider come back together
        obj = bpy.data.objects[name]
        assert obj.splinetween_latent.active and f"{obj.animation_data.action.name}: {AMPLIFY}" in range_curves(obj)
        assert bpy.ops.ed.redo() == {"FINISHED"}
        obj = bpy.data.objects[name]
        assert not obj.splinetween_latent.active and range_curves(obj) == []
        assert_same(bone_keys(obj), kept)

        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.anim.splinetween_encode() == {"FINISHED"}  # Encode again: nothing keyed drives it
        play()
        bpy.context.scene.frame_set(25)
        assert obj.splinetween_latent.segments[1].amplify == 1.0
        assert_same(bone_keys(obj), kept)  # no slider touched: the keys are the baked ones


def test_encode_deletes_slider_keys_left_from_before(source):
    """A file saved before Bake deleted them still holds the old range's slider keys: Encode deletes
    them before the new range exists, so they drive nothing."""
    with temporary(fresh_copy(source)) as obj:
        bag = channelbag(obj)
        fc = bag.fcurves.new(AMPLIFY)
        fc.keyframe_points.insert(1, 2.0)
        fc.keyframe_points.insert(50, 1.0)
        raw = bag.fcurves.new('["splinetween_s01_c1"]', index=0)
        raw.keyframe_points.insert(1, 3.0)
        before = bone_keys(obj)
        assert bpy.ops.anim.splinetween_encode() == {"FINISHED"}
        assert range_curves(obj) == []
        play()
        bpy.context.scene.frame_set(10)
        assert obj.splinetween_latent.segments[1].amplify == 1.0
        assert_same(bone_keys(obj), before)  # Encode writes no key, and nothing drove a slider


def test_a_slider_keyed_on_the_new_range_still_drives_it(source):
    """What Encode deletes is what was there before it: keys set on its own range work as before."""
    with temporary(encoded_copy(source)) as obj:
        key_amplify(obj)
        neutral = bone_keys(obj)
        bpy.context.scene.frame_set(1)
        assert obj.splinetween_latent.segments[1].amplify == pytest.approx(2.0)
        assert any(not np.array_equal(neutral[k], v) for k, v in bone_keys(obj).items())



# -- messages -----------------------------------------------------------------------------------------
def unchanged(obj, before) -> None:
    after = snapshot(obj)
    assert after.keys() == before.keys()
    for k in before:
        assert_same_keys(before[k], after[k])


def test_an_nla_only_armature_is_explained_whole_by_encode_and_inbetween(source):
    from blender_addon.latent.armature import encode
    from blender_addon.latent.common import NLA_ONLY, POLL_MESSAGE_MAX
    with temporary(fresh_copy(source)) as obj:
        ad = obj.animation_data
        track = ad.nla_tracks.new()
        track.name = "Walk track"
        track.strips.new("Walk", 1, ad.action)
        ad.action = None
        assert len(NLA_ONLY) <= POLL_MESSAGE_MAX
        for op in (bpy.ops.anim.splinetween_encode, bpy.ops.anim.splinetween_inbetween):
            assert not op.poll()
            with pytest.raises(RuntimeError) as e:
                op()
            assert str(e.value).endswith(f".poll() {NLA_ONLY}"), str(e.value)  # whole: it ends as written
        with pytest.raises(Exception, match=r"is in NLA strips \(Walk track: Walk\), not in an active action: "
                                            r"enter tweak mode .*; nothing was changed"):
            encode.encode(obj, bridge.BackendSettings(), AUTOENCODER, 1, 100)  # (a script, the batch)
        assert ad.action is None and len(track.strips) == 1 and not obj.splinetween_latent.active


def test_inbetween_over_another_takes_controls_names_that_take(source):
    """Inbetween (Editable) on take A, then Inbetween on take B: the refusal and the confirmation say the
    controls are on A and that Replace bakes them into A; Replace does that, and undo takes it back."""
    with temporary(fresh_copy(source)) as obj:
        name = obj.name
        thin_every(obj)
        take_a = obj.animation_data.action
        take_a.name = "Take A"
        take_b = take_a.copy()
        take_b.name = "Take B"
        assert bpy.ops.anim.splinetween_inbetween() == {"FINISHED"} and obj.splinetween_latent.active
        obj.splinetween_latent.segments[1].amplify = 1.5
        seg = obj.splinetween_latent.segments[1]
        seg.keyframe_insert("amplify", frame=1)
        a_keys = bone_keys(obj)
        st = obj.splinetween_latent
        span = f"{st.frame_start}-{st.frame_end}"
        obj.animation_data.action = take_b
        select_keys(obj)
        before = snapshot(obj)
        with pytest.raises(RuntimeError, match=rf"has latent controls on frames {span} of the action 'Take A' "
                                               r"\(from Inbetween \(Editable\)\), not of 'Take B', which it plays "
                                               r"now; Replace Latent Controls would bake them into 'Take A' \(its "
                                               r"motion stays as keys there, the sliders go\) and then in-between "
                                               r"'Take B'\. Bake or Remove them first \(they act on 'Take A'\), or run "
                                               r"Inbetween with replace_latent=True .*; nothing was changed"):
            bpy.ops.anim.splinetween_inbetween()
        unchanged(obj, before)
        assert obj.splinetween_latent.active and obj.splinetween_latent.action == take_a
        from blender_addon.latent.armature import adapter
        assert adapter.replace_question(obj) == (f"Frames {span} of 'Take A' (another action) have latent controls: "
                                                 "Inbetween bakes them into 'Take A' and removes the sliders")
        bpy.ops.ed.undo_push(message="on take B")
        assert bpy.ops.anim.splinetween_inbetween("EXEC_DEFAULT", True, replace_latent=True, editable=False) == {"FINISHED"}
        assert not obj.splinetween_latent.active and range_curves(obj, take_a) == []
        obj.animation_data.action = take_a
        assert_same(bone_keys(obj), a_keys)  # take A baked: its keys as the sliders left them
        assert bpy.ops.ed.undo() == {"FINISHED"}
        obj = bpy.data.objects[name]
        assert obj.splinetween_latent.active and obj.animation_data.action.name == "Take B"
        unchanged(obj, before)


def test_a_huge_bone_map_preset_set_by_a_script_is_refused_where_it_is_read(source):
    with temporary(fresh_copy(source)) as obj:
        assert bpy.ops.anim.splinetween_bone_map_detect() == {"FINISHED"}
        obj.data.splinetween_bone_map.preset = "x" * 5_000_000
        select_keys(obj)
        before = snapshot(obj)
        for op in (bpy.ops.anim.splinetween_encode, bpy.ops.anim.splinetween_inbetween):
            with pytest.raises(RuntimeError, match=r"the bone map of .* has a preset name of 5,000,000 characters "
                                                   r"\(at most 63 bytes: a script set it\?\); set its preset to a short "
                                                   r"name, or Clear Bone Map \(Bone Map panel\) and detect again; "
                                                   r"nothing was changed"):
                op()
            unchanged(obj, before)
            assert not obj.splinetween_latent.active
        obj.data.splinetween_bone_map.preset = "é" * 32  # 64 bytes: one too many
        with pytest.raises(RuntimeError, match="a preset name of 32 characters"):
            bpy.ops.anim.splinetween_encode()
        obj.data.splinetween_bone_map.preset = "é" * 31
        assert bpy.ops.anim.splinetween_encode() == {"FINISHED"}


# -- the doc's principal names are the shipped checkpoint's ------------------------------------------
DOC = ROOT / "docs" / "latent-controls.md"
BEGIN, END = "<!-- principal names: begin -->\n", "<!-- principal names: end -->"


def principal_table() -> str:
    """The doc's table of the shipped autoencoder's principal sliders, made from its JSON."""
    meta = json.loads((ROOT / "backend" / "checkpoints" / "motion_autoencoder.json").read_text())["info"]
    descriptions = meta.get("principal_descriptions") or [""] * len(meta["principal_names"])
    rows = [f"| {i} | *{n}* | {d} |" for i, (n, d) in enumerate(zip(meta["principal_names"], descriptions, strict=True), 1)]
    return "\n".join(["| # | slider | description (at +1) |", "| --- | --- | --- |", *rows]) + "\n"


def doc_table() -> str:
    text = DOC.read_text()
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)]


def test_the_docs_principal_names_are_the_shipped_checkpoints():
    assert doc_table() == principal_table(), \
        "docs/latent-controls.md lists other principal names than the shipped checkpoint: python tests/test_latent_ends.py"


if __name__ == "__main__":  # write the table from the checkpoint into the doc
    text = DOC.read_text()
    DOC.write_text(text[:text.index(BEGIN) + len(BEGIN)] + principal_table() + text[text.index(END):])
