"""Latent edits: neutral values change nothing, edits change the motion where they should."""
import subprocess
import sys

import numpy as np
import pytest

from backend.formats.bvh import read_bvh
from backend.motion.edits import amplify, chord_points, edit_points, principal_offset, warp_times
from backend.motion.engine import Engine
from backend.motion.keyframes_np import every_k
from tests.conftest import EXAMPLES, ROOT, TEST_CLIP

rng = np.random.default_rng(0)


def test_amplify_moves_inner_points_along_the_chord():
    p = rng.normal(size=(3, 4, 8))
    assert np.array_equal(amplify(p, 1.0), p)
    flat = amplify(p, 0.0)
    assert np.allclose(flat, chord_points(p))
    big = amplify(p, 2.0)
    assert np.array_equal(big[:, [0, 3]], p[:, [0, 3]])
    assert np.allclose(big[:, 1:3] - flat[:, 1:3], 2 * (p[:, 1:3] - flat[:, 1:3]))


def test_warp_times_is_monotone_and_keeps_ends():
    t = np.linspace(0, 1, 101)
    assert np.array_equal(warp_times(t, 0.0), t)
    for s in (-1.0, -0.3, 0.5, 1.0):
        w = warp_times(t, s)
        assert w[0] == 0 and w[-1] == 1 and np.all(np.diff(w) >= 0)
    assert warp_times(np.array([0.5]), 0.5)[0] > 0.5
    with pytest.raises(ValueError, match="outside"):
        warp_times(t, 1.5)


def test_principal_offsets_in_standard_deviations():
    comps = np.linalg.qr(rng.normal(size=(32, 3)))[0].T  # 3 orthonormal rows of length K*d = 32
    std = np.array([2.0, 1.0, 0.5])
    p = rng.normal(size=(4, 8))
    assert np.array_equal(principal_offset(p, comps, std, [0, 0, 0]), p)
    moved = principal_offset(p, comps, std, [1.5, 0, 0])
    assert np.isclose(((moved - p).ravel() @ comps[0]), 3.0)
    assert np.allclose(edit_points(p, amplify_by=1.0, principal=(comps, std), amounts=[0, 0, 0]), p)


def test_inbetween_redecode_matches_and_edits_keep_keys():
    # The shipped model: an untrained one returns its interpolation base whatever the control points.
    from backend.motion.engine import DEFAULT_INBETWEEN
    eng = Engine(DEFAULT_INBETWEEN, "cpu")
    clip = read_bvh(TEST_CLIP)
    keys = every_k(clip.num_frames, 15)
    out, controls = eng.inbetween(clip, keys)
    again = eng.decode(controls)
    assert np.allclose(again.rotations, out.rotations, atol=1e-5)
    assert np.allclose(again.positions, out.positions, atol=1e-3)
    edited = eng.decode(controls, points=amplify(controls.points, 2.0))
    assert np.array_equal(edited.rotations[keys], clip.rotations[keys])
    assert np.abs(edited.rotations - out.rotations).max() > 1e-4
    dense = eng.decode(controls, scale=2)
    assert dense.num_frames == 2 * clip.num_frames - 1
    assert np.array_equal(dense.rotations[[2 * k for k in keys]], clip.rotations[keys])


def test_edit_cli(tiny_checkpoint, tmp_path):
    r = subprocess.run([sys.executable, "-m", "backend", "edit", str(EXAMPLES[1]), "--amplify", "1.5",
                        "--supersample", "2", "--out-dir", str(tmp_path), "--checkpoint", str(tiny_checkpoint)],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    src = read_bvh(EXAMPLES[1])
    out = read_bvh(tmp_path / EXAMPLES[1].name)
    assert out.num_frames == 2 * src.num_frames - 1 and out.frame_time == pytest.approx(src.frame_time, rel=1e-6)
    r = subprocess.run([sys.executable, "-m", "backend", "edit", str(EXAMPLES[1]), "--pc", "1=2",
                        "--out-dir", str(tmp_path), "--checkpoint", str(tiny_checkpoint)],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "no principal directions" in r.stderr


def test_edited_seams_do_not_step_further_than_the_motion():
    """Segments ease into their shared frame: an amplified decode has no seam jump of its own."""
    from backend.maths import quat_np
    eng = Engine(None, "cpu")  # the shipped autoencoder
    clip = read_bvh(EXAMPLES[-1] if "walk_normal_001" in EXAMPLES[-1].name else
                    next(p for p in EXAMPLES if "walk_normal_001" in p.name))
    controls = eng.encode(clip)
    out = eng.decode(controls, points=amplify(controls.points, 2.0))
    step = np.degrees(quat_np.angle_between(out.rotations[1:], out.rotations[:-1]))[:, 1:].max(1)
    seams = [a for a, _ in controls.segments[1:]]
    assert len(seams) >= 3
    at_seams = np.array([max(step[s - 1], step[s]) for s in seams])
    elsewhere = np.delete(step, [f for s in seams for f in (s - 1, s)])
    assert at_seams.max() < elsewhere.max()
