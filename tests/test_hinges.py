"""Knees and elbows on the model's hinge axes (issue 28): another studio's capture bends them about the
axes the data set's do, whatever its skeleton, names, axes or units; the world motion and the exact
round trip are unchanged; the data set's own rig is never turned."""
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from backend.formats.bvh import read_bvh
from backend.humanoid import bvh_rig, hinges
from backend.maths import quat_np as Q
from backend.motion.skeleton import Skeleton

ROOT = Path(__file__).resolve().parents[1]
SKELETONS = ROOT / "tests" / "fixtures" / "skeletons"
CMU_FAMILIES = ["cmu_07_01", "asf", "child", "daz", "lying", "mixamo6", "reallusion", "vicon_zup_inches"]


@pytest.fixture(scope="module")
def model():
    return Skeleton.from_json(json.loads((ROOT / "backend/checkpoints/inbetween.json").read_text())["skeleton"])


def off_axis(clip, model) -> dict:
    """Degrees between each hinge's axis in the clip (on the model's skeleton) and the model's."""
    out = {}
    for name, want in hinges.AXES.items():
        j = model.names.index(name)
        have = hinges.axis(clip.rotations[:, j], model.offsets[j])
        out[name] = None if have is None else abs(hinges.signed_angle(have, want, model.offsets[j]))
    return out


def unturned(clip, model):
    """The clip converted as before issue 28's hinges (the rest-pose differences alone)."""
    found = bvh_rig.conversion(clip, model.names, model.parents, model.offsets)
    rt = found.retarget
    plain = bvh_rig.conversion(clip, model.names, model.parents, model.offsets, known=[0])  # (too few frames)
    assert plain.retarget.hinge_turns == {}
    return rt, plain.retarget


@pytest.mark.parametrize("family", CMU_FAMILIES)
def test_cmu_motion_bends_about_the_models_axes_under_any_skeleton(model, family):
    """The same 72 frames of CMU motion under eight skeletons: the same turns (whole degrees), and after the
    conversion every knee and elbow bends within 1 degree of the model's axis; without the turns CMU's
    elbows are more than 25 degrees off it."""
    clip = read_bvh(SKELETONS / f"{family}.bvh")
    rt, plain = unturned(clip, model)
    assert rt.hinge_turns == {"LowerLeg_L": -9.0, "LowerLeg_R": 13.0, "LowerArm_L": 38.0, "LowerArm_R": -34.0}
    turned = off_axis(bvh_rig.to_model(clip, model), model)
    assert max(turned.values()) < 1.0, turned
    before, pos = plain.to_model(*bvh_rig.file_channels(clip, plain))
    was = off_axis(replace(clip, skeleton=model, rotations=before, positions=pos), model)
    assert was["LowerArm_L"] > 25.0 and was["LowerArm_R"] > 25.0, was


def test_turns_keep_the_world_motion_and_the_exact_round_trip(model):
    """Only how the model reads the motion changes: every joint's world position is the same with and
    without the turns (the turn is about the bone the child lies on), and the rig's channels come back."""
    clip = read_bvh(SKELETONS / "cmu_07_01.bvh")
    rt, plain = unturned(clip, model)
    channels = bvh_rig.file_channels(clip, rt)
    rot, pos = rt.to_model(*channels)
    rot0, pos0 = plain.to_model(*channels)
    assert Q.angle_between(rot, rot0).max() > np.radians(30)  # (the elbows' local rotations differ)
    x = Q.fk(rot, pos, model.parents)[1]
    x0 = Q.fk(rot0, pos0, model.parents)[1]
    np.testing.assert_allclose(x, x0, atol=1e-6)
    back_b, back_l = rt.to_rig(rot, pos, *channels)
    file_b = channels[0][:, [rt.joint_bone[j] for j in rt.mapped]]
    got = back_b[:, rt.mapped] * np.sign((back_b[:, rt.mapped] * file_b).sum(-1, keepdims=True))
    np.testing.assert_allclose(got, file_b, atol=1e-12)


def test_the_data_sets_own_clips_are_never_turned(model):
    """The data set's rig rests as the model does: no turn, whatever its elbows do (they scatter by up to
    24 degrees between clips), so its conversion is the identity as before."""
    for path in sorted((ROOT / "tests" / "fixtures").glob("dataset-*.bvh")):
        clip = read_bvh(path)
        found = bvh_rig.conversion(clip, model.names, model.parents, model.offsets)
        assert found.retarget.rest_diff is None and found.retarget.hinge_turns == {}


def test_a_hinge_its_motion_does_not_show_is_left_alone():
    """Fewer than three frames bent past 20 degrees say nothing of the axis: no turn."""
    u = np.array([1.0, 0.0, 0.0])
    straight = np.tile([1.0, 0.0, 0.0, 0.0], (50, 1))
    bent = hinges.turn([0.0, 0.0, 1.0], 60.0)
    assert hinges.axis(np.concatenate([straight, [bent, bent]]), u) is None
    got = hinges.axis(np.concatenate([straight, [bent] * 3]), u)
    np.testing.assert_allclose(got, [0.0, 0.0, 1.0], atol=1e-12)
    local = np.tile([1.0, 0.0, 0.0, 0.0], (10, 2, 1))
    assert hinges.twists(["UpperArm_L", "LowerArm_L"], [-1, 0], np.array([[0, 0, 0], [24.0, 0, 0]]), local) == {}


def test_pick_reads_every_frame_or_an_even_spread():
    assert hinges.pick(5).tolist() == [0, 1, 2, 3, 4]
    got = hinges.pick(1000)
    assert len(got) == hinges.FRAMES and got[0] == 0 and got[-1] == 999 and (np.diff(got) > 0).all()
