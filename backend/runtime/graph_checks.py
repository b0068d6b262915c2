"""Checks on a checkpoint's exported graphs (``NAME.<call>.onnx``), cheapest first, before ONNX Runtime
sees them: the file's size (a stat), that it is an ONNX model and whole (its bytes, ``onnx_file``), its
inputs and outputs against the config's model, then the weights it was exported from (their digest)
and where its weights lie in them.  Each refusal names the file, what is wrong and the fix.
"""
from __future__ import annotations

import math
from pathlib import Path

from . import onnx_file
from .onnx_file import BOOL, ELEM_NAMES, FLOAT

STAMP = "splinetween.weights_sha256"  # the graph's metadata: the digest of the weights it points into
FACTOR, SLACK = 16, 16 * 2 ** 20  # a graph's bound: 16 x its model's float32 parameters + 16 MB


class RuntimeModelError(ValueError):
    """A checkpoint without current ONNX graphs, or no ONNX Runtime here; the message says what to do."""


def max_graph_bytes(cfg) -> int:
    """The most bytes a graph of model ``cfg`` (``ModelConfig``) may have: its parameters, estimated from the
    config, as float32, times a generous factor, plus slack.  An exported graph holds none of them (they
    are the safetensors file's: ``export._point_into``), so it is far smaller (the shipped ones: 24-73 kB)."""
    blocks = cfg.layers + (cfg.decoder_layers or cfg.layers)
    per_block = (4 + 2 * cfg.ffn_factor) * cfg.width ** 2
    ends = (cfg.input_dim + cfg.output_dim + cfg.latent + cfg.controls + 2) * cfg.width
    return FACTOR * 4 * (blocks * per_block + ends) + SLACK


def signature(cfg, call: str) -> tuple[dict, tuple]:
    """({input: (element type, dims)}, the output's dims) of ``call`` of model ``cfg`` as ``export`` writes it
    and ``onnx_runner`` feeds it: an int per fixed axis, a name per dynamic one."""
    k, d = cfg.controls, cfg.latent
    controls = {"controls": (FLOAT, ("batch", k, d))}
    sampled = {"basis": (FLOAT, ("frames", k)), "positions": (FLOAT, ("frames",))}
    if cfg.family == "keyframe":
        keys = {"mask": (BOOL, ("batch", "frames"))}
        if call == "encode":
            return {"keys_n": (FLOAT, ("batch", "frames", cfg.input_dim)), **keys}, ("batch", k, d)
        return ({**controls, "base_n": (FLOAT, ("batch", "frames", cfg.input_dim)), **keys, **sampled},
                ("batch", "frames", cfg.output_dim))
    if call == "encode":
        return {"x": (FLOAT, ("batch", "frames", cfg.input_dim)), "fit": (FLOAT, (k, "frames"))}, ("batch", k, d)
    return {**controls, **sampled}, ("batch", "frames", cfg.output_dim)


def read_graph(path: Path, cfg, jpath: Path, again: str):
    """(path, what the graph declares, its bytes): refused by size from a stat, before a byte is read, then
    by its bytes when they are not an ONNX model or stop short."""
    size, bound = path.stat().st_size, max_graph_bytes(cfg)
    if size > bound:
        raise RuntimeModelError(f"{path.name} is {size:,} bytes, more than any graph of {jpath.name}'s model can be "
                                f"({bound:,} at most; an exported one is a few hundred kB), so it was not read: it is "
                                f"not the graph python -m backend export writes; {again}")
    raw = path.read_bytes()
    try:
        return path, onnx_file.read(raw), raw
    except onnx_file.NotOnnx as e:
        raise RuntimeModelError(f"{path.name} is not an ONNX model ({e}: it begins {raw[:12]!r}); {again}") from None
    except EOFError:
        raise RuntimeModelError(f"{path.name} is cut short: its {size:,} bytes end inside the model (a truncated "
                                f"copy or download); {again}") from None


def _shape(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def _fits(have, want) -> bool:
    """A dynamic axis must stay dynamic; a fixed one may be fixed to the same size or dynamic."""
    return len(have) == len(want) and all(isinstance(h, str) if isinstance(w, str) else (h == w or isinstance(h, str))
                                          for h, w in zip(have, want, strict=True))


def check_signature(path: Path, graph, cfg, call: str, jpath: Path, again: str) -> None:
    """The graph's inputs and outputs (names, element types, shapes) against what ``cfg``'s ``call`` takes."""
    want, want_out = signature(cfg, call)
    have = {v.name: v for v in graph.inputs}
    what = "an in-betweener" if cfg.family == "keyframe" else "an autoencoder"
    if set(have) != set(want):
        raise RuntimeModelError(f"{path.name} takes the inputs {', '.join(have) or 'none'}, but {jpath.name}'s model "
                                f"({what}) {call}s from {', '.join(want)}: the graph is another model's; {again}")
    sizes = f"controls {cfg.controls}, latent {cfg.latent}, input_dim {cfg.input_dim}, output_dim {cfg.output_dim}"
    for name, (elem, dims) in want.items():
        v = have[name]
        if v.elem != elem:
            raise RuntimeModelError(f"{path.name}'s input {name} holds {ELEM_NAMES.get(v.elem, v.elem)} values, the "
                                    f"runtime gives it {ELEM_NAMES[elem]}: the graph is another model's; {again}")
        if not _fits(v.dims, dims):
            raise RuntimeModelError(f"{path.name} takes {name} of shape {_shape(v.dims)}, but {jpath.name}'s "
                                    f"\"model\" ({sizes}) needs {_shape(dims)}: the graph was exported with another "
                                    f"config; {again} (or restore the config it was exported with)")
    if len(graph.outputs) != 1 or not _fits(graph.outputs[0].dims, want_out):
        got = ", ".join(_shape(v.dims) for v in graph.outputs) or "nothing"
        raise RuntimeModelError(f"{path.name} gives {got}, but {jpath.name}'s \"model\" ({sizes}) gives "
                                f"{_shape(want_out)}: the graph was exported with another config; {again}")


def check_weights(path: Path, graph, weights: Path, digest: str, size: int, again: str) -> None:
    """Exported from the weights file (``digest``, ``size`` bytes), and every external weight within it."""
    stamp = graph.metadata.get(STAMP)
    if not stamp:
        raise RuntimeModelError(f"{path.name} does not say which weights it was exported from (no {STAMP} in its "
                                f"metadata: python -m backend export did not write it); {again}")
    if stamp != digest:
        raise RuntimeModelError(f"{path.name} was exported from other weights than {weights.name} (their SHA-256 "
                                f"begins {stamp[:12]}, the file's {digest[:12]}); {again}")
    for e in graph.externals:
        if e.elem != FLOAT or e.length != 4 * math.prod(e.dims) or e.offset < 0 or e.offset + e.length > size:
            raise RuntimeModelError(f"{path.name}'s weight {e.name} ({_shape(e.dims)}, {e.length:,} bytes at "
                                    f"{e.offset:,}) does not lie within {weights.name} ({size:,} bytes); {again}")
