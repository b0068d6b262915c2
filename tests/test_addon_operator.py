"""The Inbetween operator end to end, in real (headless) Blender, in-process backend.

Scenario of the issue: import the TEST-split clip, delete every key except every 15th frame,
select the remaining keys, run Inbetween; keys kept exactly, every gap filled, nothing else
touched, closer to the original than Blender's default interpolation, one undo restores all.
Each test works on its own copy of the thinned armature (own action), made by ``thinned``.
"""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import (
    assert_same_keys,
    bpy,
    channelbag,
    copy_armature,
    disable_addon,
    driven,
    fresh_scene_with_addon,
    heads,
    import_bvh,
    keys_on,
    prefs,
    select_keys,
    snapshot,
    thin_every,
    use_test_backend,
)

bpy = bpy()
from blender_addon.core import rig_math  # noqa: E402
from blender_addon.io import scene as scene_io  # noqa: E402
from blender_addon.io.compat import new_fcurve  # noqa: E402

pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_inbetween


@pytest.fixture(scope="module")
def walk():
    fresh_scene_with_addon()
    use_test_backend()
    obj = import_bvh()
    n = int(obj.animation_data.action.frame_range[1])
    gt = heads(obj, range(1, n + 1))
    _, keys = thin_every(obj)
    inner = np.array([f for f in range(1, n + 1) if f not in keys])
    yield {"name": obj.name, "n": n, "keys": keys, "inner": inner, "gt": gt}
    disable_addon()


@pytest.fixture
def thinned(walk):
    source = bpy.data.objects[walk["name"]]  # by name: an undo re-creates the data
    arm = copy_armature(source)
    name = arm.name
    yield arm
    if name in bpy.data.objects:
        bpy.data.objects.remove(bpy.data.objects[name])
    bpy.context.view_layer.objects.active = bpy.data.objects[walk["name"]]


def test_fills_every_gap_and_keeps_the_keys(walk, thinned):
    before = snapshot(thinned)
    assert OP() == {"FINISHED"}
    after = snapshot(thinned)
    assert after.keys() == before.keys()
    generated = bpy.types.Keyframe.bl_rna.properties["type"].enum_items["GENERATED"].value
    for path, old in before.items():
        new = after[path]
        if not driven(path[0]):
            assert_same_keys(old, new)  # the channels the model does not drive: untouched
            continue
        assert np.array_equal(new["co"][:, 0], np.arange(1, walk["n"] + 1)), path  # every frame keyed
        kept = keys_on(new, walk["keys"])
        assert_same_keys(old, new, rows_b=kept, skip=("handle_left", "handle_right"))  # keys kept exactly
        assert (new["type"][~kept] == generated).all() and not new["select_control_point"][~kept].any()
        if "rotation_euler" in path[0]:
            assert np.abs(np.diff(new["co"][:, 1])).max() < np.pi / 2, path  # no 360-degree flips


@pytest.mark.torch
def test_matches_the_engine_on_the_file(walk, thinned):
    """The filled curves are the backend's own in-betweening of the file (the conversion is exact)."""
    import torch

    from addon_helpers import TEST_CLIP
    from backend.formats.bvh import read_bvh
    from backend.motion.engine import DEFAULT_INBETWEEN, Engine
    torch.set_num_threads(1)
    clip = read_bvh(TEST_CLIP)
    out, _ = Engine(DEFAULT_INBETWEEN, "cpu").inbetween(clip, [k - 1 for k in walk["keys"]])
    assert OP() == {"FINISHED"}
    bag, names = channelbag(thinned), list(clip.skeleton.names)
    rig = scene_io.rig_frames(thinned, names, clip.skeleton.offsets)
    rot, pos = rig_math.blender_to_bvh(rig, *scene_io.read_pose(thinned, bag, names, np.arange(1, walk["n"] + 1)))
    from backend.maths import quat_np
    _, ours = quat_np.fk(rot, pos, clip.skeleton.parents)
    _, theirs = quat_np.fk(out.rotations, out.positions, clip.skeleton.parents)
    assert np.linalg.norm(ours - theirs, axis=-1).max() < 2e-3  # cm: float32 keys in, float32 keys out


def _mpjpe(walk, obj):
    got = heads(obj, walk["inner"])
    return float(np.linalg.norm(got - walk["gt"][walk["inner"] - 1], axis=-1).mean())


def test_closer_than_blenders_default_interpolation(walk, thinned, record_property):
    """Blender's default for these keys: BEZIER with AUTO_CLAMPED handles (and LINEAR, as imported)."""
    linear = _mpjpe(walk, thinned)
    bezier_arm = copy_armature(thinned)
    ip = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["BEZIER"].value
    ht = bpy.types.Keyframe.bl_rna.properties["handle_left_type"].enum_items["AUTO_CLAMPED"].value
    for fc in channelbag(bezier_arm).fcurves:
        n = len(fc.keyframe_points)
        for attr, v in (("interpolation", ip), ("handle_left_type", ht), ("handle_right_type", ht)):
            fc.keyframe_points.foreach_set(attr, np.full(n, v, np.int32))
        fc.update()
    bezier = _mpjpe(walk, bezier_arm)
    bpy.data.objects.remove(bezier_arm)
    bpy.context.view_layer.objects.active = thinned
    assert OP() == {"FINISHED"}
    model = _mpjpe(walk, thinned)
    numbers = f"MPJPE on the gap frames: model {model:.3f} cm, Blender BEZIER {bezier:.3f} cm, LINEAR {linear:.3f} cm"
    print(numbers)
    record_property("mpjpe", numbers)
    assert model < 0.95 * bezier, numbers


def test_undo_restores_everything(walk, thinned):
    name = thinned.name
    bpy.ops.ed.undo_push(message="before Inbetween")
    before = snapshot(thinned)
    assert OP("EXEC_DEFAULT", True) == {"FINISHED"}  # undo=True: pushed like a click in the UI
    changed = snapshot(bpy.data.objects[name])
    assert any(len(changed[k]["co"]) != len(before[k]["co"]) for k in before)
    assert bpy.ops.ed.undo() == {"FINISHED"}
    after = snapshot(bpy.data.objects[name])  # undo reloads data: fetch by name again
    assert after.keys() == before.keys()
    for k in before:
        assert_same_keys(before[k], after[k])


def test_keys_outside_the_selection_are_untouched(walk, thinned):
    sel = [k for k in walk["keys"] if 31 <= k <= 91]
    select_keys(thinned, sel)
    before, frames = snapshot(thinned), np.arange(1, walk["n"] + 1)
    heads_before = heads(thinned, frames)
    assert OP() == {"FINISHED"}
    after = snapshot(thinned)
    for path, old in before.items():
        x_old, x_new = old["co"][:, 0], after[path]["co"][:, 0]
        out_old, out_new = (x_old < sel[0]) | (x_old > sel[-1]), (x_new < sel[0]) | (x_new > sel[-1])
        assert_same_keys(old, after[path], out_old, out_new)
        assert_same_keys(old, after[path], keys_on(old, sel), keys_on(after[path], sel),
                         skip=("handle_left", "handle_right"))
    outside = (frames < sel[0]) | (frames > sel[-1])
    assert np.array_equal(heads(thinned, frames[outside]), heads_before[outside])


def test_only_bones_with_selected_keys_unless_all_bones(walk, thinned):
    arm_bones = {"UpperArm_L", "LowerArm_L", "Hand_L"}
    select_keys(thinned, None, arm_bones)
    before = snapshot(thinned)
    assert OP() == {"FINISHED"}
    after = snapshot(thinned)
    for path, old in before.items():
        touched = path[0].split('"')[1] in arm_bones and driven(path[0])
        assert (len(after[path]["co"]) > len(old["co"])) == touched, path
        if not touched:
            assert_same_keys(old, after[path])
    assert OP(all_bones=True) == {"FINISHED"}
    final = snapshot(thinned)
    assert all(len(final[p]["co"]) == walk["n"] for p in final if driven(p[0]))


def test_every_n_frames_follows_the_every_frame_motion(walk, thinned):
    """BEZIER keys every 5 frames hit the model's poses on their frames, and their handles carry
    the motion between them: far closer to the every-frame result than the thinned keys are."""
    dense = copy_armature(thinned)
    linear = heads(thinned, walk["inner"])
    assert OP() == {"FINISHED"}
    bpy.context.view_layer.objects.active = thinned
    assert OP(key_mode="EVERY_N", step=5) == {"FINISHED"}
    bez = bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items["BEZIER"].value
    sparse = snapshot(thinned)
    k = walk["keys"]
    expect = sorted(set(k) | {a + d for a, b in zip(k, k[1:], strict=False) for d in (5, 10) if a + d < b})
    for path, keys in sparse.items():
        if driven(path[0]):
            assert keys["co"][:, 0].tolist() == expect, path
            assert (keys["interpolation"][~keys_on(keys, k)] == bez).all()
    on_keys = np.setdiff1d(expect, k)
    np.testing.assert_allclose(heads(thinned, on_keys), heads(dense, on_keys), atol=1e-3)
    target = heads(dense, walk["inner"])
    err = np.linalg.norm(heads(thinned, walk["inner"]) - target, axis=-1).mean()
    base = np.linalg.norm(linear - target, axis=-1).mean()
    bpy.data.objects.remove(dense)
    print(f"every 5 frames vs every frame: {err:.3f} cm; thinned keys vs every frame: {base:.3f} cm")
    assert err < 0.5 * base, (err, base)


def test_blend(walk, thinned):
    names = [pb.name for pb in thinned.pose.bones]
    inner = walk["inner"][walk["inner"] < 60]

    def pose(obj):
        return scene_io.read_pose(obj, channelbag(obj), names, inner)

    full, none = copy_armature(thinned), copy_armature(thinned)
    start = pose(thinned)
    for obj, blend in ((full, 1.0), (none, 0.0), (thinned, 0.5)):
        bpy.context.view_layer.objects.active = obj
        assert OP(blend=blend) == {"FINISHED"}
    q1, l1 = pose(full)
    q0, l0 = pose(none)
    qh, lh = pose(thinned)
    np.testing.assert_allclose(np.abs(np.sum(q0 * start[0], -1)), 1, atol=1e-6)  # blend 0: curves as they were
    np.testing.assert_allclose(l0, start[1], atol=1e-4)
    np.testing.assert_allclose(np.abs(np.sum(qh * rig_math.slerp(q0, q1, 0.5), -1)), 1, atol=1e-6)
    np.testing.assert_allclose(lh, 0.5 * (l0 + l1), atol=1e-4)
    for obj in (full, none):
        bpy.data.objects.remove(obj)


@pytest.mark.torch
def test_both_backend_modes_write_the_same_keys(walk, thinned, monkeypatch):
    import torch

    from blender_addon import bridge
    # the same math threads on both sides: a matrix product summed in another order differs in the
    # last bit (CI exports OMP_NUM_THREADS=2 while this process runs on one)
    monkeypatch.setenv("SPLINETWEEN_THREADS", str(torch.get_num_threads()))
    bridge.shutdown()
    other = copy_armature(thinned)
    bpy.context.view_layer.objects.active = thinned
    try:
        assert OP() == {"FINISHED"}  # in-process
        prefs().backend_mode = "SUBPROCESS"
        bpy.context.view_layer.objects.active = other
        assert OP() == {"FINISHED"}
        assert bridge.backend_process() is not None and bridge.backend_process().alive()
        a, b = snapshot(thinned), snapshot(other)
        for k in a:
            assert_same_keys(a[k], b[k])
    finally:
        use_test_backend()
        bridge.shutdown()
        bpy.data.objects.remove(other)


def _to_quaternion_curves(obj, bone):
    """Re-key a bone's Euler rotation as quaternion curves on the same frames."""
    bag = channelbag(obj)
    path = scene_io.bone_path(bone, "rotation_euler")
    frames = channelbag(obj).fcurves.find(path, index=0).keyframe_points
    x = np.array([k.co.x for k in frames])
    q = rig_math.euler_to_quat(scene_io.read_channel(obj, bag, bone, "rotation_euler", 3, x), "ZXY")
    for i in range(3):
        bag.fcurves.remove(bag.fcurves.find(path, index=i))
    for i in range(4):
        fc = new_fcurve(bag, scene_io.bone_path(bone, "rotation_quaternion"), i, bone)
        fc.keyframe_points.add(len(x))
        fc.keyframe_points.foreach_set("co", np.stack([x, q[:, i]], -1).astype(np.float32).ravel())
        fc.keyframe_points.foreach_set("select_control_point", np.ones(len(x), bool))
        fc.update()
    obj.pose.bones[bone].rotation_mode = "QUATERNION"


def test_quaternion_bones_and_bones_without_curves(walk, thinned):
    """A QUATERNION bone gets the same rotations as its Euler twin; with All Bones a bone that had
    no rotation curves gets them, holding its static pose outside the filled range."""
    names = [pb.name for pb in thinned.pose.bones]
    euler = copy_armature(thinned)
    bpy.context.view_layer.objects.active = thinned
    _to_quaternion_curves(thinned, "Spine")
    bag = channelbag(thinned)
    hand = scene_io.bone_path("Hand_R", "rotation_euler")
    static = rig_math.euler_to_quat(scene_io.read_channel(thinned, bag, "Hand_R", "rotation_euler", 3, [20])[0], "ZXY")
    for i in range(3):
        bag.fcurves.remove(bag.fcurves.find(hand, index=i))
    thinned.pose.bones["Hand_R"].rotation_euler = rig_math.quat_to_euler(static, "ZXY")
    select_keys(thinned, walk["keys"][:5])
    select_keys(euler, walk["keys"][:5])
    assert OP(all_bones=True) == {"FINISHED"}
    bpy.context.view_layer.objects.active = euler
    assert OP(all_bones=True) == {"FINISHED"}
    inner = walk["inner"][walk["inner"] < walk["keys"][4]]
    qa, _ = scene_io.read_pose(thinned, channelbag(thinned), names, inner)
    qb, _ = scene_io.read_pose(euler, channelbag(euler), names, inner)
    spine = names.index("Spine")
    np.testing.assert_allclose(np.abs(np.sum(qa[:, spine] * qb[:, spine], -1)), 1, atol=1e-6)
    w = np.array([channelbag(thinned).fcurves.find(scene_io.bone_path("Spine", "rotation_quaternion"), index=0)
                  .evaluate(f) for f in inner])
    assert (w > 0).all() or (w < 0).all()  # one hemisphere: no sign flips inside the gaps
    after = scene_io.read_pose(thinned, channelbag(thinned), names, [walk["keys"][4] + 30])[0][0, names.index("Hand_R")]
    assert abs(abs(np.dot(after, static)) - 1) < 1e-6
    hand_keys = channelbag(thinned).fcurves.find(hand, index=0).keyframe_points
    assert [int(k.co.x) for k in hand_keys] == list(range(walk["keys"][0], walk["keys"][4] + 1))
    bpy.data.objects.remove(euler)
