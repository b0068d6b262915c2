"""The decoder's trunk as a TorchScript trace, for the latent sliders (issue 19).

A slider change decodes one or two 31-frame segments: about a hundred small operations, a third of
whose time is Python calling them.  The trace runs the same operations with the same kernels in the
same order (the numbers equal the eager module's bit for bit: tests/test_traced.py), without Python
between them.  (Running it on a second thread while the add-on reads its curves was tried: slower,
the model's weights then sit in the other core's cache.)

Traced once per engine, at its first decode (about 50 ms); run without TorchScript's optimising
executor, which would recompile per input shape (a hitch of several ms at every new segment length)
for no gain on operations this size.  Anything that fails falls back to the eager module.
"""
from __future__ import annotations

import warnings

import torch
from torch import nn


class _Trunk(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, latents, positions):
        return self.model.trunk(latents, positions)


class TracedTrunk:
    """``model.trunk`` traced; calls take the same ``(latents [B,N,d], positions [N])``."""

    def __init__(self, model, device):
        n = 4
        latents = torch.zeros(1, n, model.from_latent.in_features, device=device)
        positions = torch.arange(n, dtype=torch.float32, device=device)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (TracerWarnings on shape arithmetic: sizes stay symbolic)
            self.fn = torch.jit.trace(_Trunk(model).eval(), (latents, positions), check_trace=False)

    def __call__(self, latents, positions):
        with torch.jit.optimized_execution(False):
            return self.fn(latents, positions)


def trace_trunk(model, device) -> TracedTrunk | None:
    """The traced trunk, or None where tracing is unavailable (the eager module then runs)."""
    if model.training:
        return None
    try:
        return TracedTrunk(model, device)
    except Exception:  # (a PyTorch without TorchScript, or a module it cannot trace)
        return None
