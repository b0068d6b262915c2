"""A model's configuration (the checkpoint JSON's ``model``): torch-free, so a checkpoint can be read
where only numpy is (the add-on's built-in backend, ``backend.runtime.onnx_runner``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

MODEL_FAMILIES = ("spline", "alibi", "alibi_cat", "keyframe")
RENAMED = {"kind": "family"}  # a key checkpoints written before the rename still hold -> its name now
# The in-betweener's linear path (``keyframe.KeyRegression`` and its numpy twin in ``runtime.onnx_runner``):
# hat functions over these gap lengths (frames), times u(1-u){1, u, u^2}.
GAP_NODES = (3.0, 6.0, 10.0, 16.0, 30.0)
U_TERMS = 3


@dataclass
class ModelConfig:
    input_dim: int
    output_dim: int
    family: str = "spline"  # the model family (``registry.MODELS``)
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
    base: str = "slerp"  # keyframe family: the interpolation the residual is added to (slerp | hermite | cspline)
    # A linear path under the learned one, for mesh coefficients.  spline family: the top d
    # components fitted by the latent Bezier (see SplineTransformer); keyframe family: a linear
    # regression from the nearest keys (see keyframe_model.KeyRegression)
    linear_path: bool = False

    def __post_init__(self):
        if self.family not in MODEL_FAMILIES:
            raise ValueError(f"model family {self.family!r} is not one of {', '.join(MODEL_FAMILIES)}")
        if self.linear_path and self.family in ("alibi", "alibi_cat"):
            raise ValueError(f"linear_path is for the spline and keyframe families, not {self.family}")
        if self.decoder_layers and self.family == "keyframe":
            raise ValueError("decoder_layers is for the autoencoder families; the keyframe model uses layers")
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
        d = current_keys(d)
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown model config keys: {', '.join(sorted(unknown))}")
        return cls(**d)


def current_keys(d: dict) -> dict:
    """The checkpoint JSON's ``model`` with today's key names (``RENAMED``: the shipped checkpoints say
    ``"kind"`` for the family); both names at once is a contradiction, refused."""
    old = [k for k in RENAMED if k in d]
    if not old:
        return d
    both = [k for k in old if RENAMED[k] in d]
    if both:
        raise ValueError(f"the model config has both {both[0]!r} and {RENAMED[both[0]]!r} (one name, the second)")
    return {RENAMED.get(k, k): v for k, v in d.items()}
