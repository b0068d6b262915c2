"""What every engine shares: device choice, loading a checkpoint of the right kind, its task, its model.

``Engine`` (armatures, BVH) and ``MeshEngine`` (mesh sequences) build on ``EngineBase``; each says
which kind of checkpoint it takes and what to tell a user who brings the other kind.  The model is
called through ``torch_model.TorchModel`` (``runtime="torch"``) or ``runtime.OnnxModel``
(``runtime="onnx"``: the exported graphs on ONNX Runtime, no torch); everything around it is numpy,
so both run one inference path.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import checkpoint as ckpt_io
from .onnx_runner import RUNTIMES

if TYPE_CHECKING:  # (annotations only: the ONNX path imports no torch)
    import torch

    from .onnx_runner import OnnxModel
    from .torch_runner import TorchModel


class EngineError(ValueError):
    pass


def pick_device(name: str = "auto"):
    import torch
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise EngineError("--device cuda was asked for, but this torch build sees no CUDA device "
                          "(use --device auto or cpu)")
    return torch.device(name)


class EngineBase:
    """A loaded checkpoint, its model (eval mode, on the chosen device) and its normaliser (numpy)."""
    MESH = False  # which kind of checkpoint this engine takes
    WRONG_KIND = "{name} is not a checkpoint for this engine"  # the refusal for the other kind

    def __init__(self, checkpoint, default: Path, device: str = "auto", runtime: str = "torch"):
        if runtime not in RUNTIMES:
            raise EngineError(f"unknown runtime {runtime!r} (one of {', '.join(RUNTIMES)})")
        self.path = Path(checkpoint) if checkpoint else default
        self.runtime = runtime
        self.model: OnnxModel | TorchModel
        self.device: str | torch.device
        self.ckpt = ckpt_io.load(self.path, arrays=runtime == "onnx")
        if self.ckpt.is_mesh != self.MESH:
            raise EngineError(self.WRONG_KIND.format(name=self.path.name))
        if runtime == "onnx":
            from .onnx_runner import OnnxModel, RuntimeModelError
            if device not in ("auto", "cpu"):
                raise EngineError(f"the built-in runtime (ONNX Runtime) runs on the CPU; device {device!r} needs "
                                  "the backend process (torch)")
            self.device = "cpu"
            try:
                self.model = OnnxModel(self.ckpt.path)
            except RuntimeModelError as e:
                raise EngineError(str(e)) from None
        else:
            from .torch_runner import TorchModel
            self.device = chosen = pick_device(device)
            module = self.ckpt.build_model().to(chosen).eval().requires_grad_(False)
            self.model = TorchModel(module, self.ckpt.normalizer, chosen)
        self.norm = self.ckpt.array_normalizer()
        self.window = self.ckpt.window
        self.min_frames = int(self.ckpt.info.get("config", {}).get("min_window", 2))

    @property
    def task(self) -> str:
        return "inbetween" if self.ckpt.config.family == "keyframe" else "autoencoder"

    def principal(self):
        """(components [M, K*d], std [M]) of the control points on the training set, or None."""
        return self.ckpt.principal()

    def principal_names(self) -> list[str]:
        return self.ckpt.principal_names()

    def principal_descriptions(self) -> list[str]:
        return self.ckpt.principal_descriptions()

    def describe(self) -> dict:
        """The checkpoint as the service reports it: the engine's own fields (``_described``) after the window."""
        c = self.ckpt
        return {"path": str(self.path), "model": c.config.to_json(), "window": c.window, **self._described(),
                "info": c.info, "device": str(self.device)}

    def _described(self) -> dict:
        return {}
