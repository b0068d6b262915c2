"""A model's configuration (the checkpoint JSON's ``model``): torch-free, so a checkpoint can be read
where only numpy is (the add-on's built-in backend, ``backend.runtime``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

MODEL_KINDS = ("spline", "alibi", "alibi_cat", "keyframe")


@dataclass
class ModelConfig:
    input_dim: int
    output_dim: int
    kind: str = "spline"
    width: int = 128  # c
    latent: int = 64  # d
    layers: int = 4  # n
    heads: int = 8  # h
    # the spline autoencoder's decoder depth (0: ``layers``, as the encoder).  A slider re-decodes on
    # every change and Encode runs the encoder once, so the decoder is where depth costs the user
    decoder_layers: int = 0
    ffn_factor: int = 1
    controls: int = 4  # cubic Bezier: 4 control points
    dropout: float = 0.0
    base: str = "slerp"  # keyframe kind: the interpolation the residual is added to (slerp | hermite | cspline)
    # A linear path under the learned one, for mesh coefficients.  spline kind: the top d
    # components fitted by the latent Bezier (see SplineTransformer); keyframe kind: a linear
    # regression from the nearest keys (see keyframe_model.KeyRegression)
    linear_path: bool = False

    def __post_init__(self):
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"model kind {self.kind!r} is not one of {', '.join(MODEL_KINDS)}")
        if self.linear_path and self.kind in ("alibi", "alibi_cat"):
            raise ValueError(f"linear_path is for the spline and keyframe kinds, not {self.kind}")
        if self.decoder_layers and self.kind == "keyframe":
            raise ValueError("decoder_layers is for the autoencoder kinds; the keyframe model uses layers")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not divisible by {self.heads} heads")

    @property
    def decoder_depth(self) -> int:
        """Blocks in the autoencoder's decoder: ``decoder_layers``, or ``layers`` where that is 0."""
        return self.decoder_layers or self.layers

    def depth_text(self) -> str:
        """``"4"``, or ``"4 (decoder 1)"`` where the decoder is not as deep as the encoder (cards, ``info``)."""
        return f"{self.layers}" + (f" (decoder {self.decoder_depth})" if self.decoder_depth != self.layers else "")

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown model config keys: {', '.join(sorted(unknown))}")
        return cls(**d)
