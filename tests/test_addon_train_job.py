"""Train Mesh Model: the add-on exports a mesh's frames, trains in a background process it can
cancel and resume, and points the object at the trained checkpoint (its own property per task, which
Encode Mesh and Inbetween Mesh read), without blocking Blender.

Real bpy and the real ``python -m training.train mesh``, on a tiny model (a 10x10 grid waving
over 70 frames, 20 steps of a one-layer transformer) so a run takes seconds.  Headless bpy has
no event loop, so the tests call the timer function themselves, as Blender would.

Longer than 300 lines: one job's life (start, cancel, resume, the result) on shared fixtures.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from addon_helpers import bpy, disable_addon, fresh_scene_with_addon, prefs

bpy = bpy()
from blender_addon.io.mesh_checkpoints import PROPS  # noqa: E402
from blender_addon.train import op_train as op_train_mesh  # noqa: E402

pytestmark = pytest.mark.blender
TRAIN = bpy.ops.object.splinetween_train_mesh
CANCEL = bpy.ops.object.splinetween_train_mesh_cancel
FAST = "--layers=1 --width=32 --heads=4 --latent=8 --val_every=10 --threads=1"
CURRENT = 17  # the scene frame the user was on; training must leave it there


@pytest.fixture(scope="module")
def addon():
    fresh_scene_with_addon()
    yield
    op_train_mesh.shutdown()
    disable_addon()


def make_grid(name="Grid"):
    """A 10x10-vertex grid with a Wave modifier, scene range 1-70, on frame CURRENT."""
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=9, y_subdivisions=9, size=2)
    obj = bpy.context.active_object
    obj.name = name
    wave = obj.modifiers.new("Wave", "WAVE")
    wave.height, wave.width, wave.speed = 0.3, 0.8, 0.1
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 70
    scene.frame_set(CURRENT)
    return obj


@pytest.fixture
def grid(addon, tmp_path):
    """The grid in a .blend saved in tmp_path (so the job folder is tmp_path/splinetween/train_scene_Grid_<task>)."""
    obj = make_grid()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    yield obj
    op_train_mesh.shutdown()


def evaluated(obj, frame):
    scene = bpy.context.scene
    keep = scene.frame_current
    scene.frame_set(frame)
    mesh = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    buf = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.attributes["position"].data.foreach_get("vector", buf)
    scene.frame_set(keep)
    return buf.reshape(-1, 3)


def drive(job, timeout=180.0) -> str:
    """Call the timer function until it unregisters itself (the job ended); the job's state."""
    t0 = time.monotonic()
    while op_train_mesh.tick() is not None:
        assert time.monotonic() - t0 < timeout, job.log_path.read_text(errors="replace")[-2000:]
        time.sleep(0.1)
    return job.state


def tick_until(job, cond, timeout=120.0):
    t0 = time.monotonic()
    while not cond():
        assert op_train_mesh.tick() is not None, job.message + "\n" + job.log_path.read_text(errors="replace")[-2000:]
        assert time.monotonic() - t0 < timeout, job.log_path.read_text(errors="replace")[-2000:]
        time.sleep(0.1)


def gone(pid: int) -> bool:
    """The process and its group are gone and it was reaped (no zombie left behind)."""
    try:
        os.killpg(pid, 0)
        return False
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, os.WNOHANG)
        return False  # still our child, unreaped
    except ChildProcessError:
        pass
    return not Path(f"/proc/{pid}").exists()


class Layout:
    """Stands in for the sidebar's UILayout (headless bpy draws no regions): records the calls and checks
    each against UILayout's RNA in this Blender (the function and its keywords exist, enum values and
    icons are valid), and that every operator drawn is registered."""

    def __init__(self, log):
        self.__dict__["log"] = log

    def __setattr__(self, name, value):
        prop = bpy.types.UILayout.bl_rna.properties[name]
        assert prop.type != "ENUM" or value in prop.enum_items.keys(), (name, value)
        self.log.append(("set", name, value))

    def __getattr__(self, name):
        fn = bpy.types.UILayout.bl_rna.functions[name]

        def call(*args, **kw):
            for k, v in kw.items():
                param = fn.parameters[k]
                assert param.type != "ENUM" or v in param.enum_items.keys(), (name, k, v)
            self.log.append((name, args, kw))
            if name == "operator":
                cat, op = args[0].split(".")
                assert hasattr(bpy.types, f"{cat.upper()}_OT_{op}"), args[0]
            return Layout(self.log) if name in ("row", "column", "box", "split") else None
        return call


def drawn() -> tuple[list, str]:
    log = []
    op_train_mesh.draw_train_section(Layout(log), bpy.context)
    return log, " | ".join(e[2].get("text", "") for e in log if e[0] in ("label", "progress"))


@pytest.mark.torch
def test_trains_in_the_background_and_points_the_object_at_the_model(grid, tmp_path, capfd):
    scene = bpy.context.scene
    assert TRAIN(steps=20, components=8, options=FAST) == {"FINISHED"}
    job = op_train_mesh.current_job()
    assert job.proc.poll() is None, "the operator returned only after the training ended"  # it runs on
    op_train_mesh._tick_cost.clear()
    assert scene.frame_current == CURRENT
    out = capfd.readouterr().out
    assert "//splinetween/train_scene_Grid_autoencoder" in out  # the report says where
    assert "frames 1-39 (100 vertices), validated on frames 40-70" in out

    # The exported data is the evaluated mesh, every frame of the range: the first 39 to train on, the
    # last 31 (a whole window) to validate on, never the training frames.
    from backend.formats.pc2 import read_pc2
    assert job.folder == tmp_path / "splinetween" / "train_scene_Grid_autoencoder"
    train, _, _ = read_pc2(job.run / "data" / "Grid_0.pc2")
    val, _, _ = read_pc2(job.run / "data" / "Grid_8.pc2")
    assert train.shape == (39, 100, 3) and val.shape == (31, 100, 3)
    np.testing.assert_allclose(train[29], evaluated(grid, 30), atol=1e-6)
    np.testing.assert_allclose(val[0], evaluated(grid, 40), atol=1e-6)
    assert np.abs(train[0] - train[38]).max() > 0.05  # the wave moves

    # One job at a time: the button says why it is greyed out.
    with pytest.raises(RuntimeError, match=r"A mesh model is training \(step \d+/"):
        TRAIN(steps=20)

    assert drive(job) == "DONE", job.message
    assert scene.frame_current == CURRENT
    p = job.progress
    assert (p.step, p.total, p.val_step) == (20, 20, 20) and p.val_error > 0 and p.loss > 0
    level, text = op_train_mesh._last_message
    assert level == "INFO" and re.match(r"Trained mesh model: [\d.]+ % val vertex error in \d+ s", text), text
    assert f"{p.val_error:.3g} %" in text

    rel = grid[PROPS["autoencoder"]]
    assert re.fullmatch(r"//splinetween/train_scene_Grid_autoencoder/run-[0-9a-f]{10}/best\.json", rel), rel
    path = Path(bpy.path.abspath(rel))
    assert prefs().mesh_autoencoder == ""  # the preference stays the default for other meshes
    assert PROPS["inbetween"] not in grid
    from backend.mesh.engine import MeshEngine
    engine = MeshEngine(path, "cpu")
    assert engine.num_vertices == 100 and engine.task == "autoencoder"
    out = engine.reconstruct(train[:31])
    assert out.shape == (31, 100, 3) and np.isfinite(out).all()
    # a tick never holds the interface: it returned again and again while the process trained
    # (what a tick costs is benchmarks/bench_train_job.py's to measure, not a test's)
    assert len(op_train_mesh._tick_cost) > 1


def test_cancel_stops_the_process_and_a_new_start_resumes(grid, tmp_path, monkeypatch):
    monkeypatch.setenv("SPLINETWEEN_NO_PRINCIPAL", "1")
    opts = FAST + " --ckpt_every=10"
    assert TRAIN(steps=100000, components=8, options=opts) == {"FINISHED"}
    job = op_train_mesh.current_job()
    run = job.run
    tick_until(job, lambda: job.progress.val_step >= 10 and (run / "last.safetensors").exists())
    log, text = drawn()  # the sidebar while it trains: progress, loss, val error, Cancel
    (bar,) = [e[2] for e in log if e[0] == "progress"]
    assert 0 < bar["factor"] < 0.01 and re.match(r"Step \d+/100000", bar["text"])
    assert re.search(r"Loss [\d.]+ \| Val error [\d.]+ % \(step \d+\)", text), text
    assert [e[1][0] for e in log if e[0] == "operator"] == ["object.splinetween_train_mesh_cancel"]
    pid = job.proc.pid
    assert CANCEL() == {"FINISHED"}  # (of 100000 steps: it stopped the run, it did not wait for its end)
    assert job.state == "CANCELLED" and gone(pid)
    m = re.search(r"cancelled at step \d+; start it again with the same settings to resume from step (\d+)",
                  job.message)
    assert m, job.message
    saved = int(m.group(1))
    assert saved >= 10 and saved % 10 == 0
    assert PROPS["autoencoder"] not in grid
    assert op_train_mesh.tick() is None  # the timer ends with the job
    with pytest.raises(RuntimeError, match="No mesh model is training"):
        CANCEL()

    # Same data and settings, more steps: the CLI resumes from the run's last save.
    assert TRAIN(steps=saved + 10, components=8, options=opts) == {"FINISHED"}
    job2 = op_train_mesh.current_job()
    assert job2.run == run and job2.message == f"resuming the earlier run {run.name} (same data and settings) " \
        f"from step {saved}"
    assert drive(job2) == "DONE", job2.message
    assert job2.progress.resumed_from == saved
    assert f"resumed from step {saved}" in job2.message
    log, text = drawn()  # the sidebar afterwards: Train again, the model, the result
    assert [e[1][0] for e in log if e[0] == "operator"] == ["object.splinetween_train_mesh"]
    assert f"Mesh autoencoder: train_scene_Grid_autoencoder/{run.name}/best.json" in text, text
    assert "Trained mesh model:" in text
    assert grid[PROPS["autoencoder"]] == f"//splinetween/train_scene_Grid_autoencoder/{run.name}/best.json"
    weights = (run / "best.safetensors").read_bytes()

    # Other settings: a run folder of their own; the first run, and what the object loads, stay as they were.
    assert TRAIN(steps=20, components=6, options=opts) == {"FINISHED"}
    job3 = op_train_mesh.current_job()
    assert job3.run != run and job3.run.parent == run.parent and job3.message == ""
    CANCEL()
    assert (run / "best.safetensors").read_bytes() == weights and (run / "last.safetensors").exists()
    assert (run / "train.log").read_text().count("training.train mesh") == 2  # its own log: two starts
    assert grid[PROPS["autoencoder"]] == f"//splinetween/train_scene_Grid_autoencoder/{run.name}/best.json"


def refused(match: str, tmp_path: Path, **kw):
    """Refused with ``match``; no process, nothing written, the frame where it was."""
    with pytest.raises(RuntimeError, match=match):
        TRAIN(**kw)
    assert not (tmp_path / "splinetween").is_dir()
    assert not op_train_mesh.running()
    assert bpy.context.scene.frame_current == CURRENT


def test_bad_input_is_refused_before_anything_is_written(grid, tmp_path):
    # not a mesh
    bpy.ops.object.empty_add()
    with pytest.raises(RuntimeError, match="Make the animated mesh the active object"):
        TRAIN()
    bpy.data.objects.remove(bpy.context.active_object)
    bpy.context.view_layer.objects.active = grid

    refused(r"The frame range 50-40 is empty: set End after Start", tmp_path, frame_start=50, frame_end=40)
    refused(r"The frame range 1-4 has 4 frames; training needs at least 16: 8 to train on and 8 more to validate "
            r"on \(a model is never validated on its training frames\)", tmp_path, frame_start=1, frame_end=4)
    refused(r"The frame range 1-10 has 10 frames; training needs at least 16", tmp_path, frame_start=1, frame_end=10)
    refused(r"More Options: '--width' is not --key=value", tmp_path, options="--width 64")
    refused(r"More Options: --out is set by the job itself", tmp_path, options="--out=/tmp/x")
    refused(r"The cache folder .*nope' does not exist", tmp_path, source="CACHES", cache_folder=str(tmp_path / "nope"))
    caches = tmp_path / "caches"
    caches.mkdir()
    from backend.formats.pc2 import write_pc2
    write_pc2(caches / "other_0.pc2", np.zeros((20, 50, 3), np.float32))
    with pytest.raises(RuntimeError, match=r"other_0.pc2 has 50 vertices, the object 100.*per asset"):
        TRAIN(source="CACHES", cache_folder=str(caches))

    # a modifier that changes the topology over the range: the frame is named
    build = grid.modifiers.new("Build", "BUILD")
    build.frame_start, build.frame_duration, build.use_reverse = 30, 20, True  # faces go from frame 30 on
    refused(r"'Grid' has 100 vertices at frame 1 but \d+ at frame 3\d: a mesh model needs the same vertices",
            tmp_path)
    grid.modifiers.remove(build)

    bpy.ops.object.mode_set(mode="EDIT")
    refused(r"'Grid' is in Edit Mode: switch to Object Mode first", tmp_path)
    bpy.ops.object.mode_set(mode="OBJECT")

    # the job folder cannot be made (a file is in the way)
    (tmp_path / "splinetween").write_text("not a folder")
    with pytest.raises(RuntimeError, match=r"Cannot write the job folder .*train_scene_Grid_autoencoder \(cannot be "
                                           r"created: .*splinetween is a file, not a folder\)"):
        TRAIN()
    assert (tmp_path / "splinetween").read_text() == "not a folder"
    assert bpy.context.scene.frame_current == CURRENT


def test_a_training_error_is_reported_with_the_clis_message(grid, tmp_path):
    assert TRAIN(steps=20, options="--width=32 --heads=5") == {"FINISHED"}
    job = op_train_mesh.current_job()
    assert drive(job, 60) == "FAILED"
    level, text = op_train_mesh._last_message
    assert level == "ERROR" and text == "Mesh training failed: width=32 must be divisible by heads=5", text
    assert PROPS["autoencoder"] not in grid


def test_trains_from_a_cache_folder(grid, tmp_path, monkeypatch):
    monkeypatch.setenv("SPLINETWEEN_NO_PRINCIPAL", "1")
    from backend.formats.pc2 import write_pc2
    caches = tmp_path / "caches"
    caches.mkdir()
    frames = np.stack([evaluated(grid, f) for f in range(1, 71)])
    write_pc2(caches / "wave_0.pc2", frames)  # train (id % 10 not 8 or 9)
    write_pc2(caches / "wave_8.pc2", frames[::-1].copy())  # val
    assert TRAIN(source="CACHES", cache_folder=str(caches), steps=10, components=8, options=FAST) == {"FINISHED"}
    job = op_train_mesh.current_job()
    assert job.data == caches.resolve()
    assert not (job.run / "data").exists()  # the caches are used where they are
    assert drive(job) == "DONE", job.message
    assert Path(bpy.path.abspath(grid[PROPS["autoencoder"]])).is_file()


def test_an_unsaved_file_trains_in_the_temp_folder(addon, tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.data.filepath == ""
    make_grid("Wave Grid")
    assert TRAIN(steps=20, components=8, options=FAST) == {"FINISHED"}
    job = op_train_mesh.current_job()
    assert job.folder == tmp_path / "splinetween" / "train_untitled_Wave_Grid_autoencoder" and job.temp_folder
    assert f"temp folder {job.folder}" in capfd.readouterr().out
    CANCEL()
    assert job.state == "CANCELLED"
    op_train_mesh.shutdown()


def test_opening_another_file_mid_training_leaves_its_objects_alone(grid, tmp_path, monkeypatch):
    monkeypatch.setenv("SPLINETWEEN_NO_PRINCIPAL", "1")
    other = tmp_path / "other" / "other.blend"
    other.parent.mkdir()
    bpy.ops.wm.save_as_mainfile(filepath=str(other), copy=True)  # also has a mesh named Grid
    assert TRAIN(steps=20, components=8, options=FAST) == {"FINISHED"}
    job = op_train_mesh.current_job()
    bpy.ops.wm.open_mainfile(filepath=str(other))
    assert drive(job) == "DONE", job.message
    level, text = op_train_mesh._last_message
    assert level == "WARNING" and "another file is open now" in text
    assert PROPS["autoencoder"] not in bpy.data.objects["Grid"]
    assert job.checkpoint.is_file() and job.checkpoint.is_relative_to(tmp_path / "splinetween")


def test_the_sidebar_section_and_disabling_the_addon_mid_training(grid):
    panel = bpy.types.VIEW3D_PT_splinetween_train_mesh
    assert (panel.bl_space_type, panel.bl_region_type, panel.bl_category) == ("VIEW_3D", "UI", "Splinetween")
    assert panel.poll(bpy.context)  # a mesh is active
    assert TRAIN(steps=100000, components=8, options=FAST) == {"FINISHED"}
    job = op_train_mesh.current_job()
    pid = job.proc.pid
    disable_addon()  # the training process does not outlive the add-on
    try:
        assert job.state == "CANCELLED" and gone(pid)
        assert not hasattr(bpy.types, "OBJECT_OT_splinetween_train_mesh")
        assert not bpy.app.timers.is_registered(op_train_mesh.tick)
    finally:
        fresh_scene_with_addon()


QUIT_MID_TRAINING = r"""
import sys
sys.path.insert(0, sys.argv[1])
from addon_helpers import bpy, fresh_scene_with_addon
bpy = bpy()
fresh_scene_with_addon()
from blender_addon.train import op_train as op_train_mesh
bpy.ops.mesh.primitive_grid_add(x_subdivisions=9, y_subdivisions=9, size=2)
bpy.context.active_object.modifiers.new("Wave", "WAVE")
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[2])
bpy.ops.object.splinetween_train_mesh(steps=100000, components=8, options="--layers=1 --width=32 --heads=4")
print("PID", op_train_mesh.current_job().proc.pid, flush=True)
"""


def test_quitting_blender_stops_the_training(tmp_path):
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-c", QUIT_MID_TRAINING, str(Path(__file__).parent),
                          str(tmp_path / "scene.blend")], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender")))
    pids = [int(ln.split()[1]) for ln in res.stdout.splitlines() if ln.startswith("PID ")]
    assert res.returncode == 0 and pids, res.stdout[-2000:] + res.stderr[-2000:]
    with pytest.raises(ProcessLookupError):
        os.killpg(pids[0], 0)
