"""Motion as data and the motion engine: skeletons, features, keys, latent controls and edits, mirroring."""
