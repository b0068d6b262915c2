"""A checkpoint's model through ONNX Runtime: numpy in, numpy out, no torch.

``python -m backend export`` (``backend.runtime.export``) writes ``NAME.encode.onnx`` and
``NAME.decode.onnx`` next to ``NAME.json``, their weights pointing into ``NAME.safetensors``.  This
module loads them and answers the calls the torch modules answer, with what the graphs take as
inputs (the Bezier basis of the sample times, the least-squares fit) made here in numpy as the
torch modules make them; an in-betweener's linear path (``KeyRegression``: one product) runs here
in numpy.  tests/test_onnx.py checks every call against the torch module.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import numpy as np

from ..formats import json_limits, safetensors_np
from ..models.config import ModelConfig
from ..maths.splines import bezier_basis

CALLS = ("encode", "decode")
STAMP = "splinetween.weights_sha256"  # the graph's metadata: the digest of the weights it points into


RUNTIMES = ("torch", "onnx")  # what runs a checkpoint's model: its torch module, or its exported graphs


@functools.lru_cache(maxsize=64)
def sample_times(m: int, source_frames: int, timing: float) -> tuple[np.ndarray, np.ndarray]:
    """(spline times, ALiBi positions in source frames) of ``m`` decoded frames of a segment of
    ``source_frames``, re-timed by ``timing`` (float32, read-only): the same few for every slider change,
    so made once, and the same objects each time (segments sampled alike are batched by identity)."""
    from ..motion.edits import warp_times
    uniform = np.linspace(0, 1, m) if m > 1 else np.zeros(1)
    times = warp_times(uniform, timing).astype(np.float32)
    pos = (uniform * (source_frames - 1)).astype(np.float32)
    times.setflags(write=False)
    pos.setflags(write=False)
    return times, pos


def alike_groups(plans) -> list[list[int]]:
    """Indices of the plans ``(source frames, m, timing)`` sampled alike, in order of first appearance."""
    groups: dict = {}
    for i, (n, m, timing) in enumerate(plans):
        groups.setdefault((int(n), int(m), float(timing)), []).append(i)
    return list(groups.values())


class RuntimeModelError(ValueError):
    """A checkpoint without current ONNX graphs, or no ONNX Runtime here; the message says what to do."""


def weights_digest(path) -> str:
    """The safetensors file's SHA-256: a graph exported before its weights changed points at the wrong bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def checkpoint_files(json_path) -> tuple[Path, dict[str, Path], Path]:
    """(config, {call: its graph}, weights) of a checkpoint: ``NAME.<call>.onnx`` next to ``NAME.json``."""
    jpath = Path(json_path).with_suffix(".json")
    doc = json_limits.read(jpath)
    weights = jpath.with_name(Path(doc.get("weights") or jpath.with_suffix(".safetensors").name).name)
    return jpath, {c: jpath.with_name(f"{jpath.stem}.{c}.onnx") for c in CALLS}, weights


def stale(json_path) -> str:
    """Why the checkpoint's graphs cannot be used ("" when they can): missing, or exported from other weights."""
    try:
        jpath, graphs, weights = checkpoint_files(json_path)
        missing = [p.name for p in graphs.values() if not p.is_file()]
        if missing:
            return (f"{jpath.name} has no exported model ({', '.join(missing)} missing); export it with "
                    f"python -m backend export {jpath}")
        digest = weights_digest(weights).encode()
        exported = {p: p.read_bytes() for p in graphs.values()}
    except (OSError, ValueError, AttributeError) as e:
        return f"cannot read the checkpoint {json_path} ({e})"
    for p, graph in exported.items():
        if digest not in graph:  # (the graph's metadata holds the digest it was exported with: STAMP)
            return (f"{p.name} was exported from other weights than {weights.name}; export it again with "
                    f"python -m backend export {jpath}")
    return ""


def available() -> bool:
    import importlib.util
    return importlib.util.find_spec("onnxruntime") is not None


def _session(path: Path, threads: int):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


class OnnxModel:
    """The encode and decode calls of a checkpoint's model, on ONNX Runtime (CPU)."""

    def __init__(self, json_path, threads: int = 1, check: bool = True):
        if not available():
            raise RuntimeModelError("ONNX Runtime is not installed in this Python (the extension ships it; "
                                    "pip install onnxruntime elsewhere), or choose the backend process")
        why = stale(json_path) if check else ""
        if why:
            raise RuntimeModelError(why)
        jpath, graphs, weights = checkpoint_files(json_path)
        doc = json_limits.read(jpath)
        self.cfg = ModelConfig.from_json(doc["model"])
        self.keyframe = self.cfg.family == "keyframe"
        self.sessions = {c: _session(p, threads) for c, p in graphs.items()}
        self._regression_weight = None  # [F, D]: the in-betweener's linear path (KeyRegression), run in numpy
        if self.keyframe and self.cfg.linear_path:
            self._regression_weight = np.ascontiguousarray(
                safetensors_np.read(weights)["model.key_regression.linear.weight"].T)  # [F, D]

    def _basis(self, times) -> np.ndarray:
        return bezier_basis(self.cfg.controls - 1, np.asarray(times, dtype=np.float32)).astype(np.float32)

    # -- the autoencoder ------------------------------------------------------------------
    def encode(self, x: np.ndarray) -> np.ndarray:
        """x [B, N, in] (normalised features) -> control points [B, K, d]."""
        from ..maths.splines import uniform_times
        n, k = x.shape[1], self.cfg.controls
        fit = np.linalg.pinv(bezier_basis(k - 1, uniform_times(n))).astype(np.float32)
        return self.sessions["encode"].run(None, {"x": np.ascontiguousarray(x, dtype=np.float32), "fit": fit})[0]

    def decode_features(self, points: np.ndarray, plans) -> np.ndarray:
        """``Engine.decode_features``: control points ``[B, K, d]`` -> features ``[sum m_i, D]`` of each
        segment laid end to end, ``plans[i] = (source frames, m_i, timing)``; one run per group of segments
        sampled alike.  ONNX Runtime computes a row the same whatever rows are beside it, so each segment
        gets the numbers it gets alone."""
        if not len(plans):
            return np.zeros((0, self.cfg.output_dim), dtype=np.float32)
        got = [None] * len(plans)
        for idx in alike_groups(plans):
            n, m, timing = plans[idx[0]]
            times, pos = sample_times(int(m), int(n), float(timing))
            out = self.decode(np.asarray(points)[idx], times, pos)
            for k, i in enumerate(idx):
                got[i] = out[k]
        return np.concatenate(got)

    def decode(self, controls: np.ndarray, times, positions) -> np.ndarray:
        """Control points [B, K, d] sampled at ``times`` [N] in [0, 1], ALiBi at ``positions`` [N] -> features
        [B, N, out] (the graph ends with the normaliser's inverse: ``export_onnx._AutoDecode``)."""
        return self.sessions["decode"].run(None, {"controls": np.ascontiguousarray(controls, dtype=np.float32),
                                                  "basis": self._basis(times),
                                                  "positions": np.asarray(positions, dtype=np.float32)})[0]

    # -- the in-betweener -----------------------------------------------------------------
    def encode_keys(self, keys_n: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """keys_n [B, N, D] (read at keys), mask [B, N] -> control points [B, K, d]."""
        return self.sessions["encode"].run(None, {"keys_n": np.ascontiguousarray(keys_n, dtype=np.float32),
                                                  "mask": np.ascontiguousarray(mask, dtype=bool)})[0]

    def decode_keys(self, controls, base_n, mask, times, positions, keys_n=None, correction=None) -> np.ndarray:
        """``KeyframeSplineTransformer.decode``: -> normalised poses [B, M, D], with the linear path's
        ``correction`` (given, or made from ``keys_n``) where the model has one."""
        out = self.sessions["decode"].run(None, {
            "controls": np.ascontiguousarray(controls, dtype=np.float32),
            "base_n": np.ascontiguousarray(base_n, dtype=np.float32), "mask": np.ascontiguousarray(mask, dtype=bool),
            "basis": self._basis(times), "positions": np.asarray(positions, dtype=np.float32)})[0]
        if self._regression_weight is not None:
            if correction is None:
                if keys_n is None:
                    raise ValueError("this in-between model's linear path needs the key poses (keys_n)")
                correction = self.regression(keys_n, base_n, mask, positions)
            out = out + correction
        return out

    def regression(self, keys_n, base_n, mask, positions=None) -> np.ndarray:
        """``keyframe_model.KeyRegression``: the linear in-betweener's correction [B, N, D]."""
        return key_regression_features(keys_n, base_n, mask, positions) @ self._regression_weight


GAP_NODES = (3.0, 6.0, 10.0, 16.0, 30.0)  # keyframe_model.KeyRegression's
U_TERMS = 3


def gap_features(mask: np.ndarray, reach: int = 2, positions=None):
    """``keyframe_model.gap_features`` in numpy: (neighbour key frames [B, N, 2r], u, g)."""
    b, n = mask.shape
    frames = np.broadcast_to(np.arange(n), (b, n))
    key_pos = np.sort(np.where(mask, frames, n - 1), 1)
    count = mask.sum(1, keepdims=True)
    prev = np.maximum(np.cumsum(mask, 1) - 1, 0)
    near = np.stack([np.take_along_axis(key_pos, np.minimum(np.maximum(prev + m, 0), count - 1), 1)
                     for m in range(1 - reach, reach + 1)], -1)
    pos = frames.astype(np.float32) if positions is None else np.broadcast_to(
        np.asarray(positions, dtype=np.float32), (b, n))
    start = np.take_along_axis(pos, near[..., reach - 1], 1)
    end = np.take_along_axis(pos, near[..., reach], 1)
    g = np.maximum(end - start, 1e-6)
    u = ((pos - start) / g).clip(0.0, 1.0)
    return near, u, g


def _gap_weights(u: np.ndarray, g: np.ndarray) -> np.ndarray:
    nodes = np.asarray(GAP_NODES, dtype=np.float32)
    gc = np.clip(g, nodes[0], nodes[-1])
    hi = np.searchsorted(nodes, gc, side="right").clip(1, len(nodes) - 1)
    t = (gc - nodes[hi - 1]) / (nodes[hi] - nodes[hi - 1])
    hats = np.zeros(gc.shape + (len(nodes),), dtype=np.float32)
    np.put_along_axis(hats, (hi - 1)[..., None], (1 - t)[..., None], -1)
    lo_part = np.take_along_axis(hats, hi[..., None], -1) + t[..., None]
    np.put_along_axis(hats, hi[..., None], lo_part, -1)
    w = u * (1 - u)
    poly = np.stack([w * u ** i for i in range(U_TERMS)], -1)
    return (poly[..., :, None] * hats[..., None, :]).reshape(poly.shape[:-1] + (-1,))


def key_regression_features(keys_n, base_n, mask, positions=None, reach: int = 2) -> np.ndarray:
    """``KeyRegression.features``: [B, N, F] (the linear layer's input)."""
    near, u, g = gap_features(np.asarray(mask, dtype=bool), reach, positions)
    b, n, d = keys_n.shape
    vals = np.take_along_axis(np.asarray(keys_n, dtype=np.float32), near.reshape(b, -1, 1), 1).reshape(b, n, -1, d)
    diffs = vals - np.asarray(base_n, dtype=np.float32)[:, :, None]
    phi = _gap_weights(u.astype(np.float32), g.astype(np.float32))
    return (diffs[..., None] * phi[:, :, None, None]).reshape(b, n, -1)
