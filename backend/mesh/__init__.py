"""Mesh sequences: the per-asset linear basis and the mesh engine."""
