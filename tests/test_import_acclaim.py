"""File > Import > Acclaim (.asf/.amc) in real bpy, on the HDM05 fixture (tests/fixtures/hdm05, CC BY-SA 3.0).

The armature's joints, evaluated by Blender, stand where the backend's reader (``backend.formats.asf``:
``read_asf_amc``, forward kinematics ``quat_np.fk``) puts them, turned into Blender's axes as Import BVH turns
a Y-up file (``axis_conversion`` of the Forward / Up options) and scaled; files that are not Acclaim files
are refused with the reader's message (the file, the line) and leave ``bpy.data`` as it was.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from addon_helpers import bpy, fresh_scene_with_addon

bpy = bpy()
from bpy_extras.io_utils import axis_conversion  # noqa: E402

from backend.formats import asf as asf_io  # noqa: E402
from backend.maths import quat_np  # noqa: E402

pytestmark = pytest.mark.blender
HDM = Path(__file__).resolve().parent / "fixtures" / "hdm05"
ASF = HDM / "HDM_tr.asf"
AMC = HDM / "HDM_tr_kickLFront1Reps_027_120.amc"
BVH = Path(__file__).resolve().parent / "fixtures" / "dataset-2_walk_normal_005.bvh"
TOL = 1e-3  # file units x scale: Blender keys and evaluates in float32


@pytest.fixture
def scene():
    return fresh_scene_with_addon(test_backend=False)


def imported(**options):
    before = set(bpy.data.objects)
    assert bpy.ops.import_anim.splinetween_acclaim(**options) == {"FINISHED"}
    (obj,) = set(bpy.data.objects) - before
    assert obj.type == "ARMATURE" and bpy.context.view_layer.objects.active == obj
    return obj


def heads(obj, names, frame):
    bpy.context.scene.frame_set(frame)
    return np.array([tuple(obj.matrix_world @ obj.pose.bones[n].head) for n in names])


def data_names():
    return {k: sorted(x.name for x in getattr(bpy.data, k)) for k in ("objects", "armatures", "actions")}


@pytest.mark.parametrize("options", [
    {},
    {"global_scale": 100.0, "use_metres": True, "rotate_mode": "ZXY", "frame_start": 10},
    {"global_scale": 0.5, "axis_forward": "Y", "axis_up": "Z", "rotate_mode": "XYZ"},
], ids=["defaults", "centimetres-euler-start10", "z-up-half"])
def test_the_imported_take_moves_as_the_readers_forward_kinematics(scene, options):
    obj = imported(filepath=str(AMC), **options)
    clip = asf_io.read_asf_amc(ASF, AMC)
    asf = clip.meta["asf"]
    names = clip.skeleton.names
    assert [b.name for b in obj.data.bones] == list(names) == ["root", *asf.bones]
    assert len(obj.data.bones) == 31 and {"lhumerus", "rfemur", "ltibia", "head"} <= set(names)
    start = options.get("frame_start", 1)
    assert tuple(obj.animation_data.action.frame_range) == (start, start + clip.num_frames - 1)
    scale = options.get("global_scale", 1.0) * (asf.unit_m if options.get("use_metres") else 1.0)
    turn = np.array(axis_conversion(from_forward=options.get("axis_forward", "-Z"),
                                    from_up=options.get("axis_up", "Y")))
    _, world = quat_np.fk(clip.rotations, clip.positions, clip.skeleton.parents)
    for i in (0, 7, clip.num_frames - 1):
        theirs = scale * world[i] @ turn.T
        assert np.abs(heads(obj, names, start + i) - theirs).max() < TOL * max(scale, 1.0)
    # the bones at rest: the ASF's direction * length, turned and scaled
    bone = obj.data.bones["lfemur"]
    b = asf.bones["lfemur"]
    assert np.allclose(np.array(bone.tail_local - bone.head_local), scale * turn @ (np.array(b.direction) * b.length),
                       atol=1e-4 * scale)
    assert {pb.rotation_mode for pb in obj.pose.bones} == {options.get("rotate_mode", "QUATERNION")}
    assert tuple(obj.matrix_world) == tuple(type(obj.matrix_world).Identity(4))  # the axes baked in, as Import BVH


def test_an_asf_alone_is_the_armature_at_rest(scene):
    obj = imported(filepath=str(ASF))
    asf = asf_io.read_asf(ASF)
    assert [b.name for b in obj.data.bones] == asf.joints() and obj.animation_data is None
    turn = np.array(axis_conversion(from_forward="-Z", from_up="Y"))
    for n in ("ltibia", "rhumerus"):  # a joint's rest head: its parents' bones end to end from the root
        at, p = np.array(asf.root_position), n
        chain = []
        while p != "root":
            p = next(q for q, kids in asf.children.items() if p in kids)
            chain.append(p)
        for q in chain[:-1]:
            at = at + np.array(asf.bones[q].direction) * asf.bones[q].length
        assert np.allclose(np.array(obj.data.bones[n].head_local), turn @ at, atol=1e-4)
    # the rest orientation from the ASF's axis: the bone's Z is the ASF axis most across the bone (Z before X
    # before Y), made square to it: HDM05's femur lies along its axis frame's -Y, so its Z is the ASF's Z
    from blender_addon.core import rig_math
    for n in ("lfemur", "rhumerus", "lclavicle", "head", "ltibia"):
        b = asf.bones[n]
        c = turn @ rig_math.q_to_matrix(rig_math.euler_to_quat(np.radians(b.axis), b.axis_order))
        rest = np.array(obj.data.bones[n].matrix_local)[:3, :3]
        y = rest[:, 1]
        assert np.allclose(y, turn @ b.direction, atol=1e-5)
        w = c[:, [2, 0, 1]][:, np.argmin(np.round(np.abs(y @ c[:, [2, 0, 1]]), 6))]
        w = w - (w @ y) * y
        assert rest[:, 2] @ (w / np.linalg.norm(w)) > 1 - 1e-5, n
    femur = np.array(obj.data.bones["lfemur"].matrix_local)[:3, :3]
    c = rig_math.q_to_matrix(rig_math.euler_to_quat(np.radians(asf.bones["lfemur"].axis), "XYZ"))
    assert np.allclose(femur[:, 2], turn @ c[:, 2], atol=1e-5) and np.allclose(femur[:, 1], -turn @ c[:, 1], atol=1e-5)


def test_frame_rate_options(scene):
    scene.render.fps, scene.render.fps_base = 24, 1.0
    obj = imported(filepath=str(AMC), use_fps_scale=True)
    lo, hi = obj.animation_data.action.frame_range
    assert (lo, round(hi, 4)) == (1.0, round(1 + 19 * 24 / 120, 4)) and scene.render.fps == 24
    obj = imported(filepath=str(AMC), update_scene_fps=True, update_scene_duration=True, fps=120.0)
    assert scene.render.fps == 120 and scene.render.fps_base == 1.0 and scene.frame_end >= 20
    assert tuple(obj.animation_data.action.frame_range) == (1.0, 20.0)


def test_undo_takes_the_import_back(scene):
    bpy.ops.ed.undo_push(message="before")
    before = data_names()
    assert bpy.ops.import_anim.splinetween_acclaim("EXEC_DEFAULT", True, filepath=str(AMC)) == {"FINISHED"}
    assert data_names() != before  # (undo=True: pushed like a click in the UI)
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert data_names() == before


def test_the_skeleton_option_names_the_asf(scene, tmp_path):
    take = tmp_path / "takes" / "kick.amc"
    take.parent.mkdir()
    shutil.copy(AMC, take)
    with pytest.raises(RuntimeError, match=r"kick\.amc: no skeleton: no \.asf in .*name it in the import's Skeleton"):
        bpy.ops.import_anim.splinetween_acclaim(filepath=str(take))
    before = data_names()
    with pytest.raises(RuntimeError, match=r"nope\.asf: no such file \(the Skeleton option names the take's \.asf\)"):
        bpy.ops.import_anim.splinetween_acclaim(filepath=str(take), skeleton=str(tmp_path / "nope.asf"))
    assert data_names() == before
    obj = imported(filepath=str(take), skeleton=str(ASF))
    assert len(obj.data.bones) == 31 and tuple(obj.animation_data.action.frame_range) == (1.0, 20.0)


def _refusals(tmp_path):
    """(the file picked, what the refusal must say) for files that are not ASF/AMC."""
    junk = tmp_path / "junk"
    junk.mkdir()
    shutil.copy(ASF, junk / "HDM_tr.asf")
    (junk / "HDM_tr_junk.amc").write_text("hello\nthis is not motion\n")
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    shutil.copy(BVH, renamed / "walk.asf")
    shutil.copy(BVH, renamed / "walk.amc")
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(AMC, mixed / "HDM_tr_kick.amc")
    shutil.copy(BVH, mixed / "HDM_tr.asf")
    (tmp_path / "long.asf").write_bytes(ASF.read_bytes().replace(b"lthumb", b"lthumb_" + b"x" * 63))
    return [
        (tmp_path / "long.asf", r"long\.asf: bone 'lthumb_x+'\.\.\. has a name of 70 bytes, longer than Blender's 63"),
        (junk / "HDM_tr_junk.amc", r"HDM_tr_junk\.amc, line 1: not an AMC file: 'hello' where a frame number"),
        (renamed / "walk.asf", r"walk\.asf, line 1: not an ASF file: it starts with 'HIERARCHY'"),
        (renamed / "walk.amc", r"walk\.asf, line 1: not an ASF file"),  # its skeleton: the .asf beside it
        (mixed / "HDM_tr_kick.amc", r"HDM_tr\.asf, line 1: not an ASF file"),
        (junk / "x.bvh", r"x\.bvh is not an Acclaim file: pick a skeleton \.asf or a take's \.amc"),
    ]


def test_files_that_are_not_acclaim_are_refused_and_leave_the_scene_as_it_was(scene, tmp_path):
    shutil.copy(BVH, tmp_path / "x.bvh")
    before = data_names()
    mode = bpy.context.mode
    for path, said in _refusals(tmp_path):
        if path.suffix == ".bvh":
            shutil.copy(BVH, path)
        with pytest.raises(RuntimeError, match=r"Import Acclaim: .*" + said + r".*nothing was imported"):
            bpy.ops.import_anim.splinetween_acclaim(filepath=str(path))
        assert data_names() == before and bpy.context.mode == mode, path


def test_the_bone_map_finds_the_asf_bones(scene):
    """Inbetween's bone map maps the imported ASF names (lhumerus, rfemur, ...) to the model's joints."""
    from blender_addon import bridge
    from blender_addon.io import bone_map as bone_map_io
    obj = imported(filepath=str(AMC))
    info = bridge.describe(bridge.BackendSettings())
    _, bones = bone_map_io.resolve(obj, list(info.names), list(info.parents))
    found = dict(zip(info.names, bones, strict=True))
    assert sum(b is not None for b in bones) >= 17
    assert {found[j] for j in found if found[j]} >= {"lfemur", "ltibia", "rfemur", "rtibia", "lhumerus", "rhumerus",
                                                     "lradius", "rradius", "head"}


def test_inbetween_fills_the_imported_take():
    """The imported take thinned to keys on frames 1, 10 and 20: Inbetween fills both gaps on the ASF's bones,
    every frame keyed again, the kept keys as they were."""
    from addon_helpers import channelbag, thin_keys, use_test_backend
    fresh_scene_with_addon()
    use_test_backend()
    obj = imported(filepath=str(AMC), update_scene_fps=True)
    curves = [fc for fc in channelbag(obj).fcurves if fc.data_path.startswith('pose.bones["lfemur"]')]
    at_keys = [[fc.evaluate(f) for f in (1, 10, 20)] for fc in curves]
    thin_keys(obj, [1, 10, 20])
    linear = np.array([[fc.evaluate(f) for f in range(1, 21)] for fc in curves])
    assert bpy.ops.anim.splinetween_inbetween(editable=False) == {"FINISHED"}
    filled = np.array([[fc.evaluate(f) for f in range(1, 21)] for fc in curves])
    assert np.allclose(filled[:, [0, 9, 19]], at_keys, atol=1e-6)
    assert {len(fc.keyframe_points) for fc in curves} == {20}
    assert np.abs(filled - linear).max() > 1e-4  # the model's motion, not the straight line between the keys
