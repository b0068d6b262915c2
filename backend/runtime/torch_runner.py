"""A checkpoint's torch module behind the calls ``backend.runtime.onnx_runner.OnnxModel`` answers: numpy in, numpy out.

The engines run one inference path (numpy around the model: ``features_np``, ``keyframes_np``) and
call the model through one of the two: this one (training, ``python -m backend``, the batch's
workers, the backend process: GPUs and checkpoints without exported graphs) or ONNX Runtime (the
add-on's built-in backend).  The torch module's inference shortcuts stay here (``model``'s oneDNN
products, the ragged decode of a slider's segments in one pass).
"""
from __future__ import annotations

import functools

import numpy as np
import torch

from ..models.keyframe import KeyframeSplineTransformer
from ..models.spline_transformer import SplineTransformer, rows_product
from .onnx_runner import sample_times


class TorchModel:
    def __init__(self, module: SplineTransformer | KeyframeSplineTransformer, normalizer, device: torch.device):
        self.module, self.norm, self.device = module, normalizer, device
        self.cfg = module.cfg

    def _autoencoder(self) -> SplineTransformer:
        if not isinstance(self.module, SplineTransformer):
            raise TypeError(f"this call is the autoencoder's; the model is a {type(self.module).__name__}")
        return self.module

    def _inbetweener(self) -> KeyframeSplineTransformer:
        if not isinstance(self.module, KeyframeSplineTransformer):
            raise TypeError(f"this call is the in-betweener's; the model is a {type(self.module).__name__}")
        return self.module

    def _t(self, a, dtype=torch.float32) -> torch.Tensor:
        return torch.as_tensor(np.asarray(a), dtype=dtype, device=self.device)

    @torch.inference_mode()
    def encode(self, x: np.ndarray) -> np.ndarray:
        return self._autoencoder().encode(self._t(x)).cpu().numpy()

    @torch.inference_mode()
    def decode_features(self, points: np.ndarray, plans) -> np.ndarray:
        """Control points ``[B, K, d]`` -> features ``[sum m_i, D]``, ``plans[i] = (source frames, m_i,
        timing)``: one model pass (``SplineTransformer.decode_ragged``) and one normaliser product whose
        rows do not depend on each other (``model.rows_product``): each segment gets its numbers alone."""
        if not len(plans):
            return np.zeros((0, self.cfg.output_dim), dtype=np.float32)
        made = [_torch_times(int(m), int(n), float(timing)) for n, m, timing in plans]
        out = self._autoencoder().decode_ragged(self._t(points), [t for t, _ in made], [p for _, p in made])
        return self.norm.inverse(out, product=rows_product).cpu().numpy()

    @torch.inference_mode()
    def encode_keys(self, keys_n: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self._inbetweener().encode(self._t(keys_n), self._t(mask, torch.bool)).cpu().numpy()

    @torch.inference_mode()
    def decode_keys(self, controls, base_n, mask, times, positions, keys_n=None, correction=None) -> np.ndarray:
        return self._inbetweener().decode(self._t(controls), self._t(base_n), self._t(mask, torch.bool),
                                  times=torch.tensor(np.asarray(times), dtype=torch.float32),
                                  positions=torch.tensor(np.asarray(positions), dtype=torch.float32),
                                  keys_n=None if keys_n is None else self._t(keys_n),
                                  correction=None if correction is None else self._t(correction)).cpu().numpy()

    @torch.inference_mode()
    def regression(self, keys_n, base_n, mask, positions=None) -> np.ndarray:
        """The in-betweener's linear path (``KeyRegression``) where ``cfg.linear_path``."""
        regression = self._inbetweener().key_regression
        if regression is None:
            raise TypeError("this in-betweener has no linear path (cfg.linear_path is off)")
        return regression(self._t(keys_n), self._t(base_n), self._t(mask, torch.bool),
                                          None if positions is None else self._t(positions)).cpu().numpy()


@functools.lru_cache(maxsize=64)
def _torch_times(m: int, source_frames: int, timing: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``runtime.sample_times`` as tensors, the same objects each time (``decode_ragged`` batches segments
    sampled alike by identity)."""
    times, pos = sample_times(m, source_frames, timing)
    return torch.from_numpy(times.copy()), torch.from_numpy(pos.copy())
