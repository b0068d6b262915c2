"""Per-asset mesh-sequence models: data (PC2/MDD caches, .blend files), the training loop,
evaluation, the demo, shipping, and the cloth generator (the one module that imports bpy)."""
