"""Every JSON the add-on reads from a user's disk goes through one reader with limits
(``backend/formats/json_limits.py``, reached through ``bridge.numpy_module``): bone maps, checkpoints and
the batch's done markers.  Named problems for deep nesting, huge files, UTF-16, pipes, wrong versions
and checkpoints of the wrong kind; and a hypothesis fuzz per reader: a result or the reader's own
named error, never another exception."""
from __future__ import annotations

import json
import os
import shutil
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from addon_helpers import ROOT
from backend.humanoid import bone_map
from blender_addon import bridge
from blender_addon.batch import safe_io
from blender_addon.io import bone_map_file

limits = bridge.numpy_module("formats.json_limits")
CKPTS = ROOT / "backend" / "checkpoints"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
GOOD_MAP = {"format": bone_map.FORMAT, "version": 1, "preset": "Mixamo", "bones": {"Hips": "mixamorig:Hips", "Head": None}}

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                           max_leaves=20)


def test_deep_nesting_huge_files_and_encodings(tmp_path):
    with pytest.raises(limits.JsonLimitError, match="x.json is nested deeper than 64 levels"):
        limits.loads(b"[" * 100_000 + b"]" * 100_000, "x.json")
    with pytest.raises(limits.JsonLimitError, match="nested deeper than 3 levels"):
        limits.loads(b"[[[[1]]]]", "x.json", max_depth=3)
    assert limits.loads(b"[[[1]]]", max_depth=3) == [[[1]]]
    with pytest.raises(limits.JsonLimitError, match="x.json is 11 bytes, more than the 10 this reads"):
        limits.loads(b"[1,2,3,4,5]", "x.json", max_bytes=10)
    for enc in ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"):
        assert limits.loads('{"é": 1}'.encode(enc)) == {"é": 1}, enc
    with pytest.raises(limits.JsonLimitError, match="is not UTF-8, UTF-16 or UTF-32 text .*save it as UTF-8"):
        limits.loads('{"é": 1}'.encode("latin-1"))
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b"0," * 600 + b"0]")
    with pytest.raises(limits.JsonLimitError, match="big.json is 1,203 bytes, more than the 1,000"):
        limits.read(big, max_bytes=1000)
    with pytest.raises(IsADirectoryError):
        limits.read(tmp_path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX named pipes")
def test_a_pipe_is_refused_without_waiting_for_it(tmp_path):
    pipe = tmp_path / "map.json"
    os.mkfifo(pipe)
    with pytest.raises(limits.JsonLimitError, match="map.json is not a regular file"):
        limits.read(pipe)  # (opening it would block until a writer came)
    with pytest.raises(bone_map.BoneMapError, match="not a bone map file \\(not a regular file"):
        bone_map_file.read_file(pipe)


@pytest.mark.parametrize("version, message", [
    ("1", '"version" is the text "1", not the number 1: write "version": 1 without quotes'),
    (2, "bone map version 2 was written by a newer Splinetween; this add-on reads version 1"),
    (None, 'the bone map has no "version"'),
    ("one", "bone map version 'one' is not one this add-on reads"),
])
def test_bone_map_versions_say_what_to_do(version, message):
    doc = dict(GOOD_MAP, version=version) if version is not None else {k: v for k, v in GOOD_MAP.items() if k != "version"}
    with pytest.raises(bone_map.BoneMapError, match=message.replace("(", r"\(").replace(")", r"\)")):
        bone_map.from_json(json.dumps(doc))


def test_bone_map_files_in_utf16_deep_or_absurd(tmp_path):
    f = tmp_path / "map.json"
    f.write_text(json.dumps(GOOD_MAP), encoding="utf-16")
    assert bone_map_file.read_file(f).bones == {"Hips": "mixamorig:Hips", "Head": None}
    f.write_bytes(b'{"format": "splinetween-bone-map", "bones": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    with pytest.raises(bone_map.BoneMapError, match="not a bone map file"):
        bone_map_file.read_file(f)
    with pytest.raises(bone_map.BoneMapError, match="not a bone map file"):
        bone_map.from_json(f.read_bytes())
    f.write_text(json.dumps(dict(GOOD_MAP, preset="x" * 300_000)))
    with pytest.raises(bone_map.BoneMapError, match=r'"preset" must be a name of at most 63 bytes \(it is 300,000 bytes\)'):
        bone_map_file.read_file(f)
    f.write_text(json.dumps(dict(GOOD_MAP, bones={"Hips": "b" * 64})))
    with pytest.raises(bone_map.BoneMapError, match="a name of 64 bytes; joint and bone names have at most 63"):
        bone_map_file.read_file(f)
    f.write_bytes(b" " * (bone_map.MAX_FILE + 1))
    with pytest.raises(bone_map.BoneMapError, match=r"not a bone map file \(1,048,577 bytes, more than the 1,048,576 this reads"):
        bone_map_file.read_file(f)


@FUZZ
@given(doc=json_values, raw=st.binary(max_size=64), as_raw=st.booleans())
def test_fuzz_bone_map_files(tmp_path, doc, raw, as_raw):
    f = tmp_path / "fuzz.json"
    f.write_bytes(raw if as_raw else json.dumps({"format": bone_map.FORMAT, "version": 1, "bones": doc}).encode())
    try:
        got = bone_map_file.read_file(f, ["Hips", "Head"])
    except bone_map.BoneMapError:
        return
    assert set(got.bones) <= {"Hips", "Head"}


@pytest.mark.parametrize("name, message", [
    ("cloth_autoencoder", "cloth_autoencoder.json is a mesh autoencoder checkpoint (used by Encode Mesh, "
                          "Preferences > Mesh Autoencoder); an armature needs a motion checkpoint"),
    ("cloth_inbetween", "cloth_inbetween.json is a mesh in-betweening checkpoint (used by Inbetween Mesh"),
])
def test_a_mesh_checkpoint_for_an_armature_is_named(name, message):
    with pytest.raises(bridge.BridgeError) as e:
        bridge.describe(bridge.BackendSettings(checkpoint=str(CKPTS / f"{name}.json")))
    assert message in str(e.value)


def _mutations():
    base = json.loads((CKPTS / "inbetween.json").read_text())
    keys = sorted(base)
    return st.tuples(st.sampled_from(keys), json_values)


@FUZZ
@given(edit=_mutations(), raw=st.binary(max_size=64), as_raw=st.booleans())
def test_fuzz_checkpoint_json(tmp_path, edit, raw, as_raw):
    """The checkpoint JSON the bridge reads (no weights are loaded): a ModelInfo or a BridgeError."""
    j = tmp_path / f"c{uuid.uuid4().hex}.json"  # (a new name each time: describe caches by path and mtime)
    if as_raw:
        j.write_bytes(raw)
    else:
        doc = json.loads((CKPTS / "inbetween.json").read_text())
        doc[edit[0]] = edit[1]
        j.write_text(json.dumps(doc))
    try:
        info = bridge.describe(bridge.BackendSettings(checkpoint=str(j)))
    except bridge.BridgeError:
        return
    assert len(info.names) == len(info.parents) == len(info.offsets)


@FUZZ
@given(raw=st.binary(max_size=200), doc=json_values, as_raw=st.booleans())
def test_fuzz_batch_done_markers(tmp_path, raw, doc, as_raw):
    """A done marker another run left (or something in its place): a skip decision, never an error."""
    out = tmp_path / "shot.blend"
    out.write_bytes(b"BLENDER")
    marker = safe_io.marker_path(out)
    marker.write_bytes(raw if as_raw else json.dumps({"tool": "splinetween-batch", "digest": "d", "output": doc,
                                                      "input": doc, "result": doc}).encode())
    got = safe_io.is_done(out, out, "d")
    assert got is None or isinstance(got, (dict, list, str, int, float, bool))
    shutil.rmtree(tmp_path, ignore_errors=True)
    tmp_path.mkdir()


def test_the_built_in_runtime_reads_a_checkpoint_within_the_limits(tmp_path):
    """bridge.exported asks backend.runtime.onnx_runner.stale about the user's checkpoint on every request: a file
    nested too deep is named, never a RecursionError."""
    from backend.runtime import onnx_runner as runtime
    bad = tmp_path / "deep.json"
    bad.write_text("[" * 100_000 + "]" * 100_000)
    why = runtime.stale(bad)
    assert why.startswith("cannot read the checkpoint") and "deep.json" in why


def test_a_checkpoint_whose_window_is_infinite_is_named(tmp_path):
    """A number JSON allows but no integer holds (found by the fuzz test above): a BridgeError, not a crash."""
    doc = json.loads((CKPTS / "inbetween.json").read_text())
    doc["window"] = float("inf")
    j = tmp_path / "inf.json"
    j.write_text(json.dumps(doc))  # (Python writes Infinity)
    with pytest.raises(bridge.BridgeError, match="is not a Splinetween checkpoint"):
        bridge.describe(bridge.BackendSettings(checkpoint=str(j)))
