"""Read a safetensors file into numpy arrays without torch or the safetensors package (Blender's Python
has numpy only): an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
shape and byte range, then the raw little-endian bytes."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
          "U8": "u1", "BOOL": "?"}


def read(path) -> dict[str, np.ndarray]:
    """Every tensor of the file (read-only arrays over one buffer); ValueError names a file that is not one."""
    raw = Path(path).read_bytes()
    if len(raw) < 8:
        raise ValueError(f"{path}: truncated (shorter than a safetensors header)")
    (n,) = struct.unpack("<Q", raw[:8])
    try:
        header = json.loads(raw[8:8 + n])
    except ValueError:
        raise ValueError(f"{path}: not a safetensors file (unreadable header)") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: not a safetensors file (its header is not a table of tensors)")
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = np.dtype(DTYPES[spec["dtype"]])
            a, b = (8 + n + int(x) for x in spec["data_offsets"])
            shape = tuple(int(x) for x in spec["shape"])
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
            raise ValueError(f"{path}: tensor {name!r} is not described by a dtype, a shape and data offsets "
                             "that this reader knows") from None
        count = int(np.prod(shape, dtype=object))  # (Python integers: a huge shape is named, not wrapped)
        if min(shape, default=0) < 0 or not 8 + n <= a <= b or count * dtype.itemsize != b - a:
            raise ValueError(f"{path}: tensor {name} has shape {list(shape)} and {b - a} bytes, which do not fit")
        if b > len(raw):
            raise ValueError(f"{path}: truncated (tensor {name} runs past the end of the file)")
        out[name] = np.frombuffer(raw, dtype=dtype, count=count, offset=a).reshape(shape)
    return out
