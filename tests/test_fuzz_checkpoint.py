"""The checkpoint loader with bad configs and headers (issue 17): named CheckpointErrors that name
the checkpoint file, checks before allocating, and a hypothesis fuzz over the JSON config and the
safetensors header (a named error or a valid checkpoint, never another exception, bounded memory)."""
from __future__ import annotations

import json
import resource
import shutil
import struct
import tempfile
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.runtime import checkpoint
from tests.test_cli import run

LIMIT_MB = 64  # far above a tiny checkpoint, far below what an unchecked size field would allocate


def _copy(src: Path, folder: Path, name: str = "c") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    j = folder / f"{name}.json"
    doc = json.loads(src.read_text())
    shutil.copy(src.with_suffix(".safetensors"), folder / f"{name}.safetensors")
    doc["weights"] = f"{name}.safetensors"
    j.write_text(json.dumps(doc))
    return j


def _edited(src, tmp_path, edit) -> Path:
    j = _copy(src, tmp_path)
    doc = json.loads(j.read_text())
    edit(doc)
    j.write_text(json.dumps(doc))
    return j


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(weights=5), '"weights" must be the name of a .safetensors file next to the config'),
    (lambda d: d.update(weights="../elsewhere/x.safetensors"), "(no folder), got '../elsewhere/x.safetensors'"),
    (lambda d: d.update(weights="/etc/passwd"), "(no folder), got '/etc/passwd'"),
    (lambda d: d.update(window=-3), '"window" must be a whole number of frames from 2 to 2048, got -3'),
    (lambda d: d.update(window="61"), "got '61'"),
    (lambda d: d.update(window=True), "got True"),
    (lambda d: d.update(model=[1, 2]), '"model" must be a JSON object, got list'),
    (lambda d: d["model"].update(width="32"), '"model.width" must be a whole number from 1 to 65536, got \'32\''),
    (lambda d: d["model"].update(layers=10 ** 6), '"model.layers" must be a whole number from 1 to 64'),
    (lambda d: d["model"].update(heads=0), '"model.heads" must be a whole number from 1 to 256, got 0'),
    (lambda d: d.update(info=[]), '"info" must be a JSON object'),
    (lambda d: d["info"].update(metrics=3), '"info.metrics" must be a JSON object'),
    (lambda d: d["skeleton"].update(parents=[5] * len(d["skeleton"]["parents"])), "skeleton parents must come before their children"),
    (lambda d: d["features"].update(position_joints=[10 ** 9]), '"features" must name joints'),
    (lambda d: d["skeleton"].update(names=5), "the config is incomplete or invalid"),
    (lambda d: d["skeleton"].update(parents=2 ** 63), "the config is incomplete or invalid (OverflowError"),
])
def test_bad_config_fields_are_named_errors_naming_the_checkpoint(tiny_checkpoint, tmp_path, edit, message):
    j = _edited(tiny_checkpoint, tmp_path, edit)
    with pytest.raises(checkpoint.CheckpointError) as e:
        checkpoint.load(j)
    assert str(e.value).startswith(f"{j}: ") and message in str(e.value)


def test_info_on_a_bad_checkpoint_is_an_error_not_a_traceback(tiny_checkpoint, tmp_path):
    j = _edited(tiny_checkpoint, tmp_path, lambda d: d.update(weights=5))
    r = run("info", j)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"error: {j}: \"weights\" must be the name of a .safetensors file" in r.stderr
    j = _edited(tiny_checkpoint, tmp_path / "w", lambda d: d.update(window=-3))
    r = run("info", j)
    assert r.returncode == 2 and f"{j}: \"window\" must be a whole number of frames" in r.stderr


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_a_huge_model_config_is_refused_before_allocating(tiny_checkpoint, tmp_path):
    """65,536 wide and 64 layers deep would be terabytes: refused from the meta-device shapes."""
    j = _edited(tiny_checkpoint, tmp_path, lambda d: d["model"].update(width=65536, layers=64, latent=65536))
    before = _peak_rss_mb()
    with pytest.raises(checkpoint.CheckpointError, match="the weights do not match the model config"):
        checkpoint.load(j)
    assert _peak_rss_mb() - before < LIMIT_MB


def _header(path: Path) -> tuple[dict, bytes]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def _with_header(path: Path, header: dict, data: bytes) -> None:
    h = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h)) + h + data)


@pytest.mark.parametrize("shape", [[2 ** 62, 4], [2 ** 70], [-1], "x"])
def test_a_huge_or_bad_tensor_shape_in_the_header_is_a_named_error(tiny_checkpoint, tmp_path, shape):
    j = _copy(tiny_checkpoint, tmp_path)
    w = j.with_suffix(".safetensors")
    header, data = _header(w)
    name = next(k for k in header if k.startswith("model."))
    header[name]["shape"] = shape
    _with_header(w, header, data)
    before = _peak_rss_mb()
    with pytest.raises(checkpoint.CheckpointError) as e:
        checkpoint.load(j)
    assert str(e.value).startswith(f"{w}: ") and _peak_rss_mb() - before < LIMIT_MB


@pytest.mark.parametrize("header", [[1, 2], {"x": 5}, {"x": {"data_offsets": "ab"}}, {"x": {"dtype": "F32"}},
                                    {"x": {"data_offsets": [0, float("inf")]}}])
def test_a_header_that_is_not_a_tensor_table_is_a_named_error(tmp_path, header):
    w = tmp_path / "w.safetensors"
    _with_header(w, header, b"\0" * 16)
    with pytest.raises(checkpoint.CheckpointError, match=f"{w}: not a safetensors file"):
        checkpoint._check_safetensors(w)


# -- fuzz -----------------------------------------------------------------------------------
JSON = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                    max_leaves=12)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _load_checked(j: Path):
    """Load under tracemalloc and the process's peak RSS: a CheckpointError naming a file of the
    checkpoint, or a checkpoint; never more than LIMIT_MB."""
    before = _peak_rss_mb()
    tracemalloc.start()
    try:
        try:
            got = checkpoint.load(j)
        except checkpoint.CheckpointError as e:
            assert str(e).startswith(f"{j.parent}/"), str(e)
            got = None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < LIMIT_MB * 2 ** 20 and _peak_rss_mb() - before < LIMIT_MB
    return got


@FUZZ
@given(data=st.data())
def test_fuzz_config(tiny_checkpoint, data):
    doc = json.loads(tiny_checkpoint.read_text())
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(["top", "model", "skeleton", "features", "info"]))
        target = doc if where == "top" else doc.get(where)
        if not isinstance(target, dict):
            continue
        key = data.draw(st.sampled_from(sorted(target) + ["extra"]))
        if data.draw(st.booleans()) and key in target:
            del target[key]
        else:
            target[key] = data.draw(JSON)
    with tempfile.TemporaryDirectory() as d:
        j = _copy(tiny_checkpoint, Path(d))
        weights = json.loads(j.read_text())["weights"]
        if doc.get("weights") == tiny_checkpoint.with_suffix(".safetensors").name:
            doc["weights"] = weights
        j.write_text(json.dumps(doc))
        _load_checked(j)


@FUZZ
@given(data=st.data())
def test_fuzz_safetensors_header(tiny_checkpoint, data):
    with tempfile.TemporaryDirectory() as d:
        j = _copy(tiny_checkpoint, Path(d))
        w = j.with_suffix(".safetensors")
        header, body = _header(w)
        names = sorted(k for k in header if k != "__metadata__")
        for _ in range(data.draw(st.integers(1, 3))):
            name = data.draw(st.sampled_from(names))
            field = data.draw(st.sampled_from(["dtype", "shape", "data_offsets", "whole", "drop"]))
            if field == "drop":
                header.pop(name, None)
            elif field == "whole":
                header[name] = data.draw(JSON)
            elif isinstance(header.get(name), dict):
                header[name][field] = data.draw(
                    st.sampled_from(["F32", "F16", "I64", "BOOL", "X"]) if field == "dtype" else
                    st.lists(st.integers(-2, 2 ** 64), max_size=4) | JSON)
        raw = json.dumps(header).encode()
        cut = data.draw(st.sampled_from([None, 0, 4, len(body) // 2]))
        length = data.draw(st.sampled_from([len(raw), len(raw) + 7, 2 ** 63, 0]))
        w.write_bytes(struct.pack("<Q", length) + raw + (body if cut is None else body[:cut]))
        _load_checked(j)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.binary(max_size=200), st.binary(max_size=200))
def test_fuzz_bytes(tiny_checkpoint, config, weights):
    with tempfile.TemporaryDirectory() as d:
        j = Path(d) / "c.json"
        j.write_bytes(config)
        (Path(d) / "c.safetensors").write_bytes(weights)
        _load_checked(j)
        j.write_text(json.dumps({"format": checkpoint.FORMAT, "format_version": 1,
                                 **json.loads(tiny_checkpoint.read_text()),
                                 "weights": "c.safetensors"}))
        _load_checked(j)
