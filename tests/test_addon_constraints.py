"""Bones under constraints, in real (headless) Blender: an IK leg and a Copy Rotation hand.

Keys written under a constraint would change nothing visible.  Inbetween leaves those bones as they were and
names them with the fix; muted constraints (or none) change nothing; a selection of constrained bones only is
refused.  Encode's sliders never write them either.
"""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import (
    assert_same_keys,
    bpy,
    copy_armature,
    disable_addon,
    fresh_scene_with_addon,
    import_bvh,
    select_keys,
    snapshot,
    thin_keys,
    use_test_backend,
)

bpy = bpy()
from blender_addon import preferences  # noqa: E402
from blender_addon.inbetween import fill  # noqa: E402

pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_inbetween
LEG = ("UpperLeg_L", "LowerLeg_L")


@pytest.fixture(scope="module")
def walk():
    fresh_scene_with_addon()
    use_test_backend()
    obj = import_bvh()
    thin_keys(obj, range(1, 92, 15))
    targets = {}
    for name in ("leg_target", "hand_target"):
        empty = bpy.data.objects.new(name, None)
        bpy.context.collection.objects.link(empty)
        targets[name] = empty
    yield obj.name, targets
    disable_addon()


@pytest.fixture
def rig(walk):
    arm = copy_armature(bpy.data.objects[walk[0]])
    name = arm.name
    yield arm, walk[1]
    if name in bpy.data.objects:
        bpy.data.objects.remove(bpy.data.objects[name])


def constrain(arm, targets, ik=True, copy=True):
    cons = []
    if ik:
        c = arm.pose.bones["LowerLeg_L"].constraints.new("IK")
        c.target, c.chain_count = targets["leg_target"], 2
        cons.append(c)
    if copy:
        c = arm.pose.bones["Hand_R"].constraints.new("COPY_ROTATION")
        c.target = targets["hand_target"]
        cons.append(c)
    return cons


def bone_curves(snap, bone):
    return {k: v for k, v in snap.items() if f'"{bone}"' in k[0]}


def settings():
    return preferences.settings(bpy.context)


def test_constrained_bones_are_left_and_named(rig):
    arm, targets = rig
    constrain(arm, targets)
    before = snapshot(arm)
    msg = fill.run(arm, settings(), fill.Options())
    after = snapshot(arm)
    for bone in LEG + ("Hand_R",):
        for k, v in bone_curves(before, bone).items():
            assert_same_keys(v, after[k])  # untouched, handles and all
    hips = after['pose.bones["Hips"].location', 0]
    assert len(hips["co"]) == 91  # the others are filled on every frame
    assert ("3 bones driven by constraints were left as they were: Hand_R (Copy Rotation from hand_target), "
            "LowerLeg_L (IK on LowerLeg_L from leg_target), UpperLeg_L (IK on LowerLeg_L); mute the constraint"
            in msg), msg


def test_muted_or_zero_influence_constraints_change_nothing(rig, walk):
    arm, targets = rig
    plain = copy_armature(bpy.data.objects[walk[0]])
    try:
        ik, copy = constrain(arm, targets)
        ik.mute, copy.influence = True, 0.0
        bpy.context.view_layer.objects.active = arm
        assert OP() == {"FINISHED"}
        bpy.context.view_layer.objects.active = plain
        assert OP() == {"FINISHED"}
        a, b = snapshot(arm), snapshot(plain)
        assert a.keys() == b.keys()
        for k in a:
            assert_same_keys(a[k], b[k])  # the same fill as without constraints
    finally:
        bpy.data.objects.remove(plain)


def test_an_ik_without_target_does_nothing_so_does_not_count(rig):
    arm, targets = rig
    arm.pose.bones["LowerLeg_L"].constraints.new("IK")  # no target: Blender does not evaluate it
    assert "driven by constraints" not in fill.run(arm, settings(), fill.Options())


def test_only_constrained_bones_selected_is_refused(rig):
    arm, targets = rig
    constrain(arm, targets, copy=False)
    select_keys(arm, bones=set(LEG))
    before = snapshot(arm)
    with pytest.raises(RuntimeError, match=r"every bone to fill is driven by a constraint, nothing was changed: 2 "
                                           r"bones .* LowerLeg_L \(IK on LowerLeg_L from leg_target\)"):
        OP()
    after = snapshot(arm)
    for k in before:
        assert_same_keys(before[k], after[k])


def test_encode_names_them_and_its_sliders_never_write_them(rig, walk):
    from blender_addon.latent.armature import encode
    from latent_helpers import AUTOENCODER
    arm, targets = rig
    thin_keys(arm, range(1, 92))  # Encode reads every frame; keep the walk's keys on 1..91
    constrain(arm, targets)
    before = snapshot(arm)
    msg = encode.encode(arm, settings(), AUTOENCODER, 1, 91, 30.0)
    assert "3 bones driven by constraints were left as they were" in msg and "sliders never write them" in msg
    st = arm.splinetween_latent
    assert sorted(st["left"]) == ["Hand_R", "LowerLeg_L", "UpperLeg_L"]
    st.segments[0].amplify = 2.0
    assert st.status == ""
    after = snapshot(arm)
    assert any(not np.array_equal(after[k]["co"], before[k]["co"]) for k in bone_curves(before, "Hips"))
    for bone in LEG + ("Hand_R",):
        for k, v in bone_curves(before, bone).items():
            assert_same_keys(v, after[k])


def test_every_constraint_type_of_this_blender_is_classified():
    from blender_addon.core import constraints
    types = {e.identifier for e in bpy.types.Constraint.bl_rna.properties["type"].enum_items}
    known = set(constraints.OVERRIDES) | set(constraints.CHAINS) | constraints.IGNORED
    assert types <= known, types - known
    assert all(t in constraints.TITLES for t in constraints.OVERRIDES)


def _tails(arm, bone, frames):
    out = []
    for f in frames:
        bpy.context.scene.frame_set(int(f))
        out.append(tuple(arm.matrix_world @ arm.pose.bones[bone].tail))
    return np.array(out)


@pytest.mark.parametrize("kind", ["empty", "bone"])
def test_a_keyed_ik_target_follows_the_models_leg(walk, kind, record_property):
    """The IK target keyed where the shin ends on the key frames: Inbetween moves it between the keys along the
    model's leg (the IK chain follows), its keys stay; the shin's tail lands where the plain fill puts it."""
    from addon_helpers import import_bvh
    frames = np.arange(1, 92)
    keys = list(range(1, 92, 15))
    full = import_bvh()  # every frame keyed: where the shin really ends
    truth = _tails(full, "LowerLeg_L", frames)
    bpy.data.objects.remove(full)
    plain = copy_armature(bpy.data.objects[walk[0]])
    arm = copy_armature(bpy.data.objects[walk[0]])
    made = [plain, arm]
    try:
        bpy.context.view_layer.objects.active = plain
        fill.run(plain, settings(), fill.Options())
        model = _tails(plain, "LowerLeg_L", frames)
        if kind == "empty":
            target = bpy.data.objects.new("foot_target", None)
            bpy.context.collection.objects.link(target)
            made.append(target)
            for f in keys:
                target.location = truth[f - 1]
                target.keyframe_insert("location", frame=f)
            paths, owner = ("location",), target
        else:  # a control bone at the armature's root, as rigs have (Rigify's foot_ik.L)
            bpy.context.view_layer.objects.active = arm
            bpy.ops.object.mode_set(mode="EDIT")
            eb = arm.data.edit_bones.new("foot_ik.L")
            eb.head, eb.tail = (0.0, 0.0, 0.0), (0.0, 5.0, 0.0)
            bpy.ops.object.mode_set(mode="POSE")
            bpy.ops.object.mode_set(mode="OBJECT")
            pb = arm.pose.bones["foot_ik.L"]
            for f in keys:
                pb.location = truth[f - 1]  # rest at the origin, axes the armature's: location = world
                arm.keyframe_insert('pose.bones["foot_ik.L"].location', frame=f)
            paths, owner = ('pose.bones["foot_ik.L"].location',), arm
        ik = arm.pose.bones["LowerLeg_L"].constraints.new("IK")
        if kind == "empty":
            ik.target = target
        else:
            ik.target, ik.subtarget = arm, "foot_ik.L"
        ik.chain_count = 2
        from addon_helpers import channelbag
        before = snapshot(owner) if kind == "bone" else None
        tbag = channelbag(owner)
        old = {i: np.array([tuple(k.co) for k in tbag.fcurves.find(paths[0], index=i).keyframe_points])
               for i in range(3)}
        bpy.context.view_layer.objects.active = arm
        msg = fill.run(arm, settings(), fill.Options())
        label = "foot_target" if kind == "empty" else f"{arm.name}.foot_ik.L"
        assert f"IK target {label} in-betweened from the model's motion" in msg, msg
        for i in range(3):
            co = np.array([tuple(k.co) for k in tbag.fcurves.find(paths[0], index=i).keyframe_points])
            assert co[:, 0].tolist() == frames.tolist()  # keyed on every frame of the gaps ...
            kept = np.isin(co[:, 0], keys)
            assert np.array_equal(co[kept], old[i])  # ... its keys as they were
        if before is not None:
            after = snapshot(owner)
            for bone in LEG:
                for k, v in bone_curves(before, bone).items():
                    assert_same_keys(v, after[k])
        ours = _tails(arm, "LowerLeg_L", frames)
        follow = np.linalg.norm(ours - model, axis=-1)
        # before: the target moved along its own curves between the keys
        for i in range(3):
            fc = tbag.fcurves.find(paths[0], index=i)
            for k in [k for k in fc.keyframe_points if int(round(k.co[0])) not in keys][::-1]:
                fc.keyframe_points.remove(k, fast=True)
            fc.update()
        own = np.linalg.norm(_tails(arm, "LowerLeg_L", frames) - model, axis=-1)
        err_new = np.linalg.norm(ours - truth, axis=-1).mean()
        err_old = np.linalg.norm(_tails(arm, "LowerLeg_L", frames) - truth, axis=-1).mean()
        record_property("shin_tail_vs_plain_fill_cm", f"{follow.mean():.3f} (target on its own curves: {own.mean():.3f})")
        print(f"\n{kind}: shin tail vs the plain fill {follow.mean():.3f} cm mean, {follow.max():.3f} max "
              f"(target on its own Bezier: {own.mean():.3f}); vs the real motion {err_new:.2f} cm (own Bezier "
              f"{err_old:.2f})")
        assert follow.mean() < 0.2 and follow.mean() < 0.25 * own.mean() and err_new < err_old
    finally:
        for o in made:
            if o.name in bpy.data.objects:
                bpy.data.objects.remove(o)
