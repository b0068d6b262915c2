"""bpy <-> numpy: F-curves and pose channels, latent bookkeeping, mesh frames, PC2 cache files."""
