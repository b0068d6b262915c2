"""encode, edit and info in the batch.  .blend files go through the add-on's own Encode, sliders
and Bake (the output is what the buttons make); .bvh files through the backend (the same files as
``python -m backend edit``)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import batch_helpers
from addon_helpers import ROOT, assert_same_keys, bpy, disable_addon, fresh_scene_with_addon, snapshot, use_test_backend

bpy = bpy()
pytestmark = pytest.mark.blender


@pytest.fixture(scope="module")
def blends():
    made = batch_helpers.shared_blends()  # (built before the add-on is enabled here)
    fresh_scene_with_addon()  # the add-on's properties, to read and to redo what the batch did
    use_test_backend()
    yield made
    disable_addon()


@pytest.fixture(scope="module")
def engine():
    from backend.motion.engine import DEFAULT_CHECKPOINT, Engine
    return Engine(DEFAULT_CHECKPOINT, "cpu")


def _open(path: Path):
    assert bpy.ops.wm.open_mainfile(filepath=str(path), load_ui=False, use_scripts=False) == {"FINISHED"}
    return next(o for o in bpy.data.objects if o.type == "ARMATURE")


def _raw(obj) -> np.ndarray:
    from blender_addon.latent import core as latent_core
    return latent_core.read_raw(obj, obj.splinetween_latent)


@pytest.mark.torch
def test_edit(blends, engine, tmp_path):
    from backend.formats.bvh import format_bvh, read_bvh
    from backend.motion.edits import edit_points
    from blender_addon import preferences
    from blender_addon.latent import core as latent_core
    from blender_addon.latent import slider
    from blender_addon.latent.armature import encode
    src, out = tmp_path / "in", tmp_path / "out"
    (blend,) = batch_helpers.copy_inputs(blends, ["run"], src)
    bvh = Path(shutil.copy2(blends["turn"]["clip"], src / "turn.bvh"))
    r = batch_helpers.run_batch("edit", src, "--amplify", 1.5, "--timing", 0.25, "--out-dir", out, "--jobs", 1,
                                "--device", "cpu")
    assert r.returncode == 0, r.stderr

    clip = read_bvh(bvh)
    controls = engine.encode(clip)
    expect = engine.decode(controls, timing=0.25, points=edit_points(controls.points, amplify_by=1.5), like=clip)
    assert (out / "turn.bvh").read_text() == format_bvh(expect)  # what `python -m backend edit` writes

    theirs = _open(out / "run.blend")  # the batch: Encode, every segment's sliders, re-decode
    st = theirs.splinetween_latent
    assert st.active and (st.frame_start, st.frames) == (1, blends["run"]["frames"])
    assert [(s.amplify, s.timing) for s in st.segments] == [(1.5, 0.25)] * len(st.segments)
    got, raw = snapshot(theirs), _raw(theirs)
    ours = _open(blend)  # the same by hand, with the add-on's own functions
    encode.encode(ours, preferences.settings(), preferences.autoencoder_path(), 1, blends["run"]["frames"], 30.0)
    with latent_core.suspended():
        for seg in ours.splinetween_latent.segments:
            seg.amplify, seg.timing = 1.5, 0.25
    slider.sync(ours)
    want = snapshot(ours)
    assert got.keys() == want.keys()
    for k in want:
        assert_same_keys(want[k], got[k])
    np.testing.assert_array_equal(raw, _raw(ours))
    entry = batch_helpers.by_name(batch_helpers.load_report(out, "edit"))["run.blend"]
    assert entry["frames_written"] == blends["run"]["frames"]

    baked = tmp_path / "baked"
    r = batch_helpers.run_batch("edit", out / "run.blend", "--amplify", 0.5, "--bake", "--out-dir", baked, "--jobs", 1)
    assert r.returncode == 0, r.stderr
    obj = _open(baked / "run.blend")  # the existing controls edited, then plain keys only
    assert not obj.splinetween_latent.active and not any(k.startswith("splinetween_s") for k in obj.keys())


@pytest.mark.torch
def test_encode_and_info(blends, engine, tmp_path):
    from backend.formats.bvh import read_bvh
    src, out = tmp_path / "in", tmp_path / "out"
    batch_helpers.build_blends(src, [blends["run"]["clip"]], dense=True)  # every imported key: the clip's own motion
    batch_helpers.build_no_armature(src / "props.blend")
    bvh = Path(shutil.copy2(blends["run"]["clip"], src / "run.bvh"))
    r = batch_helpers.run_batch("encode", src / "run.blend", bvh, "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "run.bvh.controls.json").read_text())
    (controls,) = doc["clips"].values()
    np.testing.assert_allclose(controls["points"], engine.encode(read_bvh(bvh)).points, atol=1e-5)
    obj = _open(out / "run.blend")  # Latent Controls on the armature, as the Encode button leaves them
    assert obj.splinetween_latent.active and len(obj.splinetween_latent.segments) == len(controls["segments"])
    np.testing.assert_allclose(_raw(obj), controls["points"], atol=2e-3)  # the rig's curves give back the clip
    (rep,) = [f for f in batch_helpers.load_report(out, "encode")["files"] if f["input"].endswith("run.blend")]
    fit = rep["objects"][0]["latent_controls"]["fidelity"]  # the panel's readout, per segment
    from blender_addon.latent import core as latent_core
    stored = latent_core.fidelity(obj.splinetween_latent)
    assert len(fit["rotation_deg"]) == len(controls["segments"]) and fit["warning"] is None
    np.testing.assert_allclose(fit["rotation_deg"], stored[:, 0], atol=1e-3)
    np.testing.assert_allclose(fit["position_cm"], stored[:, 1], atol=1e-3)

    # as Blender runs it: `blender -b --python <add-on>/batch/__main__.py -- ARGS` (here: plain Python + bpy)
    info = subprocess.run([sys.executable, str(ROOT / "blender_addon" / "batch" / "__main__.py"), "--", "info",
                           src, out / "run.blend", "--json", "--jobs", "1"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert info.returncode == 0, info.stderr
    files = {(Path(f["input"]).parent.name, Path(f["input"]).name): f for f in json.loads(info.stdout)["files"]}
    (rig,) = files["in", "run.blend"]["objects"]
    assert rig["fits_model"] and rig["selected_key_frames"] == [] and rig["key_range"] == [1, 70] and rig["fps"] == 30
    assert rig["latent_controls"] is None
    assert files["out", "run.blend"]["objects"][0]["latent_controls"]["frames"] == [1, 70]
    assert files["in", "props.blend"]["objects"] == [] and files["in", "run.bvh"]["objects"][0]["frames"] == 70


def test_workers_inside_a_blender_binary(monkeypatch):
    """Under ``blender -b`` the workers are Blender binaries too, with auto-run scripts disabled."""
    from blender_addon.batch import pool
    monkeypatch.setattr(pool, "_blender_binary", lambda: "/opt/blender/blender")
    cmd = pool.worker_command()
    assert cmd[:4] == ["/opt/blender/blender", "-b", "--factory-startup", "--disable-autoexec"]
    assert cmd[4] == "--python-expr" and "blender_addon.batch.worker" in cmd[5]
    monkeypatch.setattr(pool, "_blender_binary", lambda: "")
    assert pool.worker_command()[:2] == [sys.executable, "-c"]


def test_largest_files_go_first_and_the_report_names_the_start_up(tmp_path):
    """Files are handed out largest first (one worker: the order they finish in), and each worker's
    entry says what its start-up cost and what it loaded."""
    src = tmp_path / "in"
    src.mkdir()
    clips = [Path(shutil.copy2(p, src / p.name)) for p in sorted((ROOT / "examples" / "bvh").glob("*.bvh"))]
    report = tmp_path / "info.json"
    r = batch_helpers.run_batch("info", src, "--jobs", 1, "--report", report)
    assert r.returncode == 0, r.stderr
    rep = json.loads(report.read_text())
    finished = [Path(f["input"]).name for f in sorted(rep["files"], key=lambda f: f["done_s"])]
    assert finished == [p.name for p in sorted(clips, key=lambda p: -p.stat().st_size)]
    assert finished != sorted(finished)  # the examples' sizes are not in name order: the order is the sizes'
    (worker,) = rep["workers"]
    assert set(worker["startup"]) == {"bpy", "addon"} and all(s > 0 for s in worker["startup"].values())
    assert worker["model"] == "no model needed" and worker["model_s"] >= 0
    assert 0 < worker["started_s"] < worker["ready_s"]
