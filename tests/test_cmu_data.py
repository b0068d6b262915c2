"""Another studio's capture in training: the CMU split, its conversion to the model's skeleton and rate,
and proportion augmentation (another performer)."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from backend.maths import quat_np as Q
from backend.motion.skeleton import Skeleton
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
    from tests.conftest import TEST_CLIP
    from training.evaluate import main
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
        assert dict(zip(m.names, m.converted.tolist(), strict=True)) == {"07_01": True, "dataset-2_walk_normal_005": False}
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


def test_the_foot_loss_reads_the_captures_planted_feet_and_costs_only_their_steps():
    """training.losses: where the capture plants a foot the fill's foot must step as the capture's does; a
    foot in the air, and every other joint, cost nothing there."""
    from backend.motion.inbetween.contacts import find_legs, foot_joints
    from training.losses import foot_step_error, planted_mask
    skel = _model_skeleton()
    legs = find_legs(skel.names, skel.parents)
    joints = foot_joints(legs)
    F, J = 20, skel.num_joints
    template = torch.as_tensor(np.asarray(skel.offsets, np.float32))[None]  # [1, J, 3], cm
    true = torch.zeros(1, F, J, 3)
    true[..., 1] = 80.0  # the body well above the feet
    for c, j in enumerate(joints):
        true[0, :, j] = torch.tensor([10.0 * c, 2.0, 0.0])  # every foot joint low and still...
    lifted = joints[0]
    true[0, 10:, lifted, 1] = 2.0 + 3.0 * torch.arange(10)  # ...but one rises from frame 10 (3 cm a frame)
    mask = planted_mask(true, legs, template)
    assert mask.shape == (1, F - 1, len(joints))
    assert mask[0, :9].all() and not mask[0, 10:, 0].any() and mask[0, 10:, 1:].all()
    assert float(foot_step_error(true, true, legs, template)) == 0.0
    slide = true.clone()
    slide[0, :, joints[1], 0] += torch.arange(F, dtype=torch.float32)  # a planted foot sliding 1 cm a frame
    got = foot_step_error(slide, true, legs, template)
    # (1 cm / 10 cm)^2 on each of that joint's planted steps, averaged over every planted step
    np.testing.assert_allclose(float(got), 0.01 * float(mask[..., 1].sum()) / float(mask.sum()), rtol=1e-5)
    arm = true.clone()
    arm[0, :, lifted, 0] += torch.arange(F, dtype=torch.float32)  # the lifted joint moving: planted only before
    arm[0, 10:, lifted, 0] = arm[0, 9, lifted, 0]
    others = [j for j in range(J) if j not in joints]
    arm[0, :, others, 2] += 5.0 * torch.arange(F, dtype=torch.float32)[:, None]  # the rest of the body moving
    assert float(foot_step_error(arm, true, legs, template)) > 0  # the lifted joint moved while it stood
    still_after = arm.clone()
    still_after[0, :10, lifted, 0] = 0.0  # ...and not before it lifted: only the steps in the air differ
    still_after[0, 10:, lifted, 0] = 50.0 * torch.arange(10, dtype=torch.float32)
    assert float(foot_step_error(still_after, true, legs, template)) == 0.0


def test_a_calibration_t_pose_before_the_motion_is_not_read_as_motion(tmp_path):
    """CMU's BVH files begin with a T-pose one frame (1/120 s) before the performer's first pose; the data
    reading drops it (``backend.motion.calibration``) and keeps every frame of a clip that starts moving at once."""
    import shutil

    from backend.formats.bvh import read_bvh
    from backend.motion.calibration import LEAD_S, leading_calibration_frames
    fx = ROOT / "tests/fixtures"
    cmu = read_bvh(fx / "skeletons/cmu_07_01.bvh")
    assert leading_calibration_frames(cmu.rotations, cmu.frame_time) == 1
    for name in ("dataset-2_walk_normal_005.bvh", "dataset-1_guide_tired_001.bvh"):
        clip = read_bvh(fx / name)
        assert leading_calibration_frames(clip.rotations, clip.frame_time) == 0
    walk = read_bvh(fx / "dataset-2_walk_normal_005.bvh")
    r = walk.rotations.copy()
    r[:3] = Q.normalize(np.broadcast_to([1.0, 0.3, 0.0, 0.0], r[:3].shape))  # a held pose, then the motion
    assert leading_calibration_frames(r, walk.frame_time) == 3
    late = int(LEAD_S / walk.frame_time) + 2  # a pop later in the clip is the motion's, not calibration
    r = walk.rotations.copy()
    r[late] = Q.normalize(np.broadcast_to([1.0, 0.3, 0.0, 0.0], r[late].shape))
    assert leading_calibration_frames(r, walk.frame_time) == 0
    shutil.copy(fx / "skeletons/cmu_07_01.bvh", tmp_path / "07_01.bvh")
    ms = load_split(str(tmp_path), Selection(("train",)), None, verbose=False)
    assert ms.lengths.tolist() == [cmu.num_frames - 1]
    np.testing.assert_allclose(ms.rotations[0], cmu.rotations[1], atol=1e-6)


def test_keys_every_k_start_after_a_calibration_pose_and_leave_it_as_it_is(tmp_path):
    """``python -m backend inbetween --every K`` (and the batch's, tests/test_batch_families.py) on a capture that
    begins with a held calibration pose: the first key is the first frame of motion, the calibration frames
    are written as they were, not in-betweened out of; a clip that starts moving at once keys frame 0."""
    import subprocess
    import sys

    from backend.formats.bvh import format_bvh, read_bvh
    from backend.motion.calibration import motion_keys
    from backend.motion.keyframes_np import every_k
    walk = read_bvh(ROOT / "tests/fixtures/dataset-2_walk_normal_005.bvh")
    assert motion_keys(walk.rotations, walk.frame_time, 10) == every_k(walk.num_frames, 10)
    r = walk.rotations.copy()
    r[:3] = Q.normalize(np.broadcast_to([1.0, 0.3, 0.0, 0.0], r[:3].shape))  # a held pose, then the motion
    posed = walk.__class__(walk.skeleton, r, walk.positions, walk.frame_time, "posed")
    assert motion_keys(r, walk.frame_time, 10)[:3] == [3, 13, 23]
    assert motion_keys(r[:4], walk.frame_time, 10) == [0, 3]  # nothing but calibration and one frame: from 0
    (tmp_path / "posed.bvh").write_text(format_bvh(posed))
    src = read_bvh(tmp_path / "posed.bvh")
    out = subprocess.run([sys.executable, "-m", "backend", "inbetween", str(tmp_path / "posed.bvh"), "--every", "10",
                          "--out-dir", str(tmp_path / "o")], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    got = read_bvh(tmp_path / "o" / "posed.bvh")
    np.testing.assert_allclose(got.rotations[[0, 1, 2, 3, 13]], src.rotations[[0, 1, 2, 3, 13]], atol=1e-5)
    assert not np.allclose(got.rotations[4:13], src.rotations[4:13], atol=1e-3)  # the first gap was filled
