"""Latent controls on rigs other than the data set's own, in real (headless) Blender (issue 16, item 5):
Encode, the sliders and Resample through the bone map's conversion, as Inbetween.

Each rig is a copy of the test clip's armature (own action, every frame keyed) changed as a user's rig
differs, re-keyed so that its world motion is the original's: Mixamo's names (no bone for joint_Root)
with a twist bone between UpperArm_L and LowerArm_L, and an A-pose rest (arms 45 degrees down).  The
same edit on the original rig is the reference for the world motion."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import (
    TEST_CLIP,
    assert_same_keys,
    bpy,
    copy_armature,
    disable_addon,
    keys_on,
    select_keys,
    snapshot,
    thin_keys,
)
from latent_helpers import setup_scene

bpy = bpy()
import rig_helpers  # noqa: E402
from rig_helpers import MIXAMO, add_twist  # noqa: E402

pytestmark = pytest.mark.blender
F = 121  # frames encoded (the model's 61-frame windows: 2+ segments)
FRAMES = range(1, F + 1)
TWIST = "mixamorig:LeftArm_twist"


def heads(obj, frames, names=None):
    """World bone heads ``[frames, bones, 3]`` of ``names`` (the original rig's bones, by their name on
    this rig; all when None): adding a bone reorders an armature's bones."""
    names = names or [pb.name for pb in obj.pose.bones]
    out = []
    for f in frames:
        bpy.context.scene.frame_set(int(f))
        out.append([tuple(obj.matrix_world @ obj.pose.bones[b].head) for b in names])
    return np.array(out)


def names_on(rig, walk):
    """The original rig's bone names as this rig calls them."""
    return [MIXAMO.get(b, b) if TWIST in rig.pose.bones else b for b in walk["names"]]


def encode():
    return bpy.ops.anim.splinetween_encode(frame_range="CUSTOM", frame_start=1, frame_end=F)


@pytest.fixture(scope="module")
def walk():
    obj = setup_scene(TEST_CLIP)
    ref = copy_armature(obj, "reference")
    bpy.context.view_layer.objects.active = obj
    at_rest = heads(obj, FRAMES)
    assert encode() == {"FINISHED"}
    st = obj.splinetween_latent
    st.segments[1].amplify = 1.5  # the original rig's edit: what the other rigs' edits must show
    edited = heads(obj, FRAMES)
    yield {"name": obj.name, "ref": ref.name, "at_rest": at_rest, "edited": edited, "cm": st.cm_per_unit,
           "names": [pb.name for pb in obj.pose.bones]}
    disable_addon()


def twist_copy(walk):
    """Mixamo's names, a twist bone between the left upper arm and forearm keyed with a 30-degree twist on
    every frame, the forearm re-keyed so that its world pose is the original's."""
    ref = bpy.data.objects[walk["ref"]]
    rig = copy_armature(ref, "mixamo_twist")
    add_twist(rig, ref, FRAMES)
    for joint, bone in MIXAMO.items():
        rig.data.bones[joint].name = bone
    rig.data.bones["UpperArm_twist_L"].name = TWIST
    return rig


def a_pose_copy(walk, degrees=45.0):
    """The rig with its arms turned down in the rest pose, re-keyed to the reference's world poses on
    every frame."""
    return rig_helpers.a_pose_copy(bpy.data.objects[walk["ref"]], FRAMES, degrees)


def same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert_same_keys(a[k], b[k])


@pytest.mark.parametrize("make, tolerance_cm", [(twist_copy, 0.01), (a_pose_copy, 1e-3)], ids=["mixamo_twist", "a_pose"])
def test_sliders_edit_another_rig_as_the_original(walk, make, tolerance_cm, record_property):
    """Neutral: the keys bit for bit.  Amplify 1.5: the motion moves (> 0.5 cm) and its world motion is
    the same edit on the original rig (Mixamo's: within the float noise of the unmapped root, as Inbetween
    on it).  Back to 1: the keys bit for bit.  The twist bone is never written."""
    rig = make(walk)
    bpy.context.view_layer.objects.active = rig
    try:
        names, cm = names_on(rig, walk), walk["cm"]
        before, at_rest = snapshot(rig), heads(rig, FRAMES, names)
        np.testing.assert_allclose(at_rest, walk["at_rest"], atol=1e-3 / cm)  # the original's world motion
        assert encode() == {"FINISHED"}
        st = rig.splinetween_latent
        assert st.active
        same(before, snapshot(rig))
        st.segments[1].amplify = 1.5
        assert st.status == ""
        moved = heads(rig, FRAMES, names)
        assert np.linalg.norm(moved - at_rest, axis=-1).max() * cm > 0.5
        err = np.linalg.norm(moved - walk["edited"], axis=-1) * cm
        record_property("edit_vs_original_cm", f"{err.max():.2e}")
        print(f"{rig.name}: the edit vs the original rig's, world joint positions: mean {err.mean():.2e} cm, "
              f"max {err.max():.2e} cm")
        assert err.max() < tolerance_cm
        after = snapshot(rig)
        for key in after:
            if TWIST in key[0]:
                assert_same_keys(before[key], after[key])
        st.segments[1].amplify = 1.0
        same(before, snapshot(rig))
    finally:
        bpy.data.objects.remove(rig)


def test_resample_and_the_sliders_on_a_twist_rig(walk):
    """Resample 2x on the Mixamo rig with the twist bone: the range doubles, the twist bone's keys are
    re-timed with it (never layered) and the sliders still move the motion."""
    rig = twist_copy(walk)
    bpy.context.view_layer.objects.active = rig
    try:
        assert encode() == {"FINISHED"}
        assert bpy.ops.anim.splinetween_resample(mode="FACTOR", factor=2.0) == {"FINISHED"}
        st = rig.splinetween_latent
        assert st.frames == 2 * F - 1
        frames = range(1, 2 * F)
        twist = {k: v for k, v in snapshot(rig).items() if TWIST in k[0]}
        at_rest = heads(rig, frames)
        st.segments[1].amplify = 1.5
        assert st.status == ""
        assert np.linalg.norm(heads(rig, frames) - at_rest, axis=-1).max() * walk["cm"] > 0.5
        for k, v in snapshot(rig).items():
            if TWIST in k[0]:
                assert_same_keys(twist[k], v)
        st.segments[1].amplify = 1.0
        np.testing.assert_array_equal(heads(rig, frames), at_rest)
    finally:
        bpy.data.objects.remove(rig)


def test_unmapped_toes_are_named_and_never_written(walk, capfd):
    """Toes the bone map leaves out: Encode names them, the model fills them neutrally, the sliders move
    the rest of the body and never write the toes' keys; back to neutral: every key bit for bit."""
    rig = copy_armature(bpy.data.objects[walk["ref"]], "no_toes")
    for side in "LR":
        rig.data.bones[f"Toes_{side}"].name = f"Zeh_{side}x"
    bpy.context.view_layer.objects.active = rig
    try:
        before, at_rest = snapshot(rig), heads(rig, FRAMES)
        capfd.readouterr()
        assert encode() == {"FINISHED"}
        assert "the keys are unchanged; not mapped (filled neutrally, not written): Toes_L, Toes_R" in \
            capfd.readouterr().out  # (the operator's report, as Blender prints it)
        st = rig.splinetween_latent
        st.segments[1].amplify = 1.5
        assert st.status == ""
        assert np.linalg.norm(heads(rig, FRAMES) - at_rest, axis=-1).max() * walk["cm"] > 0.5
        after = snapshot(rig)
        for key in before:
            if "Zeh_" in key[0]:
                assert_same_keys(before[key], after[key])
        st.segments[1].amplify = 1.0
        same(before, snapshot(rig))
    finally:
        bpy.data.objects.remove(rig)


def test_inbetween_editable_on_a_twist_rig(walk):
    """Inbetween (Editable) on the Mixamo rig with the twist bone keeps its control points: a slider moves
    the fill between the keys (never the keys, never the twist bone), back to neutral gives the fill bit for bit."""
    rig = twist_copy(walk)
    bpy.context.view_layer.objects.active = rig
    keys = list(range(1, F + 1, 15))
    thin_keys(rig, keys)
    select_keys(rig, keys)
    try:
        before = snapshot(rig)
        assert bpy.ops.anim.splinetween_inbetween(editable=True) == {"FINISHED"}
        st = rig.splinetween_latent
        assert st.active and st.task == "INBETWEEN"
        fill, at_rest = snapshot(rig), heads(rig, FRAMES)
        for k, v in fill.items():  # the user's keys stay; the twist bone is not in-betweened
            if TWIST in k[0]:
                assert_same_keys(before[k], v)
        st.segments[1].amplify = 2.0
        assert st.status == ""
        moved = np.linalg.norm(heads(rig, FRAMES) - at_rest, axis=-1).max(1) * walk["cm"]
        assert moved.max() > 0.5
        assert moved[np.array(keys) - 1].max() < 1e-4  # the keys themselves are never written
        edited = snapshot(rig)
        for k, v in edited.items():
            kept = keys_on(v, keys)
            assert np.array_equal(v["co"][kept], fill[k]["co"][keys_on(fill[k], keys)]), k
            if TWIST in k[0]:
                assert_same_keys(fill[k], v)
        st.segments[1].amplify = 1.0
        same(fill, snapshot(rig))
    finally:
        bpy.data.objects.remove(rig)


def test_a_root_bone_keyed_after_encode_turns_the_edit_with_it(walk):
    """Bones above the mapped ones keep their own animation: turning the unmapped root bone (Mixamo's
    "Ground") after Encode turns the character, and the next slider change turns the edit's displacement
    of the hips with it (the same curves as with every cache cold)."""
    from blender_addon.latent import state
    from blender_addon.latent.armature import adapter
    rig = twist_copy(walk)
    bpy.context.view_layer.objects.active = rig
    try:
        assert encode() == {"FINISHED"}
        st = rig.splinetween_latent
        st.segments[1].amplify = 1.5
        first = snapshot(rig)
        pb = rig.pose.bones["mixamorig:Ground"]
        pb.rotation_mode = "QUATERNION"
        pb.rotation_quaternion = (np.cos(0.4), 0.0, np.sin(0.4), 0.0)
        for f in FRAMES:
            pb.keyframe_insert("rotation_quaternion", frame=f)
        st.segments[1].amplify = 1.6
        st.segments[1].amplify = 1.5
        warm = snapshot(rig)
        state.forget(st.token)  # the original's view made afresh from the curves
        adapter.sync(rig, force=True)
        cold = snapshot(rig)
        hips = [k for k in warm if k[0] == 'pose.bones["mixamorig:Hips"].location']
        assert len(hips) == 3
        for k in hips:
            np.testing.assert_array_equal(warm[k]["co"], cold[k]["co"])
        turned = max(np.abs(first[k]["co"][:, 1] - warm[k]["co"][:, 1]).max() for k in hips)
        assert turned * walk["cm"] > 0.1, turned  # the root's turn counts
    finally:
        bpy.data.objects.remove(rig)
