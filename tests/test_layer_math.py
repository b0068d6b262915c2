"""layer_math on its own (numpy only): the frames an edit reaches, original + (edited - neutral), channel
values nearest the original's, the keys of a layered curve, mesh seams and resampling, the readout."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import ROOT  # noqa: F401  (puts the repository on sys.path)
from blender_addon.core import carry_math, latent_math, layer_math, rig_math

BOUNDS = [(0, 30), (30, 60), (60, 90)]


def test_reach_is_the_segment_and_its_neighbours_ramps():
    r = len(latent_math.ramp(31))
    assert r == 8
    assert layer_math.reach(BOUNDS, [1], seams=True).tolist() == list(range(30 - r + 1, 60 + r))
    assert layer_math.reach(BOUNDS, [0], seams=True).tolist() == list(range(0, 30 + r))
    assert layer_math.reach(BOUNDS, [1], seams=False, protected=[30, 45, 60]).tolist() == \
        [f for f in range(31, 60) if f != 45]
    assert layer_math.reach(BOUNDS, [], seams=True).size == 0
    assert layer_math.runs(np.array([1, 2, 3, 7, 8, 10])) == [(1, 3), (7, 8), (10, 10)]
    assert layer_math.edited_segments(["a", "b", "c"], ["a", "x", "c"]) == [1]


def test_joined_frames_are_the_seam_join_of_the_segments():
    rng = np.random.default_rng(0)
    parts = {s: (rig_math.qnormalize(rng.normal(size=(b - a + 1, 4, 4))), rng.normal(size=(b - a + 1, 4, 3)))
             for s, (a, b) in enumerate(BOUNDS)}
    frames = np.arange(0, 91)
    plan, need = layer_math.needed_parts(BOUNDS, frames, seams=True)
    assert need == {0, 1, 2} and [s for s in plan] == [0, 1, 2]
    rot, pos = layer_math.joined(parts, BOUNDS, plan, seams=True)
    for s, (a, b) in enumerate(BOUNDS):
        ref_r, ref_p = latent_math.segment_values(parts, s, 3, True)
        lo = a + 1 if s else a
        assert np.array_equal(rot[lo:b + 1], ref_r[lo - a:]) and np.array_equal(pos[lo:b + 1], ref_p[lo - a:])
    some = np.array([5, 29, 30, 31, 70])  # part of the range: only the segments and sides it needs
    plan, need = layer_math.needed_parts(BOUNDS, some, seams=True)
    assert need == {0, 1, 2}
    r2, p2 = layer_math.joined(parts, BOUNDS, plan, seams=True)
    assert np.array_equal(r2, rot[some]) and np.array_equal(p2, pos[some])
    plan, need = layer_math.needed_parts(BOUNDS, np.array([45]), seams=True)
    assert need == {1}  # the middle of a segment does not depend on its neighbours


def test_compose_adds_the_edit_in_each_bones_frame():
    rng = np.random.default_rng(1)
    o, n, e = (rig_math.qnormalize(rng.normal(size=(6, 5, 4))) for _ in range(3))
    op, np_, ep = (rng.normal(size=(6, 5, 3)) for _ in range(3))
    rot, pos = layer_math.compose(o, op, n, np_, n, np_)  # no edit: the original
    np.testing.assert_allclose(np.abs(np.sum(rot * o, -1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(pos, op, atol=1e-12)
    rot, pos = layer_math.compose(n, np_, n, np_, e, ep)  # the original is the neutral decode: the edited decode
    np.testing.assert_allclose(np.abs(np.sum(rot * e, -1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(pos, ep, atol=1e-12)
    rot, _ = layer_math.compose(o, op, n, np_, e, ep)  # the same local change as from n to e
    ours, theirs = rig_math.qmul(rig_math.qconj(o), rot), rig_math.qmul(rig_math.qconj(n), e)
    np.testing.assert_allclose(np.abs(np.sum(ours * theirs, -1)), 1.0, atol=1e-12)


@pytest.mark.parametrize("mode", ["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"])
def test_euler_values_keep_the_originals_turns(mode):
    rng = np.random.default_rng(2)
    ref = rng.uniform(-3.0, 3.0, size=(40, 3)) + 2 * np.pi * rng.integers(-3, 4, size=(40, 3))
    ref[:10, 0] = np.linspace(3.0, 3.3, 10)  # crossing +180 degrees
    small = rig_math.qnormalize(np.array([1.0, 0, 0, 0]) + 0.05 * rng.normal(size=(40, 4)))
    q = rig_math.qmul(rig_math.euler_to_quat(ref, mode), small)
    out = layer_math.channels_near(q, mode, ref)
    np.testing.assert_allclose(np.abs(np.sum(rig_math.euler_to_quat(out, mode) * q, -1)), 1.0, atol=1e-9)
    assert np.abs(out - ref).max() < np.pi  # no turn added, none lost
    for cand in rig_math.both_solutions(q, mode[::-1]):  # and of the equivalent triples, the nearest
        c = rig_math.to_axes(cand, mode[::-1])
        c = c + 2 * np.pi * np.round((ref - c) / (2 * np.pi))
        assert (np.abs(out - ref).sum(-1) <= np.abs(c - ref).sum(-1) + 1e-9).all()
    same = layer_math.channels_near(rig_math.euler_to_quat(ref, mode), mode, ref)
    np.testing.assert_allclose(same, ref, atol=1e-9)


def test_quaternion_and_axis_angle_values_follow_the_original():
    rng = np.random.default_rng(3)
    ref = rig_math.qnormalize(rng.normal(size=(20, 4)))
    q = -rig_math.qmul(ref, rig_math.qnormalize(np.array([1.0, 0, 0, 0]) + 0.05 * rng.normal(size=(20, 4))))
    out = layer_math.channels_near(q, "QUATERNION", ref)
    assert (np.sum(out * ref, -1) > 0).all() and np.array_equal(np.abs(out), np.abs(q))
    aa_ref = np.concatenate([rng.uniform(-1, 1, (20, 1)) + 2 * np.pi * rng.integers(-2, 3, (20, 1)),
                             rig_math.qnormalize(np.concatenate([np.zeros((20, 1)), rng.normal(size=(20, 3))], -1))[:, 1:]],
                            -1)
    nudge = rig_math.qnormalize(np.array([1.0, 0, 0, 0]) + 0.02 * rng.normal(size=(20, 4)))
    q = rig_math.qmul(rig_math.axis_angle_to_quat(aa_ref), nudge)
    out = layer_math.channels_near(q, "AXIS_ANGLE", aa_ref)
    np.testing.assert_allclose(np.abs(np.sum(rig_math.axis_angle_to_quat(out) * q, -1)), 1.0, atol=1e-9)
    assert np.abs(out[:, 0] - aa_ref[:, 0]).max() < 0.3 and (np.sum(out[:, 1:] * aa_ref[:, 1:], -1) > 0).all()


def _keys(frames, values, interpolation=0):
    n = len(frames)
    co = np.stack([frames, values], -1).astype(np.float32)
    return {"co": co, "handle_left": co - np.float32(0.3), "handle_right": co + np.float32(0.3),
            "interpolation": np.full(n, interpolation, np.int32), "handle_left_type": np.zeros(n, np.int32),
            "handle_right_type": np.zeros(n, np.int32), "type": np.zeros(n, np.int32),
            "easing": np.zeros(n, np.int32), "back": np.zeros(n, np.float32), "amplitude": np.zeros(n, np.float32),
            "period": np.zeros(n, np.float32), "select_control_point": np.ones(n, bool),
            "select_left_handle": np.zeros(n, bool), "select_right_handle": np.zeros(n, bool)}


ENUMS = {"handle_left_type": 5, "handle_right_type": 5, "interpolation": 1, "type": 4, "easing": 0}


def test_written_frames_reach_the_originals_nearest_keys():
    x = np.array([1.0, 10.0, 20.0, 40.0, 50.0])
    assert layer_math.extend(x, (22, 25), 1, 50) == (21, 39)
    assert layer_math.extend(np.array([1.0, 21.5, 40.0]), (22, 25), 1, 50) == (22, 39)
    assert layer_math.extend(x, (5, 8), 3, 50) == (3, 9)  # the key at 1 is outside the range 3..50
    assert layer_math.extend(np.array([30.0]), (5, 8), 3, 50) == (3, 29)  # none before within the range: from its start
    assert layer_math.extend(np.arange(1.0, 51.0), (22, 25), 1, 50) == (22, 25)  # a key on every frame: the run itself
    assert layer_math.written_frames(x, np.array([12, 13, 44]), 1, 50).tolist() == \
        list(range(11, 20)) + list(range(41, 50))


def test_a_layered_curve_keeps_the_original_outside_its_frames():
    base = _keys(np.array([1.0, 10.0, 20.0, 40.0, 50.0]), np.arange(5.0), interpolation=0)
    current = _keys(np.array([-5.0, 3.0, 30.0, 60.0]), np.arange(4.0) + 100, interpolation=2)
    out = layer_math.layered_curve(current, base, 1, 50, np.zeros(0, np.int64), np.zeros(0), ENUMS)
    assert out["co"][:, 0].tolist() == [-5.0, 1.0, 10.0, 20.0, 40.0, 50.0, 60.0]
    for a in base:  # inside the range: the original's keys, every attribute as it was
        assert np.array_equal(out[a][1:-1], base[a])
        assert np.array_equal(out[a][[0, -1]], current[a][[0, -1]])
    frames = np.arange(11, 20)
    out = layer_math.layered_curve(current, base, 1, 50, frames, np.full(9, 7.0), ENUMS)
    assert out["co"][:, 0].tolist() == [-5.0, 1.0, 10.0, *range(11, 20), 20.0, 40.0, 50.0, 60.0]
    new = np.isin(out["co"][:, 0], frames)
    assert (out["co"][new, 1] == 7.0).all() and (out["interpolation"][new] == 1).all() and (out["type"][new] == 4).all()
    assert np.array_equal(out["handle_left"][new], out["co"][new]) and not out["select_control_point"][new].any()
    on_keys = layer_math.layered_curve(current, base, 1, 50, np.array([10, 11, 20]), np.zeros(3), ENUMS)
    x = on_keys["co"][:, 0]  # a layer key on an original key's frame keeps that key's selection and handle types
    assert on_keys["select_control_point"][np.isin(x, [10, 20])].all() and not on_keys["select_control_point"][x == 11]
    assert (on_keys["handle_left_type"][np.isin(x, [10, 20])] == 0).all() and on_keys["handle_left_type"][x == 11] == 5
    assert layer_math.layered_curve(None, None, 1, 50, np.zeros(0, np.int64), np.zeros(0), ENUMS) is None


def test_the_originals_sub_frame_keys_under_the_layer_move_with_it():
    base = _keys(np.array([1.0, 10.0, 14.5, 20.0, 40.0]), np.array([0.0, 1.0, 2.0, 3.0, 4.0]))
    frames = np.arange(11, 20)
    offsets = np.linspace(0.0, 0.8, 9)  # 0.1 per frame: 0.35 at 14.5
    out = layer_math.layered_curve(None, base, 1, 50, frames, np.full(9, 7.0), ENUMS, offsets=offsets)
    at = out["co"][:, 0] == np.float32(14.5)
    assert at.sum() == 1 and out["co"][at, 1][0] == np.float32(2.0) + np.float32(0.35)
    assert out["handle_left"][at, 1][0] == base["handle_left"][2, 1] + np.float32(0.35)  # handles go with it
    assert out["type"][at][0] == 0  # still the original's key (not a layer key)
    gone = layer_math.layered_curve(None, base, 1, 50, frames, np.full(9, 7.0), ENUMS)  # no offsets (Resample): dropped
    assert np.float32(14.5) not in gone["co"][:, 0]


def test_carried_sub_frame_keys_and_deletions():
    """``carry_math``: a sub-frame key left as the layer showed it stays the original's (not its shown value);
    one the user changed takes the value set; a key deleted on a layer frame is found and not keyed again."""
    lo, hi = 1, 50
    base = _keys(np.array([1.0, 10.0, 14.5, 20.0, 40.0]), np.array([0.0, 1.0, 2.0, 3.0, 4.0]))
    base_values = np.linspace(0.0, 4.0, 50)
    shown = np.arange(12, 18)
    keyed, vals, offsets = carry_math.layer_keys(base["co"][:, 0].astype(np.float64), lo, hi, shown, np.full(6, 9.0),
                                         base_values)
    assert keyed.tolist() == list(range(11, 20)) and np.allclose(offsets, vals - base_values[keyed - lo])
    now = layer_math.layered_curve(None, base, lo, hi, keyed, vals, ENUMS, offsets=offsets)
    same = carry_math.carried(now, base, lo, hi, keyed, vals, 2, offsets)
    assert np.array_equal(same["co"][same["co"][:, 0] == np.float32(14.5)], base["co"][[2]])
    changed = {a: v.copy() for a, v in now.items()}
    changed["co"][changed["co"][:, 0] == np.float32(14.5), 1] = 5.0
    out = carry_math.carried(changed, base, lo, hi, keyed, vals, 2, offsets)
    assert out["co"][out["co"][:, 0] == np.float32(14.5), 1].tolist() == [5.0]
    row = now["co"][:, 0] == 15.0
    deleted = {a: v[~row] for a, v in now.items()}
    expected = carry_math.expected_co(base, lo, hi, keyed, vals, offsets)
    assert carry_math.deleted_keys(expected[:, 0], deleted["co"][:, 0]).tolist() == [15]
    again, _, _ = carry_math.layer_keys(base["co"][:, 0].astype(np.float64), lo, hi, shown, np.full(6, 9.0),
                                        base_values, np.array([15]))
    assert 15 not in again.tolist() and 14 in again.tolist()


def test_mesh_seams_and_resampling():
    from backend.mesh.sequences import join_frames
    rng = np.random.default_rng(4)
    parts = [rng.normal(size=(b - a + 1, 7, 3)).astype(np.float32) for a, b in BOUNDS]
    whole = join_frames(parts, seams=True)
    frames = np.arange(91)
    plan, need = layer_math.needed_parts(BOUNDS, frames, True, ramp=layer_math.mesh_ramp)
    np.testing.assert_allclose(layer_math.mesh_joined(dict(enumerate(parts)), BOUNDS, plan, True), whole, atol=1e-6)
    frames = layer_math.reach(BOUNDS, [2], True, ramp=layer_math.mesh_ramp)
    assert frames[0] == 60 - 31 // 4 + 1
    plan, _ = layer_math.needed_parts(BOUNDS, frames, True, ramp=layer_math.mesh_ramp)
    np.testing.assert_allclose(layer_math.mesh_joined(dict(enumerate(parts)), BOUNDS, plan, True), whole[frames],
                               atol=1e-6)
    seq = rng.normal(size=(61, 5, 3)).astype(np.float32)
    assert layer_math.resample_frames(seq, 61) is seq
    twice = layer_math.resample_frames(seq, 121)
    assert np.array_equal(twice[::2], seq)  # the frames read, bit for bit, on every other frame
    np.testing.assert_allclose(twice[1::2], 0.5 * (seq[:-1] + seq[1:]), atol=1e-6)
    assert np.array_equal(layer_math.resample_frames(twice, 61), seq)


def test_fidelity_warns_past_the_threshold():
    assert layer_math.fidelity_problem([[1.6, 0.9], [2.5, 1.8]]) is None
    assert layer_math.fidelity_problem([[1.6, 0.9], [layer_math.WARN_DEG + 0.1, 1.0], [2.0, layer_math.WARN_CM + 1]]) \
        == f"Segments 2, 3: {layer_math.POOR}"
    assert layer_math.fidelity_problem([[0.02, 0.7], [0.1, layer_math.WARN_MESH_PERCENT + 0.5]], mesh=True) \
        == f"Segment 2: {layer_math.POOR}"
    assert layer_math.fidelity_text([2.34, 1.26]) == "model fit 1.3 cm, 2.3\N{DEGREE SIGN}"
