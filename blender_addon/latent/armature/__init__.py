"""Latent controls of an armature: the layer on F-curves (adapter, layer, carry, take), Encode,
Resample, and the conversion for rigs other than the data set's skeleton (retarget)."""
