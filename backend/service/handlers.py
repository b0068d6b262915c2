"""One handler per request op, found in the ``HANDLERS`` table: ``handle(header, arrays)`` is the
whole service for the add-on's in-process mode, and what the backend process answers."""
from __future__ import annotations

import os
import sys
import time

from .. import __version__
from . import mesh, motion
from .engines import get_engine, request_threads
from .protocol import PROTOCOL


def _device(header: dict) -> str:
    return header.get("device", "auto")


def _runtime(header: dict) -> str:
    """What runs the model: "torch" (the default) or "onnx" (the exported graphs: ``backend.runtime.onnx_runner``)."""
    return header.get("runtime", "torch")


def hello(header: dict, arrays: dict) -> tuple[dict, dict]:
    import importlib.util
    return {"ok": True, "protocol": PROTOCOL, "version": __version__, "pid": os.getpid(),
            "python": sys.version.split()[0], "torch": importlib.util.find_spec("torch") is not None}, {}


def load(header: dict, arrays: dict) -> tuple[dict, dict]:
    t0 = time.perf_counter()
    engine = get_engine(header.get("checkpoint"), _device(header), runtime=_runtime(header))
    return {"ok": True, "device": str(engine.device), "seconds": time.perf_counter() - t0}, {}


def inbetween(header: dict, arrays: dict) -> tuple[dict, dict]:
    engine = get_engine(header.get("checkpoint"), _device(header), runtime=_runtime(header))
    t0 = time.perf_counter()
    with motion.contacts_as(engine, header):
        rot, pos, c = motion.inbetween_with_controls(engine, arrays["offsets"], header["keys"],
                                                     arrays["key_rotations"], arrays["key_positions"],
                                                     float(header.get("frame_time", 1.0 / 30.0)))
    reply = {"ok": True, "device": str(engine.device), "seconds": time.perf_counter() - t0,
             **motion.segments_reply(header["keys"], c)}
    return reply, {"rotations": rot, "positions": pos, "points": c.points, "origins": c.origins, "template": c.template}


def encode(header: dict, arrays: dict) -> tuple[dict, dict]:
    engine = get_engine(header.get("checkpoint"), _device(header), "autoencoder", runtime=_runtime(header))
    t0 = time.perf_counter()
    reply, out = motion.encode_clip(engine, arrays["offsets"], arrays["rotations"], arrays["positions"],
                                    float(header.get("frame_time", 1.0 / 30.0)), bool(header.get("decode")))
    return dict(reply, ok=True, device=str(engine.device), seconds=time.perf_counter() - t0), out


def decode(header: dict, arrays: dict) -> tuple[dict, dict]:
    engine = get_engine(header.get("checkpoint"), _device(header), header.get("task", "autoencoder"),
                        runtime=_runtime(header))
    t0 = time.perf_counter()
    with motion.contacts_as(engine, header):
        rot, pos = motion.decode_parts(engine, header, arrays)
    return ({"ok": True, "device": str(engine.device), "seconds": time.perf_counter() - t0},
            {"rotations": rot, "positions": pos})


def _mesh(op: str):
    def handler(header: dict, arrays: dict) -> tuple[dict, dict]:
        t0 = time.perf_counter()
        reply, out = mesh.handle(op, header, arrays)
        return dict(reply, seconds=time.perf_counter() - t0), out
    return handler


def shutdown(header: dict, arrays: dict) -> tuple[dict, dict]:
    return {"ok": True}, {}


HANDLERS = {"hello": hello, "load": load, "inbetween": inbetween, "encode": encode, "decode": decode,
            "mesh_encode": _mesh("mesh_encode"), "mesh_inbetween": _mesh("mesh_inbetween"),
            "mesh_decode": _mesh("mesh_decode"), "shutdown": shutdown}


def handle(header: dict, arrays: dict) -> tuple[dict, dict]:
    op = header.get("op")
    if isinstance(op, str) and op in HANDLERS:
        with request_threads(_runtime(header) == "torch"):
            return HANDLERS[op](header, arrays)
    if isinstance(op, str) and op.startswith("mesh_"):
        with request_threads(_runtime(header) == "torch"):
            return _mesh(op)(header, arrays)  # the mesh module names the unknown request
    raise ValueError(f"unknown request {op!r}")
