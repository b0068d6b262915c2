"""The two model families (the Spline-based Transformer and the keyframe in-betweener), their config, the registry."""
