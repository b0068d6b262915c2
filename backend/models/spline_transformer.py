"""The Spline-based Transformer (Chandran, Serifi et al. 2024) and its two baselines.

Shapes: B batch, N frames, K control points, c model width, d latent size.

    x [B,N,in] -> MLPEnc -> cat(control tokens [K,c], tokens) -> TEnc (ALiBi)
      -> first K outputs -> Linear(c,d) = control points [B,K,d]
    control points -> Bezier basis at t [N] -> latents [B,N,d] -> Linear(d,c)
      -> TDec (ALiBi) -> MLPDec -> y [B,N,out]

No positional encoding anywhere in the spline model: time lives in the latent curve.
Baselines share every block: ``alibi`` has one latent token, repeated, plus sinusoids;
``alibi_cat`` concatenates the sinusoids instead of adding them.

Longer than 300 lines: the model beside its inference shortcuts, which must compute what the plain modules do.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..maths import splines
from .config import MODEL_FAMILIES, ModelConfig  # noqa: F401  (MODEL_FAMILIES: importable from here too)

# Inference on the CPU (no autograd) takes shortcuts: oneDNN's or MKL's linear, attention as batched products,
# per-call set-up made once (a slider re-decodes on every change: docs/results.md, *Speed*).  Training and
# anything under autograd run the plain modules; FAST_INFERENCE = False turns the shortcuts off (tests).
FAST_INFERENCE = True
_ONEDNN_LINEAR = getattr(torch.ops.mkldnn, "_linear_pointwise", None) if torch.backends.mkldnn.is_available() else None


def _fast(x: torch.Tensor) -> bool:
    return FAST_INFERENCE and not torch.is_grad_enabled() and x.is_cpu and x.dtype is torch.float32


_MADE: dict = {}  # (what, its inputs' bytes) -> a tensor made from them (ALiBi biases, Bezier bases): inference only


def _made(key: tuple, make):
    """``make()`` once per ``key`` (a slider change asks for the same few every time); bounded."""
    got = _MADE.get(key)
    if got is None:
        if len(_MADE) > 64:
            _MADE.clear()
        got = _MADE[key] = make()
    return got


def _onednn_is_faster() -> bool:
    """Whether this CPU runs the model's products faster through oneDNN than through MKL: where ATen uses
    AVX-512 (oneDNN's AVX-512 kernels: 10 % off MKL's AVX2 path, which MKL takes on AMD CPUs); on an AVX2
    CPU oneDNN's take twice MKL's time on a segment's products (128 x 128 on 61 rows: 84 against 42 us)."""
    capability = getattr(torch.backends.cpu, "get_cpu_capability", None)  # (torch >= 2.0; before: as it was)
    return capability is None or capability().startswith("AVX512")


_USE_ONEDNN = _ONEDNN_LINEAR is not None and _onednn_is_faster()
_MKL_ROWS = 4  # MKL takes another path (and rounds otherwise) for a product of fewer rows: padded to these


def linear(layer: nn.Linear, x: torch.Tensor, gelu: bool = False) -> torch.Tensor:
    """``layer(x)``, then GELU with ``gelu``.  At inference on the CPU through the faster of oneDNN's linear
    (the op torch's compiler emits; the GELU fused) and MKL's (``_onednn_is_faster``), each so that a
    row's numbers do not depend on the rows beside it (the add-on caches decodes per segment;
    tests/test_model_inference.py): oneDNN's do not; MKL's do not from 4 rows on, so fewer are padded.
    oneDNN and MKL add each output's products up in the same order: where AVX-512 runs the numbers are the
    same bit for bit, and on the AVX2 CPU the switch was measured on the in-betweener's fills were too (60
    windows x spacings); elsewhere they agree to float rounding."""
    if not _fast(x):
        y = layer(x)
        return F.gelu(y) if gelu else y
    if _USE_ONEDNN and _ONEDNN_LINEAR is not None:  # (not None: _USE_ONEDNN says so)
        return _ONEDNN_LINEAR(x, _packed(layer.weight), layer.bias, "gelu" if gelu else "none", [], "none" if gelu else "")
    c = x.shape[-1]
    rows = x.reshape(-1, c)
    n = rows.shape[0]
    if n < _MKL_ROWS:
        rows = torch.cat([rows, rows.new_zeros(_MKL_ROWS - n, c)])
    y = F.linear(rows, layer.weight, layer.bias)[:n]
    y = y.view(*x.shape[:-1], y.shape[-1])  # (the width named: a product of no rows has no -1 to infer)
    return F.gelu(y) if gelu else y


_ONEDNN_PACK = getattr(torch.ops.mkldnn, "_reorder_linear_weight", None) if _ONEDNN_LINEAR is not None else None


def _packed(w: torch.Tensor) -> torch.Tensor:
    """A weight ``[out, in]`` in oneDNN's own blocked layout (another 10 % off a small product), kept on
    the tensor itself (so it goes with it: a checkpoint loaded again has new tensors, never an old
    packing) and made again whenever the weight changes (its storage or its version counter)."""
    if _ONEDNN_PACK is None:
        return w
    key = (w.data_ptr(), w._version)
    got = w.__dict__.get("_onednn_packed")
    if got is None or got[0] != key:
        got = w.__dict__["_onednn_packed"] = (key, _ONEDNN_PACK(w.detach(), 64))
    return got[1]


def rows_product(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``x @ weight.T`` with each row computed the same whatever rows are beside it and wherever it starts
    in memory: at inference on the CPU through oneDNN's linear (MKL rounds a product of 2 or 3 rows, or of
    rows starting off a cache line, differently), else torch's product.  The normaliser's inverse of
    several segments decoded together (``Engine.decode_features``)."""
    if _ONEDNN_LINEAR is None or not _fast(x) or weight.requires_grad:
        return x @ weight.T
    return _ONEDNN_LINEAR(x, _packed(weight), None, "none", [], "")


class MLP(nn.Sequential):
    """Linear -> GELU -> Linear (``nn.Sequential``'s parameter names), at inference through :func:`linear`."""

    def forward(self, x):
        if _fast(x):  # (the layers looked up directly: Sequential's indexing walks its modules)
            first, last = self._modules["0"], self._modules["2"]
            return linear(last, linear(first, x, gelu=True))
        return super().forward(x)

    @property
    def last(self) -> nn.Linear:
        """The output layer (``nn.Sequential``'s indexing answers an ``nn.Module``)."""
        layer = self._modules["2"]
        if not isinstance(layer, nn.Linear):
            raise TypeError(f"an MLP ends in a Linear layer, not {type(layer).__name__}")
        return layer


def attention(qkv: torch.Tensor, bias: torch.Tensor, heads: int, dropout: float) -> torch.Tensor:
    """``softmax(q k^T / sqrt(d) + bias) v`` of each head: ``qkv [B, L, 3c]`` -> ``[B, L, c]``.  At inference
    on the CPU as two batched products over the heads laid out once (one copy for q, k and v), with
    ``bias`` already ``[B*H, L, L]`` (``Transformer.forward`` lays it out once for every block): for the
    short sequences of a segment the fused kernel's set-up costs more than the work.  Equal to float
    rounding, and a sequence's numbers do not depend on the batch it comes in."""
    b, n, c = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
    d = c // heads
    heads_first = qkv.view(b, n, 3, heads, d).permute(2, 0, 3, 1, 4)  # [3, B, H, L, d]
    if not _fast(qkv) or dropout or bias.dim() != 3:
        q, k, v = heads_first.unbind(0)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout)
        return a.transpose(1, 2).reshape(b, n, c)
    q, k, v = heads_first.reshape(3, b * heads, n, d).unbind(0)
    s = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=1.0 / math.sqrt(d))
    a = torch.bmm(torch.softmax(s, -1), v)
    return a.view(b, heads, n, d).transpose(1, 2).reshape(b, n, c)


class RMSNorm(nn.Module):
    """T5's layer norm: scale only, no re-centring (CITL's Seq-RC argues for this too)."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        if _fast(x):  # (one kernel, the same numbers: tests/test_model_inference.py)
            return F.rms_norm(x, self.weight.shape, self.weight, self.eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def alibi_slopes(heads: int) -> torch.Tensor:
    return torch.tensor([2.0 ** (-8.0 * (h + 1) / heads) for h in range(heads)])


def alibi_bias(positions: torch.Tensor, slopes: torch.Tensor) -> torch.Tensor:
    """Symmetric ALiBi bias ``-slope * |p_i - p_j|``: positions [..., L] -> [..., H, L, L]."""
    dist = (positions[..., :, None] - positions[..., None, :]).abs()
    return -slopes[:, None, None] * dist.unsqueeze(-3)


class Block(nn.Module):
    """T5-style pre-norm block: RMSNorm -> self-attention (+ALiBi) -> RMSNorm -> GELU FFN."""

    def __init__(self, width: int, heads: int, ffn_factor: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.norm1 = RMSNorm(width)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.out = nn.Linear(width, width, bias=False)
        self.norm2 = RMSNorm(width)
        self.ffn = mlp(width, ffn_factor * width, width)
        self.dropout = dropout

    def forward(self, x, bias):
        a = attention(linear(self.qkv, self.norm1(x)), bias, self.heads, self.dropout if self.training else 0.0)
        x = x + linear(self.out, a)
        return x + self.ffn(self.norm2(x))

    def forward_ragged(self, x, groups: list):
        """:meth:`forward` at inference of groups of sequences laid end to end, ``x [rows, c]``: ``groups``
        lists ``(count, length, bias [count * H, L, L])``, each group ``count`` sequences of one length one
        after the other.  Norms and products over all rows at once, attention per group (batched)."""
        h = linear(self.qkv, self.norm1(x))
        parts = h.split([g * n for g, n, _ in groups])
        a = torch.cat([attention(part.view(g, n, -1), bias, self.heads, 0.0).view(g * n, -1)
                       for part, (g, n, bias) in zip(parts, groups, strict=True)])
        x = x + linear(self.out, a)
        return x + self.ffn(self.norm2(x))


class Transformer(nn.Module):
    slopes: torch.Tensor  # (a buffer: registered below)

    def __init__(self, width, heads, layers, ffn_factor, dropout):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width, heads, ffn_factor, dropout) for _ in range(layers))
        self.norm = RMSNorm(width)
        self.register_buffer("slopes", alibi_slopes(heads), persistent=False)

    def forward(self, x, positions, hidden=None):
        """x [B,L,c], positions [L] or [B,L] (in frames) -> [B,L,c].

        ``hidden`` [B,L] (bool) marks tokens no other token may attend to.
        """
        if hidden is None and _fast(x) and positions.is_cpu and positions.dim() == 1 and not self.training:
            bias = self._made_bias(positions, x.dtype, x.shape[0])  # (laid out for ``attention``, kept)
        else:
            if _fast(x) and positions.is_cpu:
                bias = self._made_bias(positions, x.dtype)
            else:
                bias = alibi_bias(positions.to(x.dtype), self.slopes.to(x.dtype))
            if bias.dim() == 3:
                bias = bias.unsqueeze(0)
            if hidden is not None:
                bias = bias.masked_fill(hidden[:, None, None, :], float("-inf"))
            # Laid out once for the blocks' batched products (``attention``).  Not with hidden tokens: a row may
            # then have nothing to attend to, which the fused kernel answers with zeros, a softmax with NaN.
            if hidden is None and _fast(x) and not self.training:
                b, h, n = x.shape[0], bias.shape[1], x.shape[1]
                bias = bias.expand(b, h, n, n).reshape(b * h, n, n)
        for blk in self.blocks:
            x = blk(x, bias)
        return self.norm(x)

    def _made_bias(self, positions: torch.Tensor, dtype, batch: int = 0) -> torch.Tensor:
        """The ALiBi bias of ``positions`` (CPU), made once per positions (a slider asks for the same few);
        ``batch``: laid out ``[batch * H, L, L]`` for ``batch`` sequences' batched products, also once."""
        key = ("alibi", positions.shape, positions.numpy().tobytes(), self.slopes.numpy().tobytes())
        bias = _made(key, lambda: alibi_bias(positions.to(dtype), self.slopes.to(dtype)))
        if batch <= 1:  # (one sequence: ``[H, L, L]`` is its layout)
            return bias
        n = positions.shape[-1]
        return _made(key + (batch,), lambda: bias.expand(batch, -1, n, n).reshape(-1, n, n))

    def forward_ragged(self, x, groups: list):
        """:meth:`forward` at inference (``_fast``, CPU) of groups of sequences laid end to end, ``x [rows, c]``:
        ``groups`` lists ``(count, positions [L])``, ``count`` sequences of those positions one after the
        other -> ``[rows, c]``."""
        made = [(g, positions.shape[-1], self._made_bias(positions, x.dtype, g)) for g, positions in groups]
        for blk in self.blocks:
            x = blk.forward_ragged(x, made)
        return self.norm(x)


def mlp(i, h, o) -> MLP:
    return MLP(nn.Linear(i, h), nn.GELU(), nn.Linear(h, o))


def sinusoids(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Transformer sinusoids at (possibly fractional) positions [..., N] -> [..., N, dim]."""
    half = dim // 2
    freq = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=positions.dtype, device=positions.device) / half)
    ang = positions[..., None] * freq
    pe = torch.cat([torch.sin(ang), torch.cos(ang)], -1)
    return F.pad(pe, (0, dim - 2 * half))


def least_squares_fit(num_controls: int, num_frames: int) -> np.ndarray:
    """[K, N] matrix taking N uniformly timed samples to the Bezier control points that fit them best."""
    basis = splines.bezier_basis(num_controls - 1, splines.uniform_times(num_frames))
    return np.linalg.pinv(basis)


class SplineTransformer(nn.Module):
    """Autoencoder over pose sequences; ``family`` picks the latent-sequence mechanism.

    With ``linear_path`` the model is a residual over a linear code: control points = the
    least-squares Bezier fit of the first m = min(d, in, out) input dimensions + the encoder's
    output, and the output's first m dimensions = the latent curve's + the decoder's output.  Both learned heads
    start at zero, so an untrained model is that linear code (for PCA coefficients: the top d
    components, smoothed in time) and training only has to learn what it misses.  The latent
    then also reads as something: dimension i follows principal component i.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        c, d = cfg.width, cfg.latent
        n_tokens = cfg.controls if cfg.family == "spline" else 1
        self.mlp_enc = mlp(cfg.input_dim, c, c)
        self.control_tokens = nn.Parameter(torch.randn(n_tokens, c))  # normal init, as in the paper
        self.enc = Transformer(c, cfg.heads, cfg.layers, cfg.ffn_factor, cfg.dropout)
        self.to_latent = nn.Linear(c, d)
        self.from_latent = nn.Linear(2 * d if cfg.family == "alibi_cat" else d, c)
        self.dec = Transformer(c, cfg.heads, cfg.decoder_depth, cfg.ffn_factor, cfg.dropout)
        self.mlp_dec = mlp(c, c, cfg.output_dim)
        if cfg.linear_path:
            for layer in (self.to_latent, self.mlp_dec.last):
                nn.init.zeros_(layer.weight)
                nn.init.zeros_(layer.bias)

    def encode(self, x: torch.Tensor, fit: torch.Tensor | None = None) -> torch.Tensor:
        """x [B,N,in] -> control points [B,K,d] (K = 1 for the baselines); ``fit`` [K,N]: the linear path's
        least-squares fit when the caller has it (the exported graph takes it as an input)."""
        b, n, _ = x.shape
        k = self.control_tokens.shape[0]
        tokens = torch.cat([self.control_tokens.expand(b, -1, -1), self.mlp_enc(x)], 1)
        pos = torch.arange(k + n, device=x.device)
        cp = self.to_latent(self.enc(tokens, pos)[:, :k])
        if self.cfg.linear_path:
            m = self._shared_dims()
            if fit is None:
                fit = torch.as_tensor(least_squares_fit(k, n), dtype=x.dtype, device=x.device)
            cp = cp + F.pad(fit @ x[..., :m], (0, cp.shape[-1] - m))
        return cp

    def _shared_dims(self) -> int:
        return min(self.cfg.latent, self.cfg.input_dim, self.cfg.output_dim)

    def latents(self, controls: torch.Tensor, times: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """The latent sequence the decoder reads: [B,N,d] (or [B,N,2d] for ALiBi-Cat)."""
        if self.cfg.family == "spline":
            t = times.detach().cpu().numpy()

            def basis():
                return torch.as_tensor(splines.bezier_basis(self.cfg.controls - 1, t), dtype=controls.dtype,
                                       device=controls.device)
            if _fast(controls):
                return _made(("bezier", self.cfg.controls, t.dtype.str, t.shape, t.tobytes()), basis) @ controls
            return basis() @ controls
        z = controls[:, :1].expand(-1, positions.shape[-1], -1)
        pe = sinusoids(positions.to(controls.dtype), self.cfg.latent).expand_as(z)
        return z + pe if self.cfg.family == "alibi" else torch.cat([z, pe], -1)

    def decode(self, controls: torch.Tensor, num_frames: int | None = None, *,
               times: torch.Tensor | None = None, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Control points [B,K,d] -> poses [B,N,out].

        ``times`` in [0,1] place samples on the spline; ``positions`` (in source frames)
        drive the ALiBi distances, so super-sampling at 4N keeps the attention pattern.
        """
        if times is None:
            if num_frames is None:
                raise ValueError("decode needs num_frames or times")
            times = torch.as_tensor(splines.uniform_times(num_frames), dtype=controls.dtype)
        if positions is None:
            span = (num_frames or times.shape[-1]) - 1
            positions = times * span
        lat = self.latents(controls, times.to(controls.device), positions.to(controls.device))
        out = self.mlp_dec(self.dec(linear(self.from_latent, lat), positions.to(controls.device)))
        if self.cfg.linear_path:
            m = self._shared_dims()
            if _fast(out):  # (the same sums; ``out`` is new, nothing else holds it)
                out[..., :m] += lat[..., :m]
            else:
                out = out + F.pad(lat[..., :m], (0, out.shape[-1] - m))
        return out

    def decode_ragged(self, controls: torch.Tensor, times: list, positions: list) -> torch.Tensor:
        """:meth:`decode` of each segment ``controls[i:i + 1]`` at its own ``times[i]``, ``positions[i]``
        (lengths may differ) -> ``[sum m_i, out]``, the segments' rows laid end to end in their order, in one
        pass at inference on the CPU: the rows of all segments through each product at once, the attention
        per group of segments sampled alike (batched, as :meth:`decode` batches them).  oneDNN's product
        computes a row the same whatever rows are beside it, so each segment gets the numbers it gets alone
        (tests/test_model_inference.py), for one set-up of each product instead of one per length (a slider
        change's segments are 31 and 30 frames long in turn).  Elsewhere: one batched :meth:`decode` per
        group."""
        alike: dict = {}  # segments sampled at the same times and positions (the same tensors): batched
        for i, (t, p) in enumerate(zip(times, positions, strict=True)):
            alike.setdefault((id(t), id(p)), []).append(i)
        groups = list(alike.values())
        if len(groups) == 1:  # (one length: the batched decode itself, its rows already in order)
            return self.decode(controls, times=times[0], positions=positions[0]).flatten(0, 1)
        if not (_fast(controls) and self.cfg.family == "spline" and all(p.is_cpu for p in positions)):
            out = torch.cat([self.decode(controls[idx], times=times[idx[0]], positions=positions[idx[0]]).flatten(0, 1)
                             for idx in groups])  # (not on the CPU at inference: the batched decode per group)
        else:
            lat = torch.cat([self.latents(controls[idx], times[idx[0]], positions[idx[0]]).flatten(0, 1)
                             for idx in groups])
            x = self.dec.forward_ragged(linear(self.from_latent, lat), [(len(idx), positions[idx[0]]) for idx in groups])
            out = self.mlp_dec(x)
            if self.cfg.linear_path:
                m = self._shared_dims()
                out[..., :m] += lat[..., :m]
        order = [i for idx in groups for i in idx]  # (the rows' order: group by group)
        if order == sorted(order):  # (each group's segments side by side: already in the request's order)
            return out
        got: dict[int, torch.Tensor] = {}
        for i, r in zip(order, out.split([len(times[i]) for i in order]), strict=True):
            got[i] = r
        return torch.cat([got[i] for i in range(len(times))])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(x), x.shape[1])


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
