"""Training and evaluation of Splinetween checkpoints (imports ``backend``, never bpy)."""
