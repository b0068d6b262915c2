"""Encode refuses what it cannot do, says why, and leaves the scene exactly as it was."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import ROOT, assert_same_keys, bpy, prefs, snapshot
from latent_helpers import (
    encoded_copy,
    fresh_copy,
    info,
    source_fixture,  # noqa: F401  (the module fixture `source`: the example armature)
    temporary,
)

bpy = bpy()
pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_encode


@pytest.fixture
def arm(source):
    with temporary(fresh_copy(source)) as obj:
        yield obj


def refused(obj, match, **kw):
    """The operator fails with ``match`` in its message; keys and custom properties are unchanged."""
    before, props = snapshot(obj), set(obj.keys())
    with pytest.raises(RuntimeError, match=match):
        OP(**kw)
    after = snapshot(obj)
    assert after.keys() == before.keys() and set(obj.keys()) == props
    for k in before:
        for attr, v in before[k].items():
            assert np.array_equal(v, after[k][attr], equal_nan=v.dtype.kind == "f"), (k, attr)
    assert not obj.splinetween_latent.active


def test_a_range_shorter_than_the_model_accepts(arm):
    least = int(info()["config"]["min_window"])
    refused(arm, rf"frames 10-{10 + least - 2} are {least - 1} frames; the model needs at least {least}",
            frame_range="CUSTOM", frame_start=10, frame_end=10 + least - 2)
    refused(arm, "the model needs at least", frame_range="CUSTOM", frame_start=10, frame_end=5)
    assert OP(frame_range="CUSTOM", frame_start=10, frame_end=10 + least - 1) == {"FINISHED"}


def test_an_armature_that_does_not_match_lists_the_missing_bones(arm):
    """Names that say nothing are no reason to refuse (the structure finds the bones, as Inbetween's test
    shows); a body without a left hand is refused, naming what it lacks (the renamed hips among them: the
    structure reads whole bodies only)."""
    arm.data.bones["Hips"].name = "Bone"  # names nothing in the presets or the fallback finds
    bpy.ops.object.mode_set(mode="EDIT")
    arm.data.edit_bones.remove(arm.data.edit_bones["Hand_L"])
    bpy.ops.object.mode_set(mode="OBJECT")
    refused(arm, r"cannot drive the model \(detected as Splinetween data set\): no bone for Hips, Hand_L "
                 r"\(map them in the Bone Map panel")


def test_an_in_betweening_checkpoint_is_not_an_autoencoder(arm):
    prefs().autoencoder = str(ROOT / "backend" / "checkpoints" / "inbetween.json")
    refused(arm, r"inbetween.json is a motion in-betweening checkpoint \(used by Inbetween, Preferences > "
                 r"Checkpoint\); Encode needs a motion autoencoder one: .* > Autoencoder")
    prefs().autoencoder = str(ROOT / "backend" / "checkpoints" / "cloth_inbetween.json")
    refused(arm, r"cloth_inbetween.json is a mesh in-betweening checkpoint \(used by Inbetween Mesh, Preferences > "
                 r"Mesh Inbetween\); Encode needs a motion autoencoder one")
    prefs().autoencoder = str(ROOT / "nothing" / "here.json")
    refused(arm, "cannot read the checkpoint")


def test_no_armature_no_action_already_encoded(source, arm):
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.active_object
    assert not OP.poll()
    with pytest.raises(RuntimeError, match="Make an armature the active object"):
        OP()
    bpy.data.objects.remove(cube)
    enc = encoded_copy(source)
    with pytest.raises(RuntimeError, match="Frames 1-273 already have latent controls from Encode: Bake keeps the "
                                           "motion as keys, Remove puts back the keys from before; then Encode"):
        OP()
    for op in ("bake", "remove", "latent_reset", "resample", "redecode"):
        bpy.context.view_layer.objects.active = arm
        with pytest.raises(RuntimeError, match="no latent controls: Encode a range first"):
            getattr(bpy.ops.anim, f"splinetween_{op}")()
    bpy.data.objects.remove(enc)
    bpy.context.view_layer.objects.active = arm
    arm.animation_data.action = None
    with pytest.raises(RuntimeError, match="has no action"):
        OP()


def test_nan_in_the_keys(arm):
    from addon_helpers import channelbag
    fc = channelbag(arm).fcurves.find('pose.bones["Spine"].rotation_euler', index=1)
    fc.keyframe_points[40].co.y = float("nan")
    refused(arm, r"the curves hold NaN or infinite values at frame\(s\) \[41\]")


def test_a_bone_renamed_after_encoding_turns_the_sliders_off(source):
    obj = encoded_copy(source)
    obj.data.bones["Hand_R"].name = "Wrist_R"
    before = snapshot(obj)
    obj.splinetween_latent.segments[1].amplify = 2.0
    assert "lost bones since encoding (Hand_R)" in obj.splinetween_latent.status
    for k, v in snapshot(obj).items():
        assert_same_keys(before[k], v)
    assert bpy.ops.anim.splinetween_bake() == {"FINISHED"} and not obj.splinetween_latent.active
    bpy.data.objects.remove(obj)
