"""backend.maths.timebase alone (numpy), then the engine and the service at 24 and 60 fps with the shipped models."""
import numpy as np
import pytest

from backend.formats.bvh import read_bvh
from backend.maths import quat_np, timebase
from tests.conftest import TEST_CLIP


def _walk():
    clip = read_bvh(TEST_CLIP)
    return clip, quat_np.fix_hemisphere(clip.rotations), clip.positions


def _at_rate(fps: float, frames: int | None = None):
    """The fixture walk (30 fps) sampled at ``fps``: a scene at another rate with known motion."""
    from backend.motion.skeleton import Clip
    clip, rot, pos = _walk()
    n = frames or int((clip.num_frames - 1) * fps / 30) + 1
    r, p = timebase.sample(rot, pos, np.arange(n) * 30.0 / fps)
    return Clip(clip.skeleton, r, p, 1.0 / fps, f"walk{fps:g}")


def _deg(a, b) -> float:
    return float(np.degrees(quat_np.angle_between(a, b)).mean())


# -- the module alone --------------------------------------------------------------------------
def test_identity_at_the_model_rate():
    keys = [3, 10, 25, 70]
    assert timebase.model_keys(keys, 1 / 30) == [0, 7, 22, 67]
    assert timebase.model_keys(keys, 0.0333333) == [0, 7, 22, 67]  # a BVH's rounded frame time is 30 fps
    t = timebase.model_times(keys, timebase.model_keys(keys, 1 / 30), np.arange(3, 71))
    assert np.array_equal(t, np.arange(68.0))  # whole model frames: every read is a copy
    rng = np.random.default_rng(0)
    rot, pos = quat_np.normalize(rng.normal(size=(68, 5, 4))), rng.normal(size=(68, 5, 3))
    r, p = timebase.sample(rot, pos, t)
    assert np.array_equal(r, rot) and np.array_equal(p, pos)
    assert timebase.model_length(100, 1 / 30) == 100 and timebase.max_scene_gap(60, 1 / 30) == 60
    assert np.array_equal(timebase.uniform_times(10, 10), np.arange(10.0))


@pytest.mark.parametrize("fps, keys, expect", [
    (24, [0, 12, 24, 36], [0, 15, 30, 45]),
    (60, [0, 30, 60, 61, 62, 90], [0, 15, 30, 31, 32, 45]),  # keys one frame apart: pushed on, never merged
    (25, [10, 35, 60], [0, 30, 60]),
    (30000 / 1001, [0, 30], [0, 30]),
])
def test_keys_map_to_the_model_grid(fps, keys, expect):
    mk = timebase.model_keys(keys, 1 / fps)
    assert mk == expect and all(b > a for a, b in zip(mk, mk[1:], strict=False))
    t = timebase.model_times(keys, mk, np.arange(keys[0], keys[-1] + 1))
    assert np.array_equal(t[np.asarray(keys) - keys[0]], np.asarray(mk, float))  # exact at the keys
    assert np.all(np.diff(t) > 0)


def test_fps_base_counts():
    # 30 fps with fps_base 1.001 (29.97): a 30-frame gap is 30.03 model frames -> 30; a 60-frame one is not allowed
    ft = 1.001 / 30
    assert not timebase.same_rate(ft) and timebase.max_scene_gap(60, ft) == 59
    assert timebase.max_scene_gap(60, 1 / 24) == 48 and timebase.max_scene_gap(60, 1 / 60) == 120
    assert timebase.max_scene_gap(60, 1 / 25) == 50 and timebase.max_scene_gap(60, 1 / 50) == 100
    assert timebase.max_scene_gap(60, 0.0416667) == 48  # a BVH's rounded 24 fps


@pytest.mark.parametrize("ft", [1 / 24, 0.0416667, 0.041666, 1 / 25, 1.001 / 30, 1 / 50, 1.001 / 60, 1 / 60, 1 / 120])
def test_the_scene_gap_limit_always_fits_the_model(ft):
    limit = timebase.max_scene_gap(60, ft)
    for start in range(0, 40):
        keys = [start, start + 1, start + limit, start + 2 * limit, start + 3 * limit - 1]
        mk = timebase.model_keys(keys, ft, max_gap=60)
        assert max(np.diff(mk)) <= 60 and min(np.diff(mk)) >= 1, (ft, start, mk)
        assert abs(mk[-1] - (keys[-1] - start) * ft * 30) <= 1.5


def test_gap_message_names_scene_frames_and_seconds():
    msg = timebase.gap_message(0, 60, 60, 1 / 24)
    assert "is 60 frames (2.5 s)" in msg and "up to 48 frames (2 s at 24 fps" in msg


def test_sample_slerps_between_frames():
    rot = np.array([[[1.0, 0, 0, 0]], [[np.cos(0.5), np.sin(0.5), 0, 0]]])
    pos = np.array([[[0.0, 0, 0]], [[2.0, 0, 0]]])
    r, p = timebase.sample(rot, pos, [0.0, 0.25, 1.0])
    assert np.allclose(r[1, 0], [np.cos(0.125), np.sin(0.125), 0, 0]) and np.allclose(p[1, 0], [0.5, 0, 0])
    assert np.array_equal(r[[0, 2]], rot) and np.array_equal(p[[0, 2]], pos)
    with pytest.raises(ValueError, match="outside"):
        timebase.sample(rot, pos, [1.5])


def test_bounds_map_both_ways():
    assert timebase.map_bounds([(0, 60), (60, 120)], 121, 97) == [(0, 48), (48, 96)]
    with pytest.raises(ValueError, match="too few"):
        timebase.map_bounds([(0, 2), (2, 4), (4, 6)], 7, 3)


def test_bad_frame_time_is_refused():
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="positive number"):
            timebase.same_rate(bad)


def test_checkpoint_frame_time():
    assert timebase.model_frame_time({}) == 1 / 30 and timebase.model_frame_time({"frame_time": 1 / 60}) == 1 / 60
    assert timebase.model_frame_time({"frame_time": "x"}) == 1 / 30
    assert timebase.model_frame_time({"frame_time": 10 ** 400}) == 1 / 30  # (a JSON integer no float holds)


# -- the engine and the service with the shipped models --------------------------------------
@pytest.fixture(scope="module")
def ib():
    from backend.motion.engine import DEFAULT_INBETWEEN, Engine
    return Engine(DEFAULT_INBETWEEN, "cpu")


def test_inbetween_at_24_fps_matches_30_fps_at_the_same_times(ib):
    """Keys every 12 frames at 24 fps are keys every 15 at 30 fps: the model fills the same grid, and the 24 fps
    frames read it at their own times."""
    clip, _, _ = _walk()
    c24 = _at_rate(24)
    k30 = list(range(0, 241, 15))
    k24 = [k * 24 // 30 for k in k30]
    o30, _ = ib.inbetween(clip, k30)
    o24, ctrl = ib.inbetween(c24, k24)
    span = np.arange(k24[-1] + 1)
    ref, _ = timebase.sample(quat_np.fix_hemisphere(o30.rotations), o30.positions, span * 30 / 24)
    assert _deg(o24.rotations[span], ref) < 1e-5
    assert np.array_equal(o24.rotations[k24], c24.rotations[k24]) and np.array_equal(o24.positions[k24],
                                                                                       c24.positions[k24])
    assert ctrl.keys == k30 and ctrl.frame_time == 1 / 30  # the control points live on the model's grid
    # closer to the motion than the same keys taken as 30 fps (the model's timing 25 % slow)
    from backend.motion.skeleton import Clip
    old, _ = ib.inbetween(Clip(c24.skeleton, c24.rotations, c24.positions, 1 / 30, "old"), k24)
    assert _deg(o24.rotations[span], c24.rotations[span]) < _deg(old.rotations[span], c24.rotations[span])


def test_inbetween_at_60_fps(ib):
    clip, _, _ = _walk()
    c60 = _at_rate(60)
    k60 = list(range(0, 481, 30))
    o60, ctrl = ib.inbetween(c60, k60)
    span = np.arange(k60[-1] + 1)
    o30, _ = ib.inbetween(clip, list(range(0, 241, 15)))
    ref, _ = timebase.sample(quat_np.fix_hemisphere(o30.rotations), o30.positions, span / 2)
    assert _deg(o60.rotations[span], ref) < 1e-5 and ctrl.keys == list(range(0, 241, 15))
    # a key between model frames (481 -> 240.5) and keys on neighbouring frames: pushed on, kept exactly
    k = k60 + [481, 482]
    o, ctrl = ib.inbetween(c60, k)
    assert ctrl.keys[-3:] == [240, 241, 242] and np.array_equal(o.rotations[k], c60.rotations[k])
    assert np.isfinite(o.rotations[:483]).all()


def test_30_fps_is_bit_identical_whatever_the_rounding(ib):
    from backend.motion.skeleton import Clip
    clip, _, _ = _walk()
    keys = list(range(0, 200, 10))
    a, _ = ib.inbetween(clip, keys)
    b, _ = ib.inbetween(Clip(clip.skeleton, clip.rotations, clip.positions, 1 / 30, clip.name), keys)
    span = slice(keys[0], keys[-1] + 1)  # (frames after the last key are not the fill's)
    assert clip.frame_time == 0.0333333 and np.array_equal(a.rotations[span], b.rotations[span])
    assert np.array_equal(a.positions[span], b.positions[span])


def test_gap_limit_is_two_seconds_in_scene_frames(ib):
    c24 = _at_rate(24)
    ib.inbetween(c24, [0, 48, 96])  # 2 s gaps: filled
    with pytest.raises(ValueError, match=r"is 49 frames \(2.04 s\); the model fills gaps of up to 48 frames"):
        ib.inbetween(c24, [0, 49])
    from backend.service import motion
    with pytest.raises(ValueError, match=r"blender: the gap between keys 0 and 49 .* up to 48 frames \(2 s at 24 fps"):
        motion.inbetween_keys(ib, c24.skeleton.offsets, [0, 49], c24.rotations[[0, 49]], c24.positions[[0, 49]], 1 / 24)


def test_service_inbetween_at_24_fps(ib):
    from backend.service import motion
    c24 = _at_rate(24)
    keys = [0, 12, 24, 36, 48]
    rot, pos = motion.inbetween_keys(ib, c24.skeleton.offsets, keys, c24.rotations[keys], c24.positions[keys], 1 / 24)
    assert rot.shape == (49, c24.skeleton.num_joints, 4)
    assert np.array_equal(rot[keys], c24.rotations[keys]) and np.array_equal(pos[keys], c24.positions[keys])


def test_encode_and_decode_at_24_fps():
    """Encode resamples to the model's rate; segments come back in scene frames; decoding the encoded points
    gives exactly the neutral decode the encode reply carried (the layer adds 0 at neutral)."""
    from backend.motion.engine import DEFAULT_CHECKPOINT, Engine
    from backend.service import motion
    ae = Engine(DEFAULT_CHECKPOINT, "cpu")
    c24 = _at_rate(24, 150)
    reply, out = motion.encode_clip(ae, c24.skeleton.offsets, c24.rotations, c24.positions, 1 / 24, decode=True)
    segs, model = reply["segments"], reply["model_segments"]
    assert segs[0][0] == 0 and segs[-1][1] == 149 and model[-1][1] == 186  # 149 frames at 24 fps = 186 at 30
    assert len(out["rotations"]) == sum(b - a + 1 for a, b in segs)
    header = {"segments": segs, "lengths": [b - a + 1 for a, b in segs], "amplify": [1.0] * len(segs),
              "timing": [0.0] * len(segs), "principal": [[]] * len(segs), "keys": None, "model_segments": model}
    rot, pos = motion.decode_parts(ae, header, out)
    assert np.array_equal(rot, out["rotations"]) and np.array_equal(pos, out["positions"])
    deg, cm = np.asarray(reply["fidelity"]).mean(0)
    reply30, _ = motion.encode_clip(ae, c24.skeleton.offsets, c24.rotations, c24.positions, 1 / 30, decode=True)
    assert "model_segments" not in reply30
    print(f"encode at 24 fps: {deg:.2f} deg, {cm:.2f} cm; taken as 30 fps: "
          f"{np.asarray(reply30['fidelity']).mean(0).round(2).tolist()}")
    assert deg < 10 and cm < 10


def test_reconstruct_and_the_cli_at_24_fps(tmp_path):
    """``python -m backend reconstruct`` / ``edit`` of a 24 fps BVH: encoded at 30 fps, written back on the file's
    frames at its Frame Time; at 30 fps nothing changes.  ``inbetween`` takes a 2 s gap (48 frames) at 24 fps."""
    from backend.cli.main import main
    from backend.formats.bvh import read_bvh, write_bvh
    from backend.motion.engine import DEFAULT_CHECKPOINT, Engine
    c24 = _at_rate(24, 150)
    write_bvh(tmp_path / "w24.bvh", c24)
    ae = Engine(DEFAULT_CHECKPOINT, "cpu")
    (rec,) = ae.reconstruct([c24])
    assert rec.num_frames == 150 and rec.frame_time == 1 / 24
    assert _deg(rec.rotations, c24.rotations) < 3.0
    clip30, _, _ = _walk()
    (same,) = ae.reconstruct([clip30])
    assert same.num_frames == clip30.num_frames and same.frame_time == clip30.frame_time
    assert main(["edit", str(tmp_path / "w24.bvh"), "--supersample", "2", "--out-dir", str(tmp_path / "e")]) == 0
    ed = read_bvh(tmp_path / "e" / "w24.bvh")
    assert ed.num_frames == 299 and ed.frame_time == pytest.approx(1 / 24, rel=1e-5)
    assert main(["inbetween", str(tmp_path / "w24.bvh"), "--keys", "0,48,96", "--out-dir", str(tmp_path / "i")]) == 0
    assert main(["inbetween", str(tmp_path / "w24.bvh"), "--keys", "0,49", "--out-dir", str(tmp_path / "j")]) == 1
