"""Train Mesh Model without collisions (issue 32): one job folder per .blend, object and task, one run
folder per data and settings, each mesh object's own checkpoint per task (what Encode Mesh and
Inbetween Mesh read; the preference is the default), validation on frames it never trains on, a
phase shown before the first step, and refusals that leave the disk as it was (Train, Encode Mesh).
Real bpy and the real training CLI on a tiny grid (see test_addon_train_job.py)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from addon_helpers import bpy, prefs
from test_addon_train_job import CURRENT, FAST, addon, drive, make_grid  # noqa: F401 (fixture)

bpy = bpy()
from blender_addon.io.mesh_checkpoints import PROPS  # noqa: E402
from blender_addon.train import data as train_data  # noqa: E402
from blender_addon.train import events as train_events  # noqa: E402
from blender_addon.train import op_train  # noqa: E402

pytestmark = pytest.mark.blender
TRAIN = bpy.ops.object.splinetween_train_mesh
CANCEL = bpy.ops.object.splinetween_train_mesh_cancel
ENCODE = bpy.ops.anim.splinetween_mesh_encode
INBETWEEN = bpy.ops.anim.splinetween_mesh_inbetween
TINY = FAST + " --fit_windows=64"


@pytest.fixture
def saved_grid(addon, tmp_path):  # noqa: F811
    obj = make_grid()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    yield obj
    op_train.shutdown()
    prefs().mesh_autoencoder = prefs().mesh_inbetween = ""


def test_the_split_and_too_little_data():
    s = train_data.split_frames(70, "autoencoder", "x")
    assert (s.train, s.val, s.window, s.note) == (39, 31, 31, "")
    s = train_data.split_frames(20, "autoencoder", "The frame range 1-20")
    assert (s.train, s.val, s.window) == (10, 10, 10)
    assert s.note == ("a short range: 10 frames to train on, the last 10 to validate on, windows of 10 frames (the "
                      "model's are 31); 62 or more frames make a better model")
    s = train_data.split_frames(1000, "inbetween", "x")
    assert (s.train, s.val, s.window) == (900, 100, 61)
    with pytest.raises(train_data.TrainJobError, match=r"The frame range 1-15 has 15 frames; training needs at least "
                                                       r"16: 8 to train on and 8 more to validate on"):
        train_data.split_frames(15, "inbetween", "The frame range 1-15")


def test_progress_shows_each_phase_before_the_steps():
    reader = train_events.EventReader()
    assert reader.progress.text() == "Starting..."
    p = reader.feed(json.dumps({"event": "phase", "name": "fitting the linear path", "done": 64, "total": 256}) + "\n")
    assert p.text() == "Fitting the linear path 64/256..." and p.factor == 0.25
    p = reader.feed(json.dumps({"event": "phase", "name": "reading the data", "done": 0, "total": 0}) + "\n")
    assert p.text() == "Reading the data..." and p.factor == 0.0
    p = reader.feed(json.dumps({"event": "start", "total": 20}) + "\n")
    assert p.text() == "Step 0/20" and p.phase == ""


def test_one_cache_is_refused_for_want_of_validation_frames(tmp_path):
    from backend.formats.pc2 import write_pc2
    write_pc2(tmp_path / "walk.pc2", np.zeros((40, 4, 3), np.float32))
    with pytest.raises(train_data.TrainJobError, match=r"holds one cache that fits \(walk.pc2\); training validates "
                                                       r"on other frames than it trains on: .*walk_8.pc2"):
        train_data.scan_caches(tmp_path, {4})


@pytest.mark.torch
def test_two_files_with_a_mesh_of_one_name_train_apart(saved_grid, tmp_path):
    assert TRAIN(steps=100000, components=8, options=TINY) == {"FINISHED"}
    first = op_train.current_job()
    CANCEL()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "other.blend"))  # the same folder, its own Grid
    assert TRAIN(steps=100000, components=8, options=TINY) == {"FINISHED"}
    second = op_train.current_job()
    CANCEL()
    assert first.folder.name == "train_shot_Grid_autoencoder" and second.folder.name == "train_other_Grid_autoencoder"
    assert first.run.is_dir() and not set(first.run.parents) & {second.run}


@pytest.mark.torch
def test_each_object_keeps_its_models_and_the_operators_read_them(saved_grid, tmp_path, monkeypatch):
    monkeypatch.setenv("SPLINETWEEN_NO_PRINCIPAL", "1")
    assert TRAIN(steps=20, components=8, options=TINY) == {"FINISHED"}
    ae = op_train.current_job()
    assert drive(ae) == "DONE", ae.message
    own_ae = saved_grid[PROPS["autoencoder"]]
    ae_weights = (ae.run / "best.safetensors").read_bytes()

    assert TRAIN(steps=20, components=8, task="inbetween", options=TINY) == {"FINISHED"}
    ib = op_train.current_job()
    assert drive(ib, 300) == "DONE", ib.message
    assert ib.folder.name == "train_shot_Grid_inbetween" and ib.folder != ae.folder
    assert saved_grid[PROPS["autoencoder"]] == own_ae  # the in-betweener changed nothing the autoencoder had
    assert (ae.run / "best.safetensors").read_bytes() == ae_weights
    assert re.fullmatch(r"//splinetween/train_shot_Grid_inbetween/run-[0-9a-f]{10}/best\.json",
                        saved_grid[PROPS["inbetween"]])
    phases = [json.loads(ln) for ln in (ib.run / "events.jsonl").read_text().splitlines()]
    assert any(e["event"] == "phase" and e["name"] == "fitting the linear path" for e in phases)
    assert [e["event"] for e in phases].index("phase") < [e["event"] for e in phases].index("start")

    # The preferences point at the shipped cloth models (another mesh): the grid's operators use its own.
    prefs().mesh_autoencoder = str(Path(bpy.path.abspath("//")).parent / "nowhere.json")
    prefs().mesh_inbetween = str(Path(bpy.path.abspath("//")).parent / "nowhere.json")
    bpy.context.view_layer.objects.active = saved_grid
    assert ENCODE(frame_range="CUSTOM", frame_start=1, frame_end=40) == {"FINISHED"}
    st = saved_grid.splinetween_latent
    assert Path(bpy.path.abspath(st.checkpoint)) == Path(bpy.path.abspath(own_ae))
    bpy.ops.anim.splinetween_remove()
    assert INBETWEEN(key_mode="LIST", key_frames="1, 10, 20") == {"FINISHED"}
    assert Path(bpy.path.abspath(saved_grid.splinetween_latent.checkpoint)) == \
        Path(bpy.path.abspath(saved_grid[PROPS["inbetween"]]))
    bpy.ops.anim.splinetween_remove()

    # Its own model gone: refused with the fix, not silently replaced by the preference's.
    gone = Path(bpy.path.abspath(own_ae))
    gone.rename(gone.with_suffix(".json.moved"))
    with pytest.raises(RuntimeError, match=r"Grid's own mesh autoencoder //splinetween/.*best.json is gone .*delete "
                                           r"the property to use the preference's checkpoint"):
        ENCODE(frame_range="CUSTOM", frame_start=1, frame_end=40)


@pytest.mark.torch
def test_a_short_range_trains_with_a_warning(saved_grid):
    assert TRAIN(steps=100000, components=8, frame_start=1, frame_end=20, options=TINY) == {"FINISHED"}
    job = op_train.current_job()
    assert "a short range: 10 frames to train on, the last 10 to validate on, windows of 10 frames" in job.message
    CANCEL()


def test_a_refused_encode_mesh_leaves_no_folder(saved_grid, tmp_path):
    """The shipped cloth model on the grid (another vertex count): refused after the cache file's place was
    chosen; no empty splinetween/ folder is left beside the .blend."""
    bpy.context.view_layer.objects.active = saved_grid
    with pytest.raises(RuntimeError, match="vertices"):
        ENCODE(frame_range="CUSTOM", frame_start=1, frame_end=40)
    with pytest.raises(RuntimeError, match="vertices"):
        INBETWEEN(key_mode="LIST", key_frames="1, 10, 20")
    assert not (tmp_path / "splinetween").exists()
    assert bpy.context.scene.frame_current == CURRENT
