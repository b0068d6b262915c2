"""The batch command on rigs and files of other skeletons: ``--bone-map FILE.json`` (else detection) for
.bvh files named as CMU/Mixamo name them, and a bad map file refused before any work."""
from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from addon_helpers import TEST_CLIP
from batch_helpers import run_batch

pytestmark = pytest.mark.blender
RENAME = {"joint_Root": "Root", "Chest": "Spine1", "Shoulder_L": "LeftShoulder", "UpperArm_L": "LeftArm",
          "LowerArm_L": "LeftForeArm", "Hand_L": "LeftHand", "UpperLeg_L": "LeftUpLeg", "LowerLeg_L": "LeftLeg",
          "Foot_L": "LeftFoot", "Toes_L": "LeftToeBase"}
RENAME.update({k.replace("_L", "_R"): v.replace("Left", "Right") for k, v in list(RENAME.items()) if "_L" in k})


def renamed_bvh(path):
    text = TEST_CLIP.read_text()
    for old, new in RENAME.items():
        text = re.sub(rf"\b(ROOT|JOINT) {old}\b", rf"\1 {new}", text)
    path.write_text(text)
    return path


def test_a_bvh_with_cmu_names_in_betweens_as_the_original(tmp_path):
    from backend.formats.bvh import read_bvh
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    shutil.copy2(TEST_CLIP, src / "orig.bvh")
    renamed_bvh(src / "cmu.bvh")
    r = run_batch("inbetween", src / "orig.bvh", src / "cmu.bvh", "--every", 15, "--out-dir", out, "--jobs", 1,
                    "--device", "cpu")
    assert r.returncode == 0, r.stderr
    a, b = read_bvh(out / "orig.bvh"), read_bvh(out / "cmu.bvh")
    names = [RENAME.get(n, n) for n in a.skeleton.names]
    assert list(b.skeleton.names) == names
    np.testing.assert_allclose(np.abs(np.sum(a.rotations * b.rotations, -1)), 1.0, atol=1e-6)
    np.testing.assert_allclose(a.positions, b.positions, atol=1e-4)
    info = run_batch("info", src / "cmu.bvh", "--json")
    rec = json.loads(info.stdout)["files"][0]["objects"][0]
    assert rec["fits_model"] and rec["bone_map"]["UpperLeg_L"] == "LeftUpLeg"


def test_a_bone_map_file_is_used_and_a_bad_one_refused(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    renamed_bvh(src / "cmu.bvh")
    bad = tmp_path / "map.json"
    bad.write_text("{}")
    r = run_batch("inbetween", src / "cmu.bvh", "--every", 15, "--out-dir", out, "--bone-map", bad)
    assert r.returncode == 2 and "--bone-map" in r.stderr and "not a bone map file" in r.stderr
    assert not out.exists()
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"format": "splinetween-bone-map", "version": 1,
                                "bones": {"Hips": "Hips", "UpperArm_L": "LeftForeArm"}}))
    r = run_batch("inbetween", src / "cmu.bvh", "--every", 15, "--out-dir", out, "--bone-map", good, "--jobs", 1,
                    "--device", "cpu")
    assert r.returncode != 0 and "the given bone map" in r.stderr and "UpperArm_L" in r.stderr
