"""Checks on a checkpoint's JSON config, made before anything is built or allocated.

Each problem raises ``CheckpointError`` naming the config file and the field.  The model's size
comes from the config, so the model is first built on PyTorch's "meta" device (no memory) and
its parameter shapes compared with the weights in the file: a config that does not match its
weights, or asks for a model far larger than them, is refused before a byte is allocated.
"""
from __future__ import annotations

from dataclasses import fields
from pathlib import Path

MAX_CONFIG_BYTES = 64 * 2 ** 20  # a config is a few kB (a mesh asset's a few MB at most)
MAX_WINDOW = 2048  # frames per segment (decoding memory grows with its square)
_INT_FIELDS = {"input_dim": 1 << 16, "output_dim": 1 << 16, "width": 1 << 16, "latent": 1 << 16, "layers": 64,
               "heads": 256, "ffn_factor": 16, "controls": 64}


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_doc(jpath: Path, doc: dict, error) -> None:
    """Types and ranges of the top-level fields (``error(path, problem)`` builds the exception)."""
    w = doc.get("weights", None)
    if "weights" in doc and (not isinstance(w, str) or not w or w in (".", "..") or Path(w).name != w
                             or "\\" in w or "/" in w):
        raise error(jpath, f'"weights" must be the name of a .safetensors file next to the config (no folder), '
                           f"got {w!r}")
    window = doc.get("window", 61)
    if not _is_int(window) or not 2 <= window <= MAX_WINDOW:
        raise error(jpath, f'"window" must be a whole number of frames from 2 to {MAX_WINDOW}, got {window!r}')
    for key in ("model", "info", "asset", "skeleton", "features"):
        if key in doc and doc[key] is not None and not isinstance(doc[key], dict):
            raise error(jpath, f'"{key}" must be a JSON object, got {type(doc[key]).__name__}')
    info = doc.get("info") or {}
    for key in ("metrics", "config"):
        if key in info and not isinstance(info[key], dict):
            raise error(jpath, f'"info.{key}" must be a JSON object, got {type(info[key]).__name__}')
    names = info.get("principal_names", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise error(jpath, '"info.principal_names" must be a list of names')
    if "principal_descriptions" in info:  # optional: one sentence per direction, parallel to the names
        texts = info["principal_descriptions"]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or len(texts) != len(names):
            raise error(jpath, f'"info.principal_descriptions" must be a list of {len(names)} sentences, one per name '
                               'in "info.principal_names"')
    styles = info.get("style_names", [])
    if not isinstance(styles, list) or not all(isinstance(n, str) and n for n in styles) or len(set(styles)) != len(styles):
        raise error(jpath, '"info.style_names" must be a list of distinct names')
    if "style_descriptions" in info:  # one line per style, parallel to the names
        texts = info["style_descriptions"]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) or len(texts) != len(styles):
            raise error(jpath, f'"info.style_descriptions" must be a list of {len(styles)} lines, one per name in '
                               '"info.style_names"')
    mw = (info.get("config") or {}).get("min_window", 2)
    if not _is_int(mw) or not 1 <= mw <= MAX_WINDOW:
        raise error(jpath, f'"info.config.min_window" must be a whole number of frames from 1 to {MAX_WINDOW}, '
                           f"got {mw!r}")
    if not isinstance(doc.get("model"), dict):
        raise error(jpath, 'the config has no "model" object')
    asset = doc.get("asset") or {}
    b = asset.get("basis")
    if "basis" in asset and b is not None and (not isinstance(b, str) or not b or b in (".", "..")
                                               or Path(b).name != b or "\\" in b):
        raise error(jpath, f'"asset.basis" must be the name of a file next to the config (no folder), got {b!r}')
    if "vertices" in asset and not (_is_int(asset["vertices"]) and 0 < asset["vertices"] <= 1 << 24):
        raise error(jpath, f'"asset.vertices" must be a positive whole number, got {asset["vertices"]!r}')
    if asset.get("kind") != "mesh":
        for key in ("skeleton", "features"):
            if not isinstance(doc.get(key), dict):
                raise error(jpath, f'a motion checkpoint needs a "{key}" object')


def check_model(jpath: Path, model: dict, error) -> None:
    from ..models.config import ModelConfig, current_keys
    known = {f.name for f in fields(ModelConfig)}
    try:
        model = current_keys(model)  # (older checkpoints name the family "kind")
    except ValueError as e:
        raise error(jpath, str(e)) from None
    for k, v in model.items():
        if k in _INT_FIELDS and (not _is_int(v) or not 1 <= v <= _INT_FIELDS[k]):
            raise error(jpath, f'"model.{k}" must be a whole number from 1 to {_INT_FIELDS[k]}, got {v!r}')
        if k == "decoder_layers" and (not _is_int(v) or not 0 <= v <= 64):
            raise error(jpath, f'"model.decoder_layers" must be a whole number from 0 (as many as "layers") to 64, '
                               f"got {v!r}")
        if k == "dropout" and (not isinstance(v, (int, float)) or isinstance(v, bool) or not 0.0 <= v < 1.0):
            raise error(jpath, f'"model.dropout" must be a number from 0 to 1, got {v!r}')
        if k in ("family", "base") and not isinstance(v, str):
            raise error(jpath, f'"model.{k}" must be a name, got {v!r}')
        if k == "linear_path" and not isinstance(v, bool):
            raise error(jpath, f'"model.linear_path" must be true or false, got {v!r}')
        if k not in known:
            raise error(jpath, f'unknown model config key "model.{k}"')


def check_skeleton(jpath: Path, skeleton, layout, error) -> None:
    j = skeleton.num_joints
    if j < 1 or len(skeleton.parents) != j or skeleton.offsets.shape != (j, 3) or \
            (skeleton.channels and len(skeleton.channels) != j):
        raise error(jpath, f'"skeleton": {j} names, {len(skeleton.parents)} parents, {len(skeleton.offsets)} '
                           f"offsets and {len(skeleton.channels)} channel lists do not agree")
    if any(not -1 <= int(p) < j or int(p) == i for i, p in enumerate(skeleton.parents)):
        raise error(jpath, '"skeleton.parents" must name another joint (0-based) or -1 for a root')
    joints = list(layout.position_joints) + list(layout.rotation_joints)
    if any(not _is_int(k) or not 0 <= k < j for k in joints) or not layout.position_joints \
            or layout.up_axis not in (0, 1, 2):
        raise error(jpath, f'"features" must name joints 0..{j - 1} (at least one position joint) and an up '
                           "axis 0, 1 or 2")


def check_mirror(jpath: Path, doc, joints: int, error) -> None:
    """``info.mirror`` (optional; ``backend.motion.mirror.Mirror.to_info``): a left/right partner per joint that
    swaps pairs (mirroring twice must be the identity) and a unit quaternion frame per joint."""
    if doc is None:
        return
    problem = f'"info.mirror" must hold "partner" ({joints} joint indices that swap left and right) and "frames" ' \
              f"({joints} unit quaternions)"
    if not isinstance(doc, dict):
        raise error(jpath, problem)
    partner, frames = doc.get("partner"), doc.get("frames")
    if not isinstance(partner, list) or len(partner) != joints or not all(_is_int(k) and 0 <= k < joints
                                                                          for k in partner) \
            or any(partner[k] != i for i, k in enumerate(partner)):
        raise error(jpath, problem)
    if not isinstance(frames, list) or len(frames) != joints or not all(
            isinstance(q, list) and len(q) == 4 and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                        for v in q)
            and abs(sum(v * v for v in q) - 1.0) < 1e-3 for q in frames):
        raise error(jpath, problem)


def _random_as_empty():
    """A torch function mode in which random tensors are made as ``empty`` ones and random fills are
    skipped: on the meta device only their shapes matter, and PyTorch's meta ``randn`` and in-place
    random fills run Python reference kernels whose checks import sympy (a large part of every engine
    load).  Made on first use: reading a checkpoint needs no torch (``backend.runtime.onnx_runner``)."""
    import torch

    class RandomAsEmpty(torch.overrides.TorchFunctionMode):
        _MADE = {torch.randn, torch.rand}
        _FILLED = {torch.Tensor.normal_, torch.Tensor.uniform_}

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in self._MADE:
                return torch.empty(*args, dtype=kwargs.get("dtype"), requires_grad=kwargs.get("requires_grad", False))
            if func in self._FILLED and args[0].device.type == "meta":
                return args[0]
            return func(*args, **kwargs)
    return RandomAsEmpty()


def check_shapes(jpath: Path, config, state: dict, error) -> None:
    """Build the model on the meta device (no memory) and compare its parameters with the weights."""
    import torch

    from ..models.registry import build_model
    try:
        with torch.device("meta"), _random_as_empty():
            want = {k: tuple(v.shape) for k, v in build_model(config).state_dict().items()}
    except Exception as e:  # an inconsistent config (sizes that do not fit together)
        raise error(jpath, f"the model config cannot be built ({type(e).__name__}: {str(e)[:200]})") from None
    have = {k: tuple(v.shape) for k, v in state.items()}
    if want != have:
        missing = sorted(set(want) - set(have))[:3]
        extra = sorted(set(have) - set(want))[:3]
        wrong = [f"{k} {have[k]} (config: {want[k]})" for k in sorted(set(want) & set(have)) if want[k] != have[k]][:3]
        raise error(jpath, "the weights do not match the model config: "
                    + "; ".join(x for x in (f"missing {missing}" if missing else "",
                                            f"unexpected {extra}" if extra else "",
                                            f"wrong shapes {wrong}" if wrong else "") if x))
