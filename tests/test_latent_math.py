"""latent_math on its own (numpy only): frame maps, seams, fingerprints, key merges."""
from __future__ import annotations

import numpy as np

from addon_helpers import ROOT  # noqa: F401  (puts the repository on sys.path)
from backend.formats import json_limits
from blender_addon.core import latent_math, rig_math

SEGS = [(0, 54), (54, 109), (109, 163)]


def test_raw_names_and_paths():
    assert latent_math.raw_name(0, 1) == "splinetween_s00_c1" and latent_math.raw_name(12, 3) == "splinetween_s12_c3"
    assert latent_math.is_raw_path('["splinetween_s03_c0"]')
    assert not latent_math.is_raw_path('pose.bones["Hips"].location')


def test_output_bounds_share_end_frames_and_stretch():
    assert latent_math.output_bounds(SEGS, 164, 164) == SEGS
    twice = latent_math.output_bounds(SEGS, 164, 327)
    assert twice == [(0, 108), (108, 218), (218, 326)]
    assert all(b0[1] == b1[0] for b0, b1 in zip(twice, twice[1:], strict=False))
    assert [latent_math.map_frame(k, 164, 327) for k in (0, 54, 163)] == [0, 108, 326]
    half = latent_math.output_bounds(SEGS, 164, 82)
    assert half[0][0] == 0 and half[-1][1] == 81


def test_check_length():
    assert latent_math.check_length(SEGS, 164, 327, whole_factors=True) is None
    assert "whole factors" in latent_math.check_length(SEGS, 164, 300, whole_factors=True)
    assert latent_math.check_length(SEGS, 164, 300, whole_factors=False) is None
    assert "without frames" in latent_math.check_length(SEGS, 164, 3, whole_factors=False)


def test_signature_sees_every_input():
    rng = np.random.default_rng(0)
    p = rng.normal(size=(4, 8))
    base = latent_math.signature(p, 1.0, 0.0, (0.0, 0.0), 55)
    assert base == latent_math.signature(p.copy(), 1.0, 0.0, (0.0, 0.0), 55)
    q = p.copy()
    q[2, 3] += 1e-9
    others = [latent_math.signature(q, 1.0, 0.0, (0.0, 0.0), 55), latent_math.signature(p, 1.5, 0.0, (0.0, 0.0), 55),
              latent_math.signature(p, 1.0, 0.1, (0.0, 0.0), 55), latent_math.signature(p, 1.0, 0.0, (0.0, 0.5), 55),
              latent_math.signature(p, 1.0, 0.0, (0.0, 0.0), 109)]
    assert len({base, *others}) == 6


def test_bad_values_names_the_property():
    raw = np.zeros((2, 4, 8))
    assert latent_math.bad_values(raw) is None
    raw[1, 2, 5] = np.nan
    assert latent_math.bad_values(raw).startswith("splinetween_s01_c2[5] is nan")
    raw[1, 2, 5] = np.inf
    assert "is inf" in latent_math.bad_values(raw)


def _rand_quats(rng, shape):
    return rig_math.qnormalize(rng.normal(size=shape + (4,)))


def test_segment_values_average_shared_frames_symmetrically():
    rng = np.random.default_rng(1)
    parts = {s: (_rand_quats(rng, (5, 3)), rng.normal(size=(5, 3, 3))) for s in range(3)}
    r0, p0 = latent_math.segment_values(parts, 0, 3, True)
    r1, p1 = latent_math.segment_values(parts, 1, 3, True)
    r2, _ = latent_math.segment_values(parts, 2, 3, True)
    assert np.array_equal(r0[-1], r1[0]) and np.array_equal(p0[-1], p1[0])  # both sides write the same frame
    assert np.array_equal(r1[-1], r2[0])
    np.testing.assert_allclose(p1[0], 0.5 * (parts[0][1][-1] + parts[1][1][0]))
    assert np.array_equal(r0[:-1], parts[0][0][:-1]) and np.array_equal(r1[1:-1], parts[1][0][1:-1])
    r, _ = latent_math.segment_values(parts, 1, 3, False)
    assert np.array_equal(r, parts[1][0])


def _keys(frames, values, interpolation=0):
    n = len(frames)
    co = np.stack([frames, values], -1).astype(np.float32)
    return {"co": co, "handle_left": co - np.float32(0.3), "handle_right": co + np.float32(0.3),
            "interpolation": np.full(n, interpolation, np.int32), "select_control_point": np.zeros(n, bool)}


def test_merge_restore_puts_back_the_range_and_keeps_later_edits():
    orig = _keys(np.arange(1, 21, dtype=float), np.arange(20) * 0.1, interpolation=1)
    cur = _keys(np.arange(1, 21, dtype=float), np.arange(20) * 0.1 + 5.0)  # range 5..12 overwritten
    outside = (orig["co"][:, 0] < 5) | (orig["co"][:, 0] > 12)
    for a in cur:
        cur[a][outside] = orig[a][outside]
    merged = latent_math.merge_restore(cur, orig, 5, 12, 12)
    for a in orig:
        assert np.array_equal(merged[a], orig[a]), a
    cur["co"][-1, 1], cur["interpolation"][-1] = 9.0, 3  # a key edited after encoding stays as edited
    merged = latent_math.merge_restore(cur, orig, 5, 12, 12)
    assert merged["co"][-1, 1] == 9.0 and merged["interpolation"][-1] == 3
    assert np.array_equal(merged["co"][:-1], orig["co"][:-1])


def test_merge_restore_after_a_stretch_and_for_created_curves():
    orig = _keys(np.arange(1, 11, dtype=float), np.linspace(0, 1, 10))
    later = orig["co"][:, 0] > 6
    cur = _keys(np.concatenate([np.arange(1, 15), orig["co"][later, 0] + 8]),
                np.concatenate([orig["co"][:2, 1], np.full(12, 7.0), orig["co"][later, 1]]))
    cur["handle_left"][-4:] = orig["handle_left"][later] + np.float32([8, 0])
    cur["handle_right"][-4:] = orig["handle_right"][later] + np.float32([8, 0])
    merged = latent_math.merge_restore(cur, orig, 3, 14, 6)  # range 3..6 was stretched to 3..14
    for a in orig:
        assert np.array_equal(merged[a], orig[a]), a
    assert latent_math.merge_restore(_keys(np.arange(3, 7, dtype=float), np.zeros(4)), None, 3, 6, 6) is None
    kept = latent_math.merge_restore(_keys(np.array([1.0, 4.0]), np.zeros(2)), None, 3, 6, 6)
    assert kept["co"][:, 0].tolist() == [1.0]


def test_pack_unpack_round_trip():
    a = _keys(np.arange(3, dtype=float), np.array([0.1, 0.2, 0.3]))
    b = _keys(np.arange(5, dtype=float), np.linspace(-1, 1, 5), interpolation=2)
    packed = latent_math.pack_curves([("x", 0, a), ("y", 2, None), ("x", 1, b)])
    dtypes = {"co": (np.float32, 2), "handle_left": (np.float32, 2), "handle_right": (np.float32, 2),
              "interpolation": (np.int32, 1), "select_control_point": (bool, 1)}
    out = latent_math.unpack_curves(packed, dtypes)
    assert out["y", 2] is None and list(out) == [("x", 0), ("y", 2), ("x", 1)]
    for key, ref in ((("x", 0), a), (("x", 1), b)):
        for attr in ref:
            assert out[key][attr].dtype == ref[attr].dtype and np.array_equal(out[key][attr], ref[attr])


def test_checkpoint_hash_follows_the_content(tmp_path):
    j, w = tmp_path / "m.json", tmp_path / "m.safetensors"
    j.write_text('{"weights": "m.safetensors"}')
    w.write_bytes(b"abc")
    h = latent_math.checkpoint_hash(j, read_json=json_limits.read)
    assert h and h == latent_math.checkpoint_hash(tmp_path / "m", read_json=json_limits.read)
    w.write_bytes(b"abd" + b"\0")
    assert latent_math.checkpoint_hash(j, read_json=json_limits.read) not in (None, h)
    w.unlink()
    assert latent_math.checkpoint_hash(j, read_json=json_limits.read) is None


def test_segments_ease_into_their_seams():
    rng = np.random.default_rng(3)
    base = _rand_quats(rng, (1, 3))
    parts = {}
    for s in range(3):  # smooth segments that do not meet: each is offset by its own turn
        turn = rig_math.qnormalize(np.array([1.0, 0.3 * s, 0.0, 0.0]))
        t = np.linspace(0, 1, 41)[:, None, None]
        wobble = rig_math.qnormalize(np.concatenate([np.ones_like(t), 0.1 * t, 0 * t, 0 * t], -1))
        rot = rig_math.qmul(rig_math.qmul(base, turn), wobble)
        parts[s] = (np.broadcast_to(rot, (41, 3, 4)).copy(), np.full((41, 3, 3), float(s)))
    rows = [latent_math.segment_values(parts, s, 3, True) for s in range(3)]
    r = len(latent_math.ramp(41))
    assert r == 10 and latent_math.ramp(41)[0] == 1.0 and (np.diff(latent_math.ramp(41)) < 0).all()
    assert len(latent_math.ramp(2)) == 1
    for s in range(2):  # both sides write the same seam pose ...
        assert np.array_equal(rows[s][0][-1], rows[s + 1][0][0]) and np.array_equal(rows[s][1][-1], rows[s + 1][1][0])
    rot = np.concatenate([rows[0][0]] + [x[0][1:] for x in rows[1:]])
    pos = np.concatenate([rows[0][1]] + [x[1][1:] for x in rows[1:]])
    step = 2 * np.arccos(np.clip(np.abs(np.sum(rot[1:] * rot[:-1], -1)), 0, 1)).max(-1)
    raw = 2 * np.arccos(np.clip(np.abs(np.sum(parts[1][0][0] * parts[0][0][-1], -1)), 0, 1)).max()
    assert step.max() < 0.25 * raw and np.abs(np.diff(pos, axis=0)).max() < 0.25  # ... and no step at the seams
    assert np.array_equal(rows[1][0][r:-r], parts[1][0][r:-r])  # frames outside the ramps are the decode itself
    only_right = latent_math.segment_values(parts, 1, 3, True, (False, True))
    assert np.array_equal(only_right[0][-r:], rows[1][0][-r:]) and np.array_equal(only_right[0][:r], parts[1][0][:r])


def test_a_slider_may_use_a_recent_look_at_the_checkpoint_other_callers_look_now(tmp_path):
    j = tmp_path / "m.json"
    j.write_text("{}")
    (tmp_path / "m.safetensors").write_bytes(b"weights")
    h = latent_math.checkpoint_hash(j, latent_math.STAT_EVERY, read_json=json_limits.read)
    (tmp_path / "m.safetensors").write_bytes(b"other weights")
    assert latent_math.checkpoint_hash(j, 60.0, read_json=json_limits.read) == h  # (a drag: the look a moment ago)
    fresh = latent_math.checkpoint_hash(j, read_json=json_limits.read)
    assert fresh not in (None, h)
    # (the fresh look is the one a drag uses next)
    assert latent_math.checkpoint_hash(j, 60.0, read_json=json_limits.read) == fresh
    (tmp_path / "m.safetensors").unlink()
    assert latent_math.checkpoint_hash(j, 0.0, read_json=json_limits.read) is None
