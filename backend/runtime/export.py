"""A checkpoint's model as ONNX graphs, for ONNX Runtime (the add-on's built-in backend: no torch).

Each model call the engines make is one graph, ``NAME.<call>.onnx`` next to ``NAME.json``; every
shape the add-on sends (batch, window length, key count) is a dynamic axis.  What the calls compute
from numbers alone (the Bezier basis of the sample times, the linear path's least-squares fit) is
an input, made in numpy by ``backend.runtime.onnx_runner`` as the torch model makes it.

The weights are not copied: each graph's weights are *external data* pointing into the checkpoint's
own safetensors file (ONNX stores a file, an offset and a length per tensor; safetensors stores each
tensor's raw little-endian bytes at an offset), so the weights ship once and a checkpoint is still
its JSON and safetensors (docs/blender-addon.md).  Run ``python -m backend export`` when a model is
re-shipped; training exports what it saves.
"""
from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..formats.atomic import replacing
from ..models import spline_transformer as model_mod
from ..models.keyframe import KeyframeSplineTransformer
from . import checkpoint as ckpt_io
from .onnx_runner import CALLS, STAMP, checkpoint_files, weights_digest

OPSET = 18


class _Call(nn.Module):
    """One call of model ``m`` as a module's forward (what the exporter traces)."""

    def __init__(self, m):
        super().__init__()
        self.m = m


class _AutoEncode(_Call):
    """``SplineTransformer.encode`` with its least-squares fit ``[K, N]`` an input."""

    def forward(self, x, fit):
        return self.m.encode(x, fit)


class _AutoDecode(_Call):
    """``SplineTransformer.decode`` with the Bezier basis ``[N, K]`` of its sample times an input, then the
    normaliser's inverse: features, as ``Engine.decode_features`` returns them.  The product by the
    normaliser's rotation is in the graph because ONNX Runtime computes each row of a product the same
    whatever rows are beside it (numpy's BLAS does not), so a segment decodes to the same numbers alone
    or beside others (the add-on caches decodes per segment)."""

    def __init__(self, m, norm):
        super().__init__(m)
        self.register_buffer("mean", norm.mean.detach().clone())
        self.register_buffer("std", norm.std.detach().clone())
        self.register_buffer("rotation", None if norm.rotation is None else norm.rotation.detach().clone())

    def forward(self, controls, basis, positions):
        m = self.m
        lat = basis @ controls
        out = m.mlp_dec(m.dec(m.from_latent(lat), positions))
        if m.cfg.linear_path:
            s = m._shared_dims()
            out = out + nn.functional.pad(lat[..., :s], (0, out.shape[-1] - s))
        if self.rotation is not None:
            out = out @ self.rotation.T
        return out * self.std + self.mean


class _KeyEncode(_Call):
    """``KeyframeSplineTransformer.encode`` over every frame, the frames that are not keys hidden.  The
    torch module leaves those tokens out (its length follows the key count, a number in the data); no
    token may attend to a hidden one, so its softmax weight is exactly zero and the outputs are the
    same up to the order of a sum (tests/test_onnx.py)."""

    def forward(self, keys_n, mask):
        m = self.m
        b, n, _ = keys_n.shape
        k = m.control_tokens.shape[0]
        frames = torch.cumsum(torch.ones_like(keys_n[0, :, 0]), 0) - 1.0  # 0..n-1, traced from the shape
        count = frames[-1:] + 1.0  # n, as a tensor (Python arithmetic on a shape would be a constant)
        t = frames / torch.clamp(count - 1.0, min=1.0)
        extra = torch.stack([t, (count / 64.0).expand_as(t)], -1).expand(b, -1, 2)
        x = torch.cat([keys_n, extra], -1) * mask[..., None].to(keys_n.dtype)
        tokens = torch.cat([m.control_tokens.expand(b, -1, -1), m.mlp_enc(x)], 1)
        steps = torch.arange(k, device=keys_n.device).to(keys_n.dtype)
        ctrl_pos = (steps * ((count - 1.0) / (k - 1))).expand(b, k)
        pos = torch.cat([ctrl_pos, frames.expand(b, -1)], 1)
        hidden = torch.cat([torch.zeros(b, k, dtype=torch.bool, device=mask.device), ~mask], 1)
        return m.to_latent(m.enc(tokens, pos, hidden)[:, :k])


class _KeyDecode(_Call):
    """``KeyframeSplineTransformer.decode`` without its linear path (``regression``, added by the caller),
    the Bezier basis an input."""

    def forward(self, controls, base_n, mask, basis, positions):
        m = self.m
        tokens = m.from_latent(basis @ controls) + m.base_in(torch.cat([base_n, mask[..., None].to(base_n)], -1))
        return base_n + m.mlp_dec(m.dec(tokens, positions))


def _examples(cfg, call: str, keyframe: bool):
    """Example inputs (two segments of 9 frames), input names and their dynamic axes."""
    b, n, k, d, dim = 2, 9, cfg.controls, cfg.latent, cfg.input_dim
    from ..maths.splines import bezier_basis, uniform_times
    basis = torch.as_tensor(bezier_basis(k - 1, uniform_times(n)), dtype=torch.float32)
    positions = torch.arange(n, dtype=torch.float32)
    mask = torch.zeros(b, n, dtype=torch.bool)
    mask[:, [0, 4, n - 1]] = True
    x = torch.randn(b, n, dim)
    if not keyframe:
        if call == "encode":
            fit = torch.as_tensor(model_mod.least_squares_fit(k, n), dtype=torch.float32)
            return (x, fit), ("x", "fit"), {"x": {0: "batch", 1: "frames"}, "fit": {1: "frames"}}
        return ((torch.randn(b, k, d), basis, positions), ("controls", "basis", "positions"),
                {"controls": {0: "batch"}, "basis": {0: "frames"}, "positions": {0: "frames"}})
    if call == "encode":
        return (x, mask), ("keys_n", "mask"), {"keys_n": {0: "batch", 1: "frames"}, "mask": {0: "batch", 1: "frames"}}
    return ((torch.randn(b, k, d), x, mask, basis, positions), ("controls", "base_n", "mask", "basis", "positions"),
            {"controls": {0: "batch"}, "base_n": {0: "batch", 1: "frames"}, "mask": {0: "batch", 1: "frames"},
             "basis": {0: "frames"}, "positions": {0: "frames"}})


WRAPPERS = {(False, "encode"): _AutoEncode, (True, "encode"): _KeyEncode,
            (True, "decode"): _KeyDecode}


def _safetensors_index(path: Path) -> dict[bytes, tuple[int, int]]:
    """The raw bytes of every float32 tensor in a safetensors file -> (offset in the file, length)."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec.get("dtype") != "F32":
            continue
        a, b = spec["data_offsets"]
        out.setdefault(raw[8 + n + a:8 + n + b], (8 + n + a, b - a))
    return out


def _point_into(model_proto, weights: Path) -> int:
    """Make every initializer whose bytes the checkpoint's safetensors holds external data at that
    offset of that file; returns how many bytes stay inside the graph (constants the exporter made)."""
    import onnx
    from onnx import numpy_helper
    index = _safetensors_index(weights)
    inside = 0
    for init in model_proto.graph.initializer:
        arr = numpy_helper.to_array(init)
        at = index.get(np.ascontiguousarray(arr).astype("<f4").tobytes()) if arr.dtype == np.float32 else None
        if at is None or arr.size < 16:
            inside += arr.nbytes
            continue
        init.ClearField("raw_data")
        init.ClearField("float_data")
        init.data_location = onnx.TensorProto.EXTERNAL
        del init.external_data[:]
        for key, value in (("location", weights.name), ("offset", str(at[0])), ("length", str(at[1]))):
            entry = init.external_data.add()
            entry.key, entry.value = key, value
    return inside


def export(json_path) -> list[Path]:
    """Write ``NAME.<call>.onnx`` for each call of the checkpoint's model; returns the paths."""
    import onnx
    ck = ckpt_io.load(json_path)
    found = checkpoint_files(ck.path)
    graphs, weights = found.graphs, found.weights
    model = ck.build_model().eval().requires_grad_(False)
    keyframe = isinstance(model, KeyframeSplineTransformer)
    written = []
    fast, model_mod.FAST_INFERENCE = model_mod.FAST_INFERENCE, False  # the plain modules: the exportable ops
    try:
        for call in CALLS:  # (an in-betweener's linear path, one product, runs in numpy: runtime)
            args, names, dynamic = _examples(ck.config, call, keyframe)
            wrapper = (_AutoDecode(model, ck.normalizer) if (keyframe, call) == (False, "decode")
                       else WRAPPERS[keyframe, call](model)).eval()
            with tempfile.TemporaryDirectory() as tmp:
                raw = Path(tmp) / "graph.onnx"
                # TorchScript's exporter (it needs the onnx package only; deprecated in torch 2.13, which
                # warns), the quicker of the two.  torch.export's (dynamo=True, optimize=False; it needs
                # onnxscript) exports these wrappers too, weights as stored: the way on when the old one is
                # removed.
                with torch.no_grad():
                    torch.onnx.export(wrapper, args, str(raw), input_names=list(names), output_names=["out"],
                                      dynamic_axes=dynamic, opset_version=OPSET, dynamo=False,
                                      do_constant_folding=False)  # (the weights as stored: see _point_into)
                proto = onnx.load(str(raw))
            _point_into(proto, weights)
            stamp = proto.metadata_props.add()  # which weights the offsets are into (runtime.stale checks it)
            stamp.key, stamp.value = STAMP, weights_digest(weights)
            out = graphs[call]
            with replacing(out) as tmp_out:
                Path(tmp_out).write_bytes(proto.SerializeToString())
            written.append(out)
    finally:
        model_mod.FAST_INFERENCE = fast
    return written


def export_saved(json_path) -> str:
    """Export a checkpoint training has just saved, so the add-on's built-in backend runs it too; -> a line
    for the training log.  Without the ``onnx`` package here (it exports), or if the export fails, the
    checkpoint still works through the backend process (the add-on's Automatic backend picks it)."""
    import importlib.util
    if importlib.util.find_spec("onnx") is None:
        return (f"{Path(json_path).name}: not exported for the built-in backend (this Python lacks the onnx "
                "package: pip install onnx, then python -m backend export); it runs in the backend process")
    try:
        paths = export(json_path)
    except Exception as e:  # (a failed export must not lose the training run: the checkpoint is saved)
        return f"{Path(json_path).name}: the export for the built-in backend failed ({type(e).__name__}: {e})"
    return f"exported for the built-in backend: {', '.join(p.name for p in paths)}"
