"""The model registry: a model config's ``family`` -> the module that implements it.

The one place that knows every model family, so the families (``model``: the autoencoder and its
baselines; ``keyframe_model``: the in-betweener) never import each other's factory.
"""
from __future__ import annotations

from .keyframe import KeyframeSplineTransformer
from .spline_transformer import ModelConfig, SplineTransformer

MODELS: dict[str, type[SplineTransformer] | type[KeyframeSplineTransformer]] = {"spline": SplineTransformer, "alibi": SplineTransformer, "alibi_cat": SplineTransformer,
          "keyframe": KeyframeSplineTransformer}


def build_model(cfg: ModelConfig) -> SplineTransformer | KeyframeSplineTransformer:
    """The module for a config: the autoencoder family or the keyframe in-betweener."""
    return MODELS[cfg.family](cfg)
