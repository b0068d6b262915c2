"""backend.motion.inbetween.blender_curves: the curves Blender draws through keys (auto-clamped Bezier, continuous acceleration), in
numpy, against real bpy's."""
import numpy as np
import pytest

from backend.formats.bvh import read_bvh
from backend.motion.inbetween import blender_curves as fcurves
from tests.conftest import TEST_CLIP

bpy = pytest.importorskip("bpy")
pytestmark = pytest.mark.blender


@pytest.mark.parametrize("keys", [list(range(0, 130, 15)) + [130], [0, 3, 9, 24, 30, 31, 45, 52, 60, 90, 100, 105, 130]])
def test_a_walk_on_the_same_curves_as_blender(keys):
    from training.blender_baseline import bezier_predictor
    clip = read_bvh(TEST_CLIP)
    rot, pos = clip.rotations[None, :131], clip.positions[None, :131]
    predict = bezier_predictor(clip.skeleton)
    try:
        br, bp = predict(rot, pos, np.array(keys))
    finally:
        predict.cleanup()
    nr, np_ = fcurves.fill(clip.skeleton, rot[0], pos[0], keys)
    assert np.abs(np_ - bp[0]).max() < 1e-3  # cm; Blender keys and evaluates in float32
    dot = np.clip(np.abs((nr * br[0]).sum(-1)), 0, 1)
    assert np.degrees(2 * np.arccos(dot)).max() < 1e-2
    assert np.array_equal(nr[keys], rot[0, keys]) and np.array_equal(np_[keys], pos[0, keys])


def test_jagged_values_hold_their_handles_as_blender_does():
    """Noisy keys make the smoothing overshoot neighbours: the held (clamped) handles must match."""
    rng = np.random.default_rng(1)
    x = np.cumsum(rng.integers(1, 12, size=16)).astype(np.float64)
    ys = rng.normal(size=(24, 16)) * rng.uniform(0.1, 10, size=(24, 1))
    act = bpy.data.actions.new("fcurves_test")
    slot = act.slots.new(id_type="OBJECT", name="t")
    bag = act.layers.new("t").strips.new(type="KEYFRAME").channelbag(slot, ensure=True)
    frames = np.arange(x[0], x[-1] + 1)
    try:
        theirs = []
        for c, y in enumerate(ys):
            fc = bag.fcurves.new("location", index=c % 3, group_name=str(c)) if c < 3 else \
                bag.fcurves.new(f'["p{c}"]')
            fc.keyframe_points.add(len(x))
            fc.keyframe_points.foreach_set("co", np.stack([x, y], -1).astype(np.float32).ravel())
            fc.update()
            theirs.append([fc.evaluate(float(f)) for f in frames])
    finally:
        bpy.data.actions.remove(act)
    ours = fcurves.evaluate(x, ys.astype(np.float32).astype(np.float64).T, frames).T
    assert np.abs(ours - np.array(theirs)).max() < 1e-4 * np.abs(ys).max()


def test_the_curves_at_a_few_frames_are_the_full_fills_there():
    """fcurves.at (the guard's hidden keys) gives what fill gives at those frames; keys read only."""
    clip = read_bvh(TEST_CLIP)
    keys = list(range(0, clip.num_frames, 10))
    frames = [3, 15, 25, keys[-1] - 1]
    full_r, full_p = fcurves.fill(clip.skeleton, clip.rotations, clip.positions, keys)
    got_r, got_p = fcurves.at(clip.skeleton, clip.rotations, clip.positions, keys, frames)
    # the same arithmetic per frame; 1e-12 leaves room for a SIMD path's last bit on shorter arrays
    np.testing.assert_allclose(got_r, full_r[frames], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got_p, full_p[frames], rtol=0, atol=1e-9)
    other = clip.rotations.copy()
    other[[f for f in range(clip.num_frames) if f not in keys]] = [1.0, 0.0, 0.0, 0.0]
    np.testing.assert_array_equal(fcurves.at(clip.skeleton, other, clip.positions, keys, frames)[0], got_r)


def test_the_guards_passes_drawn_together_are_each_drawn_alone():
    """fcurves.at_many (the guard's hidden-key passes in one call) gives each pass what ``at`` gives it."""
    from backend.motion.inbetween.guard import holdout_passes
    clip = read_bvh(TEST_CLIP)
    keys = list(range(0, clip.num_frames, 5))
    jobs = [(p, sorted(set(keys) - set(p))) for p in holdout_passes(keys)]
    assert len(jobs) == 2 and all(len(h) for _, h in jobs)
    for (p, h), (r, q) in zip(jobs, fcurves.at_many(clip.skeleton, clip.rotations, clip.positions, jobs), strict=True):
        alone_r, alone_q = fcurves.at(clip.skeleton, clip.rotations, clip.positions, p, h)
        assert r.shape == (len(h), clip.skeleton.num_joints, 4) and q.shape == (len(h), clip.skeleton.num_joints, 3)
        np.testing.assert_allclose(r, alone_r, rtol=0, atol=1e-12)  # (as above: a SIMD path's last bit)
        np.testing.assert_allclose(q, alone_q, rtol=0, atol=1e-9)


def test_key_sets_solved_together_get_the_handles_each_gets_alone():
    """``right_offsets_many`` (the guard's hidden-key passes in one handle solve): key sets of different key
    counts, spans and overshooting values, stacked and padded, give each set exactly its own solve's handles."""
    rng = np.random.default_rng(7)
    for _ in range(60):
        sets = []
        for _ in range(int(rng.integers(2, 5))):
            k = int(rng.integers(1, 14))
            x = np.sort(rng.choice(np.arange(120), k, replace=False)).astype(float)
            y = rng.normal(size=(int(rng.integers(1, 12)), k)) * 10.0
            y[:, ::3] = np.round(y[:, ::3])  # plateaus and extremes: locked handles, clamped solves
            sets.append((x, y))
        together = fcurves.right_offsets_many(sets)
        for (x, y), got in zip(sets, together, strict=True):
            np.testing.assert_array_equal(got, fcurves.right_offsets_many([(x, y)])[0])
        frames = [rng.uniform(x[0], x[-1], 9) for x, _ in sets]
        drawn = fcurves.evaluate_many([(x, y.T, f) for (x, y), f in zip(sets, frames, strict=True)])
        for (x, y), f, got in zip(sets, frames, drawn, strict=True):
            np.testing.assert_array_equal(got, fcurves.evaluate(x, y.T, f))
