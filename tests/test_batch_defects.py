"""python -m blender_addon.batch with bad inputs (issue 17): linked armatures and actions named with
the fix, --keys out of order refused the same way for .blend and .bvh, NaN edits refused."""
from __future__ import annotations

from pathlib import Path

import pytest

from addon_helpers import bpy
from batch_helpers import EXAMPLES, build_blends, by_name, load_report, run_batch, sha256

bpy = bpy()
pytestmark = pytest.mark.blender


@pytest.fixture(scope="module")
def walk(tmp_path_factory):
    return build_blends(tmp_path_factory.mktemp("lib"), clips=[EXAMPLES[2]])["walk"]


def _shot(path: Path, library: Path, link_object: bool) -> Path:
    """A shot that links the library's armature (``link_object``), or has a local armature whose
    action is linked from the library."""
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(str(library), link=True) as (src, dst):
        if link_object:
            dst.objects = [n for n in src.objects]
        else:
            dst.actions = list(src.actions)
    if link_object:
        for o in bpy.data.objects:
            bpy.context.collection.objects.link(o)
    else:
        with bpy.data.libraries.load(str(library), link=False) as (src, dst):
            dst.objects = [n for n in src.objects]
        rig = next(o for o in bpy.data.objects if o.type == "ARMATURE" and o.library is None)
        bpy.context.collection.objects.link(rig)
        linked = next(a for a in bpy.data.actions if a.library is not None)
        old = rig.animation_data.action
        rig.animation_data.action = linked
        if old is not None and old.library is None:
            bpy.data.actions.remove(old)
    bpy.ops.wm.save_as_mainfile(filepath=str(path), check_existing=False, relative_remap=False)
    bpy.ops.wm.read_homefile(use_empty=True)
    return path


def test_a_shot_whose_armature_is_linked_says_so(walk, tmp_path):
    shot = _shot(tmp_path / "shot.blend", walk["path"], link_object=True)
    before = sha256(shot)
    out = tmp_path / "O"
    r = run_batch("inbetween", shot, "--every", 15, "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 1, r.stderr
    entry = by_name(load_report(out))["shot.blend"]
    assert entry["status"] == "failed" and entry["output"] is None
    err = " ".join(entry["errors"])
    assert "the file has no armature" not in err
    assert f"{walk['object']}: is linked from " in err and "walk.blend" in err
    assert "make it local first: Object > Relations > Make Local > All" in err
    assert sha256(shot) == before and not (out / "shot.blend").exists()
    r = run_batch("info", shot, "--out-dir", tmp_path / "I", "--jobs", 1)
    assert r.returncode == 0, r.stderr
    warnings = " ".join(by_name(load_report(tmp_path / "I", "info"))["shot.blend"]["warnings"])
    assert "the file has no armature" not in warnings and f"{walk['object']}: skipped, is linked from" in warnings


def test_a_local_armature_with_a_linked_action_is_refused_with_the_fix(walk, tmp_path):
    shot = _shot(tmp_path / "shot2.blend", walk["path"], link_object=False)
    before = sha256(shot)
    out = tmp_path / "O"
    r = run_batch("inbetween", shot, "--every", 15, "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 1, r.stderr
    entry = by_name(load_report(out))["shot2.blend"]
    err = " ".join(entry["errors"])
    assert "is linked from" in err and "so its keys cannot be changed; nothing was changed (make it local first: " \
           "Object > Relations > Make Local > All" in err
    assert sha256(shot) == before and not (out / "shot2.blend").exists()


def test_keys_out_of_order_are_refused_alike_for_blend_and_bvh(walk, tmp_path):
    for src in (walk["path"], EXAMPLES[2]):
        out = tmp_path / Path(src).stem
        r = run_batch("inbetween", src, "--keys", "16,1", "--out-dir", out, "--jobs", 1)
        assert r.returncode == 2
        assert "'16,1': key frames must be increasing and distinct (write 1,16)" in r.stderr
        assert not out.exists()
    r = run_batch("inbetween", EXAMPLES[2], "--keys", "5", "--out-dir", tmp_path / "one", "--jobs", 1)
    assert r.returncode == 2 and "give at least two key frames" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--amplify", "nan"], "--amplify nan: give a finite factor"),
    (["--amplify", "inf"], "--amplify inf: give a finite factor"),
    (["--pc", "1=nan"], "'1=nan': S must be a finite number of standard deviations"),
])
def test_edit_of_a_bvh_refuses_non_finite_amounts(tmp_path, args, message):
    out = tmp_path / "O"
    r = run_batch("edit", EXAMPLES[2], *args, "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 2 and message in r.stderr
    assert not out.exists()


def test_edit_of_a_bvh_whose_result_overflows_writes_nothing(tmp_path):
    out = tmp_path / "O"
    r = run_batch("edit", EXAMPLES[2], "--amplify", "1e300", "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 1
    entry = by_name(load_report(out, "edit"))[EXAMPLES[2].name]
    assert entry["status"] == "failed" and "NaN or infinite values; nothing was written" in entry["errors"][0]
    assert not (out / EXAMPLES[2].name).exists()


def test_edit_of_a_bvh_bounds_supersampling(tmp_path):
    out = tmp_path / "O"
    r = run_batch("edit", EXAMPLES[2], "--supersample", "2000", "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 1
    entry = by_name(load_report(out, "edit"))[EXAMPLES[2].name]
    from backend.motion.engine import DEFAULT_CHECKPOINT, Engine
    n = Engine(DEFAULT_CHECKPOINT, "cpu").ckpt.window  # the longest segment the autoencoder cuts
    assert f"--supersample 2000: a {n}-frame segment would decode to {(n - 1) * 2000 + 1} frames; the limit is " \
        "2048" in entry["errors"][0]


def test_nan_on_a_bvh_frame_that_is_not_a_key_is_never_read(tmp_path):
    head, motion = EXAMPLES[2].read_text().split("MOTION\n")
    lines = motion.splitlines()
    vals = lines[2 + 3].split()
    vals[4] = "nan"
    lines[2 + 3] = " ".join(vals)
    src = tmp_path / "holes.bvh"
    src.write_text(head + "MOTION\n" + "\n".join(lines) + "\n")
    out = tmp_path / "O"
    r = run_batch("inbetween", src, "--every", 15, "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert "nan" not in (out / "holes.bvh").read_text()
    r = run_batch("inbetween", src, "--keys", "5,20", "--out-dir", tmp_path / "P", "--jobs", 1, "--device", "cpu")
    assert r.returncode == 1
    entry = by_name(load_report(tmp_path / "P"))["holes.bvh"]
    assert "NaN or infinite values in frame(s) [3], outside the keys 5..20" in entry["errors"][0]
