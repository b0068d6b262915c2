"""The keyframe-conditioned Spline-based Transformer (the *Inbetween* model).

The encoder reads only the key poses (plus their time in the window and the window
length) and emits the same kind of latent Bezier control points as the autoencoder;
the decoder samples that spline at every frame and predicts a residual over the
SLERP/LERP of the keys.  Like CITL, keys are tokens that the decoder also sees (here
through the interpolation base and a key flag); unlike CITL, no positional encoding:
time lives in the spline and in ALiBi distances measured in frames.

Shapes: B batch, N frames, D features, K control points, c width, d latent.

The linear path (``gap_features``, ``KeyRegression``) has a numpy twin in ``backend.runtime.onnx_runner``: this one
is part of the torch model (fitted in training, run on its device), that one runs without torch.
"""
from __future__ import annotations

import torch
from torch import nn

from ..maths import splines
from . import config
from .spline_transformer import ModelConfig, Transformer, mlp


def gap_features(mask: torch.Tensor, reach: int = 2, positions: torch.Tensor | None = None):
    """Where every frame sits among the keys: mask [B,N] -> (neighbour key frames [B,N,2*reach], u, g).

    The neighbours are the ``reach`` keys at or before the frame and the ``reach`` after its gap
    (clamped at the window's ends); u in [0,1] is the frame's place in its gap, g the gap's length
    in source frames (``positions`` [N]: each sample's source frame, for super-sampled grids).
    """
    b, n = mask.shape
    frames = torch.arange(n, device=mask.device).expand(b, n)
    key_pos = torch.sort(torch.where(mask, frames, torch.full_like(frames, n - 1)), 1).values  # keys first
    count = mask.sum(1, keepdim=True)
    prev = (torch.cumsum(mask.long(), 1) - 1).clamp(min=0)  # ordinal of the key at or before each frame
    ords = [(prev + m).clamp(min=0).minimum(count - 1) for m in range(1 - reach, reach + 1)]
    near = torch.stack([key_pos.gather(1, o) for o in ords], -1)
    pos = frames.to(torch.float32) if positions is None else positions.to(mask.device, torch.float32).expand(b, n)
    start, end = pos.gather(1, near[..., reach - 1]), pos.gather(1, near[..., reach])
    g = (end - start).clamp(min=1e-6)
    u = ((pos - start) / g).clamp(0.0, 1.0)
    return near, u, g


class KeyRegression(nn.Module):
    """A linear in-betweener: each frame's correction to the base is a linear map of how the 4 nearest
    keys differ from the base there, with weights that vary smoothly with the frame's place u in
    its gap (u(1-u) times 1, u, u^2: zero at keys) and with the gap length g (hat functions over
    GAP_NODES frames, so short and long gaps get their own maps).

    On cloth the residual of every coefficient depends on the whole state at the neighbouring keys
    (a ridge regression over all coefficients misses 15 % less than one per coefficient), which
    this path holds directly and the transformer then refines.  Fitted in closed form
    (``training.mesh_loop.fit_key_regression``), then frozen.
    """
    GAP_NODES = config.GAP_NODES
    U_TERMS = config.U_TERMS

    def __init__(self, dim: int, reach: int = 2):
        super().__init__()
        self.reach = reach
        self.terms = self.U_TERMS * len(self.GAP_NODES)
        self.linear = nn.Linear(2 * reach * dim * self.terms, dim, bias=False)  # no bias: zero at keys
        nn.init.zeros_(self.linear.weight)

    def weights(self, u: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
        """[..., terms]: u(1-u){1,u,u^2} times piecewise-linear hats in g (constant beyond the end nodes)."""
        nodes = torch.tensor(self.GAP_NODES, dtype=u.dtype, device=u.device)
        gc = g.clamp(float(nodes[0]), float(nodes[-1]))[..., None]
        hi = torch.searchsorted(nodes, gc.contiguous(), right=True).clamp(1, len(nodes) - 1)
        t = (gc - nodes[hi - 1]) / (nodes[hi] - nodes[hi - 1])
        hats = torch.zeros(*gc.shape[:-1], len(nodes), dtype=u.dtype, device=u.device)
        hats = hats.scatter(-1, hi - 1, 1 - t).scatter_add(-1, hi, t)
        w = u * (1 - u)
        poly = torch.stack([w * u ** i for i in range(self.U_TERMS)], -1)
        return (poly[..., :, None] * hats[..., None, :]).flatten(-2)

    def features(self, keys_n: torch.Tensor, base_n: torch.Tensor, mask: torch.Tensor,
                 positions: torch.Tensor | None = None) -> torch.Tensor:
        """[B,N,F] regression inputs (the linear layer's input; also what its least-squares fit reads)."""
        near, u, g = gap_features(mask, self.reach, positions)
        b, n, d = keys_n.shape
        vals = keys_n.gather(1, near.reshape(b, -1, 1).expand(-1, -1, d)).reshape(b, n, -1, d)
        diffs = vals - base_n[:, :, None]  # [B,N,2r,D]
        phi = self.weights(u.to(keys_n.dtype), g.to(keys_n.dtype))  # [B,N,terms]
        return (diffs[..., None] * phi[:, :, None, None]).reshape(b, n, -1)

    def forward(self, keys_n, base_n, mask, positions=None):
        return self.linear(self.features(keys_n, base_n, mask, positions))


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
        nn.init.zeros_(self.mlp_dec.last.weight)
        nn.init.zeros_(self.mlp_dec.last.bias)
        self.key_regression = KeyRegression(cfg.input_dim) if cfg.linear_path else None
        if self.key_regression is not None:
            self.key_regression.requires_grad_(False)  # fitted in closed form, not by gradient steps

    def encode(self, keys_n: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """keys_n [B,N,D] normalised poses (read at key frames only), mask [B,N] -> controls [B,K,d].

        Only the key tokens enter the transformer (at their frames, for ALiBi): the other frames carry
        nothing and no token may attend to them, so leaving them out changes no output and makes
        the encoder's cost follow the number of keys, not the window's length.
        """
        b, n, _ = keys_n.shape
        k = self.control_tokens.shape[0]
        t = torch.linspace(0, 1, n, device=keys_n.device, dtype=keys_n.dtype) if n > 1 else keys_n.new_zeros(1)
        extra = torch.stack([t, torch.full_like(t, n / 64.0)], -1).expand(b, n, 2)
        counts = mask.sum(1)
        m = max(1, int(counts.max()))
        order = torch.argsort((~mask).to(torch.int8), dim=1, stable=True)[:, :m]  # key frames first, in order
        valid = torch.arange(m, device=mask.device)[None] < counts[:, None]
        x = torch.cat([keys_n, extra], -1).gather(1, order[..., None].expand(-1, -1, keys_n.shape[-1] + 2))
        x = torch.where(valid[..., None], x, torch.zeros_like(x))
        tokens = torch.cat([self.control_tokens.expand(b, -1, -1), self.mlp_enc(x)], 1)
        # Control token i sits where its Bernstein basis peaks, so ALiBi ties it to nearby keys.
        ctrl_pos = torch.linspace(0, n - 1, k, device=keys_n.device).expand(b, k)
        pos = torch.cat([ctrl_pos, order.to(ctrl_pos.dtype)], 1)
        hidden = torch.cat([mask.new_zeros(b, k), ~valid], 1)
        return self.to_latent(self.enc(tokens, pos, hidden)[:, :k])

    def decode(self, controls: torch.Tensor, base_n: torch.Tensor, mask: torch.Tensor, *,
               times: torch.Tensor | None = None, positions: torch.Tensor | None = None,
               keys_n: torch.Tensor | None = None, correction: torch.Tensor | None = None) -> torch.Tensor:
        """controls [B,K,d], base_n [B,M,D] (interpolated keys), mask [B,M] -> poses [B,M,D] (normalised).

        ``keys_n`` [B,M,D] (read at keys) feeds the linear path, when the model has one; or
        ``correction`` [B,M,D] is that path's output computed over more than this window (the mesh
        engine runs it over the whole sequence, so a segment's end gaps see the keys beyond it).
        """
        m = base_n.shape[1]
        if times is None:
            times = torch.linspace(0, 1, m) if m > 1 else torch.zeros(1)
        if positions is None:
            positions = times * (m - 1)
        basis = torch.as_tensor(splines.bezier_basis(self.cfg.controls - 1, times.detach().cpu().numpy()),
                                dtype=controls.dtype, device=controls.device)
        tokens = self.from_latent(basis @ controls) + self.base_in(torch.cat([base_n, mask[..., None].to(base_n)], -1))
        out = base_n + self.mlp_dec(self.dec(tokens, positions.to(controls.device)))
        if self.key_regression is not None:
            if correction is None:
                if keys_n is None:
                    raise ValueError("this in-between model's linear path needs the key poses (keys_n)")
                correction = self.key_regression(keys_n, base_n, mask, positions)
            out = out + correction
        return out

    def forward(self, keys_n, base_n, mask):
        return self.decode(self.encode(keys_n, mask), base_n, mask, keys_n=keys_n)
