"""Inbetween on linked / overridden actions and locked F-curves (issue 17, real bpy): a linked or
overridden action is refused before anything is written, with the fix named; locked curves are
left exactly as they were and named in the report."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import (
    assert_same_keys,
    bpy,
    channelbag,
    copy_armature,
    disable_addon,
    fresh_scene_with_addon,
    import_bvh,
    prefs,
    select_keys,
    snapshot,
    thin_keys,
)

bpy = bpy()
from blender_addon import preferences  # noqa: E402
from blender_addon.inbetween import fill  # noqa: E402

pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_inbetween
KEYS = [1, 16, 31, 46, 61]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """A local armature, and lib.blend holding its action 'WalkLib'."""
    fresh_scene_with_addon()
    prefs().backend_mode = "IN_PROCESS"
    obj = import_bvh()
    thin_keys(obj, KEYS)
    act = obj.animation_data.action
    act.name, act.use_fake_user = "WalkLib", True
    path = tmp_path_factory.mktemp("lib") / "lib.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    yield obj.name, path
    disable_addon()


@pytest.fixture
def arm(library):
    a = copy_armature(bpy.data.objects[library[0]])
    for o in bpy.data.objects:
        o.select_set(o is a)
    yield a
    bpy.data.objects.remove(a)


def _link_action(path):
    with bpy.data.libraries.load(str(path), link=True) as (_, dst):
        dst.actions = ["WalkLib"]
    return next(a for a in bpy.data.actions if a.library is not None and a.name == "WalkLib")


def _refused(obj, match):
    before = snapshot(obj)
    with pytest.raises(RuntimeError, match=match):
        OP()
    after = snapshot(obj)
    assert after.keys() == before.keys()
    for k in before:
        assert_same_keys(before[k], after[k])


def test_linked_action_is_refused_before_any_write(arm, library):
    linked = _link_action(library[1])
    arm.animation_data.action = linked
    select_keys(arm, KEYS)
    _refused(arm, rf"the action 'WalkLib' of {arm.name} is linked from .*lib\.blend, so its keys cannot be "
                  r"changed; nothing was changed \(make it local first: Object > Relations > Make Local > All")
    assert all(len(fc.keyframe_points) == len(KEYS) for fc in channelbag(arm).fcurves)
    # the fix named in the message works: Make Local > All, then Inbetween fills the gaps
    assert bpy.ops.object.make_local(type="ALL") == {"FINISHED"}
    assert arm.animation_data.action.library is None
    select_keys(arm, KEYS)
    assert OP() == {"FINISHED"}


def test_overridden_action_is_refused_before_any_write(arm, library):
    override = _link_action(library[1]).override_create(remap_local_usages=True)
    arm.animation_data.action = override
    select_keys(arm, KEYS)
    _refused(arm, rf"the action '{override.name}' of {arm.name} is a library override of .*lib\.blend, whose keys cannot "
                  r"be removed or added; nothing was changed \(make it local first")


def test_locked_fcurves_are_skipped_and_named(arm):
    select_keys(arm, KEYS)
    bag = channelbag(arm)
    locked = [bag.fcurves.find('pose.bones["Hips"].location', index=0),
              bag.fcurves.find('pose.bones["Spine"].rotation_euler', index=2)]
    for fc in locked:
        fc.lock = True
    before = snapshot(arm)
    message = fill.run(arm, preferences.settings(), fill.Options(editable=True))
    after = snapshot(arm)
    for fc in locked:
        key = (fc.data_path, fc.array_index)
        assert_same_keys(before[key], after[key])
    assert "2 locked F-curves left as they were: Spine rotation_euler[2], Hips location[0] (unlock them to fill " \
           "them)" in message or "2 locked F-curves left as they were: Hips location[0], Spine rotation_euler[2]" \
           in message
    assert "editable in Latent Controls" not in message  # the controls would drive the locked curves
    other = ('pose.bones["Hips"].location', 1)
    assert len(after[other]["co"]) > len(before[other]["co"])  # the unlocked curves are filled
    assert np.array_equal(np.round(after[other]["co"][:, 0]), np.arange(KEYS[0], KEYS[-1] + 1))
