"""``python -m blender_addon.batch inbetween`` on .blend and .bvh files, in real (headless) Blender.

The outputs are checked as the operator tests check the operator: keys kept exactly, every gap
filled, nothing else touched -- and they are the operator's own result, key for key.  Inputs are
never changed; a corrupt .blend and one without an armature fail alone.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from addon_helpers import assert_same_keys, backend_mode_here, bpy, channelbag, driven, keys_on, snapshot
from batch_helpers import (
    build_blends,
    build_corrupt,
    build_no_armature,
    by_name,
    copy_inputs,
    load_report,
    run_batch,
    sha256,
    shared_blends,
    temp_leftovers,
)

bpy = bpy()
pytestmark = pytest.mark.blender
GENERATED = bpy.types.Keyframe.bl_rna.properties["type"].enum_items["GENERATED"].value


@pytest.fixture(scope="module")
def blends():
    return shared_blends()


def open_armature(path: Path):
    assert bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False, use_scripts=False) == {"FINISHED"}
    return next(o for o in bpy.data.objects if o.type == "ARMATURE")


def check_filled(source: Path, output: Path, keys: list[int], n: int) -> None:
    """Every driven channel keyed on every frame 1..n, the blocked keys kept, the rest untouched."""
    before = snapshot(open_armature(source))
    after = snapshot(open_armature(output))
    assert after.keys() == before.keys()
    for path, old in before.items():
        new = after[path]
        if not driven(path[0]):
            assert_same_keys(old, new)
            continue
        assert np.array_equal(new["co"][:, 0], np.arange(1, n + 1)), path
        kept = keys_on(new, keys)
        assert_same_keys(old, new, rows_b=kept, skip=("handle_left", "handle_right"))
        assert (new["type"][~kept] == GENERATED).all() and not new["select_control_point"][~kept].any()


def operator_result(source: Path):
    """What the Inbetween operator (fill.run, in-process; in the backend process under Blender 4.5) makes of the
    file's keys."""
    from blender_addon import bridge
    from blender_addon.inbetween import fill
    obj = open_armature(source)
    fill.run(obj, bridge.BackendSettings(mode=backend_mode_here(), device="cpu"), fill.Options(), 30.0)
    return snapshot(obj)


def test_blend_files_in_and_out(blends, tmp_path):
    src, out = tmp_path / "shots", tmp_path / "out"
    copy_inputs(blends, ["walk", "run"], src)
    copy_inputs(blends, ["turn"], src / "act2")
    build_no_armature(src / "set_dressing.blend")
    build_corrupt(src / "broken.blend", blends["run"]["path"])
    inputs = sorted(p for p in src.rglob("*") if p.is_file())
    hashes = {p: sha256(p) for p in inputs}

    r = run_batch("inbetween", src, "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 1, r.stderr
    assert "3 ok, 2 failed" in r.stdout and "report: " in r.stdout
    assert {p: sha256(p) for p in inputs} == hashes  # inputs untouched, byte for byte
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.blend")) == [
        "act2/turn.blend", "run.blend", "walk.blend"]  # mirrored names; nothing for the bad files
    assert not temp_leftovers(out)

    rep = load_report(out)
    files = by_name(rep)
    assert rep["state"] == "finished" and rep["summary"]["failed"] == 2
    assert files["broken.blend"]["status"] == "failed" and "cannot open" in files["broken.blend"]["errors"][0]
    assert files["set_dressing.blend"]["status"] == "failed"
    assert "no armature" in files["set_dressing.blend"]["errors"][0]
    for name in ("walk", "run", "turn"):
        entry, info = files[f"{name}.blend"], blends[name]
        assert entry["status"] == "ok" and not entry["errors"]
        (obj,) = entry["objects"]
        assert obj["keys"] == info["keys"] and obj["gaps"] == len(info["keys"]) - 1
        assert entry["frames_written"] == info["frames"] - len(info["keys"])
        assert Path(entry["output"] + ".done").exists()
        check_filled(info["path"], Path(entry["output"]), info["keys"], info["frames"])
    obj = open_armature(out / "walk.blend")
    theirs = snapshot(obj)
    assert sum(k.startswith("splinetween_s") for k in obj.keys()) == 4 * len(files["walk.blend"]["objects"][0]
                                                                             ["latent_controls"]["amplify"])
    ours = operator_result(blends["walk"]["path"])
    for k in ours:
        assert_same_keys(ours[k], theirs[k])  # the operator's own result, every key attribute


def test_inbetween_again_over_latent_controls_needs_replace_latent(blends, tmp_path):
    """A file whose armature kept Latent Controls from a first run is left as it is, the report saying
    why and what to add; with --replace-latent the controls are baked and the rig in-betweened."""
    src, out, again = tmp_path / "in", tmp_path / "out", tmp_path / "again"
    copy_inputs(blends, ["walk"], src)
    assert run_batch("inbetween", src, "--out-dir", out, "--jobs", 1, "--device", "cpu").returncode == 0
    first = sha256(out / "walk.blend")
    r = run_batch("inbetween", out / "walk.blend", "--out-dir", again, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 1 and sha256(out / "walk.blend") == first
    (obj,) = by_name(load_report(again))["walk.blend"]["objects"]
    assert obj["status"] == "failed" and "has latent controls on frames" in obj["error"]
    assert "replace_latent=True (the batch: --replace-latent); nothing was changed" in obj["error"]
    r = run_batch("inbetween", out / "walk.blend", "--out-dir", again, "--replace-latent", "--jobs", 1,
                    "--device", "cpu")
    assert r.returncode == 0, r.stdout + r.stderr
    (obj,) = by_name(load_report(again))["walk.blend"]["objects"]
    assert obj["status"] == "ok" and "were baked" in obj["message"]


@pytest.mark.torch
def test_two_workers_bvh_and_every_k(blends, tmp_path):
    """--every 15 on BVH files writes what the backend CLI writes; on a densely keyed .blend it keys
    every 15th frame and fills the rest with the same motion as the backend on the BVH."""
    from backend.formats.bvh import format_bvh, read_bvh
    from backend.maths import quat_np
    from backend.motion.engine import DEFAULT_INBETWEEN, Engine
    from backend.motion.keyframes_np import every_k
    from blender_addon.core import rig_math
    from blender_addon.io import scene as scene_io

    src, out = tmp_path / "in", tmp_path / "out"
    dense = build_blends(src, [blends["run"]["clip"]], dense=True)["run"]
    bvhs = [Path(shutil.copy2(blends[n]["clip"], src / blends[n]["clip"].name)) for n in ("run", "turn")]
    r = run_batch("inbetween", src, "--every", 15, "--out-dir", out, "--jobs", 2, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    rep = load_report(out)
    assert rep["summary"]["ok"] == 3 and len({f["worker"] for f in rep["files"]}) == 2

    engine = Engine(DEFAULT_INBETWEEN, "cpu")
    for p in bvhs:
        clip = read_bvh(p)
        expect, _ = engine.inbetween(clip, every_k(clip.num_frames, 15))
        assert (out / p.name).read_text() == format_bvh(expect)  # byte for byte the backend CLI's file
    clip = read_bvh(bvhs[0])
    expect, _ = engine.inbetween(clip, every_k(clip.num_frames, 15))
    obj = open_armature(out / "run.blend")
    names = list(clip.skeleton.names)
    rig = scene_io.rig_frames(obj, names, clip.skeleton.offsets)
    rot, pos = rig_math.blender_to_bvh(rig, *scene_io.read_pose(obj, channelbag(obj), names, np.arange(1, dense["frames"] + 1)))
    _, ours = quat_np.fk(rot, pos, clip.skeleton.parents)
    _, theirs = quat_np.fk(expect.rotations, expect.positions, clip.skeleton.parents)
    # Blender keeps keys in float32 (1e-4 cm at 4 m of travel); the model carries that rounding
    # through to about 0.01 cm (0.1 mm) on the filled frames.
    assert np.linalg.norm(ours - theirs, axis=-1).max() < 1e-2  # cm
    sel = by_name(rep)["run.blend"]["objects"][0]["keys"]
    assert sel == [1 + k for k in every_k(dense["frames"], 15)]


@pytest.mark.parametrize("args", [
    ["inbetween", "{tmp}/nothing-*.blend", "--out-dir", "{tmp}/o"],  # nothing matched
    ["inbetween", "{src}", "--out-dir", "{src}"],  # outputs would overwrite the inputs
    ["inbetween", "{src}", "--out-dir", "{tmp}/o", "--every", "0"],
    ["inbetween", "{src}", "--out-dir", "{tmp}/o", "--every", "5", "--marker", "key*"],
    ["inbetween", "{src}"],  # neither --out-dir nor --in-place
    ["edit", "{src}", "--in-place", "--supersample", "0"],
    ["edit", "{src}", "--out-dir", "{tmp}/o", "--timing", "2"],
])
def test_usage_errors_exit_2(blends, tmp_path, args, capsys):
    from blender_addon.batch import main
    src = tmp_path / "src"
    copy_inputs(blends, ["run"], src)
    with pytest.raises(SystemExit) as e:
        main([a.format(tmp=tmp_path, src=src) for a in args])
    assert e.value.code == 2
    assert not (tmp_path / "o").exists()
