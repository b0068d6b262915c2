"""Training configuration: one dataclass, loaded from JSON, overridden by ``--key=value``."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from .data import DEFAULT_DATA, LEAVE_OUT


class ConfigError(ValueError):
    pass


@dataclass
class TrainConfig:
    data: str = DEFAULT_DATA  # BVH folders, .bvh files or .tar.xz archives, comma-separated (default: both)
    out: str = "runs/motion"  # run folder: config copy, log, checkpoints
    cache: str = ""  # folder for the parsed-data cache ("" = no cache)
    init: str = ""  # start from this checkpoint's weights and statistics (continue / fine-tune)
    # every clip converted to this checkpoint's skeleton (the product's model skeleton) instead of the one most
    # train clips share: a model trained from scratch on other studios' capture keeps the shipped models' joints
    skeleton: str = ""
    task: str = "autoencoder"  # autoencoder | inbetween (keyframe-conditioned)
    base: str = "hermite"  # inbetween: interpolation under the residual (hermite | slerp)
    family: str = "spline"  # the autoencoder's model family: spline | alibi | alibi_cat
    latent: int = 64  # d
    width: int = 128  # c
    layers: int = 4  # n
    decoder_layers: int = 0  # autoencoder: the decoder's depth (0 = layers); sliders re-decode on every change
    heads: int = 8  # h
    ffn_factor: int = 1
    window: int = 61  # frames per training window (max)
    min_window: int = 32  # windows are drawn with lengths in [min_window, window]
    batch_size: int = 64
    steps: int = 20000
    lr: float = 3e-4  # the paper's motion row
    warmup: int = 500  # linear warm-up steps (the spline model is sensitive to the LR)
    min_lr: float = 1e-6  # cosine annealing floor
    clip_grad: float = 1.0  # gradient norm clipping (0 = off)
    weight_decay: float = 0.0
    fk_weight: float = 1.0  # weight of the forward-kinematics position loss (cm, scaled)
    # weight of the planted-foot loss: where the capture plants a foot (backend.motion.inbetween.contacts.CAPTURE), the fill's
    # foot moves as the capture's does (frame-to-frame steps, in the FK loss's units; 0 = off)
    foot_weight: float = 0.0
    augment_yaw: bool = True  # random rotation about the up axis
    # Motion the data lacks (training.augment): the chance of a mirrored / time-reversed window, of a
    # batch played at another speed (0.5-2x), of a window with another window's upper body.
    augment_mirror: float = 0.0
    augment_reverse: float = 0.0
    augment_speed: float = 0.0
    augment_mix: float = 0.0
    # Another performer's proportions: each window's body scaled by 1 +- augment_scale and its legs (and
    # the hips' travel with them) by a further 1 +- augment_scale / 2 (0 = off; 0.1 is a child to a tall adult)
    augment_scale: float = 0.0
    # The normaliser's smallest spread per feature: a channel one studio never moves (a hinge's off-axis
    # roll) would otherwise turn another studio's few degrees there into hundreds of spreads.  0.05 of a
    # 6D component is about 3 degrees; the default, 1e-3, is the floor older checkpoints were trained with.
    norm_floor: float = 1e-3
    # How often a clip converted from another skeleton (another studio's capture) is drawn against a
    # native clip of the same length: CMU's 66 training clips are 7% of the frames (1 = by length)
    converted_weight: float = 1.0
    # inbetween: "absolute" (MSE) or "relative" (each window's error divided by its base's: confident
    # wrong motion never pays, and short gaps count as much as long ones)
    loss: str = "absolute"
    # kinds of motion never read (the generalisation protocol: "protocol" = training.data.LEAVE_OUT)
    leave_out: str = ""
    # autoencoder: a linear path under the transformer (features rotated onto their principal axes,
    # the leading `latent` ones fitted by the latent Bezier; the transformer learns the rest)
    linear_path: bool = False
    seed: int = 0
    threads: int = 0  # torch CPU threads (0 = torch's default)
    val_every: int = 500
    val_windows: int = 512
    ckpt_every: int = 500
    log_every: int = 50
    device: str = "cpu"

    def validate(self):
        if self.family not in ("spline", "alibi", "alibi_cat"):
            raise ConfigError(f"family={self.family!r}: use spline, alibi or alibi_cat")
        if self.task not in ("autoencoder", "inbetween"):
            raise ConfigError(f"task={self.task!r}: use autoencoder or inbetween")
        if self.base not in ("hermite", "slerp"):
            raise ConfigError(f"base={self.base!r}: use hermite or slerp")
        if self.loss not in ("absolute", "relative"):
            raise ConfigError(f"loss={self.loss!r}: use absolute or relative")
        for k in ("augment_mirror", "augment_reverse", "augment_speed", "augment_mix"):
            if not 0.0 <= getattr(self, k) <= 1.0:
                raise ConfigError(f"{k}={getattr(self, k)}: a probability between 0 and 1")
        if not 0.0 < self.norm_floor <= 1.0:
            raise ConfigError(f"norm_floor={self.norm_floor}: a spread above 0 and at most 1")
        if not 0.0 <= self.foot_weight <= 1000.0:
            raise ConfigError(f"foot_weight={self.foot_weight}: a weight from 0 to 1000")
        if not 0.0 < self.converted_weight <= 100.0:
            raise ConfigError(f"converted_weight={self.converted_weight}: a weight above 0 and at most 100")
        if not 0.0 <= self.augment_scale < 0.5:
            raise ConfigError(f"augment_scale={self.augment_scale}: a relative size change from 0 to below 0.5")
        if not (2 <= self.min_window <= self.window):
            raise ConfigError(f"min_window={self.min_window} must be between 2 and window={self.window}")
        if self.width % self.heads:
            raise ConfigError(f"width={self.width} must be divisible by heads={self.heads}")
        for k in ("steps", "batch_size", "latent"):
            if getattr(self, k) < 1:
                raise ConfigError(f"{k} must be at least 1")

    def save(self, path: Path):
        path.write_text(json.dumps(asdict(self), indent=1))

    def left_out(self) -> tuple[str, ...]:
        if self.leave_out == "protocol":
            return LEAVE_OUT
        return tuple(k.strip() for k in self.leave_out.split(",") if k.strip())


def _coerce(name: str, typ, value: str):
    typ = {"int": int, "float": float, "str": str, "bool": bool}.get(typ, typ) if isinstance(typ, str) else typ
    if typ is bool:
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"--{name}={value}: expected true or false")
    try:
        return typ(value)
    except ValueError:
        raise ConfigError(f"--{name}={value}: expected {typ.__name__}") from None


@dataclass
class MeshTrainConfig:
    """``python -m training.train mesh``: one model per mesh asset (same vertex count and order)."""
    data: str = ""  # folder of PC2/MDD caches (train/val/test subfolders or split by id), files, or .blend files
    out: str = "runs/mesh"  # run folder: config copy, checkpoints
    init: str = ""  # start from this mesh checkpoint's weights, basis and statistics
    object: str = ""  # .blend input: the mesh object (default: the only animated mesh)
    basis: str = ""  # use this mesh checkpoint's vertex basis instead of fitting one (an asset's models share it)
    task: str = "autoencoder"  # autoencoder | inbetween (keyframe-conditioned, over a Hermite base)
    components: int = 64  # PCA coefficients per frame (the linear basis before the transformer)
    latent: int = 64  # d
    controls: int = 4  # latent control points per segment (4: the paper's cubic Bezier; more: a higher degree)
    # the transformer corrects a linear model: autoencoder, the top `latent` components fitted by the
    # latent Bezier (model.SplineTransformer); inbetween, a least-squares regression from the nearest
    # keys (keyframe_model.KeyRegression)
    linear_path: bool = True
    fit_windows: int = 8192  # inbetween: training windows the linear path's least-squares fit reads
    base: str = "cspline"  # inbetween: the key interpolation the model corrects (cspline: natural C2 | hermite)
    dropout: float = 0.0  # in the transformer blocks (a few hundred sequences are little data)
    width: int = 128  # c
    layers: int = 4  # n
    heads: int = 8  # h
    ffn_factor: int = 1
    # frames per training window (max; 0: by task, WINDOWS) and the shortest (0: half of it).  The
    # autoencoder's segments are about a second, as the paper's face windows (30 frames): a cubic
    # latent per second of cloth keeps far more than one per two seconds.  The in-betweener's window
    # is the longest gap between keys it can fill, plus one.
    window: int = 0
    min_window: int = 0
    batch_size: int = 32
    steps: int = 4000
    lr: float = 3e-4
    warmup: int = 200
    min_lr: float = 1e-6
    clip_grad: float = 1.0
    weight_decay: float = 0.0
    seed: int = 0
    threads: int = 0
    val_every: int = 250
    val_windows: int = 64
    ckpt_every: int = 250
    principal: int = 8  # principal directions of the control points stored for the sliders (0 = none)
    device: str = "cpu"

    WINDOWS = {"autoencoder": 31, "inbetween": 61}

    def validate(self):
        if self.task not in ("autoencoder", "inbetween"):
            raise ConfigError(f"task={self.task!r}: use autoencoder or inbetween")
        self.window = self.window or self.WINDOWS[self.task]
        self.min_window = self.min_window or max(2, (self.window + 1) // 2)
        if not (2 <= self.min_window <= self.window):
            raise ConfigError(f"min_window={self.min_window} must be between 2 and window={self.window}")
        if self.width % self.heads:
            raise ConfigError(f"width={self.width} must be divisible by heads={self.heads}")
        for k in ("steps", "batch_size", "latent", "components"):
            if getattr(self, k) < 1:
                raise ConfigError(f"{k} must be at least 1")
        if self.base not in ("cspline", "hermite"):
            raise ConfigError(f"base={self.base!r}: use cspline or hermite")
        if self.controls < 2:
            raise ConfigError(f"controls={self.controls}: a spline segment needs at least 2 control points")

    def save(self, path: Path):
        path.write_text(json.dumps(asdict(self), indent=1))


RENAMED = {"kind": "family"}  # keys older config files (and --kind) use -> their name now


def load_config(path: str | None, overrides: list[str], cls=TrainConfig):
    known = {f.name: f.type for f in fields(cls)}
    values = {}
    if path:
        p = Path(path)
        try:
            values = json.loads(p.read_text())
            if isinstance(values, dict):
                values = {RENAMED.get(k, k) if RENAMED.get(k) in known else k: v for k, v in values.items()}
        except OSError as e:
            raise ConfigError(f"{p}: cannot read the config ({e.strerror})") from None
        except ValueError as e:
            raise ConfigError(f"{p}: not valid JSON ({e})") from None
        for k in values:
            if k not in known:
                raise ConfigError(f"{p}: unknown config key {k!r} (known: {', '.join(sorted(known))})")
    for o in overrides:
        if not o.startswith("--") or "=" not in o:
            raise ConfigError(f"{o}: overrides look like --key=value")
        k, v = o[2:].split("=", 1)
        k = k.replace("-", "_")
        k = RENAMED.get(k, k) if RENAMED.get(k) in known else k
        if k not in known:
            raise ConfigError(f"--{k}: unknown config key (known: {', '.join(sorted(known))})")
        values[k] = _coerce(k, known[k], v)
    cfg = cls(**values)
    cfg.validate()
    return cfg
