"""backend.humanoid: any humanoid BVH -> the model's skeleton, the one conversion training, the batch and
the add-on share (numpy only).  What a user (or a model trained on the result) notices: which joint became
which, and whether the converted motion stands and walks as the data set's performers do."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backend.formats.bvh import read_bvh
from backend.humanoid import bone_map, bvh_rig
from backend.maths import quat_np
from backend.motion.skeleton import Clip, Skeleton

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CMU = FIXTURES / "skeletons" / "cmu_07_01.bvh"
DATASET = [FIXTURES / "dataset-2_walk_normal_005.bvh", FIXTURES / "dataset-1_guide_tired_001.bvh"]


def body_directions(clip: Clip) -> np.ndarray:
    """Every bone's direction (parent joint -> joint, joints 2..) per frame in the body's own frame
    (left = right hip to left hip, up = hips to neck): ``[F, J - 2, 3]``, unit vectors."""
    _, x = quat_np.fk(clip.rotations, clip.positions, clip.skeleton.parents)
    i = {n: k for k, n in enumerate(clip.skeleton.names)}
    up = x[:, i["Neck"]] - x[:, i["Hips"]]
    up /= np.linalg.norm(up, axis=-1, keepdims=True)
    left = x[:, i["UpperLeg_L"]] - x[:, i["UpperLeg_R"]]
    left -= (left * up).sum(-1, keepdims=True) * up
    left /= np.linalg.norm(left, axis=-1, keepdims=True)
    frame = np.stack([left, up, np.cross(left, up)], -1)  # columns: the body's axes in the world
    parents = clip.skeleton.parents
    bone = x[:, 2:] - x[:, parents[2:]]
    d = np.einsum("fij,fki->fkj", frame, bone)
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def mean_direction(d: np.ndarray) -> np.ndarray:
    m = d.mean(0)
    return m / np.linalg.norm(m, axis=-1, keepdims=True)


def degrees(a, b) -> np.ndarray:
    return np.degrees(np.arccos(np.clip((a * b).sum(-1), -1.0, 1.0)))


@pytest.fixture(scope="module")
def dataset():
    return [read_bvh(p) for p in DATASET]


def test_cmu_skeleton_found_through_its_extra_bones(dataset):
    out = bvh_rig.to_model(read_bvh(CMU), dataset[0].skeleton)
    m = out.meta["bone_map"]
    # CMU's zero-length Neck and shoulders (heads on Spine1's) give no direction: the neck is Neck1, the
    # shoulders stay neutral (their motion counts in the upper arm's chain)
    assert m["Neck"] == "Neck1" and "Shoulder_L" not in m and "Shoulder_R" not in m
    assert [m[j] for j in ("UpperLeg_L", "LowerLeg_L", "Foot_L", "Toes_L")] == \
        ["LeftUpLeg", "LeftLeg", "LeftFoot", "LeftToeBase"]
    assert [m[j] for j in ("UpperArm_R", "LowerArm_R", "Hand_R")] == ["RightArm", "RightForeArm", "RightHand"]
    assert (m["Hips"], m["Spine"], m["Chest"], m["Head"]) == ("Hips", "Spine", "Spine1", "Head")


def test_cmu_walk_lands_where_the_data_sets_walks_are(dataset):
    """A converted CMU walk (120 fps, CMU's units, a T-pose rest with other proportions) stands and walks
    as the data set's performers: each bone's mean direction in the body frame near the data set's, the
    body as tall; the file's own rotations put on the model's skeleton unconverted are far off."""
    model = dataset[0].skeleton
    cmu = read_bvh(CMU)
    out = bvh_rig.to_model(cmu, model)
    assert out.skeleton is model and out.frame_time == cmu.frame_time and out.num_frames == cmu.num_frames
    ref = mean_direction(np.concatenate([body_directions(c) for c in dataset]))
    got = mean_direction(body_directions(out))
    err = degrees(got, ref)
    names = model.names[2:]
    assert np.median(err) < 12.0, dict(zip(names, err.round(1), strict=True))
    assert err.max() < 35.0, dict(zip(names, err.round(1), strict=True))
    # standing height (head over the lower foot) as the data set's, in centimetres
    def height(c):
        _, x = quat_np.fk(c.rotations, c.positions, c.skeleton.parents)
        return np.median(x[:, c.skeleton.index("Head"), 1] - x[:, [c.skeleton.index("Foot_L"),
                                                                   c.skeleton.index("Foot_R")], 1].min(-1))
    assert height(out) == pytest.approx(height(dataset[0]), rel=0.15)
    # the control: the same joints' rotations taken as they are (no rest-pose difference) are far off
    m = out.meta["bone_map"]
    raw = np.tile(np.array([1.0, 0, 0, 0]), (cmu.num_frames, model.num_joints, 1))
    for j, n in enumerate(model.names):
        if n in m:
            raw[:, j] = cmu.rotations[:, cmu.skeleton.index(m[n])]
    naive = Clip(model, raw, out.positions, cmu.frame_time)
    assert degrees(mean_direction(body_directions(naive)), ref).max() > 60.0


def test_the_models_own_skeleton_converts_to_itself(dataset):
    clip = dataset[0]
    out = bvh_rig.to_model(clip, clip.skeleton)
    assert out.meta["found_by"] == "Splinetween data set"
    same_sign = out.rotations * np.sign((out.rotations * clip.rotations).sum(-1, keepdims=True))
    np.testing.assert_allclose(same_sign, clip.rotations, atol=1e-9)
    np.testing.assert_allclose(out.positions[:, 1], clip.positions[:, 1], atol=1e-6)


def test_a_body_without_a_leg_is_refused_with_the_joints_named(dataset):
    sk = read_bvh(CMU).skeleton
    cut = sk.index("RHipJoint")  # the right leg's whole chain
    keep = [j for j in range(sk.num_joints) if cut not in _line(sk, j)]
    index = {j: i for i, j in enumerate(keep)}
    one_leg = Skeleton(tuple(sk.names[j] for j in keep),
                       np.array([index.get(int(sk.parents[j]), -1) for j in keep]), sk.offsets[keep],
                       tuple(sk.channels[j] for j in keep), tuple(sk.end_sites[j] for j in keep))
    clip = Clip(one_leg, np.tile([1.0, 0, 0, 0], (2, len(keep), 1)), np.tile(one_leg.offsets, (2, 1, 1)))
    with pytest.raises(bone_map.BoneMapError, match="no bone for UpperLeg_R, LowerLeg_R, Foot_R"):
        bvh_rig.to_model(clip, dataset[0].skeleton)


def _line(sk: Skeleton, j: int) -> list[int]:
    """The joint and its ancestors."""
    out = [j]
    while sk.parents[out[-1]] >= 0:
        out.append(int(sk.parents[out[-1]]))
    return out


def test_names_that_say_nothing_and_a_rest_that_says_nothing(dataset):
    """The data set's own skeleton with every joint renamed ``bone00``...: its rest pose lies along one axis
    (no feet forward, no left), so the sides come from the motion's frames; it converts to itself."""
    clip = dataset[0]
    sk = clip.skeleton
    nameless = Skeleton(tuple(f"bone{j:02d}" for j in range(sk.num_joints)), sk.parents, sk.offsets, sk.channels,
                        sk.end_sites)
    out = bvh_rig.to_model(Clip(nameless, clip.rotations, clip.positions, clip.frame_time), sk)
    assert out.meta["bone_map"] == {n: f"bone{j:02d}" for j, n in enumerate(sk.names) if j > 0}
    assert out.meta["found_by"] == "Structure"
    np.testing.assert_allclose(np.abs((out.rotations * clip.rotations).sum(-1)), 1.0, atol=1e-9)
