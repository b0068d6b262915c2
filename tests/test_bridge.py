"""The bridge and the backend service: framing, both modes equal, timeout, death, bad setups,
and the add-on's import discipline (bridge.py alone reaches the backend; torch only lazily)."""
from __future__ import annotations

import ast
import dataclasses
import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import slow_service
from addon_helpers import ROOT, TEST_CLIP
from backend import service
from blender_addon import bridge

KEYS = [0, 15, 30, 45, 60, 75]


@pytest.fixture(scope="module")
def key_poses():
    from backend.formats.bvh import read_bvh
    clip = read_bvh(TEST_CLIP)
    return clip.skeleton.offsets, clip.rotations[KEYS], clip.positions[KEYS]


@pytest.fixture(autouse=True)
def logs_in_tmp(tmp_path, monkeypatch):
    """Backend logs (kept when a process fails) go to the test's folder, not the system's."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


@pytest.fixture
def backend_settings():
    yield bridge.BackendSettings(mode="SUBPROCESS", interpreter=sys.executable, timeout=120.0)
    bridge.shutdown()


def test_frames_round_trip_every_dtype():
    arrays = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.linspace(0, 1, 5),
              "c": np.array([[1, -2]], dtype=np.int32), "d": np.zeros((0, 3), dtype=np.int64)}
    buf = io.BytesIO()
    service.write_message(buf, {"op": "x", "n": [1, 2]}, arrays)
    service.write_message(buf, {"op": "y"})
    buf.seek(0)
    header, got = service.read_message(buf)
    assert header == {"op": "x", "n": [1, 2]}
    for k, v in arrays.items():
        assert got[k].dtype == v.dtype and np.array_equal(got[k], v)
    assert service.read_message(buf) == ({"op": "y"}, {})
    with pytest.raises(EOFError):
        service.read_message(buf)


@pytest.mark.parametrize("data, match", [
    (b"hello world\n", "unexpected bytes"),
    (service.MAGIC + b"\x09\x00\x00\x00{\"op\"", "stream ended inside a message"),
    (service.MAGIC + b"\x02\x00\x00\x00[]", "unreadable header"),
])
def test_garbage_is_refused(data, match):
    with pytest.raises(service.ProtocolError, match=match):
        service.read_message(io.BytesIO(data))


def test_service_answers_errors_and_keeps_serving():
    req = io.BytesIO()
    service.write_message(req, {"op": "nope"})
    service.write_message(req, {"op": "inbetween", "keys": [3, 9]},
                          {"offsets": np.zeros((22, 3)), "key_rotations": np.zeros((2, 22, 4)),
                           "key_positions": np.zeros((2, 22, 3))})
    service.write_message(req, {"op": "hello"})
    req.seek(0)
    out = io.BytesIO()
    assert service.serve(req, out) == 0
    out.seek(0)
    replies = [service.read_message(out)[0] for _ in range(3)]
    assert replies[0] == {"ok": False, "error": "unknown request 'nope'", "type": "ValueError"}
    assert not replies[1]["ok"] and "keys must start at frame 0" in replies[1]["error"]
    assert replies[2]["ok"] and replies[2]["protocol"] == service.PROTOCOL


def test_in_process_and_backend_process_give_the_same_result(key_poses, backend_settings):
    t0 = time.perf_counter()
    sub = bridge.inbetween(backend_settings, *key_poses[:1], KEYS, *key_poses[1:])
    cold = time.perf_counter() - t0
    here = bridge.inbetween(bridge.BackendSettings(mode="IN_PROCESS"), *key_poses[:1], KEYS, *key_poses[1:])
    print(f"backend process: cold call {cold:.2f} s; max difference to in-process "
          f"{max(np.abs(a - b).max() for a, b in zip(sub, here, strict=True)):.2e}")
    for a, b in zip(sub, here, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_array_equal(sub[0][KEYS], key_poses[1])  # keys come back exactly


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell wrapper (tests/slow_service.py)")
def test_timeout_stops_the_process_and_the_next_call_restarts_it(key_poses, backend_settings, tmp_path):
    slow, delay = slow_service.interpreter(tmp_path, 30)  # a backend whose requests take 30 s
    fast = bridge.BackendSettings(mode="SUBPROCESS", interpreter=slow, timeout=1.0)
    with pytest.raises(bridge.BridgeError, match="did not answer within 1 s; it was stopped"):
        bridge.inbetween(fast, *key_poses[:1], KEYS, *key_poses[1:])
    first = bridge.backend_process()
    assert first is not None and not first.alive()
    delay.write_text("0")  # the same interpreter, fast now
    rot, _ = bridge.inbetween(dataclasses.replace(backend_settings, interpreter=slow), *key_poses[:1], KEYS,
                              *key_poses[1:])
    assert rot.shape == (KEYS[-1] + 1, 22, 4)
    assert bridge.backend_process() is not first and bridge.backend_process().alive()


def test_engine_errors_come_back_as_messages(key_poses, backend_settings):
    with pytest.raises(bridge.BridgeError, match="gap between keys 0 and 75"):
        bridge.inbetween(backend_settings, key_poses[0], [0, 75], key_poses[1][[0, -1]], key_poses[2][[0, -1]])
    assert bridge.backend_process().alive()  # a refused request does not cost the warm process


def test_missing_interpreter():
    bad = bridge.BackendSettings(mode="SUBPROCESS", interpreter="/nonexistent/python")
    with pytest.raises(bridge.BridgeError, match="cannot start the backend interpreter '/nonexistent/python'"):
        bridge.inbetween(bad, np.zeros((22, 3)), [0, 2], np.zeros((2, 22, 4)), np.zeros((2, 22, 3)))


def test_interpreter_without_the_packages(tmp_path):
    """A bare virtual environment (no numpy, no torch): the message says what is missing."""
    venv = tmp_path / "bare"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)],
                   check=True, timeout=120)
    python = next(p for p in (venv / "bin" / "python", venv / "Scripts" / "python.exe") if p.exists())
    bare = bridge.BackendSettings(mode="SUBPROCESS", interpreter=str(python))
    try:
        with pytest.raises(bridge.BridgeError, match="exited with code 1: ModuleNotFoundError.*lacks a package"):
            bridge.inbetween(bare, np.zeros((22, 3)), [0, 2], np.zeros((2, 22, 4)), np.zeros((2, 22, 3)))
    finally:
        bridge.shutdown()


def test_auto_mode_and_the_shipped_checkpoint(tmp_path, monkeypatch):
    """Automatic: PyTorch in-process where it imports (here); in a Python without it (Blender's), built-in
    for a checkpoint with current exported graphs, else (no graphs, or a GPU asked for) the backend process."""
    assert bridge.resolve_mode(bridge.BackendSettings()) == "IN_PROCESS"  # torch imports in this venv
    import shutil
    for suffix in (".json", ".safetensors"):  # a copy without its graphs (e.g. trained where onnx was missing)
        shutil.copy(ROOT / "backend" / "checkpoints" / f"inbetween{suffix}", tmp_path / f"inbetween{suffix}")
    mine = bridge.BackendSettings(checkpoint=str(tmp_path / "inbetween.json"))
    monkeypatch.setattr(bridge, "torch_available", lambda: False)  # (as in Blender's own Python)
    assert bridge.resolve_mode(bridge.BackendSettings()) == "BUILTIN"  # the shipped graphs, ONNX Runtime here
    assert bridge.resolve_mode(bridge.BackendSettings(device="cuda")) == "SUBPROCESS"
    assert "no exported model" in bridge.exported(tmp_path / "inbetween.json")
    assert bridge.resolve_mode(mine) == "SUBPROCESS"
    with pytest.raises(bridge.BridgeError, match="has no exported model.*python -m backend export"):
        bridge.inbetween(dataclasses.replace(mine, mode="BUILTIN"), np.zeros((22, 3)), [0, 2], np.zeros((2, 22, 4)),
                         np.zeros((2, 22, 3)))
    info = bridge.describe(bridge.BackendSettings())
    assert info.path == ROOT / "backend" / "checkpoints" / "inbetween.json"
    assert info.names[:2] == ("joint_Root", "Hips") and info.position_joints == (1,) and info.max_gap == 60
    with pytest.raises(bridge.BridgeError, match="unknown backend mode"):
        bridge.resolve_mode(bridge.BackendSettings(mode="FAST"))


def test_only_the_bridge_imports_the_backend_and_torch():
    for path in sorted((ROOT / "blender_addon").rglob("*.py")):
        tree = ast.parse(path.read_text())
        names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not any(m.split(".")[0] == "torch" for m in names), path.name
        if path.name != "bridge.py":
            assert not any(m.split(".")[0] == "backend" for m in names), path.name
        if path.name != "bridge.py" and path.relative_to(ROOT).as_posix() != "blender_addon/core/quat.py":
            assert "import_module" not in path.read_text(), path.name


def test_core_reaches_only_the_backends_quaternions():
    """The one reach of core/ into the backend (docs/architecture.md, *core and the backend's maths*): the
    numpy-only quaternions, nothing with torch or a request behind it."""
    text = (ROOT / "blender_addon" / "core" / "quat.py").read_text()
    assert sorted(re.findall(r'_backend\("([\w.]+)"\)', text)) == ["humanoid.axes", "maths.quat_np"]


def test_registering_the_addon_imports_no_torch(tmp_path):
    code = ("import os, sys; import bpy, addon_utils; addon_utils.enable('blender_addon', default_set=True); "
            "from blender_addon import bridge; bridge.describe(bridge.BackendSettings()); "
            "print('TORCH', 'torch' in sys.modules, 'ENABLED', 'blender_addon' in bpy.context.preferences.addons)")
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path), PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert "TORCH False ENABLED True" in res.stdout, res.stdout[-2000:] + res.stderr[-2000:]


def test_cuda_asked_for_without_cuda(key_poses):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(bridge.BridgeError, match="sees no CUDA device"):
        bridge.inbetween(bridge.BackendSettings(mode="IN_PROCESS", device="cuda"), key_poses[0], KEYS, *key_poses[1:])


def test_one_reader_describes_every_shipped_checkpoint(tmp_path):
    """bridge.read_model: task, sizes, skeleton, principal names and vertex count from the JSON alone."""
    import json as _json
    root = bridge.default_checkpoint().parent
    inb, ae = bridge.read_model(root / "inbetween.json"), bridge.read_model(root / "motion_autoencoder")
    cloth = bridge.read_model(root / "cloth_inbetween.safetensors")
    assert (inb.task, ae.task, cloth.task) == ("inbetween", "autoencoder", "inbetween")
    assert len(inb.names) == len(inb.parents) == inb.offsets.shape[0] == 22 and not inb.mesh
    doc = _json.loads((root / "motion_autoencoder.json").read_text())
    assert ae.latent == doc["model"]["latent"] and ae.principal_names == tuple(doc["info"]["principal_names"])
    assert cloth.mesh and cloth.vertices == 5041 and cloth.names == ()
    assert [f.name for f in cloth.files] == ["cloth_inbetween.json", "cloth_inbetween.safetensors",
                                             "cloth_basis.safetensors"]
    assert bridge.describe(bridge.BackendSettings()) is inb  # read once per file version
    (tmp_path / "x.json").write_text('{"model": {}}')
    with pytest.raises(bridge.BridgeError, match="is not a Splinetween checkpoint"):
        bridge.read_model(tmp_path / "x.json")
    with pytest.raises(bridge.BridgeError, match="cannot read the checkpoint"):
        bridge.read_model(tmp_path / "missing.json")


def test_a_backend_failure_is_the_add_ons_one_refusal_type():
    """Operators report a Refusal as a refusal (their label and the message); the bridge's errors are one."""
    from blender_addon.core.errors import Refusal
    assert issubclass(bridge.BridgeError, Refusal)
    with pytest.raises(Refusal, match="not a Splinetween checkpoint|cannot read"):
        bridge.read_model(Path(__file__))
