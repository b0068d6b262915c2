"""A .blend file's scripts never run in the batch: a registered text block and a Python driver that
would write marker files stay silent, though the same file does run them when opened trusted."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from addon_helpers import ROOT, bpy
from batch_helpers import build_trap, load_report, run_batch, sha256, shared_blends

bpy = bpy()
pytestmark = pytest.mark.blender

TRUSTED = """
import sys, bpy
bpy.context.preferences.filepaths.use_scripts_auto_execute = True
bpy.ops.wm.open_mainfile(filepath=sys.argv[1], load_ui=False, use_scripts=True)
bpy.context.scene.frame_set(5)
bpy.context.view_layer.update()
import os
os._exit(0)  # bpy 4.5 hangs in its teardown once a Python driver has run and the file is saved
"""


@pytest.fixture(scope="module")
def trap(tmp_path_factory):
    blends = shared_blends()
    folder = tmp_path_factory.mktemp("trap")
    markers = folder / "markers"
    markers.mkdir()
    (folder / "in").mkdir()
    return build_trap(folder / "in" / "trap.blend", blends["run"]["path"], markers), markers


def test_the_trap_works_when_trusted(trap, tmp_path):
    """Control: opened with scripts allowed, the file does write both markers."""
    path, markers = trap
    env = dict(os.environ, OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", TRUSTED, str(path)], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in markers.iterdir()) == ["driver-ran", "text-block-ran"]
    for p in markers.iterdir():
        p.unlink()


def test_batch_never_runs_the_files_scripts(trap, tmp_path):
    """inbetween, info and edit on the trap: no marker file appears, the input is unchanged."""
    path, markers = trap
    before = sha256(path)
    out = tmp_path / "out"
    r = run_batch("inbetween", path, "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    info = run_batch("info", path, "--json", "--jobs", 1)
    assert info.returncode == 0, info.stderr
    edit = run_batch("edit", path, "--amplify", 1.5, "--out-dir", tmp_path / "edited", "--jobs", 1, "--device", "cpu")
    assert edit.returncode == 0, edit.stderr  # (Encode, sliders, re-decode: the most add-on code per file)
    assert not list(markers.iterdir()), "a script from the input file ran"
    assert sha256(path) == before
    (entry,) = load_report(out)["files"]
    assert entry["status"] == "ok" and entry["scripts"] == {"text_blocks": 1, "registered": ["autorun.py"],
                                                            "python_drivers": 1}
    assert any("none was run" in w for w in entry["warnings"])
    (described,) = json.loads(info.stdout)["files"]
    assert described["scripts"]["registered"] == ["autorun.py"] and described["objects"][0]["fits_model"]
    # the output keeps the file's data (text block and driver included) and still runs nothing
    bpy.ops.wm.open_mainfile(filepath=str(out / "trap.blend"), load_ui=False, use_scripts=False)
    assert "autorun.py" in bpy.data.texts and bpy.data.texts["autorun.py"].use_module
    assert any(o.animation_data and len(o.animation_data.drivers) for o in bpy.data.objects)
    bpy.ops.wm.read_homefile(use_empty=True)
    assert not list(markers.iterdir())
