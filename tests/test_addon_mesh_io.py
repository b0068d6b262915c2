"""Reading a mesh object's evaluated frames (shape keys, an armature, a MeshCache modifier, a cloth
simulation) and writing a sequence back through a PC2 file and a MeshCache modifier (real bpy).
No model here: these are the add-on's bpy <-> numpy paths."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import bpy, disable_addon
from mesh_addon_helpers import (
    cached_grid,
    evaluated,
    evaluated_range,
    flag,
    grid,
    mesh_data,
    session_dir,
    setup_scene,
    stack,
)

bpy = bpy()
from blender_addon.io import cache as mesh_cache  # noqa: E402
from blender_addon.io import mesh as mesh_io  # noqa: E402

pytestmark = pytest.mark.blender


@pytest.fixture(scope="module", autouse=True)
def scene():
    f = flag()  # simulated before the module's scene is set up (it opens the flag's .blend)
    setup_scene()
    yield f
    disable_addon()


@pytest.fixture
def tmp_grid():
    obj = grid("Tmp")
    yield obj
    if "Tmp" in bpy.data.objects:
        bpy.data.objects.remove(bpy.data.objects["Tmp"])


def linear(owner, mode="LINEAR"):
    """Every key of the ID's assigned action gets this interpolation."""
    from blender_addon.io.compat import assigned_channelbag
    for fc in assigned_channelbag(owner.animation_data).fcurves:
        for kp in fc.keyframe_points:
            kp.interpolation = mode


def read(obj, start, end, frames=None):
    return mesh_io.read_mesh_sequence(bpy.context, obj, start, end, frames)


def test_shape_key_animation_is_read_exactly(tmp_grid):
    obj = tmp_grid
    base = mesh_data(obj)
    obj.shape_key_add(name="Basis")
    key = obj.shape_key_add(name="Wave")
    target = base.copy()
    target[:, 2] = 0.3 * np.sin(3 * base[:, 0])
    key.data.foreach_set("co", target.ravel())
    key.value = 0.0
    key.keyframe_insert("value", frame=1)
    key.value = 1.0
    key.keyframe_insert("value", frame=11)
    linear(obj.data.shape_keys)
    bpy.context.scene.frame_set(7)
    frames = read(obj, 1, 11)
    assert frames.dtype == np.float32 and frames.shape == (11, 71 * 71, 3)
    w = (np.arange(11) / 10.0)[:, None, None]
    np.testing.assert_allclose(frames, base + w * (target - base), atol=1e-6)
    assert bpy.context.scene.frame_current == 7  # the current frame is put back


def test_an_alembic_cache_is_read_as_exported(tmp_grid, tmp_path):
    obj = tmp_grid
    obj.shape_key_add(name="Basis")
    key = obj.shape_key_add(name="Lift")
    lifted = mesh_data(obj) + np.float32([0.0, 0.0, 0.5])
    key.data.foreach_set("co", lifted.ravel())
    key.value = 0.0
    key.keyframe_insert("value", frame=1)
    key.value = 1.0
    key.keyframe_insert("value", frame=8)
    expected = read(obj, 1, 8)
    for o in bpy.context.view_layer.objects:
        o.select_set(o == obj)
    assert bpy.ops.wm.alembic_export(filepath=str(tmp_path / "grid.abc"), start=1, end=8, selected=True) == {"FINISHED"}
    before = set(bpy.data.objects)
    assert bpy.ops.wm.alembic_import(filepath=str(tmp_path / "grid.abc")) == {"FINISHED"}
    (imported,) = set(bpy.data.objects) - before
    try:
        assert [m.type for m in imported.modifiers] == ["MESH_SEQUENCE_CACHE"]
        np.testing.assert_allclose(read(imported, 1, 8), expected, atol=1e-6)
    finally:
        bpy.data.objects.remove(imported)


def test_an_armature_deformed_mesh_is_read_exactly(tmp_grid):
    obj = tmp_grid
    base = mesh_data(obj)
    arm_data = bpy.data.armatures.new("Rig")
    arm = bpy.data.objects.new("Rig", arm_data)
    bpy.context.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    bone = arm_data.edit_bones.new("Lift")
    bone.head, bone.tail = (0.0, 0.0, 0.0), (0.0, 1.0, 0.0)  # along +Y, roll 0: bone space = world space
    bpy.ops.object.mode_set(mode="OBJECT")
    right = np.flatnonzero(base[:, 0] > 0.0)  # only the right half follows the bone
    obj.vertex_groups.new(name="Lift").add(right.tolist(), 1.0, "REPLACE")
    obj.modifiers.new("Armature", "ARMATURE").object = arm
    pb = arm.pose.bones["Lift"]
    pb.location = (0.0, 0.0, 0.0)
    pb.keyframe_insert("location", frame=1)
    pb.location = (0.0, 0.0, 2.0)
    pb.keyframe_insert("location", frame=21)
    linear(arm)
    try:
        frames = read(obj, 1, 21)
        lift = np.zeros((21, len(base), 3), np.float32)
        lift[:, right, 2] = (np.arange(21) / 10.0)[:, None]
        np.testing.assert_allclose(frames, base + lift, atol=1e-5)
    finally:
        bpy.data.objects.remove(arm)


def test_a_mesh_cache_driven_mesh_is_read_exactly(scene):
    obj = cached_grid(scene["pc2"], "Cached", frame_start=11)  # scene frame 11 shows sample 0
    try:
        np.testing.assert_array_equal(read(obj, 11, 70), scene["frames"])
        np.testing.assert_array_equal(read(obj, 31, 40, frames=[31, 35, 40]), scene["frames"][[20, 24, 29]])
    finally:
        bpy.data.objects.remove(obj)


def test_a_cloth_simulation_is_stepped_from_its_start(scene):
    """flag() read frames 11-20 of a fresh cloth first: the reader stepped the simulation from frame 1
    (a jump to 11 would show the rest pose), and the frames equal those of reading 1-60 in order."""
    frames = scene["frames"]
    assert frames.shape == (60, 71 * 71, 3) and np.isfinite(frames).all()
    np.testing.assert_array_equal(scene["from_11"], frames[10:20])
    assert np.abs(frames[59] - frames[0]).max() > 0.1  # the flag moved


def test_refusals_name_the_problem(tmp_grid):
    with pytest.raises(mesh_io.MeshReadError, match="frame range 20-10 is empty"):
        read(tmp_grid, 20, 10)
    bpy.ops.object.empty_add()
    empty = bpy.context.active_object
    with pytest.raises(mesh_io.MeshReadError, match=r"is not a mesh object \(it is of type Empty\)"):
        read(empty, 1, 5)
    bpy.data.objects.remove(empty)
    dec = tmp_grid.modifiers.new("Decimate", "DECIMATE")  # the vertex count drops at frame 6
    dec.ratio = 1.0
    dec.keyframe_insert("ratio", frame=1)
    dec.ratio = 0.5
    dec.keyframe_insert("ratio", frame=6)
    linear(tmp_grid, "CONSTANT")
    with pytest.raises(mesh_io.MeshReadError, match=r"has 5041 vertices at frame 1 but \d+ at frame 6: its topology "
                                                    r"changes in frames 1-10"):
        read(tmp_grid, 1, 10)
    assert read(tmp_grid, 1, 5).shape == (5, 5041, 3)


@pytest.mark.parametrize("start", [1, 37])
def test_write_back_shows_sample_f_on_frame_f(tmp_grid, scene, start):
    """The cache written for a range starting at scene frame ``start``: frame ``start + i`` shows
    sample i exactly; outside the range the mesh evaluates as it did before."""
    obj = tmp_grid
    frames = scene["frames"][:20]
    before = [evaluated(obj, f) for f in (start - 1, start + 20)]
    path = session_dir() / f"write_back_{start}.pc2"
    mesh_cache.write(path, frames, start)
    uid, made = mesh_cache.attach(obj, path, start, start + 19)
    assert obj.modifiers[-1].name == "Splinetween" and obj.modifiers[-1].frame_start == start
    np.testing.assert_array_equal(evaluated_range(obj, start, start + 19), frames)
    np.testing.assert_array_equal(evaluated(obj, start - 1), before[0])
    np.testing.assert_array_equal(evaluated(obj, start + 20), before[1])
    changed = frames[::-1].copy()  # rewritten in place (a slider moved): the mesh follows at once
    mesh_cache.write(path, changed, start)
    mesh_cache.refresh(obj)
    np.testing.assert_array_equal(evaluated(obj, start + 3), changed[3])
    mesh_cache.detach(obj, mesh_cache.find(obj, uid), True, made)
    assert not path.exists() and obj.animation_data is None and not len(obj.modifiers)


def test_detach_leaves_mesh_modifiers_and_animation_as_they_were(scene):
    obj = cached_grid(scene["pc2"], "Stacked")
    obj.modifiers.new("Displace", "DISPLACE").strength = 0.05
    obj.keyframe_insert("location", frame=1)  # animation data of its own, kept by Remove
    data, mods = mesh_data(obj), stack(obj)
    shown = evaluated_range(obj, 1, 12)
    path = session_dir() / "stacked.pc2"
    mesh_cache.write(path, scene["frames"][30:42] + 1.0, 1)
    uid, made = mesh_cache.attach(obj, path, 1, 12)
    assert not made and not np.array_equal(evaluated(obj, 5), shown[4])
    mesh_cache.detach(obj, mesh_cache.find(obj, uid), True, made)
    np.testing.assert_array_equal(mesh_data(obj), data)
    assert stack(obj) == mods and not path.exists()
    assert obj.animation_data.action is not None and not len(obj.animation_data.drivers)
    np.testing.assert_array_equal(evaluated_range(obj, 1, 12), shown)
    bpy.data.objects.remove(obj)


def test_cache_paths_are_unique_and_refusals_are_clear(tmp_grid, tmp_path):
    from addon_helpers import prefs
    a = mesh_cache.choose_path(tmp_grid, "encoded")
    mesh_cache.write(a, np.zeros((2, 5041, 3), np.float32), 1)
    uid, made = mesh_cache.attach(tmp_grid, a, 1, 2)
    b = mesh_cache.choose_path(tmp_grid, "encoded")  # the first is read by a modifier: a new name
    assert a.name == "untitled_Tmp_encoded.pc2" and b.name == "untitled_Tmp_encoded_2.pc2"
    mesh_cache.detach(tmp_grid, mesh_cache.find(tmp_grid, uid), True, made)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with pytest.raises(mesh_cache.CacheRefusal, match=f"cannot create the mesh cache folder {blocker}"):
        mesh_cache.prepare_folder(blocker / "sub" / "x.pc2")
    folder = prefs().mesh_cache_folder
    prefs().mesh_cache_folder = ""
    try:
        with pytest.raises(mesh_cache.CacheRefusal, match="has not been saved"):
            mesh_cache.choose_path(tmp_grid, "encoded")
    finally:
        prefs().mesh_cache_folder = folder
