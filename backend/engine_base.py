"""What every engine shares: device choice, loading a checkpoint of the right kind, its task.

``Engine`` (armatures, BVH) and ``MeshEngine`` (mesh sequences) build on ``EngineBase``; each says
which kind of checkpoint it takes and what to tell a user who brings the other kind.
"""
from __future__ import annotations

from pathlib import Path

import torch

from . import checkpoint as ckpt_io


class EngineError(ValueError):
    pass


def pick_device(name: str = "auto") -> torch.device:
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
    """A loaded checkpoint, its model in eval mode on the chosen device, and its normaliser."""
    MESH = False  # which kind of checkpoint this engine takes
    WRONG_KIND = "{name} is not a checkpoint for this engine"  # the refusal for the other kind

    def __init__(self, checkpoint, default: Path, device: str = "auto"):
        self.path = Path(checkpoint) if checkpoint else default
        self.device = pick_device(device)
        self.ckpt = ckpt_io.load(self.path)
        if self.ckpt.is_mesh != self.MESH:
            raise EngineError(self.WRONG_KIND.format(name=self.path.name))
        self.model = self.ckpt.build_model().to(self.device).eval().requires_grad_(False)
        self.norm = self.ckpt.normalizer
        self.window = self.ckpt.window
        self.min_frames = int(self.ckpt.info.get("config", {}).get("min_window", 2))

    @property
    def task(self) -> str:
        return "inbetween" if self.ckpt.config.kind == "keyframe" else "autoencoder"
