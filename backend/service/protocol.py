"""The service's frames, in both directions::

    b"STW1" | header length (uint32, little-endian) | header (UTF-8 JSON) | raw array bytes

The header's ``"arrays"`` lists ``[name, dtype, shape]`` in the order the arrays' bytes follow
(C order, little-endian; dtypes float32, float64, int32, int64).  The decoder checks every
description and size before it reads or allocates anything, so a hostile or broken header
costs at most ``MAX_HEADER`` plus ``MAX_TOTAL`` bytes and ends in a named ``ProtocolError``.
"""
from __future__ import annotations

import json
import math
import struct

import numpy as np

MAGIC = b"STW1"
PROTOCOL = 1
DTYPES = ("float32", "float64", "int32", "int64")
MAX_HEADER = 1 << 20
MAX_ARRAY = 1 << 31  # bytes in one array
MAX_TOTAL = 1 << 31  # bytes in all the arrays of one message
MAX_DIMS = 8


class ProtocolError(ValueError):
    """A frame that is not ours (a stray print on stdout, a truncated stream, a bad header)."""


class ArraySpecError(ProtocolError):
    """The header was read whole, but its array list is refused: nothing of the arrays was read, and
    the next message can still be read (a sender that wrote the bytes anyway desynchronises the stream,
    which the next frame start then reports)."""


def write_message(stream, header: dict, arrays: dict | None = None) -> None:
    arrays = {k: np.ascontiguousarray(v) for k, v in (arrays or {}).items()}
    for k, v in arrays.items():
        if v.dtype.name not in DTYPES:
            raise ProtocolError(f"array {k!r}: dtype {v.dtype} is not one of {DTYPES}")
    head = dict(header, arrays=[[k, v.dtype.name, list(v.shape)] for k, v in arrays.items()])
    data = json.dumps(head).encode("utf-8")
    parts = [MAGIC, struct.pack("<I", len(data)), data]
    parts += [v.astype(v.dtype.newbyteorder("<"), copy=False).tobytes() for v in arrays.values()]
    stream.write(b"".join(parts))
    stream.flush()


def _read_exact(stream, n: int, what: str) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            if not buf and what == "frame start":
                raise EOFError("stream closed")
            raise ProtocolError(f"stream ended inside a message ({what}: {len(buf)} of {n} bytes)")
        buf += chunk
    return bytes(buf)


def _header(stream) -> dict:
    magic = _read_exact(stream, 4, "frame start")
    if magic != MAGIC:
        raise ProtocolError(f"unexpected bytes {magic!r} where a message should start "
                            "(something else wrote to the stream)")
    (n,) = struct.unpack("<I", _read_exact(stream, 4, "header length"))
    if n > MAX_HEADER:
        raise ProtocolError(f"header of {n} bytes is larger than {MAX_HEADER}")
    try:
        header = json.loads(_read_exact(stream, n, "header").decode("utf-8"))
    except (ValueError, RecursionError) as e:  # RecursionError: JSON nested too deep
        raise ProtocolError(f"unreadable header ({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(header, dict):
        raise ProtocolError(f"unreadable header (a JSON object expected, got {type(header).__name__})")
    return header


def array_specs(specs) -> list[tuple[str, str, tuple[int, ...], int]]:
    """The header's ``"arrays"`` -> ``(name, dtype, shape, bytes)`` each, every size checked in
    Python integers (no overflow) before anything is read; ``ArraySpecError`` names the first fault."""
    if not isinstance(specs, list):
        raise ArraySpecError(f"bad array list {str(specs)[:100]!r} (a list of [name, dtype, shape] expected)")
    out, total, names = [], 0, set()
    for spec in specs:
        if not (isinstance(spec, list) and len(spec) == 3):
            raise ArraySpecError(f"bad array description {str(spec)[:100]!r}")
        name, dtype, shape = spec
        if not (isinstance(name, str) and isinstance(dtype, str) and dtype in DTYPES and isinstance(shape, list)
                and len(shape) <= MAX_DIMS
                and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)):
            raise ArraySpecError(f"bad array description {str(spec)[:100]!r}")
        if name in names:
            raise ArraySpecError(f"array {name[:50]!r} is described twice")
        names.add(name)
        item = np.dtype(dtype).itemsize
        size = math.prod(shape) * item
        if size > MAX_ARRAY or max(shape, default=0) * item > MAX_ARRAY:  # (the longest side too: numpy
            # refuses an empty array of shape [0, 2**61] at all)
            raise ArraySpecError(f"array {name[:50]!r} of shape {shape} ({size} bytes) is too large")
        total += size
        if total > MAX_TOTAL:
            raise ArraySpecError(f"the arrays of one message hold more than {MAX_TOTAL} bytes")
        out.append((name, dtype, tuple(shape), size))
    return out


def read_message(stream) -> tuple[dict, dict]:
    """One frame -> (header, arrays); EOFError on a clean end of stream."""
    header = _header(stream)
    specs = array_specs(header.pop("arrays", []))
    arrays = {}
    for name, dtype, shape, size in specs:
        raw = _read_exact(stream, size, f"array {name}")
        arrays[name] = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<")).astype(dtype).reshape(shape)
    return header, arrays
