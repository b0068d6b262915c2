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
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        if spec.get("dtype") not in DTYPES:
            raise ValueError(f"{path}: tensor {name} has dtype {spec.get('dtype')!r}, which is not read here")
        a, b = (8 + n + int(x) for x in spec["data_offsets"])
        if b > len(raw):
            raise ValueError(f"{path}: truncated (tensor {name} runs past the end of the file)")
        out[name] = np.frombuffer(raw, dtype=DTYPES[spec["dtype"]], count=(b - a) // np.dtype(DTYPES[spec["dtype"]]).itemsize,
                                  offset=a).reshape(spec["shape"])
    return out
