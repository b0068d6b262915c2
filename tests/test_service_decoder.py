"""The backend process against hostile or broken requests: every one gets a named error (or a valid
result), memory stays bounded (sizes are checked before anything is read or allocated), and the
process keeps serving whenever it can still find the next message."""
from __future__ import annotations

import io
import json
import struct
import tracemalloc
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend import service
from backend.service import protocol


def frame(header_bytes: bytes, tail: bytes = b"") -> bytes:
    return protocol.MAGIC + struct.pack("<I", len(header_bytes)) + header_bytes + tail


def request(header: dict, tail: bytes = b"") -> bytes:
    return frame(json.dumps(header).encode(), tail)


def hello() -> bytes:
    buf = io.BytesIO()
    service.write_message(buf, {"op": "hello"})
    return buf.getvalue()


def serve(data: bytes) -> tuple[int, list[dict]]:
    out = io.BytesIO()
    code = service.serve(io.BytesIO(data), out)
    out.seek(0)
    replies = []
    while True:
        try:
            replies.append(service.read_message(out)[0])
        except EOFError:
            return code, replies


@contextmanager
def allocated():
    """The peak of what Python and numpy allocated inside the block, in bytes (``peak[0]`` after it)."""
    peak = [0]
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak[0] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def named_error(reply: dict) -> bool:
    return reply.get("ok") is False and isinstance(reply.get("error"), str) and isinstance(reply.get("type"), str)


@pytest.mark.parametrize("arrays, match", [
    ([["a", "float32", [2 ** 62, 4]]], "too large"),
    ([["a", "float64", [2 ** 70]]], "too large"),
    ([["a", "float32", [0, 2 ** 61]]], "too large"),  # empty, yet a shape numpy cannot make
    (5, "bad array list"),
    ([["a", "float32", [3, -1]]], "bad array description"),
    ([["a", "float16", [3]]], "bad array description"),
    ([[["a"], "float32", [3]]], "bad array description"),
    ([["a", "float32", [1.5]]], "bad array description"),
    ([["a", "float32", [1] * 9]], "bad array description"),
    ([["a", "float32", [2]], ["a", "float32", [2]]], "described twice"),
    ([["a", "int64", [1 << 27]], ["b", "int64", [1 << 27]], ["c", "int64", [1 << 27]]], "more than"),
])
def test_bad_array_lists_are_refused_by_name_and_the_service_goes_on(arrays, match):
    serve(hello())  # the service's first answer imports what it needs: not counted below
    with allocated() as peak:
        code, replies = serve(request({"op": "hello", "arrays": arrays}) + hello())
    assert code == 0 and len(replies) == 2
    assert named_error(replies[0]) and replies[0]["type"] == "ProtocolError" and match in replies[0]["error"]
    assert replies[1]["ok"] and replies[1]["protocol"] == service.PROTOCOL
    assert peak[0] < 16 << 20  # nothing of the announced size (1 GiB and more) was read or allocated


@pytest.mark.parametrize("raw", [
    b'{"op": "hello", "arrays": [["a", "float32", [Infinity]]]}',
    b'{"op": "hello", "arrays": [["a", "float32", [NaN]]]}',
    b"[" * 100_000 + b"]" * 100_000,
])
def test_headers_json_cannot_parse_safely_are_named_errors(raw):
    code, replies = serve(frame(raw) + hello())
    assert replies and named_error(replies[0]), replies
    assert code in (0, 2)


def test_a_key_gap_beyond_the_window_is_refused_before_allocating():
    j = 22
    arrays = {"offsets": np.zeros((j, 3)), "key_rotations": np.tile([1.0, 0, 0, 0], (2, j, 1)),
              "key_positions": np.zeros((2, j, 3))}
    with allocated() as peak, pytest.raises(ValueError, match=r"blender: the gap between keys 0 and 1099511627776 is"):
        service.handle({"op": "inbetween", "keys": [0, 1 << 40], "device": "cpu"}, arrays)
    assert peak[0] < 256 << 20  # the engine loads; no 10^12 frames are allocated


def test_a_mesh_key_gap_beyond_the_window_is_refused_before_allocating():
    from backend.motion.engine import EngineError
    with pytest.raises(EngineError, match=r"mesh sequence: the gap between keys 0 and 1099511627776 is"):
        service.handle({"op": "mesh_inbetween", "keys": [0, 1 << 40], "device": "cpu"},
                       {"key_frames": np.zeros((2, 4, 3), np.float32)})


json_values = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 80, 2 ** 80) | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=4),
                           max_leaves=12)
specs = st.lists(st.tuples(st.sampled_from(["a", "b", "points"]),
                           st.sampled_from(["float32", "float64", "int32", "int64", "float16", "<f4"]),
                           st.lists(st.integers(-2, 2 ** 70), max_size=4)).map(list), max_size=3)
ops = st.sampled_from(["hello", "nope", "load", "decode", "encode", "inbetween", "mesh_decode", "mesh_encode",
                       "mesh_inbetween", "mesh_x", None, 3])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=ops, arrays=st.one_of(specs, json_values), extra=st.dictionaries(
    st.sampled_from(["keys", "segments", "lengths", "checkpoint", "task", "amplify", "device"]), json_values,
    max_size=3), tail=st.binary(max_size=64))
def test_fuzz_a_named_error_or_a_valid_result_never_a_traceback(op, arrays, extra, tail):
    if extra.get("device") is not None:
        extra["device"] = "cpu"  # a valid device keeps the fuzz on the decoder, not on CUDA probing
    header = dict(extra, op=op, arrays=arrays)
    code, replies = serve(request(header, tail) + hello())
    assert code in (0, 2) and replies
    for reply in replies:
        assert reply.get("ok") is True or named_error(reply), reply


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=200))
def test_fuzz_raw_bytes(data):
    code, replies = serve(data)
    assert code in (0, 2)
    assert all(r.get("ok") is True or named_error(r) for r in replies)


names = st.sampled_from(["offsets", "key_rotations", "key_positions", "rotations", "positions", "points", "origins",
                         "template", "frames", "key_frames"])
small = st.tuples(names, st.sampled_from(["float32", "float64", "int64"]),
                  st.lists(st.integers(0, 5), max_size=3))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=ops, arrays=st.lists(small, max_size=4), extra=st.dictionaries(
    st.sampled_from(["keys", "segments", "lengths", "amplify", "timing", "principal", "task", "frame_time"]),
    json_values | st.lists(st.integers(-3, 70), max_size=4), max_size=5))
def test_fuzz_well_framed_requests_reach_the_handlers(op, arrays, extra):
    buf = io.BytesIO()
    service.write_message(buf, dict(extra, op=op, device="cpu"),
                          {n: np.zeros(shape, dtype) for n, dtype, shape in arrays})
    code, replies = serve(buf.getvalue() + hello())
    assert code == 0 and len(replies) == (1 if op == "shutdown" else 2)
    assert all(r.get("ok") is True or named_error(r) for r in replies), replies


@pytest.mark.parametrize("op, task, points", [("decode", "autoencoder", (1, 4, 16)),
                                              ("mesh_decode", "autoencoder", (1, 4, 32))])
def test_a_decode_into_absurdly_many_frames_is_refused_before_decoding(op, task, points):
    header = {"op": op, "task": task, "device": "cpu", "segments": [[0, 30]], "lengths": [1 << 40],
              "amplify": [1.0], "timing": [0.0], "principal": [[]], "keys": None}
    arrays = {"points": np.zeros(points), "origins": np.zeros((1, 3)), "template": np.zeros((22, 3))}
    with pytest.raises(ValueError, match=r"output frames are \d+ bytes, more than one reply carries"):
        service.handle(header, arrays)
