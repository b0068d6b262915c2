"""The keyframe-conditioned Spline-based Transformer (the *Inbetween* model).

The encoder reads only the key poses (plus their time in the window and the window
length) and emits the same kind of latent Bezier control points as the autoencoder;
the decoder samples that spline at every frame and predicts a residual over the
SLERP/LERP of the keys.  Like CITL, keys are tokens that the decoder also sees (here
through the interpolation base and a key flag); unlike CITL, no positional encoding:
time lives in the spline and in ALiBi distances measured in frames.

Shapes: B batch, N frames, D features, K control points, c width, d latent.
"""
from __future__ import annotations

import torch
from torch import nn

from . import splines
from .model import ModelConfig, Transformer, mlp


class KeyframeSplineTransformer(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        c, d, D = cfg.width, cfg.latent, cfg.input_dim
        self.mlp_enc = mlp(D + 2, c, c)  # key pose + (time in window, window length / 64)
        self.control_tokens = nn.Parameter(torch.randn(cfg.controls, c))
        self.enc = Transformer(c, cfg.heads, cfg.layers, cfg.ffn_factor, cfg.dropout)
        self.to_latent = nn.Linear(c, d)
        self.from_latent = nn.Linear(d, c)
        self.base_in = mlp(D + 1, c, c)  # interpolated pose + key flag
        self.dec = Transformer(c, cfg.heads, cfg.layers, cfg.ffn_factor, cfg.dropout)
        self.mlp_dec = mlp(c, c, cfg.output_dim)
        # The residual starts at zero: an untrained model returns its interpolation base, and
        # training can only move it where that helps (a random residual would have to be unlearnt).
        nn.init.zeros_(self.mlp_dec[-1].weight)
        nn.init.zeros_(self.mlp_dec[-1].bias)

    def encode(self, keys_n: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """keys_n [B,N,D] normalised poses (read at key frames only), mask [B,N] -> controls [B,K,d]."""
        b, n, _ = keys_n.shape
        k = self.control_tokens.shape[0]
        t = torch.linspace(0, 1, n, device=keys_n.device, dtype=keys_n.dtype) if n > 1 else keys_n.new_zeros(1)
        extra = torch.stack([t, torch.full_like(t, n / 64.0)], -1).expand(b, n, 2)
        x = torch.where(mask[..., None], keys_n, torch.zeros_like(keys_n))  # non-keys carry nothing
        tokens = torch.cat([self.control_tokens.expand(b, -1, -1), self.mlp_enc(torch.cat([x, extra], -1))], 1)
        # Control token i sits where its Bernstein basis peaks, so ALiBi ties it to nearby keys.
        ctrl_pos = torch.linspace(0, n - 1, k, device=keys_n.device)
        pos = torch.cat([ctrl_pos, torch.arange(n, device=keys_n.device, dtype=ctrl_pos.dtype)])
        hidden = torch.cat([mask.new_zeros(b, k), ~mask], 1)
        return self.to_latent(self.enc(tokens, pos, hidden)[:, :k])

    def decode(self, controls: torch.Tensor, base_n: torch.Tensor, mask: torch.Tensor, *,
               times: torch.Tensor | None = None, positions: torch.Tensor | None = None) -> torch.Tensor:
        """controls [B,K,d], base_n [B,M,D] (interpolated keys), mask [B,M] -> poses [B,M,D] (normalised)."""
        m = base_n.shape[1]
        if times is None:
            times = torch.linspace(0, 1, m) if m > 1 else torch.zeros(1)
        if positions is None:
            positions = times * (m - 1)
        basis = torch.as_tensor(splines.bezier_basis(self.cfg.controls - 1, times.detach().cpu().numpy()),
                                dtype=controls.dtype, device=controls.device)
        tokens = self.from_latent(basis @ controls) + self.base_in(torch.cat([base_n, mask[..., None].to(base_n)], -1))
        return base_n + self.mlp_dec(self.dec(tokens, positions.to(controls.device)))

    def forward(self, keys_n, base_n, mask):
        return self.decode(self.encode(keys_n, mask), base_n, mask)
