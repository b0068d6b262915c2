"""The generalisation protocol's pieces: both archives' splits and kinds, the leave-out selection,
the augmentations (each checked against what it must preserve) and the in-betweening guard."""
import numpy as np
import pytest
import torch

from backend.formats.bvh import read_bvh
from backend.maths import quat_np
from backend.motion.inbetween.guard import blend, fit_alpha, holdout_passes
from conftest import EXAMPLES, ROOT, TEST_CLIP
from training.augment import Augmenter, fit_mirror, mix_bodies, reverse_time, time_warp, upper_body
from training.data import LEAVE_OUT, Selection, clip_kind, load_split, split_of

DATASET1_VAL = ROOT / "tests" / "fixtures" / "dataset-1_guide_tired_001.bvh"


def test_splits_and_kinds_of_both_archives():
    assert split_of("dataset-2_walk_normal_005.bvh") == "test"
    assert split_of("dataset-2_run_active_018.bvh") == "val"
    assert split_of("dataset-2_run_active_017.bvh") == "train"
    # dataset-1: the style decides (happy, tired: validation), never test, whatever the id
    assert split_of("dataset-1_guide_tired_001.bvh") == "val"
    assert split_of("dataset-1_guide_happy_005.bvh") == "val"
    assert split_of("dataset-1_walk_not-confident_005.bvh") == "train"
    assert clip_kind("dataset-2_wave-both-hands_normal_003.bvh") == "wave-both-hands"
    assert clip_kind("dataset-1_walk-left_not-confident_001.bvh") == "walk-left"
    assert set(LEAVE_OUT) == {"run", "wave-both-hands", "raise-up-left-hand", "guide", "dash"}


@pytest.fixture(scope="module")
def both_archives(tmp_path_factory):
    """A folder per archive, as the archives unpack: dataset-2 clips and a dataset-1 clip."""
    root = tmp_path_factory.mktemp("data")
    d2, d1 = root / "bandai-namco-2" / "bvh", root / "bandai-namco-1-part" / "bvh"
    d2.mkdir(parents=True)
    d1.mkdir(parents=True)
    for p in [*EXAMPLES, TEST_CLIP]:
        (d2 / p.name).symlink_to(p)
    (d1 / DATASET1_VAL.name).symlink_to(DATASET1_VAL)
    return f"{d2},{d1}"


def test_reading_both_archives_with_leave_out(both_archives, tmp_path):
    train = load_split(both_archives, "train", tmp_path, verbose=False)
    assert sorted(train.names) == sorted(p.stem for p in EXAMPLES)  # ids 001-003: train
    left = load_split(both_archives, "train", tmp_path, verbose=False, exclude=LEAVE_OUT)
    assert "dataset-2_run_normal_002" not in left.names and "dataset-2_wave-both-hands_normal_003" not in left.names
    assert len(left.names) == 2
    unfamiliar = load_split(both_archives, Selection(("val", "test"), kinds=LEAVE_OUT), tmp_path, verbose=False)
    assert unfamiliar.names == ["dataset-1_guide_tired_001"]  # the dataset-1 validation clip of a left-out kind
    familiar = load_split(both_archives, Selection(("test",), exclude=LEAVE_OUT), tmp_path, verbose=False)
    assert familiar.names == ["dataset-2_walk_normal_005"]
    # the cache keeps selections apart and gives the same arrays back
    again = load_split(both_archives, Selection(("test",), exclude=LEAVE_OUT), tmp_path, verbose=False)
    assert np.array_equal(again.rotations, familiar.rotations)


@pytest.fixture(scope="module")
def walk():
    return read_bvh(TEST_CLIP)


def _mirror(walk):
    s = walk.skeleton
    return fit_mirror(s.names, s.parents, walk.positions.mean(0), walk.rotations[::4])


def test_mirror_reflects_the_motion_and_twice_is_the_clip(walk):
    mirror = _mirror(walk)
    rot = torch.from_numpy(walk.rotations).float()[None]
    pos = torch.from_numpy(walk.positions).float()[None]
    r1, p1 = mirror(rot, pos)
    g = quat_np.fk(walk.rotations, walk.positions, walk.skeleton.parents)[1]
    g1 = quat_np.fk(r1[0].double().numpy(), p1[0].double().numpy(), walk.skeleton.parents)[1]
    # every joint lands where its left/right partner's reflection is (x negated), to 0.1 mm
    assert np.abs(g1 - g[:, mirror.partner] * np.array([-1.0, 1.0, 1.0])).max() < 0.01
    assert np.abs(g1 - g).max() > 10  # and it did move
    r2, p2 = mirror(r1, p1)
    assert np.degrees(quat_np.angle_between(r2[0].double().numpy(), walk.rotations)).max() < 0.01
    assert torch.allclose(p2, pos, atol=1e-5)


def test_time_reversal_twice_is_the_clip_and_speed_one_changes_nothing(walk):
    rot = torch.from_numpy(walk.rotations[:40]).float()[None]
    pos = torch.from_numpy(walk.positions[:40]).float()[None]
    r, p = reverse_time(rot, pos)
    assert torch.equal(r[0, 0], rot[0, -1])
    r2, p2 = reverse_time(r, p)
    assert torch.equal(r2, rot) and torch.equal(p2, pos)
    same_r, same_p = time_warp(rot, pos, 40)
    assert torch.allclose(same_p, pos, atol=1e-5)
    assert np.degrees(quat_np.angle_between(same_r.double().numpy(), rot.double().numpy())).max() < 0.05
    # twice as fast: 40 source frames -> 20 samples, first and last frames kept
    fast_r, fast_p = time_warp(rot, pos, 20)
    assert fast_r.shape[1] == 20 and torch.allclose(fast_p[:, -1], pos[:, -1], atol=1e-5)
    assert np.degrees(quat_np.angle_between(fast_r[0, 0].double().numpy(), rot[0, 0].double().numpy())).max() < 0.05


def test_body_mix_swaps_only_the_upper_body(walk):
    upper = upper_body(walk.skeleton.parents)
    names = [n for n, u in zip(walk.skeleton.names, upper, strict=True) if u]
    assert "Spine" in names and "Hand_L" in names and "Head" in names
    assert "Hips" not in names and "Foot_R" not in names
    rot = torch.from_numpy(np.stack([walk.rotations[:30], walk.rotations[30:60]])).float()
    mixed = mix_bodies(rot, upper, torch.tensor([1, 0]), torch.tensor([True, False]))
    assert torch.equal(mixed[0][:, upper], rot[1][:, upper])
    assert torch.equal(mixed[0][:, ~upper], rot[0][:, ~upper])
    assert torch.equal(mixed[1], rot[1])


def test_augmenter_refuses_a_skeleton_without_sides(walk):
    from training.data import MotionSet
    skel = walk.skeleton
    renamed = type(skel)(tuple(f"joint{i}" for i in range(skel.num_joints)), skel.parents, skel.offsets,
                         skel.channels, skel.end_sites)
    ms = MotionSet(renamed, walk.rotations.astype(np.float32), walk.positions.astype(np.float32),
                   np.array([0, walk.num_frames]), ["x"], walk.frame_time, [])
    with pytest.raises(ValueError, match="no left/right joint pairs"):
        Augmenter(renamed, ms, mirror=0.5)


def test_holdout_passes_hide_alternate_keys_where_the_doubled_gap_is_short():
    assert holdout_passes([0, 5, 10, 15, 20], 60) == [[0, 10, 20], [0, 5, 15, 20]]
    assert holdout_passes([0, 10, 20, 30], 60) == [[0, 20, 30], [0, 10, 30]]
    assert holdout_passes([0, 15, 30, 45, 60], 60) == []  # a 30-frame doubled gap misjudges it: not hidden
    assert holdout_passes([0, 5, 10, 30, 35], 60) == [[0, 10, 30, 35]]  # only where the doubled gap is short
    assert holdout_passes([0, 30, 60], 60) == []
    assert holdout_passes([0, 5, 10], 8) == []  # nor beyond the model's own longest gap
    assert holdout_passes([0, 60], 60) == []


def test_guard_trusts_a_model_that_predicts_the_hidden_keys_and_drops_one_that_does_not(walk):
    f = np.arange(10, 50, 5)
    truth = (walk.rotations[f], walk.positions[f])
    herm = (quat_np.slerp(walk.rotations[f], walk.rotations[f + 3], 0.5), walk.positions[f + 2])
    joints, pj = list(range(1, walk.skeleton.num_joints)), [1]
    assert fit_alpha(truth, truth, herm, joints, pj) > 0.99
    halfway = blend(truth, herm, 0.5)
    assert abs(fit_alpha(truth, halfway, herm, joints, pj) - 1.0) < 0.05  # the model is on the way: all of it
    noise = quat_np.normalize(walk.rotations[f] + np.random.default_rng(1).normal(0, 0.3, walk.rotations[f].shape))
    assert fit_alpha(truth, (noise, walk.positions[f] + 30), herm, joints, pj) < 0.2
    assert fit_alpha((truth[0][:0], truth[1][:0]), truth, herm, joints, pj) == 1.0  # nothing hidden: trusted
    # the blend at alpha = 0 is the Hermite fill, at alpha = 1 the model
    r, p = blend(truth, herm, 0.0)
    assert np.abs(p - herm[1]).max() == 0
    r, p = blend(truth, herm, 1.0)
    assert np.degrees(quat_np.angle_between(r, truth[0])).max() < 1e-4


def test_guarded_fill_keeps_keys_and_a_fresh_engine_redecodes_it(walk):
    from backend.motion.engine import DEFAULT_INBETWEEN, Engine
    from backend.motion.keyframes_np import every_k
    clip = walk.slice(0, 91)
    keys = every_k(91, 15)
    result, controls = Engine(DEFAULT_INBETWEEN, "cpu").inbetween(clip, keys)
    assert np.array_equal(result.rotations[keys], clip.rotations[keys])
    assert np.array_equal(result.positions[keys], clip.positions[keys])
    fresh = Engine(DEFAULT_INBETWEEN, "cpu")  # has not seen these keys: recomputes the guard's weights
    again = fresh.decode(controls)
    assert np.degrees(quat_np.angle_between(again.rotations, result.rotations)).max() < 1e-3
    assert np.abs(again.positions - result.positions).max() < 1e-3
    unguarded = Engine(DEFAULT_INBETWEEN, "cpu")
    unguarded.guard = False
    raw, _ = unguarded.inbetween(clip, keys)
    alphas = fresh.guard_for(controls, clip.skeleton)  # one per gap
    assert alphas.shape == (len(keys) - 1,) and ((0 <= alphas) & (alphas <= 1)).all()
    if (alphas != 1.0).any():
        assert np.abs(raw.positions - result.positions).max() > 1e-4


def test_the_mirror_pairs_agreement_keeps_the_model_and_its_disagreement_the_curves(walk):
    """Keys too far apart to hide one: each gap is judged by how far the model's two readings (the keys
    as given, and mirrored) differ, against how far their mean departs from the curves."""
    from backend.motion.inbetween.guard import AGREE, agreement_alphas, frame_alphas
    keys = [0, 15, 30, 45]
    first, last = (np.repeat(walk.rotations[f][None], 46, 0) for f in (0, 45))
    curves = (quat_np.slerp(first, last, np.linspace(0, 1, 46)[:, None]), walk.positions[:46] + 5.0)
    model = (walk.rotations[:46], walk.positions[:46])
    joints, pj = list(range(1, walk.skeleton.num_joints)), [1]
    assert np.array_equal(agreement_alphas(model, model, model, curves, keys, joints, pj), np.ones(3))
    noise = quat_np.normalize(model[0] + np.random.default_rng(2).normal(0, 0.5, model[0].shape))
    far = (noise, model[1] - 40.0)  # the two readings differ far more than the model departs from the curves
    assert np.array_equal(agreement_alphas(model, far, model, curves, keys, joints, pj), np.zeros(3))
    # in between: the alpha falls linearly from AGREE[0] to AGREE[1] (positions only: 1 cm of departure)
    lo, hi = AGREE
    for x, want in ((lo, 1.0), (0.5 * (lo + hi), 0.5), (hi, 0.0)):
        own = (model[0], curves[1] + np.array([1.0, 0.0, 0.0]))
        back = (model[0], own[1] + x * np.array([1.0, 0.0, 0.0]))
        mean = (model[0], own[1])
        rot_only = agreement_alphas(own, back, mean, (model[0], curves[1]), keys, [], pj)
        assert np.allclose(rot_only, want, atol=1e-9), (x, rot_only)
    assert np.array_equal(agreement_alphas(model, far, model, model, keys, joints, pj), np.ones(3))  # the curves
    per_frame = frame_alphas(keys, [0.25, 1.0, 0.5], 50)
    assert per_frame[[0, 15, 30, 45, 49]].tolist() == [1.0, 1.0, 1.0, 1.0, 1.0]
    assert per_frame[1:15].tolist() == [0.25] * 14 and per_frame[31:45].tolist() == [0.5] * 14
    r, p = blend(model, curves, per_frame[:46])
    r1, p1 = blend(model, curves, 0.25)
    assert np.allclose(p[1:15], p1[1:15]) and np.allclose(r[1:15], r1[1:15])


def test_evaluation_reports_familiar_and_unfamiliar_columns(both_archives, tmp_path):
    from backend.motion.engine import DEFAULT_INBETWEEN
    from training.evaluate import main
    out = tmp_path / "eval"
    assert main([str(DEFAULT_INBETWEEN), "--data", both_archives, "--split", "test", "--out", str(out),
                 "--device", "cpu", "--other-data", ""]) == 0  # (the other studio: tests/test_cmu_data.py)
    import json
    report = json.loads((out / "eval-test.json").read_text())
    fam, unf = report["columns"]["familiar"], report["columns"]["unfamiliar"]
    assert fam["clips"] == 1 and unf["clips"] == 1 and fam["windows"] >= 2 and unf["windows"] >= 1
    for col in (fam, unf):
        for k in ("5", "15", "30"):
            row = col["inbetween"][k]
            assert {"model", "model_unguarded", "lerp_slerp"} <= set(row)
            assert all(np.isfinite(row[m]["l2q"]) and row[m]["l2q"] > 0 for m in row
                       if m not in ("keys", "capture_foot_cm_s"))
            assert row["capture_foot_cm_s"] >= 0 and row["model"]["foot_cm_s"] >= 0  # foot sliding, cm/s
    md = (out / "eval-test.md").read_text()
    assert "unfamiliar L2Q ÷ SLERP" in md and "Splinetween without the guard" in md and "familiar feet (cm/s)" in md
    assert report["left_out_in_training"] is False  # the shipped model saw every kind


def test_root_translation_moves_into_its_child_with_the_same_global_motion(walk):
    from training.data import fold_root_translation
    rot, pos = walk.rotations.copy(), walk.positions.copy()
    pos[:, 0, 2] = np.linspace(0, 80, len(pos))  # root motion on the root joint, as a few dataset-1 clips have
    before = quat_np.fk(rot, pos, walk.skeleton.parents)[1]
    r2, p2 = fold_root_translation(rot, pos, walk.skeleton.parents)
    assert not np.any(p2[:, 0])
    moved = quat_np.fk(r2, p2, walk.skeleton.parents)[1]
    assert np.abs(moved[:, 1:] - before[:, 1:]).max() < 1e-9  # every joint below it
    same = fold_root_translation(walk.rotations, walk.positions, walk.skeleton.parents)
    assert same[1] is walk.positions  # nothing to fold: the arrays are left alone


def test_compare_motion_reports_both_columns(both_archives, tmp_path):
    from training.compare import run_motion
    doc, md = run_motion(data=both_archives, cache=str(tmp_path / "cache"), steps=2, latents=[4], kinds=["spline"],
                         out_dir=tmp_path / "cmp", overrides=["--width=16", "--heads=2", "--layers=1",
                                                              "--batch_size=4", "--val_windows=4", "--val_every=2",
                                                              "--min_window=8"])
    run = doc["runs"][0]
    assert run["familiar"]["windows"] >= 2 and run["unfamiliar"]["windows"] >= 1
    assert run["unfamiliar"]["mean_angle_deg"] > 0 and "4D unfamiliar" in md
