"""What an exported ``.onnx`` file declares, read without ONNX Runtime and without the ``onnx`` package
(Blender's Python has neither): its inputs and outputs, its metadata (the weights' digest) and its
external initializers (name, shape, offset and length in the weights file).

An ONNX model is a protobuf ``ModelProto``; this walks its fields (tag, then a varint or a length) and
reads only the few it needs, so a file that is not one, or is cut short, is named as such here, before
ONNX Runtime sees it.  Field numbers: onnx/onnx.proto (ModelProto, GraphProto, ValueInfoProto,
TypeProto, TensorShapeProto, TensorProto, StringStringEntryProto).
"""
from __future__ import annotations

from dataclasses import dataclass, field


class NotOnnx(ValueError):
    """The bytes are not an ONNX model (the message says what they are instead)."""


FLOAT, BOOL = 1, 9  # TensorProto.DataType
ELEM_NAMES = {1: "float32", 6: "int32", 7: "int64", 9: "bool", 10: "float16", 11: "float64"}


@dataclass
class Value:
    name: str
    elem: int  # TensorProto.DataType
    dims: tuple  # an int per fixed axis, a name (str) per dynamic one


@dataclass
class External:
    name: str
    dims: tuple[int, ...]
    elem: int
    location: str
    offset: int
    length: int


@dataclass
class OnnxFile:
    ir_version: int
    inputs: list[Value] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    externals: list[External] = field(default_factory=list)


def _varint(buf, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        if i >= len(buf):
            raise EOFError
        b = buf[i]
        i += 1
        out |= (b & 0x7F) << shift
        if b < 0x80:
            return out, i
        shift += 7
        if shift > 63:
            raise NotOnnx("a malformed number")


def fields(buf):
    """(field number, wire type, value) of each field of one message: an int for varints and fixed
    numbers, a memoryview for length-delimited fields.  EOFError when the bytes stop inside a field."""
    buf = memoryview(buf)
    i = 0
    while i < len(buf):
        tag, i = _varint(buf, i)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise NotOnnx("a field numbered 0")
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise EOFError
            value, i = buf[i:i + n], i + n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            if i + n > len(buf):
                raise EOFError
            value, i = int.from_bytes(buf[i:i + n], "little"), i + n
        else:  # (3 and 4, groups, are not used by ONNX; 6 and 7 do not exist)
            raise NotOnnx(f"wire type {wire}")
        yield number, wire, value


def _text(v) -> str:
    return bytes(v).decode("utf-8", "replace")


def _value(buf) -> Value:
    name, elem, dims = "", 0, []
    for n, _, v in fields(buf):
        if n == 1:
            name = _text(v)
        elif n == 2:  # TypeProto
            for tn, _, tv in fields(v):
                if tn == 1:  # tensor_type
                    for en, _, ev in fields(tv):
                        if en == 1:
                            elem = ev
                        elif en == 2:  # TensorShapeProto
                            for _, _, dim in (f for f in fields(ev) if f[0] == 1):
                                d = [dv if dn == 1 else _text(dv) for dn, _, dv in fields(dim) if dn in (1, 2)]
                                dims.append(d[0] if d else "?")
    return Value(name, elem, tuple(dims))


def _external(buf) -> External | None:
    dims, elem, name, entries, location = [], 0, "", {}, 0
    for n, wire, v in fields(buf):
        if n == 1:  # dims: repeated int64, packed or not
            if wire == 2:
                j = 0
                while j < len(v):
                    d, j = _varint(v, j)
                    dims.append(d)
            else:
                dims.append(v)
        elif n == 2:
            elem = v
        elif n == 8:
            name = _text(v)
        elif n == 13:
            kv = {kn: _text(kv) for kn, _, kv in fields(v) if kn in (1, 2)}
            entries[kv.get(1, "")] = kv.get(2, "")
        elif n == 14:
            location = v
    if location != 1:  # stored in the graph itself
        return None
    try:
        return External(name, tuple(dims), elem, entries.get("location", ""), int(entries.get("offset", 0)),
                        int(entries.get("length", -1)))
    except ValueError:
        raise NotOnnx(f"the initializer {name!r} has an offset or length that is not a number") from None


def read(raw) -> OnnxFile:
    """Parse a ``ModelProto``'s bytes; NotOnnx (what they are not), EOFError (cut short)."""
    head = bytes(raw[:2])
    if len(head) < 2 or head[0] != 0x08 or not 3 <= head[1] <= 30:  # ir_version comes first, 3 to (today) 11
        raise NotOnnx("it does not begin with an ONNX model's IR version")
    out = OnnxFile(0)
    graph = None
    for n, _, v in fields(raw):
        if n == 1:
            out.ir_version = v
        elif n == 7:
            graph = v
        elif n == 14:
            kv = {kn: _text(kv) for kn, _, kv in fields(v) if kn in (1, 2)}
            out.metadata[kv.get(1, "")] = kv.get(2, "")
    if graph is None:
        raise NotOnnx("it holds no graph")
    for n, _, v in fields(graph):
        if n == 11:
            out.inputs.append(_value(v))
        elif n == 12:
            out.outputs.append(_value(v))
        elif n == 5:
            ext = _external(v)
            if ext is not None:
                out.externals.append(ext)
    return out
