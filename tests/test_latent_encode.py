"""Encode and the sliders, in real (headless) Blender with the in-process backend.

An example clip is imported with Blender's BVH importer and encoded: Encode writes no key and reads
out how well the model reconstructs each segment; a slider layers the backend's edit on the keys of
its segment (and the seams around it) and nothing else, neutral sliders give back the very same keys,
on familiar motion and on a clip played backwards alike; raw properties typed in the UI re-decode,
and a NaN is refused with the animation left as it was.
"""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import assert_same_keys, bpy, heads, import_bvh, snapshot
from latent_helpers import (
    AUTOENCODER,
    EXAMPLE,
    changed_frames,
    curves,
    encoded_copy,
    encoded_segments,
    fresh_copy,
    info,
    pose_bvh,
    reach,
    require_principal,
    reversed_bvh,
    shaken_bvh,
    source_fixture,  # noqa: F401  (the module fixture `source`: the example armature)
    temporary,
    ui_edit,
)

bpy = bpy()
from backend.formats.bvh import read_bvh  # noqa: E402
from backend.maths import quat_np as Q  # noqa: E402
from backend.motion.controls import Controls  # noqa: E402
from blender_addon.core import latent_math as LM  # noqa: E402
from blender_addon.core import layer_math as L  # noqa: E402
from blender_addon.latent import core as latent  # noqa: E402

pytestmark = pytest.mark.blender


@pytest.fixture
def enc(source):
    with temporary(encoded_copy(source)) as obj:
        yield obj


@pytest.fixture(scope="module")
def engine():
    from backend.motion.engine import Engine
    return Engine(AUTOENCODER, "cpu")


def same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert_same_keys(a[k], b[k])


def near_seams(segments, frames: int) -> np.ndarray:
    """Frames where a segment eases into a shared end frame (latent_math.ramp)."""
    near = np.zeros(frames, bool)
    for a, b in segments:
        r = len(LM.ramp(b - a + 1))
        near[a:a + r] |= a > 0
        near[b - r + 1:b + 1] |= b < frames - 1
    return near


def test_encode_keeps_every_key_and_reads_out_the_models_fit(source, enc):
    """Encode writes nothing: every F-curve of the armature keeps every attribute of every key."""
    same(snapshot(bpy.data.objects[source]), snapshot(enc))
    st = enc.splinetween_latent
    assert (st.frame_start, st.frames, len(st.segments)) == (1, 273, len(encoded_segments(273)))
    fit = latent.fidelity(st)
    assert fit.shape == (len(st.segments), 2) and (fit > 0).all()
    bound = 2 * info()["val_rot_deg"]  # the walk is familiar motion: each segment near the checkpoint's error
    assert fit[:, 0].max() < bound and fit[:, 1].max() < L.WARN_CM and L.fidelity_problem(fit) is None


@pytest.mark.torch
def test_the_readout_is_the_models_reconstruction_error(enc, engine, record_property):
    """Each segment's figures are the engine's own decode of that segment against the motion encoded."""
    from backend.formats.bvh import read_bvh
    from backend.maths import quat_np as Q
    clip = read_bvh(EXAMPLE)
    controls = engine.encode(clip)
    fit = latent.fidelity(enc.splinetween_latent)
    rj, parents = list(engine.layout.rotation_joints), engine.skeleton.parents
    for s, (a, b) in enumerate(controls.segments):
        one = Controls(controls.points[s:s + 1], controls.origins[s:s + 1], [(0, b - a)], controls.template,
                       controls.frame_time)
        dec = engine.decode(one)
        deg = np.degrees(Q.angle_between(dec.rotations[:, rj], clip.rotations[a:b + 1, rj])).mean()
        cm = np.linalg.norm(Q.fk(dec.rotations, dec.positions, parents)[1]
                            - Q.fk(clip.rotations[a:b + 1], clip.positions[a:b + 1], parents)[1], axis=-1).mean()
        np.testing.assert_allclose(fit[s], [deg, cm], rtol=0.02, atol=0.01)  # the rig's float32 keys
    record_property("fidelity", f"{fit[:, 0].mean():.2f} deg, {fit[:, 1].mean():.2f} cm")


def test_motion_the_model_does_not_know_is_flagged(source, tmp_path):
    obj = import_bvh(shaken_bvh(tmp_path))
    before = snapshot(obj)
    with temporary(obj):
        assert bpy.ops.anim.splinetween_encode() == {"FINISHED"}
        same(before, snapshot(obj))  # the keys stay the user's, however poorly the model knows them
        fit = latent.fidelity(obj.splinetween_latent)
        assert fit[:, 0].min() > L.WARN_DEG and L.fidelity_problem(fit).endswith(L.POOR)


@pytest.mark.parametrize("which", ["familiar", "unfamiliar"])
def test_neutral_is_the_original_and_amplify_moves_it(source, tmp_path, which, record_property):
    """Targets: joint drift at neutral 0 (the F-curves bit-identical), Amplify 1.5 on one segment moves the
    motion visibly (> 0.5 cm) inside its reach only, back to 1 restores every key bit for bit."""
    obj = fresh_copy(source) if which == "familiar" else import_bvh(reversed_bvh(tmp_path))
    with temporary(obj):
        frames = np.arange(1, int(obj.animation_data.action.frame_range[1]) + 1, 2)
        original, at_rest = snapshot(obj), heads(obj, frames)
        assert bpy.ops.anim.splinetween_encode() == {"FINISHED"}
        same(original, snapshot(obj))
        assert np.array_equal(heads(obj, frames), at_rest)  # drift 0
        st = obj.splinetween_latent
        st.segments[2].amplify = 1.5
        assert st.status == ""
        moved = np.linalg.norm(heads(obj, frames) - at_rest, axis=-1).max(1) * st.cm_per_unit
        a, b = reach(obj, 2)
        inside = (frames >= a) & (frames <= b)
        record_property("amplify_1.5_cm", f"{moved.max():.2f}")
        assert moved[inside].max() > 0.5 and moved[~inside].max() == 0.0
        st.segments[2].amplify = 1.0
        same(original, snapshot(obj))
        assert np.array_equal(heads(obj, frames), at_rest)


def test_a_slider_rewrites_its_segment_and_the_seams_around_it(enc):
    st = enc.splinetween_latent
    before, full = curves(enc), snapshot(enc)
    st.segments[2].amplify = 2.5
    a, b = reach(enc, 2)
    frames = changed_frames(before, curves(enc))
    assert frames.min() >= a and frames.max() <= b and len(frames) > 0.9 * (b - a + 1)
    st.segments[0].timing = 0.6
    a0, b0 = reach(enc, 0)
    frames = changed_frames(before, curves(enc))
    assert set(frames) <= set(range(a0, b0 + 1)) | set(range(a, b + 1))
    after = snapshot(enc)
    for k in full:
        if not (".rotation" in k[0] or k[0] == 'pose.bones["Hips"].location'):
            assert_same_keys(full[k], after[k])  # channels the model does not drive


def test_neutral_sliders_give_back_the_same_keys(enc):
    st = enc.splinetween_latent
    before = snapshot(enc)
    st.segments[1].amplify = 3.0
    st.segments[1].timing = -0.7
    st.segments[3].amplify = 0.0
    if st.principal_names:
        st.segments[1].principal[0] = 2.0
    assert changed_frames(curves(enc), {k: v["co"] for k, v in before.items()}).size
    st.segments[1].amplify, st.segments[1].timing, st.segments[3].amplify = 1.0, 0.0, 1.0
    st.segments[1].principal = (0.0,) * len(st.segments[1].principal)
    after = snapshot(enc)
    for k in before:
        assert_same_keys(before[k], after[k])
    st.segments[4].amplify = 0.5
    assert bpy.ops.anim.splinetween_latent_reset(segment=-1) == {"FINISHED"}
    for k, v in snapshot(enc).items():
        assert_same_keys(before[k], v)


@pytest.mark.torch
def test_an_edit_is_the_backends_edit_layered_on_the_keys_with_smooth_seams(source, enc, engine, record_property):
    """Amplifying segment 3 in Blender moves each bone by the backend's own edit (decode of the amplified
    points against decode of the encoded ones, in the bone's frame), applied to the keys; near the seams
    both decodes ease into the shared frames, so the motion has no step there."""
    from backend.motion.edits import amplify
    st = enc.splinetween_latent
    st.segments[2].amplify = 3.0
    clip = read_bvh(EXAMPLE)
    raw = np.stack([[np.array(enc[LM.raw_name(s, c)]) for c in range(4)] for s in range(len(st.segments))])
    controls = engine.encode(clip)
    # the rig's float32 keys, not the file: their ~6e-8 relative rounding grows by 1 / (smallest feature
    # std, ~1e-3) in normalised units, spread over the principal axes
    np.testing.assert_allclose(raw, controls.points, atol=5e-4)
    pts = raw.copy()
    pts[2] = amplify(raw[2], 3.0)
    neutral, edited = engine.decode(controls, points=raw), engine.decode(controls, points=pts)
    names = list(clip.skeleton.names)
    keys_rot, keys_pos = pose_bvh(bpy.data.objects[source], names, np.arange(1, 274))
    rot, pos = pose_bvh(enc, names, np.arange(1, 274))
    want = Q.mul(keys_rot, Q.mul(Q.inv(neutral.rotations), edited.rotations))
    want_pos = keys_pos + edited.positions - neutral.positions
    seams = [a for a, _ in controls.segments[1:]]
    near = near_seams(controls.segments, 273)
    diff = np.degrees(Q.angle_between(rot, want)).max(1)
    assert diff[~near].max() < 0.01, np.flatnonzero(diff > 0.01)
    assert np.abs(pos[~near] - want_pos[~near]).max() < 0.01
    a, b = reach(enc, 2)
    untouched = np.ones(273, bool)
    untouched[a - 1:b] = False
    assert np.array_equal(rot[untouched], keys_rot[untouched])  # the keys themselves outside the reach
    step = np.degrees(Q.angle_between(rot[1:], rot[:-1]))[:, 1:].max(1)
    at_seams = np.array([max(step[f - 1], step[f]) for f in seams])
    away = np.delete(step, [f for s in seams for f in (s - 1, s)])
    numbers = f"largest joint step at the seams {at_seams.max():.2f} deg, elsewhere {away.max():.2f} deg"
    record_property("seam_steps", numbers)
    print(numbers)
    assert at_seams.max() < away.max()  # no seam steps further than the motion itself does elsewhere


def test_principal_sliders_are_named_from_the_checkpoint(enc):
    names = require_principal()
    st = enc.splinetween_latent
    assert st.principal_names.split("\n") == names and len(names) <= len(st.segments[0].principal)
    before = curves(enc)
    for k in range(len(names)):
        st.segments[2].principal[k] = 1.5
    a, b = reach(enc, 2)
    frames = changed_frames(before, curves(enc))
    assert len(frames) and frames.min() >= a and frames.max() <= b


def test_raw_properties_typed_in_the_ui_re_decode(enc):
    st = enc.splinetween_latent
    name = LM.raw_name(3, 1)
    ui = enc.id_properties_ui(name).as_dict()
    assert ui["soft_max"] > 0 and "Segment 4" in ui["description"]
    before = curves(enc)
    ui_edit(enc, name, 5, float(enc[name][5]) + 4.0)  # the depsgraph handler re-decodes
    a, b = reach(enc, 3)
    frames = changed_frames(before, curves(enc))
    assert len(frames) and frames.min() >= a and frames.max() <= b and st.status == ""
    mid = curves(enc)
    enc[LM.raw_name(0, 2)][0] += 3.0  # by script: no update fires until asked
    assert changed_frames(mid, curves(enc)).size == 0
    assert bpy.ops.anim.splinetween_redecode() == {"FINISHED"}
    a0, b0 = reach(enc, 0)
    frames = changed_frames(mid, curves(enc))
    assert len(frames) and frames.max() <= b0


def test_nan_in_a_raw_property_is_refused_and_nothing_changes(enc):
    st = enc.splinetween_latent
    before = snapshot(enc)
    name = LM.raw_name(2, 1)
    good = float(enc[name][7])
    ui_edit(enc, name, 7, float("nan"))
    assert st.status.startswith(f"{name}[7] is nan; the motion was left as it was")
    with pytest.raises(RuntimeError, match=rf"{name}\[7\] is nan"):
        bpy.ops.anim.splinetween_redecode()
    st.segments[2].amplify = 2.0  # a slider is refused too while the NaN is there
    for k, v in snapshot(enc).items():
        assert_same_keys(before[k], v)
    ui_edit(enc, name, 7, good)
    assert st.status == "" and changed_frames(curves(enc), {k: v["co"] for k, v in before.items()}).size


@pytest.mark.parametrize("bad", ["deleted", "short", "long", "text", "number"])
def test_a_raw_property_missing_or_of_the_wrong_size_is_refused_and_nothing_changes(enc, bad):
    name = LM.raw_name(1, 3)
    d = enc.splinetween_latent.latent_size
    enc.splinetween_latent.segments[1].amplify = 1.7  # (a layer on the curves: its keys must stay as they are)
    before = snapshot(enc)
    if bad == "deleted":
        del enc[name]
    else:
        enc[name] = {"short": [0.5] * (d - 1), "long": [0.5] * (d + 1), "text": "x" * d, "number": 0.5}[bad]
    with pytest.raises(RuntimeError, match=rf"the custom property {name} is missing or has the wrong size \(it "
                                           rf"needs {d} numbers\)"):
        bpy.ops.anim.splinetween_redecode()
    enc.splinetween_latent.segments[1].amplify = 2.0  # a slider is refused too: the panel says why
    assert enc.splinetween_latent.status.startswith(f"the custom property {name} is missing")
    for k, v in snapshot(enc).items():
        assert_same_keys(before[k], v)


def test_keyed_raw_property_re_decodes_on_frame_change(enc):
    name = LM.raw_name(1, 2)
    v = float(enc[name][0])
    enc.keyframe_insert(f'["{name}"]', index=0, frame=1)
    enc[name][0] = v + 5.0
    enc.keyframe_insert(f'["{name}"]', index=0, frame=100)
    bpy.context.scene.frame_set(1)
    at_1 = curves(enc)
    bpy.context.scene.frame_set(100)
    a, b = reach(enc, 1)
    frames = changed_frames(at_1, curves(enc))
    assert len(frames) and frames.min() >= a and frames.max() <= b
    seg = enc.splinetween_latent.segments[3]  # a keyed slider, too
    seg.keyframe_insert("amplify", frame=1)
    seg.amplify = 2.5
    seg.keyframe_insert("amplify", frame=100)
    at_100 = curves(enc)
    bpy.context.scene.frame_set(1)
    assert seg.amplify == 1.0
    a, b = reach(enc, 3)
    frames = changed_frames(at_100, curves(enc))
    assert set(frames) - set(range(*reach(enc, 1))) and frames.max() <= b
