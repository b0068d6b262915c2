"""Another studio's capture in training: the CMU split, its conversion to the model's skeleton and rate,
and proportion augmentation (another performer)."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from backend import quat_np as Q
from backend.skeleton import Skeleton
from training.augment import proportion_groups, scale_proportions
from training.data import CMU_DATA, Selection, load_split, split_of

ROOT = Path(__file__).resolve().parents[1]


def _model_skeleton():
    return Skeleton.from_json(json.loads((ROOT / "backend/checkpoints/inbetween.json").read_text())["skeleton"])


def test_cmu_subjects_05_and_09_are_validation_the_rest_train():
    assert [split_of(n) for n in ("05_01.bvh", "09_12", "01_01.bvh", "02_05", "08_08.bvh")] == [
        "val", "val", "train", "train", "train"]
    assert split_of("dataset-2_walk_normal_005.bvh") == "test"  # the archives' own rules are untouched
    assert Selection(("val",)).wants("05_03.bvh") and not Selection(("train",)).wants("09_01.bvh")


@pytest.mark.skipif(not (ROOT / CMU_DATA).exists(), reason="the CMU part of ../shared/data is not here")
def test_cmu_clips_read_on_the_model_skeleton_at_30_fps(tmp_path):
    ref = _model_skeleton()
    ms = load_split(str(ROOT / CMU_DATA), Selection(("val",)), None, verbose=False, skeleton=ref)
    assert ms.skeleton.same_hierarchy(ref) and not ms.skipped
    assert {n[:2] for n in ms.names} == {"05", "09"}
    assert abs(ms.frame_time - 1 / 30) < 1e-12
    g = Q.fk(ms.rotations[::50].astype(np.float64), ms.positions[::50].astype(np.float64), ref.parents)[1]
    head, feet = g[:, ref.index("Head"), 1], g[:, [ref.index("Toes_L"), ref.index("Toes_R")], 1].min(1)
    assert 120 < np.median(head - feet) < 190  # a person, in centimetres, upright (Y up)


def test_another_performer_keeps_the_pose_and_scales_legs_and_hips_together():
    ref = _model_skeleton()
    hips, chain, legs = proportion_groups(ref.parents)
    assert ref.names[hips] == "Hips"
    assert sorted(ref.names[j] for j in np.flatnonzero(legs)) == sorted(
        f"{p}_{s}" for p in ("UpperLeg", "LowerLeg", "Foot", "Toes") for s in "LR")
    rng = np.random.default_rng(0)
    rot = Q.normalize(rng.normal(size=(2, 5, ref.num_joints, 4)))
    pos = np.broadcast_to(ref.offsets, (2, 5, ref.num_joints, 3)).copy()
    pos[:, :, hips] = [10.0, 90.0, 5.0]
    out = scale_proportions(torch.from_numpy(pos), chain, legs, torch.tensor([1.1, 0.9]),
                            torch.tensor([1.05, 1.0])).numpy()
    g, g2 = Q.fk(rot, pos, ref.parents)[1], Q.fk(rot, out, ref.parents)[1]
    foot, knee, hand, chest = (ref.index(n) for n in ("Foot_L", "LowerLeg_L", "Hand_R", "Chest"))
    for b, (body, leg) in enumerate(((1.1, 1.05), (0.9, 1.0))):
        ratio = np.linalg.norm(g2[b, :, foot] - g2[b, :, knee], axis=-1) / np.linalg.norm(
            g[b, :, foot] - g[b, :, knee], axis=-1)
        assert np.allclose(ratio, body * leg)
        arm = np.linalg.norm(g2[b, :, hand] - g2[b, :, chest], axis=-1) / np.linalg.norm(
            g[b, :, hand] - g[b, :, chest], axis=-1)
        assert np.allclose(arm, body)
        assert np.allclose(g2[b, :, hips], g[b, :, hips] * body * leg)  # height and stride follow the legs


@pytest.mark.skipif(not (ROOT / CMU_DATA).exists(), reason="the CMU part of ../shared/data is not here")
def test_evaluation_has_the_other_studio_column_with_foot_sliding(tmp_path):
    from training.evaluate import main
    from tests.conftest import TEST_CLIP
    data = f"{TEST_CLIP},{TEST_CLIP.parent / 'dataset-1_guide_tired_001.bvh'}"
    assert main(["--baselines-only", "--data", data, "--split", "test", "--limit", "3",
                 "--other-data", str(ROOT / CMU_DATA), "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "baselines-test.json").read_text())
    other = report["columns"]["other studio"]
    assert other["windows"] == 3 and "converted to the model's skeleton" in other["what"]
    row = other["inbetween"]["15"]
    assert row["lerp_slerp"]["mpjpe_cm"] > 0
    assert np.isfinite(row["capture_foot_cm_s"]) and np.isfinite(row["lerp_slerp"]["foot_cm_s"])
    assert "other studio feet (cm/s)" in (tmp_path / "baselines-test.md").read_text()


def test_converted_clips_are_flagged_and_drawn_by_their_weight(tmp_path):
    """Another studio's few clips can count for more than their frames (``--converted_weight``): the
    loader flags the clips it converted (kept through the cache) and the sampler draws them that much
    more often."""
    import shutil
    from training.config import ConfigError, TrainConfig
    from training.data import WindowSampler
    fx = ROOT / "tests/fixtures"
    shutil.copy(fx / "skeletons/cmu_07_01.bvh", tmp_path / "07_01.bvh")  # CMU's name: a training subject
    shutil.copy(fx / "dataset-2_walk_normal_005.bvh", tmp_path)
    sel = Selection(("train", "test"))
    ms = load_split(str(tmp_path), sel, tmp_path / "cache", verbose=False, skeleton=_model_skeleton())
    cached = load_split(str(tmp_path), sel, tmp_path / "cache", verbose=False, skeleton=_model_skeleton())
    for m in (ms, cached):
        assert dict(zip(m.names, m.converted.tolist())) == {"07_01": True, "dataset-2_walk_normal_005": False}
    n = 16
    room = (ms.lengths - n + 1).astype(float)
    for weight in (1.0, 4.0):
        s = WindowSampler(ms, n, n, seed=0, weights=ms.clip_weights(weight))
        first = s.sample(20000)[:, 0]
        i = ms.names.index("07_01")
        share = float(np.mean((first >= ms.starts[i]) & (first < ms.starts[i + 1])))
        expect = weight * room[i] / (weight * room[i] + room[1 - i])
        assert abs(share - expect) < 0.015, (weight, share, expect)
    with pytest.raises(ConfigError, match="converted_weight"):
        TrainConfig(converted_weight=0.0).validate()
