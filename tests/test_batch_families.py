"""The batch's .bvh commands on other studios' skeletons (tests/fixtures/skeletons): ``inbetween``,
``encode`` and ``edit`` all go through the bone map (detected by preset or structure), the report says
which joint became which and why, and the same capture under two skeletons gets one answer."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from backend.formats.bvh import read_bvh
from backend.maths import quat_np
from batch_helpers import load_report, run_batch

pytestmark = pytest.mark.blender
SKELETONS = Path(__file__).resolve().parent / "fixtures" / "skeletons"
FILES = ("cmu_07_01", "reallusion", "vicon_zup_inches")
SAME = {"cmu_07_01": "LeftFoot", "reallusion": "CC_Base_L_Foot", "vicon_zup_inches": "joint04"}  # one joint, three names


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    src = tmp_path_factory.mktemp("families")
    for f in FILES:
        shutil.copy2(SKELETONS / f"{f}.bvh", src / f"{f}.bvh")
    return src


def world(clip, joint):
    _, x = quat_np.fk(clip.rotations, clip.positions, clip.skeleton.parents)
    root = int(np.flatnonzero(clip.skeleton.parents < 0)[0])
    return x[:, clip.skeleton.index(joint)] - x[:, root]


def objects(out, command):
    return {Path(f["input"]).stem: f["objects"][0] for f in load_report(out, command)["files"]}


@pytest.mark.torch  # (encode and edit of a .bvh run the model in the worker's Python)
def test_encode_and_edit_of_other_skeletons(inputs, tmp_path):
    paths = [inputs / f"{f}.bvh" for f in FILES]
    r = run_batch("encode", *paths, "--out-dir", tmp_path / "enc", "--jobs", 1, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    rec = objects(tmp_path / "enc", "encode")
    assert rec["reallusion"]["bone_map"]["UpperLeg_L"] == "CC_Base_L_Thigh"
    assert rec["reallusion"]["found_by"]["UpperLeg_L"] == "structure"
    assert rec["vicon_zup_inches"]["found_by"]["Hand_R"] == "structure, side by geometry"
    assert rec["cmu_07_01"]["found_by"]["Hips"] == "preset"
    docs = {f: json.loads((tmp_path / "enc" / f"{f}.bvh.controls.json").read_text())["clips"] for f in FILES}
    points = {f: np.array(next(iter(d.values()))["points"]) for f, d in docs.items()}
    for f in FILES[1:]:  # the same capture under another skeleton: the same control points
        np.testing.assert_allclose(points[f], points["cmu_07_01"], atol=1e-3)

    r = run_batch("edit", *paths, "--amplify", 1.5, "--out-dir", tmp_path / "edit", "--jobs", 1,
                    "--device", "cpu")
    assert r.returncode == 0, r.stderr
    outs = {f: read_bvh(tmp_path / "edit" / f"{f}.bvh") for f in FILES}
    for f in FILES:
        src = read_bvh(inputs / f"{f}.bvh")
        assert outs[f].skeleton.names == src.skeleton.names and outs[f].num_frames == src.num_frames
        hand = [n for n in src.skeleton.names if "Thumb" in n or n == "joint23"][0]
        np.testing.assert_allclose(outs[f].rotations[:, src.skeleton.index(hand)],
                                   src.rotations[:, src.skeleton.index(hand)], atol=1e-6)  # not the model's: kept
    foot = {f: world(outs[f], SAME[f]) for f in FILES}
    size = {f: np.ptp(world(read_bvh(inputs / f"{f}.bvh"), SAME[f]), 0).max() for f in FILES}
    for f in FILES[1:]:  # one answer: the edited foot moves alike, in each file's own units and axes
        a = foot[f] / size[f]
        b = foot["cmu_07_01"] / size["cmu_07_01"]
        assert np.abs(np.linalg.norm(a - a[:1], axis=-1) - np.linalg.norm(b - b[:1], axis=-1)).max() < 1e-3, f


def test_inbetween_of_other_skeletons_reports_the_map(inputs, tmp_path):
    text = (inputs / "cmu_07_01.bvh").read_text()  # the same capture at NTSC's 119.88 fps
    (inputs / "ntsc.bvh").write_text(text.replace("Frame Time: .0083333", f"Frame Time: {1001 / 120000:.9f}"))
    r = run_batch("inbetween", *[inputs / f"{f}.bvh" for f in FILES + ("ntsc",)], "--every", 15, "--out-dir",
                    tmp_path, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    rec = objects(tmp_path, "inbetween")
    # keys from the first frame of motion: these captures (one CMU take under several skeletons) begin with
    # CMU's calibration T-pose, which is copied as it is, not in-betweened out of
    assert rec["reallusion"]["bone_map"]["Hips"] == "CC_Base_Hip" and rec["reallusion"]["keys"] == [1, 16, 31, 46, 61, 71]
    assert read_bvh(tmp_path / "ntsc.bvh").frame_time == pytest.approx(1001 / 120000)
    for f in FILES + ("ntsc",):
        src, out = read_bvh(inputs / f"{f}.bvh"), read_bvh(tmp_path / f"{f}.bvh")
        assert rec[f]["keys"][:4] == [1, 16, 31, 46]
        np.testing.assert_allclose(out.rotations[[0, 1, 16, 31, 46]], src.rotations[[0, 1, 16, 31, 46]], atol=1e-5)
        assert not np.allclose(out.rotations[2:16], src.rotations[2:16], atol=1e-3)  # the gaps were filled
