"""Inbetween refuses what it cannot do, says why, and leaves the scene exactly as it was."""
from __future__ import annotations

import threading
import time

import pytest

from addon_helpers import (
    assert_same_keys,
    bpy,
    copy_armature,
    disable_addon,
    fresh_scene_with_addon,
    import_bvh,
    prefs,
    select_keys,
    snapshot,
    thin_keys,
    use_test_backend,
)

bpy = bpy()
from blender_addon import bridge  # noqa: E402

pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_inbetween
KEYS = [1, 16, 31, 46, 61]


@pytest.fixture(scope="module")
def source():
    fresh_scene_with_addon()
    use_test_backend()
    obj = import_bvh()
    thin_keys(obj, KEYS + [136])
    yield obj.name
    disable_addon()


@pytest.fixture
def arm(source):
    a = copy_armature(bpy.data.objects[source])
    yield a
    bpy.data.objects.remove(a)
    use_test_backend()


def refused(obj, match, **kw):
    """The operator fails with ``match`` in its message and every F-curve is bit-identical."""
    before = snapshot(obj)
    with pytest.raises(RuntimeError, match=match):
        OP(**kw)
    after = snapshot(obj)
    assert after.keys() == before.keys()
    for k in before:
        assert_same_keys(before[k], after[k])


def test_no_active_armature(arm):
    bpy.context.view_layer.objects.active = None
    with pytest.raises(RuntimeError, match="Make an armature the active object"):
        OP()
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.active_object
    assert not OP.poll()
    with pytest.raises(RuntimeError, match="Make an armature the active object"):
        OP()
    bpy.data.objects.remove(cube)
    bpy.context.view_layer.objects.active = arm
    arm.animation_data.action = None
    with pytest.raises(RuntimeError, match="has no action"):
        OP()


def test_fewer_than_two_selected_keys(arm):
    select_keys(arm, [])
    refused(arm, "select at least two keys")
    select_keys(arm, [16])
    refused(arm, "select at least two keys")
    select_keys(arm, [16], bones={"Hips"})
    refused(arm, "select at least two keys")


def test_gap_longer_than_the_model_window(arm):
    select_keys(arm, KEYS + [136])
    refused(arm, r"gap between the selected keys at frames 61 and 136 is 75 frames \(2.5 s\); the model fills gaps of "
                 r"up to 60 frames \(2 s at 30 fps\)")


def test_rig_that_does_not_match_lists_the_missing_bones(arm):
    """Names that say nothing are no reason to refuse (the structure finds the bones: test_rig_inbetween);
    a body without a left hand is refused, naming what it lacks (the renamed hips among them)."""
    arm.data.bones["Hips"].name = "Bone"  # names nothing in the presets or the fallback finds
    bpy.ops.object.mode_set(mode="EDIT")
    arm.data.edit_bones.remove(arm.data.edit_bones["Hand_L"])
    bpy.ops.object.mode_set(mode="OBJECT")
    refused(arm, r"cannot drive the model \(detected as Splinetween data set\): no bone for Hips, Hand_L "
                 r"\(map them in the Bone Map panel")


def test_backend_process_killed_mid_call(arm, monkeypatch, tmp_path):
    """The backend dies while it works: a clear error, nothing written, and the next call
    starts a fresh process and succeeds."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the kept log lands here
    bridge.shutdown()
    select_keys(arm, KEYS)
    prefs().backend_mode = "SUBPROCESS"
    monkeypatch.setenv("SPLINETWEEN_SERVICE_DELAY", "5")
    killed, done = [], threading.Event()

    def kill_when_busy():
        while not done.wait(0.05):
            proc = bridge.backend_process()
            if proc is not None:  # started and greeted; the request follows at once
                time.sleep(1.0)
                proc.proc.kill()
                killed.append(proc.proc.pid)
                return

    t = threading.Thread(target=kill_when_busy)
    t.start()
    try:
        refused(arm, r"the backend failed, nothing was changed: the backend process .* exited with code -9")
    finally:
        done.set()
        t.join()
    assert killed
    monkeypatch.delenv("SPLINETWEEN_SERVICE_DELAY")
    bridge.shutdown()
    assert OP() == {"FINISHED"}  # a new process, warm for the next call
    assert bridge.backend_process().proc.pid != killed[0]
    bridge.shutdown()


def test_checkpoint_that_cannot_be_read(arm, tmp_path):
    select_keys(arm, KEYS)
    prefs().checkpoint = str(tmp_path / "nothing.json")
    try:
        refused(arm, "cannot read the checkpoint")
    finally:
        prefs().checkpoint = ""
