"""File formats and safe I/O: BVH, PC2, safetensors without torch, size-limited JSON, atomic writes."""
