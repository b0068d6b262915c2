"""Train Mesh Model: a training run beside Blender, followed through its JSON-lines events."""
