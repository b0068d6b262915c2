"""Other studios' skeletons (tests/fixtures/skeletons): families made from CMU's capture by
make_families.py, each found (by preset or by structure) and converted to the same poses as CMU's own
file; two published captures of other systems (Arena, Axis Neuron) found and standing upright; all
through backend.humanoid (the code training, the batch and the add-on share)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backend.formats.bvh import read_bvh
from backend.humanoid import bvh_rig
from backend.maths import quat_np

ROOT = Path(__file__).resolve().parent.parent
SKELETONS = ROOT / "tests" / "fixtures" / "skeletons"
MODEL = read_bvh(ROOT / "tests" / "fixtures" / "dataset-2_walk_normal_005.bvh").skeleton

# family -> (how it is found, {model joint: the family's joint}) for the joints names might get wrong
FAMILIES = {
    "cmu_07_01": ("BVH / CMU", {"Hips": "Hips", "Chest": "Spine1", "Neck": "Neck1", "UpperLeg_L": "LeftUpLeg",
                                "Hand_R": "RightHand", "Toes_L": "LeftToeBase"}),
    "asf": ("Structure", {"Hips": "root", "Spine": "upperback", "Chest": "thorax", "Neck": "upperneck",
                          "Head": "head", "UpperArm_L": "lhumerus", "LowerArm_L": "lradius", "Hand_L": "lwrist",
                          "UpperLeg_R": "rfemur", "LowerLeg_R": "rtibia", "Foot_R": "rfoot", "Toes_R": "rtoes"}),
    "reallusion": ("Structure", {"Hips": "CC_Base_Hip", "Chest": "CC_Base_Spine02", "Head": "CC_Base_Head",
                                 "UpperArm_L": "CC_Base_L_Upperarm", "LowerArm_L": "CC_Base_L_Forearm",
                                 "UpperLeg_R": "CC_Base_R_Thigh", "LowerLeg_R": "CC_Base_R_Calf",
                                 "Toes_L": "CC_Base_L_ToeBase"}),
    "daz": (None, {"Hips": "hip", "Chest": "chest", "UpperArm_L": "lShldr", "LowerArm_R": "rForeArm",
                   "UpperLeg_L": "lThigh", "LowerLeg_L": "lShin", "Foot_R": "rFoot"}),
    "mixamo6": ("Mixamo (mixamorig:)", {"Hips": "mixamorig:Hips", "UpperArm_L": "mixamorig:LeftArm",
                                        "UpperLeg_R": "mixamorig:RightUpLeg"}),
    # no side in any name: left and right from geometry (joint02 is CMU's LeftUpLeg, joint18 its LeftArm)
    "vicon_zup_inches": ("Structure", {"Hips": "joint00", "UpperLeg_L": "joint02", "UpperLeg_R": "joint07",
                                       "Chest": "joint13", "Head": "joint16", "UpperArm_L": "joint18",
                                       "Hand_L": "joint20", "UpperArm_R": "joint25"}),
    "lying": ("BVH / CMU", {"Hips": "Hips", "Head": "Head", "Foot_L": "LeftFoot"}),
    "child": ("BVH / CMU", {"Hips": "Hips", "LowerArm_L": "LeftForeArm", "LowerLeg_R": "RightLeg"}),
}


def world(clip):
    _, x = quat_np.fk(clip.rotations, clip.positions, clip.skeleton.parents)
    return x


@pytest.fixture(scope="module")
def cmu():
    return bvh_rig.to_model(read_bvh(SKELETONS / "cmu_07_01.bvh"), MODEL)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_found_and_converted_as_cmus_own_file(family, cmu):
    found_by, joints = FAMILIES[family]
    out = bvh_rig.to_model(read_bvh(SKELETONS / f"{family}.bvh"), MODEL)
    got = out.meta["bone_map"]
    assert {j: got.get(j) for j in joints} == joints
    if found_by:
        assert out.meta["found_by"] == found_by
    # every required joint found, none on two joints
    assert len(set(got.values())) == len(got) and len(got) >= 17
    # the same motion: the body's shape around the hips as CMU's own file gives (the child and the Vicon
    # file in other units: the model's proportions either way), and the hips' path as tall
    x, ref = world(out), world(cmu)
    shape = np.linalg.norm((x - x[:, 1:2]) - (ref - ref[:, 1:2]), axis=-1)
    assert shape.max() < 0.05, family  # centimetres
    height = x[:, 1, 1] - x[:, [16, 20], 1].min(-1)  # hips over the lower foot
    assert np.allclose(height, ref[:, 1, 1] - ref[:, [16, 20], 1].min(-1), rtol=0.02), family


PUBLISHED = {  # wspr/bvh-matlab, Apache-2.0 (LICENSE-bvh-matlab.txt)
    # Arena: "LeftShoulder" is the upper arm and "LeftHip" the thigh; the neck and both collars start at one point
    "arena_louise": ("Structure", {"Hips": "Hips", "Chest": "Chest", "Neck": "Neck", "Head": "Head",
                                   "Shoulder_L": "LeftCollar", "UpperArm_L": "LeftShoulder", "LowerArm_L": "LeftElbow",
                                   "Hand_L": "LeftWrist", "UpperArm_R": "RightShoulder", "UpperLeg_L": "LeftHip",
                                   "LowerLeg_L": "LeftKnee", "Foot_L": "LeftAnkle", "UpperLeg_R": "RightHip"}),
    "neuron_milad": ("BVH / CMU", {"Hips": "Hips", "Spine": "Spine", "Head": "Head", "UpperArm_L": "LeftArm",
                                   "Hand_R": "RightHand", "UpperLeg_R": "RightUpLeg", "Foot_L": "LeftFoot"}),
}


@pytest.mark.parametrize("family", sorted(PUBLISHED))
def test_published_capture_found_and_standing(family):
    found_by, joints = PUBLISHED[family]
    out = bvh_rig.to_model(read_bvh(SKELETONS / f"{family}.bvh"), MODEL)
    got = out.meta["bone_map"]
    assert {j: got.get(j) for j in joints} == joints and out.meta["found_by"] == found_by
    x = world(out)
    head, hips, feet = x[:, 5, 1], x[:, 1, 1], x[:, [16, 20], 1].min(-1)
    assert (head > hips).all() and (hips > feet).all()  # upright on every frame, Y up
    assert 110.0 < np.median(head - feet) < 170.0  # standing: the head joint (the data set's two test clips: 122-128 cm)
