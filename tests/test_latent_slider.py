"""The slider's re-decode path with its per-range caches warm (issue 19): the keys after undo, after two
segments changed in one re-decode, and after a rotation-mode change are the ones a fresh add-on writes
(real bpy, headless)."""
from __future__ import annotations

import pytest

from addon_helpers import bpy, snapshot
from latent_helpers import (
    changed_frames,
    curves,
    encoded_copy,
    same,
    source_fixture,  # noqa: F401  (the module fixture `source`: the example armature)
    temporary,
)

bpy = bpy()
from blender_addon.core.errors import Refusal  # noqa: E402
from blender_addon.latent import core as latent  # noqa: E402
from blender_addon.latent import slider, state  # noqa: E402
from blender_addon.latent.armature import adapter  # noqa: E402

pytestmark = pytest.mark.blender


def cold(obj) -> None:
    """Forget every cache of the range, as a fresh Blender session would start."""
    state.forget(obj.splinetween_latent.token)


def test_slider_after_undo_writes_what_a_fresh_session_writes(source):
    with temporary(encoded_copy(source)) as obj:
        name, seg = obj.name, obj.splinetween_latent.segments
        original = snapshot(obj)
        seg[1].amplify = 1.5  # caches warm: decodes, joins, rotation maps, channels
        bpy.ops.ed.undo_push(message="amplify 1.5")
        at_15 = snapshot(obj)
        seg[1].amplify = 2.0
        bpy.ops.ed.undo_push(message="amplify 2")
        at_2 = snapshot(obj)
        assert changed_frames(curves(obj), {k: v["co"] for k, v in at_15.items()}).size
        assert bpy.ops.ed.undo() == {"FINISHED"}
        obj = bpy.data.objects[name]  # (undo reloads data: every F-curve and property group is new)
        seg = obj.splinetween_latent.segments
        same(at_15, snapshot(obj))
        seg[1].amplify = 2.0  # the warm caches, on the reloaded curves
        assert obj.splinetween_latent.status == ""
        same(at_2, snapshot(obj))
        seg[1].amplify = 1.5
        cold(obj)
        seg[1].amplify = 2.0  # the same change with every cache cold
        same(at_2, snapshot(obj))
        seg[1].amplify = 1.0
        same(original, snapshot(obj))  # neutral again: the user's keys, bit for bit


def test_two_segments_in_one_redecode_equal_two_slider_changes(source):
    with temporary(encoded_copy(source)) as one_by_one, temporary(encoded_copy(source)) as at_once:
        for obj in (one_by_one, at_once):
            assert len(obj.splinetween_latent.segments) >= 3
        one_by_one.splinetween_latent.segments[0].amplify = 1.6
        one_by_one.splinetween_latent.segments[1].amplify = 0.7
        st = at_once.splinetween_latent
        with latent.suspended():  # both change before one re-decode (keyed sliders at a frame change)
            st.segments[0].amplify, st.segments[1].amplify = 1.6, 0.7
        assert slider.sync(at_once)
        a, b = snapshot(one_by_one), snapshot(at_once)
        same(a, b)
        # and the cached layer path agrees with the maths from scratch
        state.forget(st.token)
        st.segments[1].amplify = 0.75
        st.segments[1].amplify = 0.7
        same(a, snapshot(at_once))


def test_a_rotation_mode_change_is_seen_by_the_next_slider_change(source):
    with temporary(encoded_copy(source)) as obj:
        st = obj.splinetween_latent
        st.segments[1].amplify = 1.4
        bone = next(b for b in st["bones"] if obj.pose.bones[b].rotation_mode != "QUATERNION")
        before = adapter.channels_of(obj, st)
        obj.pose.bones[bone].rotation_mode = "QUATERNION"
        with pytest.raises(Refusal, match=f"rotation mode of {bone} on .* is QUATERNION now"):
            adapter.channels_of(obj, st)  # (the original is in the encoded mode: refused, never mixed)
        obj.pose.bones[bone].rotation_mode = before[[c[0] for c in before].index(bone)][3]
        assert adapter.channels_of(obj, st) == before
        st.segments[1].amplify = 1.5
        assert st.status == ""
