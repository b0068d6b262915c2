"""The service's mesh-sequence requests (``mesh_encode``, ``mesh_inbetween``, ``mesh_decode``).

Shared by the backend process and the add-on's in-process mode (``service.handle`` dispatches
here), so both give the same numbers.  Vertices travel as float32 ``[F, V, 3]`` in object
space; frames are 0-based from the start of the sequence.

* ``mesh_encode`` ``{"checkpoint", "device", "name", "decode"}`` + ``frames [F, V, 3]`` (a mesh
  autoencoder) -> header ``segments``, ``principal_names``, ``principal_descriptions``, ``min_frames``, ``window``,
  ``num_vertices``; arrays ``points [S, 4, d]`` and, with ``"decode": true``, ``vertices
  [sum of segment lengths, V, 3]``: each segment decoded on its own, neutral sliders (exactly
  what ``mesh_decode`` answers for the same points), and the header ``fidelity``: per segment
  ``[mean vertex error in object units, the same in % of the sequence's bounding-box diagonal]``
* ``mesh_inbetween`` ``{"checkpoint", "device", "keys", "name"}`` + ``key_frames [K, V, 3]``
  (keys 0-based, starting at 0) -> header ``segments``; arrays ``vertices [keys[-1] + 1, V, 3]``
  (the keys bit for bit), ``points [S, 4, d]``
* ``mesh_decode`` ``{"checkpoint", "device", "task", "segments", "lengths", "amplify", "timing",
  "principal", "keys"}`` + ``points [P, 4, d]`` (and ``key_frames [K, V, 3]`` when ``keys`` is not
  null): each listed segment decoded on its own into ``lengths[i]`` frames, edits as in
  ``backend.motion.edits`` -> ``vertices [sum(lengths), V, 3]``, the parts one after the other
"""
from __future__ import annotations

import numpy as np

from .engines import check_gaps, check_reply_size, get_engine, principal_amounts


def _segments(controls) -> list[list[int]]:
    return [[int(a), int(b)] for a, b in controls.segments]


def decode_parts(engine, header: dict, arrays: dict) -> np.ndarray:
    """The ``mesh_decode`` request: every listed segment decoded on its own (a batch of one, so a
    segment decodes to the same numbers whichever others are asked for with it)."""
    from ..mesh.engine import MeshControls
    from ..motion.edits import edit_points
    from ..motion.keyframes_np import segments_on_keys
    segs, lengths = header["segments"], [int(m) for m in header["lengths"]]
    amplify, timing, principal = header["amplify"], header["timing"], header["principal"]
    points = np.asarray(arrays["points"], np.float64)
    keys = header.get("keys")
    if not (len(segs) == len(lengths) == len(amplify) == len(timing) == len(principal) == len(points)):
        raise ValueError("mesh_decode: segments, lengths, edits and points differ in count")
    check_reply_size(sum(lengths), engine.num_vertices * 3 * 4, "mesh_decode")  # vertices [F, V, 3] float32
    if keys is not None:
        key_frames = np.asarray(arrays["key_frames"], np.float32)
        if len(key_frames) != len(keys):
            raise ValueError(f"mesh_decode: {len(keys)} keys but {len(key_frames)} key frames")
    pca = engine.principal()
    # an in-betweened range's segments as the engine cut them: each is decoded seeing all the keys
    whole = segments_on_keys([int(k) for k in keys], engine.window) if keys is not None else None
    parts = []
    for i, (a, b) in enumerate(segs):
        a, b = int(a), int(b)
        n, m = b - a + 1, lengths[i]
        if n < 2 or m < 2:
            raise ValueError(f"segment {a}-{b} -> {m} frames: a segment needs at least 2 frames")
        amounts = principal_amounts(engine, pca, principal[i])
        pts = edit_points(points[i], amplify_by=float(amplify[i]), principal=pca, amounts=amounts)
        if keys is None:
            controls = MeshControls(pts[None], [(0, n - 1)])
            out = engine.decode(controls, scale=(m - 1) / (n - 1), timing=float(timing[i]))
        else:
            if (m - 1) % (n - 1):
                raise ValueError(f"an in-betweened segment ({n} frames) stretches only by whole factors, not to {m}")
            # all the range's keys: the spline and the linear path see beyond this segment, as in inbetween
            if (a, b) not in whole:
                raise ValueError(f"segment {a}-{b} is not one of the keys' segments {whole}")
            j = whole.index((a, b))
            every = np.zeros((len(whole),) + pts.shape, np.float32)
            every[j] = pts  # the others are not decoded
            controls = MeshControls(every, whole, keys=[int(k) for k in keys], key_frames=key_frames)
            out = engine.decode(controls, scale=(m - 1) // (n - 1), timing=float(timing[i]),
                                amplify=float(amplify[i]), segment=j)
        if len(out) != m:
            raise ValueError(f"segment {a}-{b} decoded to {len(out)} frames, not {m}")
        parts.append(np.asarray(out, np.float32))
    return np.concatenate(parts) if parts else np.zeros((0, engine.num_vertices, 3), np.float32)


def encode(engine, header: dict, arrays: dict) -> tuple[dict, dict]:
    frames = arrays["frames"]
    controls = engine.encode(frames, header.get("name", ""))
    segs = _segments(controls)
    reply = {"segments": segs, "principal_names": engine.principal_names(),
             "principal_descriptions": engine.principal_descriptions(),
             "min_frames": engine.min_frames,
             "window": engine.window, "num_vertices": engine.num_vertices}
    out = {"points": controls.points}
    if header.get("decode"):
        neutral = {"segments": segs, "lengths": [b - a + 1 for a, b in segs], "amplify": [1.0] * len(segs),
                   "timing": [0.0] * len(segs), "principal": [[]] * len(segs), "keys": None}
        out["vertices"] = decode_parts(engine, neutral, out)
        reply["fidelity"] = fidelity(segs, frames, out["vertices"])
    return reply, out


def fidelity(segments, frames, decoded) -> list[list[float]]:
    """Per segment ``[mean vertex error, its % of the bounding-box diagonal]`` between the frames read
    and the segments' neutral decodes laid one after the other: the readout after Encode Mesh."""
    flat = np.asarray(frames, np.float32).reshape(-1, 3)  # (backend.mesh.sequences.bbox_diagonal, a column at a time:
    diag = float(np.linalg.norm([flat[:, k].max() - flat[:, k].min() for k in range(3)])) or 1.0  # quicker than max(0))
    at = np.cumsum([0] + [b - a + 1 for a, b in segments])
    out = []
    for s, (a, b) in enumerate(segments):  # (backend.mesh.sequences.mean_vertex_error, in float32: a tenth of the time)
        d = np.asarray(decoded[at[s]:at[s + 1]], np.float32) - np.asarray(frames[a:b + 1], np.float32)
        err = float(np.sqrt(np.einsum("fvk,fvk->fv", d, d)).mean(dtype=np.float64))
        out.append([err, 100.0 * err / diag])
    return out


def inbetween(engine, header: dict, arrays: dict) -> tuple[dict, dict]:
    keys = [int(k) for k in header["keys"]]
    key_frames = np.asarray(arrays["key_frames"])
    if not keys or keys[0] != 0:
        raise ValueError(f"keys must start at frame 0, got {keys[:3]}")
    if key_frames.ndim != 3 or len(key_frames) != len(keys):
        raise ValueError(f"key_frames {key_frames.shape} do not match {len(keys)} keys")
    if keys != sorted(set(keys)):
        raise ValueError(f"keys must be increasing and unique, got {keys}")
    from ..motion.engine import EngineError
    check_gaps(keys, engine.window - 1, header.get("name", "") or "mesh sequence", EngineError)  # before allocating
    frames = np.zeros((keys[-1] + 1,) + key_frames.shape[1:], np.float32)  # only the keys are read
    frames[keys] = key_frames
    vertices, controls = engine.inbetween(frames, keys, header.get("name", ""))
    return {"segments": _segments(controls)}, {"vertices": vertices, "points": controls.points}


def handle(op: str, header: dict, arrays: dict) -> tuple[dict, dict]:
    device, runtime = header.get("device", "auto"), header.get("runtime", "torch")
    if op == "mesh_encode":
        engine = get_engine(header.get("checkpoint"), device, "autoencoder", mesh=True, runtime=runtime)
        reply, out = encode(engine, header, arrays)
    elif op == "mesh_inbetween":
        engine = get_engine(header.get("checkpoint"), device, "inbetween", mesh=True, runtime=runtime)
        reply, out = inbetween(engine, header, arrays)
    elif op == "mesh_decode":
        engine = get_engine(header.get("checkpoint"), device, header.get("task", "autoencoder"), mesh=True, runtime=runtime)
        reply, out = {}, {"vertices": decode_parts(engine, header, arrays)}
    else:
        raise ValueError(f"unknown request {op!r}")
    return dict(reply, ok=True, device=str(engine.device)), out
