"""The third round of bad inputs in real (headless) Blender: keys under a driver (skipped and named,
as under a constraint), animation that lives only in NLA strips (explained), bone map files nested
100,000 deep or in UTF-16 (Import), and an operator's unforeseen error (a message, not a traceback)."""
from __future__ import annotations

import json

import pytest

from addon_helpers import assert_same_keys, bpy, snapshot
from test_addon_constraints import rig, walk  # noqa: F401 (fixtures: the walk thinned to keys every 15 frames)

bpy = bpy()
from blender_addon import preferences  # noqa: E402
from blender_addon.inbetween import fill  # noqa: E402

pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_inbetween


@pytest.fixture
def arm(rig):  # noqa: F811
    a = rig[0]
    bpy.context.view_layer.objects.active = a
    return a


def drive(arm, bone: str, prop: str = "rotation_quaternion", index: int = 1, mute: bool = False):
    fc = arm.driver_add(f'pose.bones["{bone}"].{prop}', index)
    fc.driver.type = "AVERAGE"
    var = fc.driver.variables.new()
    var.targets[0].id = arm
    var.targets[0].data_path = "location.x"
    fc.mute = mute
    return fc


def test_keys_under_a_driver_are_left_and_named(arm):
    drive(arm, "Hand_R")
    drive(arm, "Hips", "location", 2)
    before = snapshot(arm)
    msg = fill.run(arm, preferences.settings(bpy.context), fill.Options())
    after = snapshot(arm)
    for k, v in before.items():
        if '"Hand_R"' in k[0] or ('"Hips"' in k[0] and "location" in k[0]):
            assert_same_keys(v, after[k])  # untouched, handles and all
    spine = [v for k, v in after.items() if '"Spine"' in k[0] and "rotation" in k[0]]
    assert spine and all(len(v["co"]) == 91 for v in spine)  # the rest filled on every frame
    assert ("2 bones driven by drivers were left as they were: Hand_R (a driver on rotation_quaternion), "
            "Hips (a driver on location); mute or remove the driver (Drivers editor) to key the channel") in msg, msg


def test_a_muted_driver_changes_nothing(arm):
    drive(arm, "Hand_R", mute=True)
    assert "driver" not in fill.run(arm, preferences.settings(bpy.context), fill.Options())


def test_nla_only_animation_is_explained(arm):
    ad = arm.animation_data
    action = ad.action
    track = ad.nla_tracks.new()
    track.name = "Walk track"
    track.strips.new("Walk", 1, action)
    ad.action = None
    with pytest.raises(RuntimeError, match=r"The armature.s motion is in NLA strips, not an active action: Tab on a strip in the NLA editor to "
                                           r"edit its keys, or make its action the active one$"):
        OP()
    with pytest.raises(Exception, match=r"is in NLA strips \(Walk track: Walk\).*; nothing was changed"):
        fill.run(arm, preferences.settings(bpy.context), fill.Options())
    assert ad.action is None and len(track.strips) == 1


def test_bone_map_import_of_deep_and_utf16_files(arm, tmp_path):
    imp = bpy.ops.anim.splinetween_bone_map_import
    bpy.ops.anim.splinetween_bone_map_detect()
    before = {e.joint: e.bone for e in arm.data.splinetween_bone_map.entries}
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(RuntimeError, match=r"deep.json: not a bone map file \(nested deeper than 8 levels\); "
                                           "nothing was changed") as e:
        imp(filepath=str(deep))
    assert "Traceback" not in str(e.value)
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({"format": "splinetween-bone-map", "version": 1, "preset": "p" * 3_000_000,
                                "bones": {}}))
    with pytest.raises(RuntimeError, match=r"huge.json: not a bone map file \(3,000,0\d\d bytes, more than"):
        imp(filepath=str(huge))
    assert {e.joint: e.bone for e in arm.data.splinetween_bone_map.entries} == before
    utf16 = tmp_path / "utf16.json"
    utf16.write_text(json.dumps({"format": "splinetween-bone-map", "version": 1, "preset": "Mine",
                                 "bones": dict(before, Head="Neck")}), encoding="utf-16")
    assert imp(filepath=str(utf16)) == {"FINISHED"}
    assert {e.joint: e.bone for e in arm.data.splinetween_bone_map.entries}["Head"] == "Neck"


class SPLINETWEEN_OT_test_unforeseen(bpy.types.Operator):
    """An operator whose work fails in a way no check foresaw (as a bug would)"""
    bl_idname = "anim.splinetween_test_unforeseen"
    bl_label = "Unforeseen"

    def execute(self, context):
        from blender_addon.core.errors import run_reported

        def work():
            return {}["missing"]
        return run_reported(self, work)


def test_an_unforeseen_error_is_a_message(capfd):
    bpy.utils.register_class(SPLINETWEEN_OT_test_unforeseen)
    try:
        with pytest.raises(RuntimeError) as e:
            bpy.ops.anim.splinetween_test_unforeseen()
    finally:
        bpy.utils.unregister_class(SPLINETWEEN_OT_test_unforeseen)
    msg = str(e.value)
    assert "Unforeseen: unexpected KeyError: 'missing' (in work, test_addon_refusals_round3.py:" in msg, msg
    assert "Traceback" not in msg
    assert "Traceback" in capfd.readouterr().err  # the details go to the console
