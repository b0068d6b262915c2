"""Splinetween backend: motion data, latent splines, the Spline-based Transformer, inference.

Pure PyTorch + numpy; never imports bpy.  Heavy modules are imported where used.
"""
__version__ = "0.1.0"
