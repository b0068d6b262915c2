"""Property-based tests (hypothesis) for the readers of user files not covered elsewhere: point caches
(PC2 and MDD: the backend's readers, and Train Mesh Model's cache-folder scan) and the training
events the add-on follows.  Each answers a result or its own named error, never another exception,
and never allocates what a header merely claims.  (BVH: test_fuzz_bvh.py; bone maps, checkpoint JSON
and the batch's done markers: test_json_limits.py; the checkpoint loader: test_fuzz_checkpoint.py.)"""
from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.formats import pc2
from blender_addon.train import data as train_data
from blender_addon.train import events as train_events

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
GOOD = np.arange(10 * 5 * 3, dtype=np.float32).reshape(10, 5, 3)


def _valid_pc2() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        return pc2.write_pc2(Path(d) / "x.pc2", GOOD).read_bytes()


def _valid_mdd() -> bytes:
    with tempfile.TemporaryDirectory() as d:
        return pc2.write_mdd(Path(d) / "x.mdd", GOOD).read_bytes()


SEEDS = {".pc2": _valid_pc2(), ".mdd": _valid_mdd()}
header_ints = st.integers(-2 ** 31, 2 ** 31 - 1)


@st.composite
def cache_bytes(draw):
    suffix = draw(st.sampled_from(sorted(SEEDS)))
    data = bytearray(SEEDS[suffix])
    how = draw(st.sampled_from(["header", "cut", "flip", "raw"]))
    if how == "header":  # a header field replaced by any 32-bit value (sizes, counts, version)
        at = draw(st.sampled_from([12, 16, 28] if suffix == ".pc2" else [0, 4]))
        fmt = "<i" if suffix == ".pc2" else ">i"
        data[at:at + 4] = struct.pack(fmt, draw(header_ints))
    elif how == "cut":
        data = data[:draw(st.integers(0, len(data)))]
    elif how == "flip":
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
    else:
        data = bytearray(draw(st.binary(max_size=120)))
    return suffix, bytes(data)


@FUZZ
@given(case=cache_bytes())
def test_point_cache_readers(tmp_path, case):
    suffix, data = case
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(data)
    try:
        frames = pc2.read_cache(path)
    except pc2.CacheError as e:
        assert str(path) in str(e)
    else:
        assert frames.ndim == 3 and frames.shape[2] == 3 and frames.nbytes <= len(data)
    try:
        n_frames, n_points = pc2.read_header(path)
    except pc2.CacheError:
        return
    assert isinstance(n_frames, int) and isinstance(n_points, int)


@FUZZ
@given(case=cache_bytes(), vertices=st.sets(st.integers(1, 10), max_size=2))
def test_train_mesh_models_cache_scan(tmp_path, case, vertices):
    """Train Mesh Model's Cache Folder: a fitting pair of caches, or a refusal that names the problem."""
    suffix, data = case
    folder = tmp_path / "caches"
    folder.mkdir(exist_ok=True)
    for p in folder.iterdir():
        p.unlink()
    (folder / f"a_0{suffix}").write_bytes(data)
    (folder / f"a_8{suffix}").write_bytes(SEEDS[suffix])
    try:
        files, longest = train_data.scan_caches(folder, vertices or None)
    except train_data.TrainJobError as e:
        assert str(e)
        return
    assert len(files) == 2 and longest >= train_data.MIN_FRAMES


@FUZZ
@given(lines=st.lists(st.one_of(
    st.text(max_size=40),
    st.dictionaries(st.sampled_from(["event", "total", "step", "loss", "eta_s", "value", "name", "done", "message",
                                     "checkpoint"]),
                    st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=10),
                              st.sampled_from(["start", "step", "phase", "validation", "done", "error", "resume"])),
                    max_size=6).map(json.dumps)), max_size=12), cut=st.integers(0, 400))
def test_training_events(lines, cut):
    """What the add-on reads from a run's events.jsonl, split anywhere between two polls: never an error."""
    text = "\n".join(lines) + "\n"
    reader = train_events.EventReader()
    reader.feed(text[:cut])
    p = reader.feed(text[cut:])
    assert isinstance(p.text(), str) and 0.0 <= p.factor <= 1.0
