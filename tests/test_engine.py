"""Engine: keys kept exactly, non-keys never read, segments, batching, refusals."""
import numpy as np
import pytest

from backend.formats.bvh import format_bvh, parse_bvh, read_bvh
from backend.maths import quat_np
from backend.motion.engine import Engine, EngineError, segment_bounds
from backend.motion.keyframes_np import every_k, segments_on_keys
from tests.conftest import EXAMPLES, ROOT, TEST_CLIP


@pytest.fixture(scope="module")
def ib(tiny_inbetween):
    return Engine(tiny_inbetween, "cpu")


@pytest.fixture(scope="module")
def ae(tiny_checkpoint):
    return Engine(tiny_checkpoint, "cpu")


def test_keys_come_out_exactly_and_nonkeys_are_filled(ib):
    clip = read_bvh(TEST_CLIP)
    keys = every_k(clip.num_frames, 5)
    out, controls = ib.inbetween(clip, keys)
    assert out.num_frames == clip.num_frames
    written = parse_bvh(format_bvh(out)).meta["source_channels"]
    assert np.abs(written[keys] - clip.meta["source_channels"][keys]).max() <= 1e-4
    free = np.setdiff1d(np.arange(clip.num_frames), keys)
    assert np.isfinite(out.rotations).all() and np.isfinite(out.positions).all()
    assert np.allclose(np.linalg.norm(out.rotations, axis=-1), 1, atol=1e-5)
    # the filled frames are new poses, not copies of the blocking
    assert np.degrees(quat_np.angle_between(out.rotations[free], clip.rotations[free])).max() > 0.01
    assert controls.points.shape[1:] == (4, 8)
    assert [s[0] for s in controls.segments][0] == 0 and controls.segments[-1][1] == clip.num_frames - 1


def test_nonkey_frames_are_never_read(ib):
    clip = read_bvh(TEST_CLIP)
    keys = [0, 7, 15, 22, 30, 37, 38, 52, 55]  # the tiny model fills gaps up to 15
    garbage = read_bvh(TEST_CLIP)
    free = np.setdiff1d(np.arange(clip.num_frames), keys)
    garbage.rotations[free] = np.nan
    garbage.positions[free] = 1e9
    a, _ = ib.inbetween(clip.slice(0, 56), keys)
    b, _ = ib.inbetween(garbage.slice(0, 56), keys)
    # (garbage read anywhere would show as NaN or 1e9)
    assert np.array_equal(a.rotations, b.rotations) and np.array_equal(a.positions, b.positions)


def test_the_same_keys_fill_the_same_frames_bit_for_bit(ib):
    """Repeatable: the latent layer and the redo panel rely on one fill of the same keys giving the same
    floats (the guard's Blender curves once differed in the last bit about one call in ten: numpy's
    vectorised atan2 rounds by where the arrays fall in memory; the curves now hold float32 keys, as
    Blender does)."""
    clip = read_bvh(TEST_CLIP).slice(0, 61)
    keys = [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60]
    first, _ = ib.inbetween(clip, keys)
    for _ in range(20):
        again, _ = ib.inbetween(clip, keys)
        assert np.array_equal(again.rotations, first.rotations) and np.array_equal(again.positions, first.positions)


@pytest.mark.parametrize("frame_time", [None, 1 / 60])
def test_frames_outside_the_keys_come_out_as_they_went_in(ib, frame_time):
    # before the first key and after the last there is nothing to fill: those frames are the clip's own
    # (they used to be uninitialised memory: a CLI run failed on NaN there one time in three)
    clip = read_bvh(TEST_CLIP).slice(0, 70)
    if frame_time is not None:
        clip.frame_time = frame_time
    keys = [6, 14, 21, 30, 44, 51]
    out, _ = ib.inbetween(clip, keys)
    kept = np.r_[0:6, keys, 52:70]
    assert np.array_equal(out.rotations[kept], clip.rotations[kept])
    assert np.array_equal(out.positions[kept], clip.positions[kept])
    written = parse_bvh(format_bvh(out)).meta["source_channels"]
    assert np.abs(written[kept] - clip.meta["source_channels"][kept]).max() <= 1e-4
    assert np.isfinite(out.rotations).all() and np.isfinite(out.positions).all()


def test_batched_equals_one_by_one(ib):
    clips = [read_bvh(p) for p in EXAMPLES[:3]]
    keys = [every_k(c.num_frames, k) for c, k in zip(clips, (4, 9, 15), strict=True)]
    batch = ib.inbetween(clips, keys)
    for c, k, (out, _) in zip(clips, keys, batch, strict=True):
        single, _ = ib.inbetween(c, k)
        assert np.allclose(single.rotations, out.rotations, atol=1e-5)


@pytest.mark.parametrize("keys, words", [
    ([0], "at least two keys"), ([0, 5, 5, 9], "repeated"), ([0, 9, 5], "increasing order"),
    ([0, 500], "out of range"), ([-1, 5], "out of range"), ([0, 40], "gap between keys 0 and 40"),
])
def test_bad_keys_name_the_problem(ib, keys, words):
    clip = read_bvh(TEST_CLIP)
    with pytest.raises(ValueError, match=words) as e:
        ib.inbetween(clip, keys)
    assert clip.name in str(e.value)


def test_nan_in_a_key_pose_and_one_frame_clips(ib):
    clip = read_bvh(TEST_CLIP)
    clip.rotations[10, 3] = np.nan
    with pytest.raises(EngineError, match=r"NaN .*\[10\]"):
        ib.inbetween(clip, [0, 10, 20])
    ib.inbetween(clip, [0, 9, 20])  # NaN on a non-key frame is fine: it is never read
    with pytest.raises(ValueError, match="at least 2"):
        ib.inbetween(clip.slice(0, 1), [0, 0])


def test_foreign_skeleton_lists_missing_joints(ib, tmp_path):
    text = TEST_CLIP.read_text().replace("Toes_L", "Toe_Left")
    clip = parse_bvh(text, tmp_path / "odd.bvh")
    with pytest.raises(EngineError, match="missing joints: Toes_L.*extra joints: Toe_Left"):
        ib.inbetween(clip, [0, 10])


def test_task_mismatch_is_explained(ib, ae):
    clip = read_bvh(TEST_CLIP)
    with pytest.raises(EngineError, match="needs an autoencoder checkpoint"):
        ib.encode(clip)
    with pytest.raises(EngineError, match="needs an inbetween checkpoint"):
        ae.inbetween(clip, [0, 10])


def test_segments_share_ends():
    assert segment_bounds(10, 16) == [(0, 9)]
    segs = segment_bounds(267, 61)
    assert segs[0][0] == 0 and segs[-1][1] == 266 and all(b - a + 1 <= 61 for a, b in segs)
    assert all(segs[i][1] == segs[i + 1][0] for i in range(len(segs) - 1))
    assert segments_on_keys([0, 15, 30, 45, 60, 75, 90], 61) == [(0, 60), (60, 90)]
    assert segments_on_keys([0, 1], 61) == [(0, 1)]


def test_autoencoder_round_trip_shapes_and_supersampling(ae):
    clip = read_bvh(EXAMPLES[0])
    controls = ae.encode(clip)
    out = ae.decode(controls, like=clip)
    assert out.num_frames == clip.num_frames and out.skeleton is clip.skeleton
    dense = ae.decode(controls, scale=4)
    assert dense.num_frames == 4 * (clip.num_frames - 1) + 1
    assert np.isclose(dense.frame_time, clip.frame_time / 4)
    with pytest.raises(EngineError, match="at least 8"):
        ae.encode(clip.slice(0, 5))


def test_the_engine_cache_loads_a_checkpoint_once_for_callers_at_the_same_time(tmp_path):
    """The batch worker loads its model on a thread while the first file is read; the file's own
    request, arriving during that load, waits for it and gets the same engine (not a second one)."""
    import shutil
    import threading

    from backend.runtime import checkpoint
    from backend.service import engines
    j, w = checkpoint.paths_for(ROOT / "backend" / "checkpoints" / "inbetween.json")
    for p in (j, w):
        shutil.copy2(p, tmp_path / p.name)
    start, got = threading.Barrier(4), []

    def ask():
        start.wait()
        got.append(engines.get_engine(str(tmp_path / j.name), "cpu", "inbetween"))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all(e is got[0] for e in got)


def test_a_joint_the_data_never_turns_follows_the_keys():
    """The data set's root never turns in any training clip (its rotation features have the normaliser's
    floor as their spread): the shipped in-betweener does not move it between keys, on the fill and on a
    re-decode of its controls, nor the autoencoder on any decode (their own output there is noise: 0.09
    degrees, a 0.6 cm slide 4 m from the origin)."""
    from backend.motion.engine import DEFAULT_INBETWEEN, Engine
    from backend.motion.inbetween.fill import still_joints
    from backend.motion.keyframes_np import every_k
    engine = Engine(DEFAULT_INBETWEEN, "cpu")
    root = engine.skeleton.names.index("joint_Root")
    assert still_joints(engine) == [root]
    clip = read_bvh(TEST_CLIP).slice(0, 121)
    assert np.abs(clip.rotations[:, root] - [1.0, 0.0, 0.0, 0.0]).max() == 0.0
    result, controls = engine.inbetween(clip, every_k(121, 15))
    assert np.abs(result.rotations[:, root] - [1.0, 0.0, 0.0, 0.0]).max() == 0.0
    again = Engine(DEFAULT_INBETWEEN, "cpu").decode(controls)
    assert np.abs(again.rotations[:, root] - [1.0, 0.0, 0.0, 0.0]).max() == 0.0
    # the autoencoder alike: a decode (a slider's) never turns it, whatever the points
    from backend.motion.engine import DEFAULT_CHECKPOINT
    auto = Engine(DEFAULT_CHECKPOINT, "cpu")
    assert still_joints(auto) == [auto.skeleton.names.index("joint_Root")]
    ctrl = auto.encode(clip)
    moved = auto.decode(ctrl, points=ctrl.points * 1.5)
    assert np.abs(moved.rotations[:, root] - [1.0, 0.0, 0.0, 0.0]).max() == 0.0
