"""bpy-free maths of the add-on (rigs, latent ranges, mesh sequences, gaps): tested without Blender."""
