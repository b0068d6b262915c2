"""The shipped in-betweening checkpoint on a test-split clip: better than SLERP, smooth seams."""
import numpy as np
import pytest
import torch

from backend.formats.bvh import read_bvh
from backend.maths import quat_np
from backend.motion.engine import DEFAULT_INBETWEEN, Engine
from tests.conftest import TEST_CLIP
from training.keyframes import every_k, interpolate, key_mask


@pytest.fixture(scope="module")
def result():
    engine = Engine(DEFAULT_INBETWEEN, "cpu")
    clip = read_bvh(TEST_CLIP)
    keys = every_k(clip.num_frames, 15)
    out, controls = engine.inbetween(clip, keys)
    return clip, keys, out, controls


def _global(clip_like, parents):
    return quat_np.fk(clip_like[0], clip_like[1], parents)[1]


def test_beats_slerp_on_a_test_clip(result):
    clip, keys, out, _ = result
    free = ~key_mask(clip.num_frames, keys)
    mask = torch.from_numpy(key_mask(clip.num_frames, keys))[None]
    sr, sp = interpolate(torch.from_numpy(clip.rotations)[None], torch.from_numpy(clip.positions)[None], mask)
    gt = _global((clip.rotations, clip.positions), clip.skeleton.parents)
    model = np.linalg.norm(_global((out.rotations, out.positions), clip.skeleton.parents) - gt, axis=-1)[free].mean()
    slerp = np.linalg.norm(_global((sr[0].numpy(), sp[0].numpy()), clip.skeleton.parents) - gt, axis=-1)[free].mean()
    assert model < 0.6 * slerp, (model, slerp)


def test_seams_do_not_show(result):
    """Segments meet at keys; the joint velocity across a seam stays within what the motion has."""
    clip, keys, out, controls = result
    assert len(controls.segments) >= 4  # 267 frames -> several 61-frame segments
    parents = clip.skeleton.parents
    g, gt = _global((out.rotations, out.positions), parents), _global((clip.rotations, clip.positions), parents)
    speed = np.linalg.norm(np.diff(g, axis=0), axis=-1).max(-1)  # fastest joint per frame step (cm)
    speed_gt = np.linalg.norm(np.diff(gt, axis=0), axis=-1).max(-1)
    spin = np.degrees(quat_np.angle_between(out.rotations[1:], out.rotations[:-1])).max(-1)  # fastest joint turn
    spin_gt = np.degrees(quat_np.angle_between(clip.rotations[1:], clip.rotations[:-1])).max(-1)
    for _a, b in controls.segments[:-1]:
        seam = b  # the shared key frame: no jump into or out of it beyond what the motion has
        assert max(speed[seam - 1], speed[seam]) <= 1.2 * speed_gt.max()
        assert max(spin[seam - 1], spin[seam]) <= 1.2 * spin_gt.max()
    assert np.isclose(np.abs(out.rotations[keys]).sum(), np.abs(clip.rotations[keys]).sum())
