"""Mesh sequences: Encode Mesh and Inbetween Mesh."""
