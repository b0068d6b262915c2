"""The batch command at 24 fps and with constrained bones, in real (headless) Blender.

A .blend keyed every 12 frames at 24 fps with an IK leg: the batch fills it as the operator does (the scene's
frame rate), leaves the IK chain as it was and lists it in the report.  A BVH at 24 fps: its Frame Time gives
the gap limit (2 s = 48 frames) and the fill.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from addon_helpers import assert_same_keys, backend_mode_here, bpy, import_bvh, snapshot, thin_keys
from batch_helpers import by_name, load_report, run_batch
from test_addon_fps import _write_at

bpy = bpy()
pytestmark = pytest.mark.blender
KEYS = list(range(1, 194, 12))  # 8 s at 24 fps, keys every 0.5 s


def _open(path: Path):
    assert bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False, use_scripts=False) == {"FINISHED"}
    return next(o for o in bpy.data.objects if o.type == "ARMATURE")


@pytest.fixture(scope="module")
def shot(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fps-batch")
    bvh = _write_at(folder, 24)
    bpy.ops.wm.read_homefile(use_empty=True)
    obj = import_bvh(bvh)
    thin_keys(obj, KEYS)
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end = 24, 1.0, 1, 193
    target = bpy.data.objects.new("leg_target", None)
    bpy.context.collection.objects.link(target)
    ik = obj.pose.bones["LowerLeg_L"].constraints.new("IK")
    ik.target, ik.chain_count = target, 2
    src = folder / "in"
    src.mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(src / "shot24.blend"), check_existing=False)
    bpy.ops.wm.read_homefile(use_empty=True)
    return {"blend": src / "shot24.blend", "bvh": bvh, "folder": folder}


def test_blend_at_24_fps_with_an_ik_leg(shot):
    from blender_addon import bridge
    from blender_addon.inbetween import fill
    out = shot["folder"] / "out"
    r = run_batch("inbetween", shot["blend"], "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    entry = by_name(load_report(out))["shot24.blend"]
    (rec,) = entry["objects"]
    assert rec["keys"] == KEYS and rec["bones_written"] == 20
    assert rec["constrained"] == {"LowerLeg_L": "LowerLeg_L (IK on LowerLeg_L from leg_target)",
                                  "UpperLeg_L": "UpperLeg_L (IK on LowerLeg_L)"}
    assert any("2 bones driven by constraints were left as they were" in w for w in entry["warnings"])
    before = snapshot(_open(shot["blend"]))
    theirs = snapshot(_open(out / "shot24.blend"))
    for k, v in before.items():
        if '"UpperLeg_L"' in k[0] or '"LowerLeg_L"' in k[0]:
            assert_same_keys(v, theirs[k])
    obj = _open(shot["blend"])  # the operator's own result at the scene's 24 fps, key for key
    fill.run(obj, bridge.BackendSettings(mode=backend_mode_here(), device="cpu"), fill.Options(), 24.0)
    ours = snapshot(obj)
    for k in ours:
        assert_same_keys(ours[k], theirs[k])


def test_bvh_at_24_fps(shot):
    from backend.formats.bvh import read_bvh
    from backend.maths import quat_np
    src, out = shot["folder"] / "bvh", shot["folder"] / "bvh-out"
    src.mkdir(exist_ok=True)
    (src / "walk24.bvh").write_bytes(shot["bvh"].read_bytes())
    r = run_batch("inbetween", src, "--every", 12, "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    clip, got = read_bvh(src / "walk24.bvh"), read_bvh(out / "walk24.bvh")
    keys = list(range(0, clip.num_frames, 12))
    assert np.degrees(quat_np.angle_between(got.rotations[keys], clip.rotations[keys])).max() < 1e-3
    assert got.frame_time == pytest.approx(1 / 24)
    r = run_batch("inbetween", src, "--every", 60, "--out-dir", shot["folder"] / "o2", "--jobs", 1, "--device", "cpu")
    entry = by_name(load_report(shot["folder"] / "o2"))["walk24.bvh"]
    assert entry["status"] == "failed" and "fills gaps of up to 48 frames (2 s at 24 fps)" in entry["errors"][0]
