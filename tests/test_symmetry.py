"""The in-betweener's mirror average (backend.motion.mirror, backend.motion.inbetween.fill.fill_pairs, mirror_mean): the numpy map
is the training augmentation's, it is stored in and checked from the checkpoint, and a symmetric fill
of mirrored keys is the mirror of the fill (left and right are treated alike), keys kept exactly."""
import json
import shutil

import numpy as np
import pytest
import torch

from backend.formats.bvh import read_bvh
from backend.maths import quat_np
from backend.motion.engine import DEFAULT_INBETWEEN, Engine
from backend.motion.keyframes_np import every_k
from backend.motion.mirror import Mirror
from backend.motion.skeleton import Clip
from backend.runtime.checkpoint import CheckpointError
from conftest import TEST_CLIP
from training.augment import fit_mirror


@pytest.fixture(scope="module")
def walk():
    return read_bvh(TEST_CLIP)


@pytest.fixture(scope="module")
def mirror(walk):
    s = walk.skeleton
    return fit_mirror(s.names, s.parents, walk.positions.mean(0), walk.rotations[::4])


def test_the_numpy_map_is_the_augmentations_and_twice_is_the_identity(walk, mirror):
    r_t, p_t = mirror(torch.from_numpy(walk.rotations), torch.from_numpy(walk.positions))
    r_n, p_n = Mirror.apply(mirror, walk.rotations, walk.positions)
    assert np.abs(r_n - r_t.numpy()).max() < 1e-12 and np.abs(p_n - p_t.numpy()).max() < 1e-9
    r2, p2 = Mirror.apply(mirror, r_n, p_n)
    assert np.degrees(quat_np.angle_between(r2, walk.rotations)).max() < 1e-4
    assert np.abs(p2 - walk.positions).max() < 1e-9
    back = Mirror.from_info(json.loads(json.dumps(mirror.to_info())), walk.skeleton.parents)
    assert np.array_equal(back.partner, mirror.partner) and np.allclose(back.frames, mirror.frames)


@pytest.fixture(scope="module")
def symmetric_checkpoint(tmp_path_factory, mirror):
    """The shipped in-betweener with a mirror map in its info (as a run trained with mirroring stores it)."""
    d = tmp_path_factory.mktemp("sym")
    doc = json.loads(DEFAULT_INBETWEEN.read_text())
    doc["info"]["mirror"] = mirror.to_info()
    shutil.copy(DEFAULT_INBETWEEN.with_suffix(".safetensors"), d / DEFAULT_INBETWEEN.with_suffix(".safetensors").name)
    (d / DEFAULT_INBETWEEN.name).write_text(json.dumps(doc))
    return d / DEFAULT_INBETWEEN.name


def test_a_mirrored_shot_is_filled_as_the_mirror_of_the_shot(walk, symmetric_checkpoint, mirror):
    torch.set_num_threads(1)
    engine = Engine(symmetric_checkpoint, "cpu")
    assert engine.symmetric
    clip = Clip(walk.skeleton, walk.rotations[:61], walk.positions[:61], walk.frame_time, "walk")
    m_rot, m_pos = engine.mirror.apply(clip.rotations, clip.positions)
    mirrored = Clip(walk.skeleton, m_rot, m_pos, walk.frame_time, "mirrored")
    keys = every_k(61, 15)  # keys 15 apart: the guard hides none, the mirror average runs
    out, _ = engine.inbetween(clip, keys)
    out_m, _ = engine.inbetween(mirrored, keys)
    back_r, back_p = engine.mirror.apply(out_m.rotations, out_m.positions)
    assert np.degrees(quat_np.angle_between(back_r, out.rotations)).max() < 0.05  # float32 model, both halves swapped
    assert np.abs(back_p - out.positions).max() < 0.01
    assert np.array_equal(out.rotations[keys], clip.rotations[keys])  # the keys bit for bit
    # without the average the model alone is not left/right consistent: the average did something
    engine.symmetric = False
    alone, _ = engine.inbetween(clip, keys)
    alone_m, _ = engine.inbetween(mirrored, keys)
    ar, _ = engine.mirror.apply(alone_m.rotations, alone_m.positions)
    assert np.degrees(quat_np.angle_between(ar, alone.rotations)).max() > 0.1
    assert np.degrees(quat_np.angle_between(alone.rotations, out.rotations)).max() > 0.1


def test_a_bad_mirror_map_is_refused_naming_the_field(tmp_path, mirror):
    doc = json.loads(DEFAULT_INBETWEEN.read_text())
    info = mirror.to_info()
    info["partner"][6] = 7  # not a swap of pairs
    doc["info"]["mirror"] = info
    shutil.copy(DEFAULT_INBETWEEN.with_suffix(".safetensors"), tmp_path / DEFAULT_INBETWEEN.with_suffix(".safetensors").name)
    (tmp_path / DEFAULT_INBETWEEN.name).write_text(json.dumps(doc))
    with pytest.raises(CheckpointError, match=r'"info.mirror" must hold "partner"'):
        Engine(tmp_path / DEFAULT_INBETWEEN.name, "cpu")
