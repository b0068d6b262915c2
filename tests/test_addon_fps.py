"""Scenes at 24, 60 and 29.97 fps, in real (headless) Blender: the model works in seconds.

The fixture walk (30 fps) is written at 24 and 60 fps (backend.maths.timebase.sample) and imported; the same keys in
seconds are in-betweened in each scene.  The 24 fps fill matches the 30 fps fill at the same times, the keys
stay bit for bit, the gap limit is 2 s in the scene's frames, and Encode's neutral is the original at 24 fps.
"""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import (
    TEST_CLIP,
    assert_same_keys,
    bpy,
    copy_armature,
    disable_addon,
    driven,
    fresh_scene_with_addon,
    import_bvh,
    keys_on,
    prefs,
    snapshot,
    thin_keys,
    use_test_backend,
)

bpy = bpy()
from backend.maths import quat_np, timebase  # noqa: E402
from blender_addon import bridge  # noqa: E402
from blender_addon.inbetween import fill  # noqa: E402

pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_inbetween
SECONDS = 8  # the part of the walk used: 241 frames at 30 fps


def _write_at(folder, fps: float):
    """The fixture walk's first ``SECONDS`` written as a BVH at ``fps``."""
    from dataclasses import replace

    from backend.formats.bvh import read_bvh, write_bvh
    clip = read_bvh(TEST_CLIP)
    n = int(SECONDS * fps) + 1
    rot, pos = timebase.sample(quat_np.fix_hemisphere(clip.rotations), clip.positions, np.arange(n) * 30.0 / fps)
    path = folder / f"walk_{fps:g}.bvh"
    write_bvh(path, replace(clip, rotations=rot, positions=pos, frame_time=1.0 / fps, meta={}, name=path.stem))
    return path


def _set_fps(fps: int, base: float = 1.0):
    bpy.context.scene.render.fps, bpy.context.scene.render.fps_base = fps, base


def _pose(obj, frames):
    """Armature-space rotations [n, bones, 4] and heads [n, bones, 3] at (fractional) scene frames."""
    rot, head = [], []
    for f in frames:
        bpy.context.scene.frame_set(int(np.floor(f)), subframe=float(f - np.floor(f)))
        rot.append([tuple(pb.matrix.to_quaternion()) for pb in obj.pose.bones])
        head.append([tuple(obj.matrix_world @ pb.head) for pb in obj.pose.bones])
    return np.array(rot), np.array(head)


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    fresh_scene_with_addon()
    use_test_backend()
    folder = tmp_path_factory.mktemp("fps")
    objs = {fps: import_bvh(_write_at(folder, fps)).name for fps in (30, 24, 60)}
    for fps, step in ((30, 15), (24, 12), (60, 30)):
        thin_keys(bpy.data.objects[objs[fps]], range(1, SECONDS * fps + 2, step))
    yield objs
    _set_fps(30)
    disable_addon()


@pytest.fixture
def copy_of(scenes):
    made = []

    def make(fps):
        arm = copy_armature(bpy.data.objects[scenes[fps]])
        made.append(arm.name)
        return arm
    yield make
    for name in made:
        if name in bpy.data.objects:
            bpy.data.objects.remove(bpy.data.objects[name])
    _set_fps(30)


def _keys_kept(before, after, frames):
    """Every key on ``frames`` bit for bit (its auto handles follow the new neighbours, as at 30 fps)."""
    assert after.keys() == before.keys()
    for path, old in before.items():
        assert_same_keys(old, after[path], keys_on(old, frames), keys_on(after[path], frames),
                         skip=("handle_left", "handle_right"))


def test_24_fps_fills_like_30_fps_at_the_same_times(copy_of, record_property):
    """Keys every 12 frames at 24 fps = every 15 at 30 fps: the same motion at the same times; keys bit for bit."""
    a30 = copy_of(30)
    _set_fps(30)
    assert OP() == {"FINISHED"}
    a24 = copy_of(24)
    _set_fps(24)
    keys24 = list(range(1, 24 * SECONDS + 2, 12))
    before = snapshot(a24)
    assert OP() == {"FINISHED"}
    _keys_kept(before, snapshot(a24), keys24)
    frames24 = np.arange(1, 24 * SECONDS + 2)
    r24, h24 = _pose(a24, frames24)
    r30, h30 = _pose(a30, 1 + (frames24 - 1) * 30 / 24)  # the same seconds in the 30 fps scene
    deg = np.degrees(quat_np.angle_between(quat_np.normalize(r24), quat_np.normalize(r30)))
    cm = np.linalg.norm(h24 - h30, axis=-1)
    record_property("rot_diff_deg_mean_max", f"{deg.mean():.3f} {deg.max():.3f}")
    record_property("head_diff_cm_mean_max", f"{cm.mean():.3f} {cm.max():.3f}")
    print(f"\n24 fps vs 30 fps at the same times: joint rotation {deg.mean():.3f} deg mean, {deg.max():.3f} max; "
          f"heads {cm.mean():.3f} cm mean, {cm.max():.3f} max")
    # the 30 fps curves are read between their per-frame keys (Blender's Bezier between frames): near, not equal
    assert deg.mean() < 0.3 and cm.mean() < 0.3
    # the old behaviour (24 fps keys taken as 30 fps) is far off: the model's timing 25 % slow
    old = copy_of(24)
    run = fill.run(old, prefs_settings(), fill.Options(), 30.0)
    assert run.startswith("Inbetweened")
    r_old, _ = _pose(old, frames24)
    assert np.degrees(quat_np.angle_between(quat_np.normalize(r_old), quat_np.normalize(r30))).mean() > 3 * deg.mean()


def prefs_settings():
    from blender_addon import preferences
    return preferences.settings(bpy.context)


def test_60_fps_fills_gaps_of_two_seconds(copy_of):
    """At 60 fps a 2 s gap is 120 frames: filled (it would be refused at 30 fps); keys bit for bit."""
    arm = copy_of(60)
    _set_fps(60)
    keys = [1, 121, 241]
    thin_keys(arm, keys)
    before = snapshot(arm)
    msg = fill.run(arm, prefs_settings(), fill.Options(), 60.0)
    assert msg.startswith("Inbetweened 2 gaps")
    after = snapshot(arm)
    _keys_kept(before, after, keys)
    rot = next(v for k, v in after.items() if driven(k[0]) and "Hips" in k[0] and "rotation" in k[0])
    assert len(rot["co"]) == 241  # every frame keyed


@pytest.mark.parametrize("fps, base, gap, limit, ok", [(24, 1.0, 60, 48, 48), (60, 1.0, 150, 120, 120),
                                                       (30, 1.001, 60, 59, 45)])
def test_the_gap_limit_is_two_seconds_in_the_scenes_frames(copy_of, fps, base, gap, limit, ok):
    arm = copy_of(fps)  # keyed every 0.5 s
    _set_fps(fps, base)
    thin_keys(arm, [1, 1 + gap])
    before = snapshot(arm)
    rate = f"{fps / base:.4g} fps"
    with pytest.raises(RuntimeError, match=(rf"the gap between the selected keys at frames 1 and {1 + gap} is {gap} "
                                            rf"frames \(.* s\); the model fills gaps of up to {limit} frames "
                                            rf"\(2 s at {rate}\)")):
        OP()
    after = snapshot(arm)
    for k in before:
        assert_same_keys(before[k], after[k])
    arm = copy_of(fps)
    thin_keys(arm, [1, 1 + ok])
    assert OP() == {"FINISHED"}


def test_inbetween_at_24_fps_stays_editable(copy_of):
    """The fill's control points live on the model's grid; the sliders decode there and read back at the scene's
    frames: they write between the keys, never the keys; neutral is the fill bit for bit; Resample 2x moves the
    keys exactly."""
    from latent_helpers import changed_frames, curves, segment_frames
    arm = copy_of(24)
    _set_fps(24)
    keys = list(range(1, 24 * SECONDS + 2, 12))
    assert OP() == {"FINISHED"}
    st = arm.splinetween_latent
    assert st.active and st.task == "INBETWEEN" and (st.frame_start, st.frames) == (1, 24 * SECONDS + 1)
    assert list(st["model_keys"]) == [15 * i for i in range(len(keys))]
    assert st.segments[-1].end == 24 * SECONDS and all((s.start % 12, s.end % 12) == (0, 0) for s in st.segments)
    before, full = curves(arm), snapshot(arm)
    st.segments[1].amplify = 2.5
    assert st.status == ""
    a, b = segment_frames(arm, 1)
    frames = changed_frames(before, curves(arm))
    assert len(frames) and frames.min() > a and frames.max() < b and not set(frames) & set(keys)
    after = snapshot(arm)
    for k in full:
        assert_same_keys(full[k], after[k], keys_on(full[k], keys), keys_on(after[k], keys))
    st.segments[1].amplify = 1.0
    for k, v in snapshot(arm).items():
        assert_same_keys(full[k], v)
    assert bpy.ops.anim.splinetween_resample(mode="FACTOR", factor=2.0) == {"FINISHED"}
    moved, now = [2 * (k - 1) + 1 for k in keys], snapshot(arm)
    for k in full:
        o, n = keys_on(full[k], keys), keys_on(now[k], moved)
        assert np.array_equal(full[k]["co"][o, 1], now[k]["co"][n, 1])


def test_encode_at_24_fps_neutral_is_the_original(scenes, tmp_path, record_property):
    """Encode resamples to 30 fps and decodes back; neutral sliders leave every key bit for bit, an edit moves
    its segment, and back to neutral restores every key."""
    from latent_helpers import AUTOENCODER
    prefs().autoencoder = str(AUTOENCODER)
    src = import_bvh(_write_at(tmp_path, 24))  # every frame keyed, as Encode reads it
    try:
        _set_fps(24)
        bpy.context.view_layer.objects.active = src
        original = snapshot(src)
        assert bpy.ops.anim.splinetween_encode() == {"FINISHED"}
        st = src.splinetween_latent
        assert st.active and "model_segments" in st
        model = np.array(st["model_segments"]).reshape(-1, 2)
        assert model[-1, 1] == 240 and st.segments[-1].end == 192  # 8 s: 192 frames at 24 fps, 240 at 30
        after = snapshot(src)
        for k in original:
            assert_same_keys(original[k], after[k])
        fit = np.array(st["fidelity"]).reshape(-1, 2)
        record_property("encode_24fps_fidelity_deg_cm", fit.mean(0).round(2).tolist())
        st.segments[1].amplify = 1.5
        assert st.status == ""
        moved = snapshot(src)
        assert any(not np.array_equal(moved[k]["co"], original[k]["co"]) for k in original)
        st.segments[1].amplify = 1.0
        back = snapshot(src)
        for k in original:
            assert_same_keys(original[k], back[k])
    finally:
        bpy.data.objects.remove(src)
        _set_fps(30)


def test_model_info_converts_the_gap_limit():
    info = bridge.describe(bridge.BackendSettings())
    assert info.frame_time == 1 / 30 and info.max_gap == 60
    assert [info.scene_max_gap(f) for f in (24, 25, 30, 50, 60)] == [48, 50, 60, 100, 120]
    assert info.same_rate(30) and not info.same_rate(24)


def test_encode_counts_the_models_frames(scenes, tmp_path):
    """At 60 fps the autoencoder's minimum (its frames at 30 fps) is twice as many scene frames."""
    from blender_addon.core.errors import Refusal
    from blender_addon.latent.armature import encode
    from latent_helpers import AUTOENCODER, info
    least = 2 * (int(info()["config"]["min_window"]) - 1) + 1
    src = import_bvh(_write_at(tmp_path, 60))
    try:
        with pytest.raises(Refusal, match=rf"frames 1-{least - 1} are {least - 1} frames; the model needs at least "
                                          rf"{least} at 60 fps"):
            encode.encode(src, prefs_settings(), AUTOENCODER, 1, least - 1, 60.0)
        assert encode.encode(src, prefs_settings(), AUTOENCODER, 1, least, 60.0).startswith("Encoded frames 1-")
    finally:
        bpy.data.objects.remove(src)
        _set_fps(30)
