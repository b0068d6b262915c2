"""Splinetween backend: motion data, latent splines, the Spline-based Transformer, inference.

Pure PyTorch + numpy; never imports bpy.  Heavy modules are imported where used.  The packages, by concern:
``formats`` (files), ``maths``, ``humanoid`` (reading any skeleton), ``motion`` (clips, features, the
engine; ``motion.inbetween``, the fill), ``mesh``, ``models``, ``runtime`` (checkpoints, torch and ONNX
Runtime), ``service`` (the backend process) and ``cli`` (``python -m backend``).
"""
__version__ = "0.1.0"

# The names users' scripts call, kept: ``from backend import bvh, engine`` (imported on first use).
_PUBLIC = {"bvh": "formats.bvh", "engine": "motion.engine"}


def __getattr__(name: str):
    if name in _PUBLIC:
        import importlib

        return importlib.import_module(f"{__name__}.{_PUBLIC[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
