"""Checkpoints are data: ``NAME.safetensors`` (weights, statistics) + ``NAME.json`` (config).

Loading parses JSON and a safetensors header and nothing else: no pickle, no code.
Every refusal names the file and the problem.  ``load(..., arrays=True)`` reads a checkpoint without
torch (numpy arrays, the model left to ``backend.runtime.onnx_runner``: the add-on's built-in backend).
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..formats import safetensors_np
from ..formats.atomic import replacing, write_text
from ..models.config import ModelConfig
from ..motion.features_np import ArrayNormalizer, FeatureLayout
from ..motion.skeleton import Skeleton
from . import checks, files

if TYPE_CHECKING:  # torch's twin, for the annotation only: this module loads checkpoints without torch
    from ..motion.features import Normalizer

FORMAT = "splinetween-checkpoint"
FORMAT_VERSION = 1
DEFAULT_DIR = Path(__file__).resolve().parent.parent / "checkpoints"


class CheckpointError(ValueError):
    def __init__(self, path, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path, self.problem = str(path), problem


@dataclass(frozen=True)
class StyleSet:
    """A checkpoint's styles (``training.style``): names, one-line descriptions, directions [N, K, d]."""
    names: tuple
    descriptions: tuple
    directions: np.ndarray


@dataclass
class Checkpoint:
    config: ModelConfig
    skeleton: Skeleton | None  # None for a mesh asset
    layout: FeatureLayout | None  # None for a mesh asset (features are basis coefficients)
    normalizer: Normalizer | ArrayNormalizer  # features.Normalizer (torch), or ArrayNormalizer (``load(arrays=True)``)
    state: dict  # model weights (tensors, or numpy arrays with ``arrays=True``)
    info: dict = field(default_factory=dict)  # provenance: data, split, steps, metrics, wall time
    extra: dict = field(default_factory=dict)  # extra tensors (e.g. principal directions)
    window: int = 61  # frames per segment the model was trained on
    path: Path | None = None
    asset: dict = field(default_factory=dict)  # mesh models: {"kind": "mesh", "vertices": V, "components": K}
    _principal: tuple | None = field(default=None, repr=False, compare=False)
    _styles: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def is_mesh(self) -> bool:
        return self.asset.get("kind") == "mesh"

    def principal(self):
        """(components [M, K*d], std [M]) of the control points on the training set, or None."""
        if "pca.components" not in self.extra:
            return None
        key = (id(self.extra["pca.components"]), id(self.extra["pca.std"]))
        if self._principal is None or self._principal[0] != key:  # (converted once: every decode asks)
            arrays = (np.array(self.extra["pca.components"], dtype=np.float64),
                      np.array(self.extra["pca.std"], dtype=np.float64))
            for a in arrays:
                a.setflags(write=False)
            self._principal = (key, arrays)
        return self._principal[1]

    def principal_names(self) -> list[str]:
        return list(self.info.get("principal_names", []))

    def principal_descriptions(self) -> list[str]:
        """One sentence per principal direction (what its slider does), or [] when the checkpoint has none."""
        return list(self.info.get("principal_descriptions", []))

    def styles(self):
        """The style directions (``training.style``) as a ``StyleSet``, or None when the checkpoint has none."""
        if "style.directions" not in self.extra:
            return None
        key = id(self.extra["style.directions"])
        if self._styles is None or self._styles[0] != key:
            d = np.array(self.extra["style.directions"], dtype=np.float64)
            names = list(self.info.get("style_names", []))
            if d.ndim != 3 or len(names) != len(d):
                raise CheckpointError(self.path, f'"extra.style.directions" has shape {d.shape}; it needs one '
                                                 f'[controls, latent] direction per name in "info.style_names" '
                                                 f"({len(names)}); recompute them with python -m training.style")
            d.setflags(write=False)
            texts = list(self.info.get("style_descriptions", [""] * len(names)))
            self._styles = (key, StyleSet(tuple(names), tuple(texts), d))
        return self._styles[1]

    def array_normalizer(self) -> ArrayNormalizer:
        """The normaliser as numpy float32 arrays (the engines' inference maths, ``features_np``)."""
        n = self.normalizer
        if isinstance(n, ArrayNormalizer):
            return n

        def as_array(x) -> np.ndarray:
            return np.array(x.detach().cpu(), dtype=np.float32)
        return ArrayNormalizer(as_array(n.mean), as_array(n.std), None if n.rotation is None else as_array(n.rotation))

    def build_model(self):
        """The torch module with the weights (torch is imported here, not by reading a checkpoint)."""
        import torch

        from ..models.registry import build_model
        model = build_model(self.config)
        try:
            model.load_state_dict({k: torch.as_tensor(v) for k, v in self.state.items()}, strict=True)
        except RuntimeError as e:
            first = str(e).splitlines()
            raise CheckpointError(self.path, "the weights do not match the model config: "
                                  + " ".join(s.strip() for s in first[:4])[:500]) from None
        return model


def paths_for(path) -> tuple[Path, Path]:
    """``x``, ``x.json`` or ``x.safetensors`` -> (json path, safetensors path)."""
    p = Path(path)
    stem = p.with_suffix("") if p.suffix in (".json", ".safetensors") else p
    return stem.with_suffix(".json"), stem.with_suffix(".safetensors")


def save(path, ckpt: Checkpoint, model=None) -> Path:
    from safetensors.torch import save_file
    jpath, wpath = paths_for(path)
    norm = ckpt.normalizer
    if isinstance(norm, ArrayNormalizer):
        raise CheckpointError(jpath, "a checkpoint read with arrays=True (numpy) cannot be saved; load it with torch")
    jpath.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in (model.state_dict() if model else ckpt.state).items()}
    tensors = {f"model.{k}": v for k, v in state.items()}
    tensors["stats.mean"] = norm.mean.cpu().contiguous()
    tensors["stats.std"] = norm.std.cpu().contiguous()
    if norm.rotation is not None:
        tensors["stats.rotation"] = norm.rotation.cpu().contiguous()
    extra = {k: v.detach().cpu().contiguous() for k, v in ckpt.extra.items()}
    shared = ckpt.asset.get("basis") if ckpt.is_mesh else None
    if shared:  # an asset's models share one basis file next to them (it is most of a mesh model's size)
        basis = {k: extra.pop(k) for k in list(extra) if k.startswith("basis.")}
        if basis:
            with replacing(jpath.with_name(shared)) as tmp_b:
                save_file(basis, str(tmp_b), metadata={"format": FORMAT, "format_version": str(FORMAT_VERSION)})
    tensors.update({f"extra.{k}": v for k, v in extra.items()})
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "weights": wpath.name,
        "model": ckpt.config.to_json(),
        "window": ckpt.window,
        "info": ckpt.info,
    }
    if ckpt.is_mesh:
        doc["asset"] = ckpt.asset
    elif ckpt.skeleton is None or ckpt.layout is None:  # (before the first write: nothing is written yet)
        raise CheckpointError(jpath, "a motion checkpoint needs its skeleton and feature layout to be saved")
    else:
        doc["skeleton"], doc["features"] = ckpt.skeleton.to_json(), ckpt.layout.to_json()
    with replacing(wpath) as tmp_w:  # weights first: the JSON that names them appears last
        save_file(tensors, str(tmp_w), metadata={"format": FORMAT, "format_version": str(FORMAT_VERSION)})
    write_text(jpath, json.dumps(doc, indent=1))
    return jpath


def _check_safetensors(wpath: Path):
    """Refuse pickles and truncated files before handing the file to the parser."""
    try:
        size = wpath.stat().st_size
        with open(wpath, "rb") as f:
            head = f.read(9)
    except OSError as e:
        raise CheckpointError(wpath, f"cannot read the weights ({e.strerror})") from None
    # A safetensors file is a little-endian header length, then the JSON header ("{"); its first
    # byte may well be 0x80 (a 128-byte-multiple header), so that alone does not mean pickle.
    looks_safetensors = len(head) == 9 and head[8:9] == b"{"
    if not looks_safetensors and (head[:1] == b"\x80" or head[:2] == b"PK"):
        raise CheckpointError(wpath, "this is a pickle / torch.save file; only safetensors weights are "
                                     "loaded (convert it with safetensors.torch.save_file)")
    if len(head) < 8:
        raise CheckpointError(wpath, "the weights file is truncated (shorter than a safetensors header)")
    (n,) = struct.unpack("<Q", head[:8])
    if n > size - 8:
        raise CheckpointError(wpath, "the weights file is truncated (header runs past the end of the file)")
    with open(wpath, "rb") as f:
        f.seek(8)
        try:
            header = json.loads(f.read(n))
        except (ValueError, RecursionError):
            raise CheckpointError(wpath, "not a safetensors file (unreadable header)") from None
    try:
        end = max((int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"), default=0)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError, OverflowError):  # (an offset of Infinity)
        raise CheckpointError(wpath, "not a safetensors file (its header does not list tensors with data "
                                     "offsets)") from None
    if 8 + n + end > size:
        raise CheckpointError(wpath, f"the weights file is truncated ({size} bytes, expected {8 + n + end})")


def _check_mesh_basis(jpath: Path, wpath: Path, asset: dict, extra: dict, dim: int):
    """A mesh checkpoint carries its basis: mean [V, 3] and components [K, 3V], K = the model's input."""
    mean, comps = extra.get("basis.mean"), extra.get("basis.components")
    if mean is None or comps is None:
        raise CheckpointError(wpath, "a mesh checkpoint needs its vertex basis (extra.basis.mean and "
                                     "extra.basis.components), and this one has none")
    v = int(asset.get("vertices", -1))
    if tuple(mean.shape) != (v, 3) or tuple(comps.shape) != (dim, 3 * v):
        raise CheckpointError(jpath, f"the vertex basis ({tuple(mean.shape)}, {tuple(comps.shape)}) does not match "
                                     f"{v} vertices and the model's input size {dim}")


def _read_tensors(path: Path, what: str, arrays: bool, map_location) -> dict:
    try:
        tensors = safetensors_np.read(path)
    except (ValueError, OSError) as e:
        raise CheckpointError(path, f"cannot read the {what} ({e})") from None
    if arrays:
        return tensors
    import torch
    return {k: torch.from_numpy(v.copy()).to(map_location) for k, v in tensors.items()}


def load(path, map_location="cpu", arrays: bool = False) -> Checkpoint:
    """``arrays``: numpy arrays and an ``ArrayNormalizer``, no torch (the weights' shapes are then checked
    by the exported graphs that read them, ``backend.runtime.onnx_runner``)."""
    jpath, wpath = paths_for(path)
    if not jpath.exists():
        raise CheckpointError(jpath, "checkpoint config not found (a checkpoint is NAME.json + NAME.safetensors)")
    try:
        if jpath.stat().st_size > checks.MAX_CONFIG_BYTES:
            raise CheckpointError(jpath, f"the config is {jpath.stat().st_size} bytes; a checkpoint config is at "
                                         f"most {checks.MAX_CONFIG_BYTES} (is this the right file?)")
        doc = json.loads(jpath.read_text(encoding="utf-8"))
    except OSError as e:
        raise CheckpointError(jpath, f"cannot read the config ({e.strerror or e})") from None
    except RecursionError:
        raise CheckpointError(jpath, "the config is not valid JSON (nested too deeply)") from None
    except ValueError as e:
        raise CheckpointError(jpath, f"the config is not valid JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CheckpointError(jpath, f"not a Splinetween checkpoint (no \"format\": \"{FORMAT}\")")
    if doc.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(jpath, f"unknown format version {doc.get('format_version')!r}; this version of "
                                     f"Splinetween reads version {FORMAT_VERSION} (update Splinetween)")
    checks.check_doc(jpath, doc, CheckpointError)
    checks.check_model(jpath, doc["model"], CheckpointError)
    found = files.resolve(jpath, doc)
    wpath = found.weights
    if found.missing_weights():
        raise CheckpointError(wpath, found.missing_weights())
    _check_safetensors(wpath)
    tensors = _read_tensors(wpath, "weights", arrays, map_location)
    try:
        config = ModelConfig.from_json(doc["model"])
        asset = dict(doc.get("asset") or {})
        mesh = asset.get("kind") == "mesh"
        skeleton: Skeleton | None = None
        layout: FeatureLayout | None = None
        if not mesh:
            skeleton = Skeleton.from_json(doc["skeleton"])
            layout = FeatureLayout.from_json(doc["features"])
            checks.check_skeleton(jpath, skeleton, layout, CheckpointError)
            checks.check_mirror(jpath, (doc.get("info") or {}).get("mirror"), skeleton.num_joints, CheckpointError)
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as e:  # (OverflowError:
        # an integer beyond 64 bits where an index belongs)
        raise CheckpointError(jpath, f"the config is incomplete or invalid ({type(e).__name__}: {e})") from None
    make: type[ArrayNormalizer] | type[Normalizer]
    if arrays:
        make = ArrayNormalizer
    else:
        from ..motion import features
        make = features.Normalizer
    try:
        normalizer = make(tensors.pop("stats.mean"), tensors.pop("stats.std"), tensors.pop("stats.rotation", None))
    except KeyError:
        raise CheckpointError(wpath, "normalisation statistics (stats.mean / stats.std) are missing") from None
    dim = config.input_dim if layout is None else layout.dim  # (None: a mesh asset)
    if normalizer.rotation is not None and tuple(normalizer.rotation.shape) != (dim, dim):
        raise CheckpointError(wpath, f"stats.rotation has shape {tuple(normalizer.rotation.shape)}; the features "
                              f"need ({dim}, {dim})")
    stats = int(np.prod(tuple(normalizer.mean.shape)))
    if stats != config.input_dim or dim != config.input_dim:
        raise CheckpointError(jpath, f"feature size {dim} / statistics {stats} do not "
                                     f"match the model's input size {config.input_dim}")
    state = {k[6:]: v for k, v in tensors.items() if k.startswith("model.")}
    if not arrays:
        checks.check_shapes(jpath, config, state, CheckpointError)  # before the model is allocated
    extra = {k[6:]: v for k, v in tensors.items() if k.startswith("extra.")}
    if mesh and asset.get("basis"):
        bpath = found.basis  # a name next to the checkpoint, never a path elsewhere
        if bpath is None or not bpath.exists():  # (None: never, ``checks.check_doc`` refuses a basis not a name)
            raise CheckpointError(bpath or jpath, "the asset's shared vertex basis is missing (it ships next to the "
                                         "checkpoint; copy it along)")
        _check_safetensors(bpath)
        extra.update(_read_tensors(bpath, "vertex basis", arrays, map_location))
    if mesh:
        _check_mesh_basis(jpath, wpath, asset, extra, config.input_dim)
    ckpt = Checkpoint(config, skeleton, layout, normalizer, state, doc.get("info") or {}, extra,
                      int(doc.get("window", 61)), jpath, asset)
    if not arrays:
        ckpt.build_model()  # validates weights against config now, not at first use
    return ckpt
