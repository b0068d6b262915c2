"""Latent controls: one kind-agnostic core, an armature and a mesh adapter, the operators on them."""
