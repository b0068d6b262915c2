"""A checkpoint's model through ONNX Runtime: numpy in, numpy out, no torch.

``python -m backend export`` (``backend.runtime.export``) writes ``NAME.encode.onnx`` and
``NAME.decode.onnx`` next to ``NAME.json``, their weights pointing into ``NAME.safetensors``.  This
module loads them and answers the calls the torch modules answer, with what the graphs take as
inputs (the Bezier basis of the sample times, the least-squares fit) made here in numpy as the
torch modules make them; an in-betweener's linear path (``KeyRegression``: one product) runs here
in numpy.  tests/test_onnx.py checks every call against the torch module.

The linear path is two (``gap_features``, ``_gap_weights``, ``key_regression_features`` here; ``models.keyframe``'s
``gap_features`` and ``KeyRegression``): the torch one is a submodule of the model that training fits and the
torch runtime runs on its device, this one runs where torch cannot be imported; their constants are one
(``models.config.GAP_NODES``).
"""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..formats import json_limits, safetensors_np
from ..maths.splines import bezier_basis
from ..models.config import GAP_NODES, U_TERMS, ModelConfig
from . import files, graph_checks
from .graph_checks import STAMP, RuntimeModelError  # noqa: F401  (the names export and the engines use)

CALLS = files.CALLS


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


def weights_digest(path) -> str:
    """The safetensors file's SHA-256: a graph exported before its weights changed points at the wrong bytes."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def checkpoint_files(json_path) -> files.CheckpointFiles:
    """The checkpoint's files (``files.resolve``: the one resolver) from its config, read within the limits."""
    jpath = Path(json_path).with_suffix(".json")
    return files.resolve(jpath, json_limits.read(jpath))


def stale(json_path) -> str:
    """Why the checkpoint's graphs cannot be used ("" when they can): ``inspect``'s refusal."""
    try:
        inspect(json_path)
    except RuntimeModelError as e:
        return str(e)
    return ""


def inspect(json_path) -> "Exported":
    """The checkpoint's graphs, checked cheapest first, each refusal naming the problem and the fix: both
    there; each no larger than its model allows (from a stat) and an ONNX model (from its first bytes)
    read whole; its inputs and outputs those the config's model takes and gives; exported from these
    weights (its digest), its weights within them.  RuntimeModelError otherwise."""
    try:
        found = checkpoint_files(json_path)
        cfg = ModelConfig.from_json(json_limits.read(found.config)["model"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise RuntimeModelError(f"cannot read the checkpoint {json_path} ({e})") from None
    jpath = found.config
    again = f"export it again: python -m backend export {jpath}"
    missing = [p.name for p in found.graphs.values() if not p.is_file()]
    if missing:
        raise RuntimeModelError(f"{jpath.name} has no exported model ({', '.join(missing)} missing); export it "
                                f"with python -m backend export {jpath}")
    if found.missing_weights():
        raise RuntimeModelError(f"{found.weights}: {found.missing_weights()}")
    graphs = {c: graph_checks.read_graph(p, cfg, jpath, again) for c, p in found.graphs.items()}
    for call, (path, graph, _) in graphs.items():
        graph_checks.check_signature(path, graph, cfg, call, jpath, again)
    digest, size = weights_digest(found.weights), found.weights.stat().st_size
    for path, graph, _ in graphs.values():
        graph_checks.check_weights(path, graph, found.weights, digest, size, again)
    return Exported(found, cfg, {c: (raw, graph) for c, (_, graph, raw) in graphs.items()})


@dataclass
class Exported:
    """A checkpoint's graphs that passed ``inspect``: call -> (the file's bytes, what it declares)."""
    files: files.CheckpointFiles
    cfg: ModelConfig
    graphs: dict


def available() -> bool:
    import importlib.util
    return importlib.util.find_spec("onnxruntime") is not None


_ORT_PREFIX = re.compile(r"\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*[A-Z_]+\s*:\s*")


def ort_detail(e: Exception) -> str:
    """ONNX Runtime's message without its code ("[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : "), one line."""
    return " ".join(_ORT_PREFIX.sub("", str(e)).split())[:300]


def _session(path: Path, raw: bytes, graph, weights: np.ndarray, threads: int, again: str):
    """An ONNX Runtime session of the graph ``raw``, its external weights handed over from ``weights`` (the
    checkpoint's safetensors bytes, the file the resolver found, whatever name the graph was exported with)."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    arrays = []
    for e in graph.externals:  # (graph_checks.check_weights has held each within the file, float32, its size)
        a = weights[e.offset:e.offset + e.length].view("<f4").reshape(e.dims).astype(np.float32, copy=False)
        arrays.append(a if a.flags.aligned else a.copy())
    try:
        if arrays:
            opts.add_external_initializers([e.name for e in graph.externals],
                                           [ort.OrtValue.ortvalue_from_numpy(a) for a in arrays])
        return ort.InferenceSession(raw, opts, providers=["CPUExecutionProvider"]), arrays
    except Exception as e:  # (ONNX Runtime's own exception types, none a Python built-in)
        raise RuntimeModelError(f"ONNX Runtime cannot load {path.name} ({ort_detail(e)}); {again}") from None


class OnnxModel:
    """The encode and decode calls of a checkpoint's model, on ONNX Runtime (CPU)."""

    def __init__(self, json_path, threads: int = 1):
        if not available():
            raise RuntimeModelError("ONNX Runtime is not installed in this Python (the extension ships it; "
                                    "pip install onnxruntime elsewhere), or choose the backend process")
        found = inspect(json_path)
        self.files, self.cfg = found.files, found.cfg
        self.again = f"export it again: python -m backend export {self.files.config}"
        self.keyframe = self.cfg.family == "keyframe"
        weights = np.fromfile(self.files.weights, dtype=np.uint8)
        self.sessions, self._arrays = {}, []  # (ONNX Runtime reads the arrays it is handed: kept alive here)
        for call, (raw, graph) in found.graphs.items():
            self.sessions[call], arrays = _session(self.files.graphs[call], raw, graph, weights, threads, self.again)
            self._arrays += arrays
        self._regression_weight = None  # [F, D]: the in-betweener's linear path (KeyRegression), run in numpy
        if self.keyframe and self.cfg.linear_path:
            self._regression_weight = np.ascontiguousarray(
                safetensors_np.read(self.files.weights)["model.key_regression.linear.weight"].T)  # [F, D]

    def _run(self, call: str, feeds: dict) -> list:
        try:
            return self.sessions[call].run(None, feeds)
        except Exception as e:  # (ONNX Runtime's own exception types)
            shapes = ", ".join(f"{k} {list(np.shape(v))}" for k, v in feeds.items())
            raise RuntimeModelError(f"ONNX Runtime cannot run {self.files.graphs[call].name} on {shapes} "
                                    f"({ort_detail(e)}); {self.again}") from None

    def _basis(self, times) -> np.ndarray:
        return bezier_basis(self.cfg.controls - 1, np.asarray(times, dtype=np.float32)).astype(np.float32)

    # -- the autoencoder ------------------------------------------------------------------
    def encode(self, x: np.ndarray) -> np.ndarray:
        """x [B, N, in] (normalised features) -> control points [B, K, d]."""
        from ..maths.splines import uniform_times
        n, k = x.shape[1], self.cfg.controls
        fit = np.linalg.pinv(bezier_basis(k - 1, uniform_times(n))).astype(np.float32)
        return self._run("encode", {"x": np.ascontiguousarray(x, dtype=np.float32), "fit": fit})[0]

    def decode_features(self, points: np.ndarray, plans) -> np.ndarray:
        """``Engine.decode_features``: control points ``[B, K, d]`` -> features ``[sum m_i, D]`` of each
        segment laid end to end, ``plans[i] = (source frames, m_i, timing)``; one run per group of segments
        sampled alike.  ONNX Runtime computes a row the same whatever rows are beside it, so each segment
        gets the numbers it gets alone."""
        if not len(plans):
            return np.zeros((0, self.cfg.output_dim), dtype=np.float32)
        got: dict[int, np.ndarray] = {}
        for idx in alike_groups(plans):
            n, m, timing = plans[idx[0]]
            times, pos = sample_times(int(m), int(n), float(timing))
            out = self.decode(np.asarray(points)[idx], times, pos)
            for k, i in enumerate(idx):
                got[i] = out[k]
        return np.concatenate([got[i] for i in range(len(plans))])

    def decode(self, controls: np.ndarray, times, positions) -> np.ndarray:
        """Control points [B, K, d] sampled at ``times`` [N] in [0, 1], ALiBi at ``positions`` [N] -> features
        [B, N, out] (the graph ends with the normaliser's inverse: ``export_onnx._AutoDecode``)."""
        return self._run("decode", {"controls": np.ascontiguousarray(controls, dtype=np.float32),
                                    "basis": self._basis(times),
                                    "positions": np.asarray(positions, dtype=np.float32)})[0]

    # -- the in-betweener -----------------------------------------------------------------
    def encode_keys(self, keys_n: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """keys_n [B, N, D] (read at keys), mask [B, N] -> control points [B, K, d]."""
        return self._run("encode", {"keys_n": np.ascontiguousarray(keys_n, dtype=np.float32),
                                    "mask": np.ascontiguousarray(mask, dtype=bool)})[0]

    def decode_keys(self, controls, base_n, mask, times, positions, keys_n=None, correction=None) -> np.ndarray:
        """``KeyframeSplineTransformer.decode``: -> normalised poses [B, M, D], with the linear path's
        ``correction`` (given, or made from ``keys_n``) where the model has one."""
        out = self._run("decode", {
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
