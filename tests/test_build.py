"""build.py -> a valid extension zip -> installed and enabled from bpy -> Inbetween runs from it."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

from addon_helpers import ROOT

pytestmark = pytest.mark.blender

INSTALL_AND_RUN = r"""
import json, sys
import numpy as np
import bpy
sys.path.insert(0, sys.argv[2])
from addon_helpers import import_bvh, thin_keys, snapshot
bpy.ops.wm.read_factory_settings(use_empty=True)
res = bpy.ops.extensions.package_install_files(filepath=sys.argv[1], repo="user_default", enable_on_install=True)
mod_name = "bl_ext.user_default.splinetween"
mod = sys.modules[mod_name]
prefs = bpy.context.preferences.addons[mod_name].preferences
obj = import_bvh()
thin_keys(obj, [1, 16, 31, 46])
copy = obj.copy(); copy.data = obj.data.copy(); bpy.context.collection.objects.link(copy)
copy.animation_data.action = obj.animation_data.action.copy()
out = {"install": sorted(res), "backend": mod.bridge.backend_package().__name__,
       "checkpoint": str(mod.bridge.default_checkpoint()), "mode": prefs.backend_mode}
out["in_process"] = sorted(bpy.ops.anim.splinetween_inbetween())
prefs.backend_mode = "SUBPROCESS"
bpy.context.view_layer.objects.active = copy
out["subprocess"] = sorted(bpy.ops.anim.splinetween_inbetween())
out["pythonpath_root"] = str(mod.bridge.backend_root())
a, b = snapshot(obj), snapshot(copy)
out["same"] = all(np.array_equal(a[k]["co"], b[k]["co"]) for k in a)
out["keys"] = len(a[('pose.bones["Hips"].rotation_euler', 0)]["co"])
mod.bridge.shutdown()
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    res = subprocess.run([sys.executable, str(ROOT / "build.py"), "--out-dir", str(out),
                          "--work-dir", str(tmp_path_factory.mktemp("stage"))],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    from backend import __version__
    zpath = out / f"splinetween-{__version__}.zip"
    assert zpath.exists(), res.stdout
    return zpath


def test_zip_holds_the_addon_the_backend_and_the_checkpoint(built):
    from backend import __version__
    names = set(zipfile.ZipFile(built).namelist())
    for need in ("blender_manifest.toml", "__init__.py", "bridge.py", "backend/__init__.py", "backend/service/__init__.py",
                 "backend/service/protocol.py", "backend/engine.py", "backend/checkpoints/inbetween.json",
                 "backend/checkpoints/inbetween.safetensors", "LICENSE", "LICENSE-weights-bandai-namco.txt",
                 "training/__init__.py", "training/train.py", "training/mesh/loop.py", "training/mesh/data.py",
                 "training/config.py", "train/job.py", "train/op_train.py"):
        assert need in names, need
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    manifest = zipfile.ZipFile(built).read("blender_manifest.toml").decode()
    assert re.search(rf'^version = "{re.escape(__version__)}"$', manifest, re.M)
    assert re.search(r'^id = "splinetween"$', manifest, re.M)
    import tomllib
    assert set(tomllib.loads(manifest)["permissions"]) == {"files"}


def test_blenders_validator_accepts_the_zip(built):
    from build import find_blender_ext
    res = subprocess.run([sys.executable, str(find_blender_ext()), "validate", str(built)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "Success" in res.stdout, res.stdout + res.stderr


def test_installed_extension_runs_inbetween_both_ways(built, tmp_path):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender"), OMP_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    res = subprocess.run([sys.executable, "-c", INSTALL_AND_RUN, str(built), str(ROOT / "tests")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    assert res.returncode == 0 and line, res.stdout[-3000:] + res.stderr[-3000:]
    out = json.loads(line[0][7:])
    assert out["install"] == ["FINISHED"] and out["mode"] == "AUTO"
    assert out["backend"] == "bl_ext.user_default.splinetween.backend"  # the bundled copy, not the repo's
    assert out["checkpoint"].startswith(str(tmp_path / "blender"))
    assert out["pythonpath_root"].endswith(os.path.join("user_default", "splinetween"))
    assert out["in_process"] == ["FINISHED"] and out["subprocess"] == ["FINISHED"]
    assert out["same"] and out["keys"] == 46


@pytest.mark.torch
def test_training_cli_runs_from_the_unpacked_extension(built, tmp_path):
    """Train Mesh Model starts ``python -m training.train mesh`` with PYTHONPATH = the extension folder."""
    ext = tmp_path / "splinetween"
    zipfile.ZipFile(built).extractall(ext)
    env = dict(os.environ, PYTHONPATH=str(ext))
    res = subprocess.run([sys.executable, "-m", "training.train", "mesh", "--help"], cwd=ext, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "python -m training.train mesh" in res.stdout and "components=64" in res.stdout
    where = subprocess.run([sys.executable, "-c", "import training.mesh.loop as m, backend as b; "
                            "print(m.__file__); print(b.__file__)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert where.returncode == 0, where.stderr
    assert all(line.startswith(str(ext)) for line in where.stdout.split()), where.stdout  # the bundled copies


TRAIN_FROM_INSTALLED = r"""
import json, sys, time
import bpy
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.extensions.package_install_files(filepath=sys.argv[1], repo="user_default", enable_on_install=True)
op = sys.modules["bl_ext.user_default.splinetween.train.op_train"]
bpy.ops.mesh.primitive_grid_add(x_subdivisions=9, y_subdivisions=9, size=2)
obj = bpy.context.active_object
obj.modifiers.new("Wave", "WAVE")
bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 40
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[2])
res = bpy.ops.object.splinetween_train_mesh(steps=10, components=8,
                                            options="--layers=1 --width=32 --heads=4 --val_every=10 --threads=1")
job = op.current_job()
t0 = time.time()
while op.tick() is not None and time.time() - t0 < 120:
    time.sleep(0.2)
print("RESULT " + json.dumps({"op": sorted(res), "state": job.state, "message": job.message, "root": str(job.root),
                              "prop": obj.get("splinetween_mesh_autoencoder")}))
"""


@pytest.mark.torch
def test_installed_extension_trains_a_mesh_model(built, tmp_path):
    """Train Mesh Model from the installed extension: its own training/ and backend/, not the repo's."""
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender"), OMP_NUM_THREADS="1",
               SPLINETWEEN_NO_PRINCIPAL="1", SPLINETWEEN_PYTHON=sys.executable)
    env.pop("PYTHONPATH", None)
    res = subprocess.run([sys.executable, "-c", TRAIN_FROM_INSTALLED, str(built), str(tmp_path / "grid.blend")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    assert res.returncode == 0 and line, res.stdout[-3000:] + res.stderr[-3000:]
    out = json.loads(line[0][7:])
    assert out["op"] == ["FINISHED"] and out["state"] == "DONE", out["message"]
    assert out["root"].startswith(str(tmp_path / "blender")) and out["root"].endswith("splinetween")
    assert re.fullmatch(r"//splinetween/train_grid_Grid_autoencoder/run-[0-9a-f]{10}/best\.json", out["prop"]), out
    assert (tmp_path / out["prop"][2:]).with_suffix(".safetensors").is_file()
