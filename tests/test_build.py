"""build.py -> a valid extension zip -> installed and enabled from bpy -> Inbetween runs from it."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

from addon_helpers import ROOT, torch_here

pytestmark = pytest.mark.blender

INSTALL_AND_RUN = r"""
import json, sys
import numpy as np
import bpy
sys.path.insert(0, sys.argv[2])
from addon_helpers import import_bvh, thin_keys, snapshot
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[3])  # (a saved .blend: the mesh cache goes next to it)
res = bpy.ops.extensions.package_install_files(filepath=sys.argv[1], repo="user_default", enable_on_install=True)
mod_name = "bl_ext.user_default.splinetween"
mod = sys.modules[mod_name]
prefs = bpy.context.preferences.addons[mod_name].preferences
import onnxruntime
out = {"install": sorted(res), "backend": mod.bridge.backend_package().__name__,
       "checkpoint": str(mod.bridge.default_checkpoint()), "mode": prefs.backend_mode,
       "onnxruntime": onnxruntime.__file__}
# Inbetween, no preference set (Built-in)
obj = import_bvh()
thin_keys(obj, [1, 16, 31, 46])
copy = obj.copy(); copy.data = obj.data.copy(); bpy.context.collection.objects.link(copy)
copy.animation_data.action = obj.animation_data.action.copy()
bpy.context.view_layer.objects.active = obj
out["inbetween"] = sorted(bpy.ops.anim.splinetween_inbetween())
# Encode and a slider
enc = import_bvh()
bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 91
out["encode"] = sorted(bpy.ops.anim.splinetween_encode())
before = snapshot(enc)
enc.splinetween_latent.segments[1].amplify = 1.8
after = snapshot(enc)
out["slider_moved"] = any(not np.array_equal(before[k]["co"], after[k]["co"]) for k in before)
# Inbetween Mesh: the cloth asset's grid, moving in the cloth model's own basis, keys every 5 frames
safetensors_np = mod.bridge.backend_module("formats.safetensors_np")
basis = safetensors_np.read(mod.bridge.default_checkpoint().parent / "cloth_basis.safetensors")
t = np.linspace(0, 2 * np.pi, 30)[:, None]
coeffs = np.zeros((30, basis["basis.components"].shape[0]), np.float32)
coeffs[:, :6] = 2.0 * np.sin(t * (1 + np.arange(6)) / 2)
frames = (basis["basis.mean"].reshape(-1) + coeffs @ basis["basis.components"].astype(np.float32)).reshape(30, -1, 3)
pc2 = mod.bridge.numpy_module("formats.pc2").write_pc2(sys.argv[3] + ".pc2", frames)
bpy.ops.mesh.primitive_grid_add(x_subdivisions=70, y_subdivisions=70, size=2.0)
cloth = bpy.context.active_object
m = cloth.modifiers.new("Source", "MESH_CACHE")
m.cache_format, m.filepath, m.frame_start = "PC2", str(pc2), 1
bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 30
out["mesh"] = sorted(bpy.ops.anim.splinetween_mesh_inbetween(key_mode="EVERY", key_step=5, frame_range="SCENE"))
out["torch_imported"] = "torch" in sys.modules
# the same Inbetween through the backend process (PyTorch): the same keys to float precision
prefs.backend_mode = "SUBPROCESS"
bpy.context.view_layer.objects.active = copy
out["subprocess"] = sorted(bpy.ops.anim.splinetween_inbetween())
out["pythonpath_root"] = str(mod.bridge.backend_root())
a, b = snapshot(obj), snapshot(copy)
out["max_difference"] = max(float(np.abs(a[k]["co"] - b[k]["co"]).max()) for k in a)
out["keys"] = len(a[('pose.bones["Hips"].rotation_euler', 0)]["co"])
mod.bridge.shutdown()
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    # the Linux zip (this machine's): its ONNX Runtime wheels come from the package index once, then from
    # the git-ignored wheels/ folder
    res = subprocess.run([sys.executable, str(ROOT / "build.py"), "--out-dir", str(out), "--platform", "linux-x64",
                          "--work-dir", str(tmp_path_factory.mktemp("stage"))],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    if res.returncode != 0 and "pip download needs the package index" in res.stdout + res.stderr:
        pytest.skip("the ONNX Runtime wheels cannot be fetched (no package index here)")
    assert res.returncode == 0, res.stdout + res.stderr
    from backend import __version__
    zpath = out / f"splinetween-{__version__}-linux_x64.zip"
    assert zpath.exists(), res.stdout
    return zpath


def test_zip_holds_the_addon_the_backend_and_the_checkpoint(built):
    from backend import __version__
    names = set(zipfile.ZipFile(built).namelist())
    for need in ("blender_manifest.toml", "__init__.py", "bridge.py", "backend/__init__.py", "backend/service/__init__.py",
                 "backend/service/protocol.py", "backend/motion/engine.py", "backend/checkpoints/inbetween.json",
                 "backend/checkpoints/inbetween.safetensors", "LICENSE", "LICENSE-weights-bandai-namco.txt",
                 "training/__init__.py", "training/train.py", "training/mesh/loop.py", "training/mesh/data.py",
                 "training/config.py", "train/job.py", "train/op_train.py"):
        assert need in names, need
    assert "backend/checkpoints/inbetween.decode.onnx" in names and "backend/checkpoints/cloth_inbetween.encode.onnx" in names
    wheels = sorted(n for n in names if n.endswith(".whl"))
    assert [w.split("-")[0] for w in wheels] == ["wheels/flatbuffers", "wheels/onnxruntime", "wheels/packaging",
                                                 "wheels/protobuf"]
    assert not any("win_amd64" in w or "macosx" in w for w in wheels)  # this platform's wheels only
    graphs = sum(zipfile.ZipFile(built).getinfo(n).file_size for n in names if n.endswith(".onnx"))
    assert graphs < 1_000_000  # the graphs' weights are the safetensors' (shipped once)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    manifest = zipfile.ZipFile(built).read("blender_manifest.toml").decode()
    assert re.search(rf'^version = "{re.escape(__version__)}"$', manifest, re.M)
    assert re.search(r'^id = "splinetween"$', manifest, re.M)
    import tomllib
    doc = tomllib.loads(manifest)
    assert set(doc["permissions"]) == {"files"}
    assert doc["build"]["generated"]["platforms"] == ["linux-x64"]


def test_blenders_validator_accepts_the_zip(built):
    from build import find_blender_ext
    res = subprocess.run([sys.executable, str(find_blender_ext()), "validate", str(built)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "Success" in res.stdout, res.stdout + res.stderr


def test_installed_extension_runs_everything_built_in_with_no_setup(built, tmp_path):
    """Fresh user resources, the zip installed, no preference set: Inbetween, Encode, a slider and Inbetween
    Mesh run on the ONNX Runtime the extension installed, and torch is never imported; the backend process
    (PyTorch) then fills the same keys."""
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender"), OMP_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    res = subprocess.run([sys.executable, "-c", INSTALL_AND_RUN, str(built), str(ROOT / "tests"),
                          str(tmp_path / "scene.blend")], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=400)
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    assert res.returncode == 0 and line, res.stdout[-3000:] + res.stderr[-3000:]
    out = json.loads(line[0][7:])
    assert out["install"] == ["FINISHED"] and out["mode"] == "BUILTIN"
    assert out["backend"] == "bl_ext.user_default.splinetween.backend"  # the bundled copy, not the repo's
    assert out["checkpoint"].startswith(str(tmp_path / "blender"))
    if not torch_here():  # (Blender 4.5's run: ONNX Runtime can only be the wheel the extension installed)
        assert out["onnxruntime"].startswith(str(tmp_path / "blender"))
    assert out["inbetween"] == out["encode"] == out["mesh"] == ["FINISHED"] and out["slider_moved"]
    assert not out["torch_imported"]
    assert out["pythonpath_root"].endswith(os.path.join("user_default", "splinetween"))
    assert out["subprocess"] == ["FINISHED"] and out["keys"] == 46
    assert out["max_difference"] < 1e-3  # (degrees and cm: ONNX Runtime and PyTorch round differently)


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
