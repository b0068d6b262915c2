"""Encode and the sliders, in real (headless) Blender with the in-process backend.

An example clip is imported with Blender's BVH importer and encoded; the decoded keys match the
file within the autoencoder's error and the backend's own decode, a slider rewrites its segment
and nothing else, neutral sliders give back the very same keys, raw properties typed in the UI
re-decode, and a NaN is refused with the animation left as it was.
"""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import assert_same_keys, bpy, snapshot
from latent_helpers import source  # noqa: F401  (module fixture: the example armature)
from latent_helpers import (temporary, AUTOENCODER, EXAMPLE, changed_frames, curves, encoded_copy, encoded_segments,
                            info, pose_bvh,
                            require_principal, reach, ui_edit)

bpy = bpy()
from backend import quat_np as Q  # noqa: E402
from blender_addon.core import latent_math as LM  # noqa: E402

pytestmark = pytest.mark.blender


@pytest.fixture
def enc(source):
    with temporary(encoded_copy(source)) as obj:
        yield obj


@pytest.fixture(scope="module")
def engine():
    from backend.engine import Engine
    return Engine(AUTOENCODER, "cpu")


@pytest.mark.torch
def test_encode_matches_the_file_within_the_autoencoders_error(enc, engine, record_property):
    from backend.bvh import read_bvh
    clip = read_bvh(EXAMPLE)
    st = enc.splinetween_latent
    assert (st.frame_start, st.frames, st.latent_size) == (1, 273, engine.ckpt.config.latent)
    assert len(st.segments) == len(encoded_segments(273))  # 5 of 61 frames, 10 of 31
    rot, pos = pose_bvh(enc, list(clip.skeleton.names), np.arange(1, 274))
    err = np.degrees(Q.angle_between(rot, clip.rotations))[:, 1:].mean()  # joint_Root is never rotated
    ref = engine.reconstruct([clip])[0]
    bound = 2 * info()["val_rot_deg"]
    record_property("rotation_error", f"{err:.2f} deg (bound {bound:.2f})")
    print(f"mean rotation error after Encode: {err:.2f} deg (checkpoint val {info()['val_rot_deg']:.2f})")
    assert err < bound
    far = ~near_seams(engine.encode(clip).segments, 273)  # away from the seams, the backend's own decode ...
    assert np.degrees(Q.angle_between(rot[far], ref.rotations[far])).max() < 0.01
    assert np.abs(pos[far] - ref.positions[far]).max() < 0.01  # ... in cm, to float32 keys and per-segment batches


def near_seams(segments, frames: int) -> np.ndarray:
    """Frames where a segment eases into a shared end frame (latent_math.ramp)."""
    near = np.zeros(frames, bool)
    for a, b in segments:
        r = len(LM.ramp(b - a + 1))
        near[a:a + r] |= a > 0
        near[b - r + 1:b + 1] |= b < frames - 1
    return near


def test_encode_writes_only_its_range(source):
    before = snapshot(bpy.data.objects[source])
    obj = encoded_copy(source, frame_range="CUSTOM", frame_start=40, frame_end=140)
    after = snapshot(obj)
    generated = bpy.types.Keyframe.bl_rna.properties["type"].enum_items["GENERATED"].value
    written = 0
    for k, old in before.items():
        new = after[k]
        x_old, x_new = old["co"][:, 0], new["co"][:, 0]
        assert_same_keys(old, new, (x_old < 40) | (x_old > 140), (x_new < 40) | (x_new > 140))
        if not np.array_equal(old["co"], new["co"]):
            written += 1
            inside = (x_new >= 40) & (x_new <= 140)
            assert x_new[inside].tolist() == list(range(40, 141)) and (new["type"][inside] == generated).all()
    assert written == 22 * 3 + 3  # every rotation channel and the Hips location
    bpy.data.objects.remove(obj)


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
def test_an_edit_is_the_backends_edit_with_smooth_seams(enc, engine, record_property):
    """Amplifying segment 2 in Blender gives what Engine.decode gives for the same edited points;
    near the seams both ease each segment into the shared frame's pose (the mean of both sides)."""
    from backend.bvh import read_bvh
    from backend.edits import amplify
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
    ref = engine.decode(controls, points=pts)
    rot, pos = pose_bvh(enc, list(clip.skeleton.names), np.arange(1, 274))
    seams = [a for a, _ in controls.segments[1:]]
    near = near_seams(controls.segments, 273)
    diff = np.degrees(Q.angle_between(rot, ref.rotations)).max(1)
    assert diff[~near].max() < 0.01, np.flatnonzero(diff > 0.01)
    assert np.abs(pos[~near] - ref.positions[~near]).max() < 0.01
    assert np.array_equal(near[seams], np.ones(len(seams), bool))

    def seam_steps(r):
        step = np.degrees(Q.angle_between(r[1:], r[:-1]))[:, 1:].max(1)
        return np.array([max(step[f - 1], step[f]) for f in seams])

    ours, theirs = seam_steps(rot), seam_steps(ref.rotations)
    step = np.degrees(Q.angle_between(rot[1:], rot[:-1]))[:, 1:].max(1)
    away = np.delete(step, [f for s in seams for f in (s - 1, s)])
    numbers = (f"largest joint step at the seams: add-on {ours.round(2)}, engine {theirs.round(2)} deg; "
               f"elsewhere in the edited motion {away.max():.2f} deg")
    record_property("seam_steps", numbers)
    print(numbers)
    assert np.abs(ours - theirs).max() < 0.1  # the add-on and the engine ease seams the same way
    assert ours.max() < away.max()  # and no seam steps further than the motion itself does elsewhere


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
