"""``python -m backend.service``: the backend as a long-lived process, for the Blender add-on.

Blender's own Python usually has no PyTorch, so the add-on starts this module with an
interpreter that has it and talks to it over the process's stdin/stdout (no network port,
no pickle).  Every message, in both directions, is one frame::

    b"STW1" | header length (uint32, little-endian) | header (UTF-8 JSON) | raw array bytes

The header's ``"arrays"`` lists ``[name, dtype, shape]`` in the order the arrays' bytes follow
(C order, little-endian; dtypes float32, float64, int32, int64).  Requests carry ``"op"``:

* ``hello`` -> ``{"ok": true, "protocol", "version", "pid", "python", "torch"}``
* ``load`` ``{"checkpoint", "device"}`` -> ``{"ok": true, "device", "seconds"}`` (warm-up)
* ``inbetween`` ``{"checkpoint", "device", "keys", "frame_time"}`` + arrays ``offsets [J, 3]``,
  ``key_rotations [K, J, 4]``, ``key_positions [K, J, 3]`` -> arrays ``rotations [F, J, 4]``,
  ``positions [F, J, 3]`` with ``F = keys[-1] + 1`` (keys are 0-based and start at 0)
  and the latent spline: header ``segments``, arrays ``points [S, 4, d]``, ``origins [S, 3]``,
  ``template [J, 3]`` (the keys' frames and poses are the request's)
* ``encode`` ``{"checkpoint", "device", "frame_time"}`` + arrays ``offsets [J, 3]``,
  ``rotations [F, J, 4]``, ``positions [F, J, 3]`` (an autoencoder checkpoint) -> header
  ``segments`` (inclusive, sharing end frames), ``principal_names``, ``min_frames``; arrays
  ``points [S, 4, d]``, ``origins [S, 3]``, ``template [J, 3]``
* ``decode`` ``{"checkpoint", "device", "task", "segments", "lengths", "amplify", "timing",
  "principal", "keys"}`` + arrays ``points [P, 4, d]``, ``origins [P, 3]``, ``template [J, 3]``
  (and ``key_rotations [K, J, 4]``, ``key_positions [K, J, 3]`` when ``keys`` is not null):
  each listed segment decoded on its own (``lengths``: output frames, more or fewer than the
  segment's to re-time it; edits as in ``backend.edits``) -> arrays ``rotations [sum, J, 4]``,
  ``positions [sum, J, 3]``, the parts one after the other
* ``mesh_encode``, ``mesh_inbetween``, ``mesh_decode``: mesh sequences (vertices ``[F, V, 3]``
  float32), described in backend/service_mesh.py
* ``shutdown`` -> ``{"ok": true}``, then the process exits

A failure is answered ``{"ok": false, "error": message, "type": exception class}`` and the
process keeps serving.  Models are loaded once per (checkpoint, device) and kept warm.  Only
numpy is imported at module level; torch comes with the first model.
"""
from __future__ import annotations

import json
import os
import struct
import sys
import time

import numpy as np

from . import __version__

MAGIC = b"STW1"
PROTOCOL = 1
_DTYPES = ("float32", "float64", "int32", "int64")
_MAX_HEADER = 1 << 20
_MAX_ARRAY = 1 << 31
_engines: dict = {}


class ProtocolError(ValueError):
    """A frame that is not ours (a stray print on stdout, a truncated stream, a bad header)."""


def write_message(stream, header: dict, arrays: dict | None = None) -> None:
    arrays = {k: np.ascontiguousarray(v) for k, v in (arrays or {}).items()}
    for k, v in arrays.items():
        if v.dtype.name not in _DTYPES:
            raise ProtocolError(f"array {k!r}: dtype {v.dtype} is not one of {_DTYPES}")
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


def read_message(stream) -> tuple[dict, dict]:
    """One frame -> (header, arrays); EOFError on a clean end of stream."""
    magic = _read_exact(stream, 4, "frame start")
    if magic != MAGIC:
        raise ProtocolError(f"unexpected bytes {magic!r} where a message should start "
                            "(something else wrote to the stream)")
    (n,) = struct.unpack("<I", _read_exact(stream, 4, "header length"))
    if n > _MAX_HEADER:
        raise ProtocolError(f"header of {n} bytes is larger than {_MAX_HEADER}")
    try:
        header = json.loads(_read_exact(stream, n, "header").decode("utf-8"))
    except ValueError as e:
        raise ProtocolError(f"unreadable header ({e})") from None
    if not isinstance(header, dict):
        raise ProtocolError(f"unreadable header (a JSON object expected, got {type(header).__name__})")
    specs = header.pop("arrays", [])
    arrays = {}
    for spec in specs:
        try:
            name, dtype, shape = spec
            dt = np.dtype(dtype).newbyteorder("<")
            shape = tuple(int(s) for s in shape)
        except (TypeError, ValueError):
            raise ProtocolError(f"bad array description {spec!r}") from None
        if dtype not in _DTYPES or any(s < 0 for s in shape):
            raise ProtocolError(f"bad array description {spec!r}")
        size = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        if size > _MAX_ARRAY:
            raise ProtocolError(f"array {name!r} of {size} bytes is too large")
        raw = _read_exact(stream, size, f"array {name}")
        arrays[name] = np.frombuffer(raw, dtype=dt).astype(dtype).reshape(shape)
    return header, arrays


# -- the work, shared with the add-on's in-process mode ----------------------------------------
def get_engine(checkpoint: str | None, device: str = "auto", task: str = "inbetween", mesh: bool = False):
    """The engine for a checkpoint (None or "" -> the shipped one for ``task``; ``mesh``: a mesh
    engine), loaded once per (kind, file, device) and again when the file is replaced (e.g. by a
    newer training checkpoint)."""
    if mesh:
        from .mesh_engine import DEFAULT_MESH as autoencoder, DEFAULT_MESH_INBETWEEN as inbetween
        from .mesh_engine import MeshEngine as factory
    else:
        from .engine import DEFAULT_CHECKPOINT as autoencoder, DEFAULT_INBETWEEN as inbetween
        from .engine import Engine as factory
    path = os.path.abspath(checkpoint) if checkpoint else str(inbetween if task == "inbetween" else autoencoder)
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        stamp = None  # the engine's loader names the missing file
    key = (factory.__name__, path, device, stamp)
    if key not in _engines:
        for old in [k for k in _engines if k[:3] == key[:3]]:
            del _engines[old]
        _engines[key] = factory(path, device)
    engine = _engines[key]
    if engine.task != task:
        need = _NEEDS[mesh, task == "inbetween"]
        raise ValueError(f"{path}: this is {'a mesh' if mesh else 'an'} {engine.task} checkpoint; {need}")
    return engine


_NEEDS = {(False, True): "Inbetween needs an in-betweening one",
          (False, False): "latent editing (Encode) needs a motion autoencoder one",
          (True, True): "Inbetween Mesh needs a mesh in-betweening one",
          (True, False): "Encode Mesh needs a mesh autoencoder one"}


def inbetween_keys(engine, offsets: np.ndarray, keys, key_rotations: np.ndarray, key_positions: np.ndarray,
                   frame_time: float = 1.0 / 30.0) -> tuple[np.ndarray, np.ndarray]:
    """Key poses only (local rotations ``[K, J, 4]``, positions ``[K, J, 3]`` in the checkpoint's
    convention, keys 0-based from 0) -> every frame ``[F, J, 4]``, ``[F, J, 3]``."""
    rot, pos, _ = inbetween_with_controls(engine, offsets, keys, key_rotations, key_positions, frame_time)
    return rot, pos


def inbetween_with_controls(engine, offsets, keys, key_rotations, key_positions, frame_time=1.0 / 30.0):
    """:func:`inbetween_keys` plus the latent spline it decoded: ``(rot, pos, Controls)``."""
    from dataclasses import replace

    from .skeleton import Clip
    keys = [int(k) for k in keys]
    if not keys or keys[0] != 0:
        raise ValueError(f"keys must start at frame 0, got {keys[:3]}")
    j = engine.skeleton.num_joints
    if key_rotations.shape != (len(keys), j, 4) or key_positions.shape != (len(keys), j, 3) \
            or offsets.shape != (j, 3):
        raise ValueError(f"key arrays {key_rotations.shape}, {key_positions.shape}, offsets {offsets.shape} "
                         f"do not match {len(keys)} keys x {j} joints")
    f = keys[-1] + 1
    rot = np.zeros((f, j, 4))
    rot[..., 0] = 1.0
    pos = np.broadcast_to(offsets, (f, j, 3)).astype(np.float64)
    rot[keys], pos[keys] = key_rotations, key_positions
    skel = replace(engine.skeleton, offsets=np.asarray(offsets, dtype=np.float64))
    out, controls = engine.inbetween(Clip(skel, rot, pos, frame_time, "blender"), keys)
    return out.rotations, out.positions, controls


def encode_clip(engine, offsets, rotations, positions, frame_time=1.0 / 30.0):
    """Every frame of a clip (checkpoint convention) -> (header, arrays) of its latent spline."""
    from dataclasses import replace

    from .skeleton import Clip
    j = engine.skeleton.num_joints
    if rotations.shape[1:] != (j, 4) or positions.shape[1:] != (j, 3) or offsets.shape != (j, 3) \
            or len(rotations) != len(positions):
        raise ValueError(f"arrays {rotations.shape}, {positions.shape}, offsets {offsets.shape} do not match "
                         f"{j} joints")
    skel = replace(engine.skeleton, offsets=np.asarray(offsets, dtype=np.float64))
    c = engine.encode(Clip(skel, np.asarray(rotations, np.float64), np.asarray(positions, np.float64),
                           frame_time, "blender"))
    return ({"segments": [[int(a), int(b)] for a, b in c.segments], "principal_names": engine.principal_names(),
             "min_frames": engine.min_frames},
            {"points": c.points, "origins": c.origins, "template": c.template})


def decode_parts(engine, header: dict, arrays: dict) -> tuple[np.ndarray, np.ndarray]:
    """The ``decode`` request: each listed segment decoded on its own (a batch of one, so a
    segment decodes to the same numbers whichever others are asked for with it)."""
    import torch

    from .edits import edit_points
    from .engine import Controls
    from .features import from_features
    from .inbetween import decode_inbetween
    segs, lengths = header["segments"], [int(m) for m in header["lengths"]]
    amplify, timing, principal = header["amplify"], header["timing"], header["principal"]
    points, origins = np.asarray(arrays["points"], np.float64), np.asarray(arrays["origins"], np.float64)
    template = np.asarray(arrays["template"], np.float64)
    keys = header.get("keys")
    if not (len(segs) == len(lengths) == len(amplify) == len(timing) == len(principal) == len(points) == len(origins)):
        raise ValueError("decode: segments, lengths, edits and points differ in count")
    pca = engine.principal()
    j = engine.skeleton.num_joints
    rots, poss = [], []
    for i, (a, b) in enumerate(segs):
        n, m = int(b) - int(a) + 1, lengths[i]
        amounts = [float(x) for x in principal[i]]
        if any(amounts) and pca is None:
            raise ValueError(f"{engine.path.name} has no principal directions; set the principal sliders to 0")
        if pca is not None and len(amounts) > len(pca[1]):
            raise ValueError(f"{len(amounts)} principal amounts; {engine.path.name} has {len(pca[1])} directions")
        pts = edit_points(points[i], amplify_by=float(amplify[i]), principal=pca, amounts=amounts)
        if n < 2 or m < 2:
            raise ValueError(f"segment {a}-{b} -> {m} frames: a segment needs at least 2 frames")
        if keys is None:
            feat, origin = engine.decode_segments(pts[None], origins[i:i + 1], [n], (m - 1) / (n - 1),
                                                  float(timing[i]))[0]
            r, p = from_features(feat, engine.layout, origin, torch.as_tensor(template, dtype=torch.float32,
                                                                              device=engine.device), j)
            r, p = r.cpu().numpy().astype(np.float64), p.cpu().numpy().astype(np.float64)
        else:
            if (m - 1) % (n - 1):
                raise ValueError(f"an in-betweened segment ({n} frames) stretches only by whole factors, not to {m}")
            inside = [k for k, key in enumerate(keys) if a <= key <= b]
            sub = Controls(pts[None], origins[i:i + 1], [(0, n - 1)], template, 1.0 / 30.0,
                           keys=[int(keys[k]) - int(a) for k in inside],
                           key_rotations=np.asarray(arrays["key_rotations"], np.float64)[inside],
                           key_positions=np.asarray(arrays["key_positions"], np.float64)[inside])
            out = decode_inbetween(engine, sub, sub.points, (m - 1) // (n - 1), float(timing[i]))
            r, p = out.rotations, out.positions
        if len(r) != m:
            raise ValueError(f"segment {a}-{b} decoded to {len(r)} frames, not {m}")
        rots.append(r)
        poss.append(p)
    empty = (np.zeros((0, j, 4)), np.zeros((0, j, 3)))
    return (np.concatenate(rots), np.concatenate(poss)) if rots else empty


def handle(header: dict, arrays: dict) -> tuple[dict, dict]:
    op = header.get("op")
    if op == "hello":
        import importlib.util
        return {"ok": True, "protocol": PROTOCOL, "version": __version__, "pid": os.getpid(),
                "python": sys.version.split()[0], "torch": importlib.util.find_spec("torch") is not None}, {}
    if op == "load":
        t0 = time.perf_counter()
        engine = get_engine(header.get("checkpoint"), header.get("device", "auto"))
        return {"ok": True, "device": str(engine.device), "seconds": time.perf_counter() - t0}, {}
    if op == "inbetween":
        delay = float(os.environ.get("SPLINETWEEN_SERVICE_DELAY", "0") or 0)  # tests: a slow backend
        if delay:
            time.sleep(delay)
        engine = get_engine(header.get("checkpoint"), header.get("device", "auto"))
        t0 = time.perf_counter()
        rot, pos, c = inbetween_with_controls(engine, arrays["offsets"], header["keys"], arrays["key_rotations"],
                                              arrays["key_positions"], float(header.get("frame_time", 1.0 / 30.0)))
        return ({"ok": True, "device": str(engine.device), "seconds": time.perf_counter() - t0,
                 "segments": [[int(a), int(b)] for a, b in c.segments]},
                {"rotations": rot, "positions": pos, "points": c.points, "origins": c.origins,
                 "template": c.template})
    if op == "encode":
        engine = get_engine(header.get("checkpoint"), header.get("device", "auto"), "autoencoder")
        t0 = time.perf_counter()
        reply, out = encode_clip(engine, arrays["offsets"], arrays["rotations"], arrays["positions"],
                                 float(header.get("frame_time", 1.0 / 30.0)))
        return dict(reply, ok=True, device=str(engine.device), seconds=time.perf_counter() - t0), out
    if op == "decode":
        engine = get_engine(header.get("checkpoint"), header.get("device", "auto"), header.get("task", "autoencoder"))
        t0 = time.perf_counter()
        rot, pos = decode_parts(engine, header, arrays)
        return ({"ok": True, "device": str(engine.device), "seconds": time.perf_counter() - t0},
                {"rotations": rot, "positions": pos})
    if isinstance(op, str) and op.startswith("mesh_"):
        from . import service_mesh
        t0 = time.perf_counter()
        reply, out = service_mesh.handle(op, header, arrays)
        return dict(reply, seconds=time.perf_counter() - t0), out
    if op == "shutdown":
        return {"ok": True}, {}
    raise ValueError(f"unknown request {op!r}")


def serve(stdin, stdout) -> int:
    while True:
        try:
            header, arrays = read_message(stdin)
        except EOFError:
            return 0
        except ProtocolError as e:
            write_message(stdout, {"ok": False, "error": f"bad request: {e}", "type": "ProtocolError"})
            return 2
        try:
            reply, out = handle(header, arrays)
        except Exception as e:  # answered, and the process keeps serving
            reply, out = {"ok": False, "error": str(e), "type": type(e).__name__}, {}
        write_message(stdout, reply, out)
        if header.get("op") == "shutdown":
            return 0


def main() -> int:
    # Keep the protocol stream to ourselves: anything printed (by us or a library) goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    threads = int(os.environ.get("SPLINETWEEN_THREADS", "0") or 0)
    if threads > 0:
        import torch
        torch.set_num_threads(threads)
    return serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    sys.exit(main())
