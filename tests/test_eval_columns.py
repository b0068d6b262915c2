"""training.evaluate's other-studio columns: one per studio's validation set, their mean (each set weighing
the same, not each window) and a left-out studio read whole; the report's summary gives the shipped
model in every column."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from training.data import split_of

FIXTURES = Path(__file__).parent / "fixtures"
WALK = FIXTURES / "dataset-2_walk_normal_005.bvh"
DATA = f"{WALK},{FIXTURES / 'dataset-1_guide_tired_001.bvh'}"  # a familiar clip and one of a left-out kind


def test_the_new_archives_splits():
    """The data README: HDM05 performer tr, ReActIdle 012-015 validation; CMU's DAZ takes train."""
    assert split_of("HDM_tr_kickFrontR_001_120.amc") == "val"
    assert split_of("HDM_bd_kickFrontR_001_120.amc") == "train"
    assert [split_of(f"{n:03d}_acted.bvh") for n in (11, 12, 15, 16)] == ["train", "val", "val", "train"]
    assert split_of("013_genuine.bvh") == "val"
    assert split_of("10_04.bvh") == split_of("16_01.bvh") == "train"


def test_studio_columns_and_their_mean(tmp_path):
    from training.evaluate import main
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    shutil.copy(FIXTURES / "dataset-1_guide_tired_001.bvh", a / "dataset-1_guide_happy_001.bvh")  # validation
    shutil.copy(WALK, b / "dataset-2_walk_normal_008.bvh")  # id % 10 == 8: validation
    out = tmp_path / "eval"
    assert main(["--baselines-only", "--data", DATA, "--split", "test", "--limit", "2",
                 "--other-data", f"One={a},Two={b}", "--left-out", f"Gone={b}", "--out", str(out)]) == 0
    report = json.loads((out / "baselines-test.json").read_text())
    cols = report["columns"]
    assert {"other studio: One", "other studio: Two", "other studio: mean", "left-out studio: Gone"} <= set(cols)
    one, two, mean = (cols[f"other studio: {n}"]["inbetween"] for n in ("One", "Two", "mean"))
    for k in ("5", "15", "30"):
        for key in ("mpjpe_cm", "l2q", "foot_cm_s"):
            want = (one[k]["lerp_slerp"][key] + two[k]["lerp_slerp"][key]) / 2
            assert mean[k]["lerp_slerp"][key] == pytest.approx(want)
    assert one["15"]["lerp_slerp"]["l2q"] != two["15"]["lerp_slerp"]["l2q"]
    # the left-out studio reads every split: the same clip as Two's validation set here
    assert cols["left-out studio: Gone"]["windows"] == cols["other studio: Two"]["windows"]
    md = (out / "baselines-test.md").read_text()
    assert "### other studio: mean" in md and "other studio: One L2Q ÷ SLERP" in md


def test_the_summary_gives_the_shipped_model_per_column(tmp_path):
    from backend.motion.engine import DEFAULT_INBETWEEN
    from training.evaluate import main
    out = tmp_path / "eval"
    assert main([str(DEFAULT_INBETWEEN), "--data", DATA, "--split", "test", "--limit", "1", "--shipped-only",
                 "--other-data", "", "--blender-baseline", "--device", "cpu", "--out", str(out)]) == 0
    md = (out / "eval-test.md").read_text()
    row = next(ln for ln in md.splitlines() if ln.startswith("| familiar |"))
    ratios = [float(c.split("·")[0]) for c in row.split("|")[2:-1]]
    report = json.loads((out / "eval-test.json").read_text())["columns"]["familiar"]["inbetween"]
    want = [report[k]["model"]["l2q"] / report[k]["lerp_slerp"]["l2q"] for k in ("5", "15", "30")]
    assert np.allclose(ratios, want, atol=0.006)
    assert "MPJPE ÷ Bézier" in md


def test_a_long_clip_of_still_joints_is_read_as_still():
    """A 24 fps idle take resampled to 4,242 frames: its leg joints 39 cm from their parents never move,
    though float32's mean of them is off by 1.5e-3 cm; the feature layout must not model them as moving."""
    from backend.motion.skeleton import Skeleton
    from training.data import MotionSet, within_clip_position_std
    frames = 4242
    pos = np.zeros((frames, 3, 3), np.float32)
    pos[:, 1] = [39.0811, 0.0, -1.23785e-05]
    pos[:, 0, 0] = np.linspace(0, 50, frames)
    rot = np.tile(np.array([1, 0, 0, 0], np.float32), (frames, 3, 1))
    skel = Skeleton(("a", "b", "c"), np.array([-1, 0, 1]), np.zeros((3, 3)))
    ms = MotionSet(skel, rot, pos, np.array([0, frames]), ["idle"], 1 / 30, [])
    std = within_clip_position_std(ms)
    assert std[0] > 1 and std[1] < 1e-6 and std[2] == 0
