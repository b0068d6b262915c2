"""The built-in backend (ONNX Runtime) refuses a damaged checkpoint with what is really wrong, in order:
a graph's size before a byte is read, then whether it is an ONNX model and whole, then its inputs and
outputs against the JSON, then the weights it was exported from.  Each case goes through the add-on's
one door (``bridge.inbetween`` in Built-in mode), as a click would, and no ONNX Runtime text reaches
the message.  A set copied under a new name works."""
from __future__ import annotations

import json
import os
import pathlib
import shutil

import numpy as np
import pytest

from addon_helpers import TEST_CLIP
from backend.formats.bvh import read_bvh
from blender_addon import bridge

SHIPPED = pathlib.Path(bridge.default_checkpoint())
KEYS = [0, 15, 30]
ORT_WORDS = ("ONNXRuntimeError", "INVALID_ARGUMENT", "INVALID_PROTOBUF", "FAIL :", "Traceback")


@pytest.fixture(scope="module")
def key_poses():
    clip = read_bvh(TEST_CLIP)
    return clip.skeleton.offsets, clip.rotations[KEYS], clip.positions[KEYS]


@pytest.fixture(autouse=True)
def fresh_engines():
    """Each case loads its own copy: no engine cached from another case's files answers for it."""
    from backend.service import engines
    engines._engines.clear()
    yield
    engines._engines.clear()


def copy_set(folder: pathlib.Path, stem: str = "inbetween") -> pathlib.Path:
    """The shipped in-betweener's four files under ``folder``, named ``stem.*``."""
    folder.mkdir(parents=True, exist_ok=True)
    for src in SHIPPED.parent.glob(f"{SHIPPED.stem}.*"):
        if src.suffix in (".json", ".safetensors", ".onnx"):
            shutil.copy(src, folder / src.name.replace(SHIPPED.stem, stem, 1))
    return folder / f"{stem}.json"


def run(json_path: pathlib.Path, key_poses):
    settings = bridge.BackendSettings(mode="BUILTIN", checkpoint=str(json_path))
    return bridge.inbetween(settings, key_poses[0], KEYS, key_poses[1], key_poses[2])


def refusal(json_path: pathlib.Path, key_poses) -> str:
    with pytest.raises(bridge.BridgeError) as err:
        run(json_path, key_poses)
    msg = str(err.value)
    assert not any(w in msg for w in ORT_WORDS), msg
    assert "python -m backend export" in msg, "each refusal gives the fix"
    return msg


def test_a_truncated_graph_is_named_cut_short(tmp_path, key_poses):
    ckpt = copy_set(tmp_path)
    graph = tmp_path / "inbetween.decode.onnx"
    graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])
    msg = refusal(ckpt, key_poses)
    assert "inbetween.decode.onnx is cut short" in msg and "other weights" not in msg


def test_a_text_file_in_a_graphs_place_is_not_an_onnx_model(tmp_path, key_poses):
    ckpt = copy_set(tmp_path)
    (tmp_path / "inbetween.decode.onnx").write_text("404: Not Found\n")
    msg = refusal(ckpt, key_poses)
    assert "inbetween.decode.onnx is not an ONNX model" in msg and "404" in msg


def test_junk_bytes_are_not_an_onnx_model(tmp_path, key_poses):
    ckpt = copy_set(tmp_path)
    (tmp_path / "inbetween.encode.onnx").write_bytes(np.random.default_rng(0).bytes(4096))
    msg = refusal(ckpt, key_poses)
    assert "inbetween.encode.onnx" in msg and ("not an ONNX model" in msg or "cut short" in msg)


def test_a_2_gb_graph_is_refused_by_its_size_without_being_read(tmp_path, key_poses, monkeypatch):
    ckpt = copy_set(tmp_path)
    big = tmp_path / "inbetween.decode.onnx"
    with open(big, "r+b") as f:  # sparse: 2 GB by stat, a few kB on disk
        f.truncate(2 * 2 ** 30)
    real_read = pathlib.Path.read_bytes

    def read_bytes(self):
        assert self.name != big.name, "the 2 GB graph was read"
        return real_read(self)
    monkeypatch.setattr(pathlib.Path, "read_bytes", read_bytes)
    real_fromfile = np.fromfile

    def fromfile(f, *a, **k):
        assert pathlib.Path(f).name != big.name, "the 2 GB graph was read"
        return real_fromfile(f, *a, **k)
    monkeypatch.setattr(np, "fromfile", fromfile)
    msg = refusal(ckpt, key_poses)
    assert "inbetween.decode.onnx is 2,147,483,648 bytes" in msg and "not read" in msg


def test_a_config_whose_controls_disagree_with_the_graph(tmp_path, key_poses):
    ckpt = copy_set(tmp_path)
    doc = json.loads(ckpt.read_text())
    doc["model"]["controls"] = doc["model"]["controls"] + 1
    ckpt.write_text(json.dumps(doc))
    msg = refusal(ckpt, key_poses)
    assert "takes controls of shape" in msg and "exported with another config" in msg


def test_graphs_of_other_weights_name_the_digests(tmp_path, key_poses):
    """The weights retrained (one value changed here), the graphs not exported again."""
    ckpt = copy_set(tmp_path)
    w = tmp_path / "inbetween.safetensors"
    raw = bytearray(w.read_bytes())
    raw[-8:-4] = np.float32(0.125).tobytes()
    w.write_bytes(bytes(raw))
    msg = refusal(ckpt, key_poses)
    assert "exported from other weights than inbetween.safetensors" in msg and "SHA-256" in msg


def test_the_checks_go_cheapest_first(tmp_path, key_poses):
    """A graph that is both truncated and of other weights is named truncated (the bytes before the
    digest); a config that disagrees and other weights: the shapes before the digest."""
    ckpt = copy_set(tmp_path)
    w = tmp_path / "inbetween.safetensors"
    w.write_bytes(w.read_bytes()[:-4] + np.float32(0.5).tobytes())
    graph = tmp_path / "inbetween.encode.onnx"
    graph.write_bytes(graph.read_bytes()[:100])
    assert "cut short" in refusal(ckpt, key_poses)
    copy_set(tmp_path)  # graphs whole again; weights and config changed
    w.write_bytes(w.read_bytes()[:-4] + np.float32(0.5).tobytes())
    doc = json.loads(ckpt.read_text())
    doc["model"]["controls"] += 1
    ckpt.write_text(json.dumps(doc))
    assert "takes controls of shape" in refusal(ckpt, key_poses)


def test_a_set_copied_under_a_new_name_works(tmp_path, key_poses):
    """my_walks.json (still naming inbetween.safetensors), my_walks.safetensors and its graphs: the same
    motion as the shipped set."""
    mine = copy_set(tmp_path, "my_walks")
    assert json.loads(mine.read_text()).get("weights", "inbetween.safetensors").endswith("inbetween.safetensors")
    rot, pos = run(mine, key_poses)
    ref_rot, ref_pos = run(SHIPPED, key_poses)
    np.testing.assert_allclose(rot, ref_rot, atol=1e-6)
    np.testing.assert_allclose(pos, ref_pos, atol=1e-6)


def test_a_copied_set_without_its_weights_names_both_names(tmp_path, key_poses):
    mine = copy_set(tmp_path, "my_walks")
    os.remove(tmp_path / "my_walks.safetensors")
    with pytest.raises(bridge.BridgeError) as err:
        run(mine, key_poses)
    msg = str(err.value)
    assert "inbetween.safetensors" in msg and "my_walks.safetensors" in msg and "copy it along" in msg
