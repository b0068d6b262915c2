"""Latent controls of a mesh sequence: the layer written to a PC2 cache file (adapter, layer)."""
