"""The Bone Map panel and its operators in real (headless) Blender: Detect saves the map on the armature,
the panel lists every joint with a bone search field, Export/Import round-trip a JSON preset (a bad file
changes nothing), Inbetween uses the saved map, undo restores the map."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from addon_helpers import (
    bpy,
    copy_armature,
    disable_addon,
    fresh_scene_with_addon,
    import_bvh,
    thin_keys,
    use_test_backend,
)
from test_latent_ui import Recorder
from test_rig_inbetween import MIXAMO

bpy = bpy()
pytestmark = pytest.mark.blender
OPS = bpy.ops.anim


@pytest.fixture(scope="module")
def source():
    fresh_scene_with_addon()
    use_test_backend()
    obj = import_bvh()
    thin_keys(obj, [1, 16, 31, 46])
    yield obj.name
    disable_addon()


@pytest.fixture
def arm(source):
    a = copy_armature(bpy.data.objects[source])
    for joint, bone in MIXAMO.items():
        a.data.bones[joint].name = bone
    bpy.context.view_layer.objects.active = a
    name = a.name
    yield a
    if name in bpy.data.objects:  # by name: an undo re-creates the data
        bpy.data.objects.remove(bpy.data.objects[name])


def draw(obj) -> list:
    from blender_addon.ui.bone_map_panel import VIEW3D_PT_splinetween_bone_map as P
    log = []
    P.draw(SimpleNamespace(layout=Recorder(log)), SimpleNamespace(active_object=obj))
    for kind, args, _kw in log:
        if kind == "prop_search":
            data, name, search_data, search_name = args[:4]
            assert hasattr(data, name) and hasattr(search_data, search_name)
        elif kind == "operator":
            assert hasattr(bpy.types, "ANIM_OT_" + args[0].split(".")[1]), args[0]
    return log


def stored(obj) -> dict:
    return {e.joint: e.bone for e in obj.data.splinetween_bone_map.entries}


def test_detect_saves_the_map_and_the_panel_lists_every_joint(arm):
    log = draw(arm)
    assert any(e[0] == "label" and "detected each time" in e[2]["text"] for e in log)
    assert OPS.splinetween_bone_map_detect() == {"FINISHED"}
    m = stored(arm)
    assert len(m) == 22 and m["Hips"] == "mixamorig:Hips" and m["Chest"] == "mixamorig:Spine2" and m["joint_Root"] == ""
    assert arm.data.splinetween_bone_map.preset == "Mixamo (mixamorig:)"
    log = draw(arm)
    rows = [e for e in log if e[0] == "prop_search"]
    assert [e[2]["text"] for e in rows][:2] == ["joint_Root (optional)", "Hips"] and len(rows) == 22
    assert any(e[0] == "label" and e[2]["text"] == "Detected: Mixamo (mixamorig:)" for e in log)
    assert ("set", "alert", True) not in log
    arm.data.splinetween_bone_map.entries[1].bone = ""  # Hips cleared: its row turns red
    assert ("set", "alert", True) in draw(arm)


def test_inbetween_uses_the_saved_map(arm):
    OPS.splinetween_bone_map_detect()
    for e in arm.data.splinetween_bone_map.entries:
        if e.joint.startswith("Toes"):
            e.bone = ""  # the user leaves the toes out
    from blender_addon import preferences
    from blender_addon.inbetween import fill
    message = fill.run(arm, preferences.settings(bpy.context), fill.Options(editable=False))
    assert message.endswith("not mapped (filled neutrally, not written): joint_Root, Toes_L, Toes_R")
    arm.data.splinetween_bone_map.entries[7].bone = "mixamorig:RightArm"  # UpperArm_L on the wrong side
    with pytest.raises(RuntimeError, match=r"cannot drive the model \(the armature's bone map\): one bone for two "
                                           r"joints: mixamorig:RightArm \(UpperArm_L and UpperArm_R\); a joint's bone must "
                                           r"be a descendant of its parent joint's bone: UpperArm_L"):
        OPS.splinetween_inbetween()


def test_export_import_round_trip_and_a_bad_file(arm, tmp_path):
    OPS.splinetween_bone_map_detect()
    path = tmp_path / "mixamo.json"
    assert OPS.splinetween_bone_map_export(filepath=str(path)) == {"FINISHED"}
    data = json.loads(path.read_text())
    assert data["format"] == "splinetween-bone-map" and data["bones"]["LowerLeg_L"] == "mixamorig:LeftLeg"
    before = stored(arm)
    assert OPS.splinetween_bone_map_clear() == {"FINISHED"} and stored(arm) == {}
    assert OPS.splinetween_bone_map_import(filepath=str(path)) == {"FINISHED"}
    assert stored(arm) == before
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(data, bones=dict(data["bones"], Head="mixamorig:Kopf"))))
    arm.data.splinetween_bone_map.entries[5].bone = "mixamorig:Neck"
    with pytest.raises(RuntimeError, match=r"bad.json names bones .* does not have: mixamorig:Kopf; nothing was "
                                           r"changed"):
        OPS.splinetween_bone_map_import(filepath=str(bad))
    bad.write_text("{not json")
    with pytest.raises(RuntimeError, match=r"bad.json: not a bone map file \(not JSON"):
        OPS.splinetween_bone_map_import(filepath=str(bad))
    assert stored(arm)["Head"] == "mixamorig:Neck"  # unchanged by the refused imports


def test_detect_is_undone(arm):
    bpy.ops.ed.undo_push(message="before")
    name = arm.name
    assert OPS.splinetween_bone_map_detect("EXEC_DEFAULT", True) == {"FINISHED"}
    assert len(stored(bpy.data.objects[name])) == 22
    bpy.ops.ed.undo()
    assert stored(bpy.data.objects[name]) == {}
