"""python -m training.style --checkpoint CKPT --data PATH: style directions in the control points' space.

Bandai dataset 2 performs every content (walk, run, wave, ...) in seven styles.  A style's direction is
the per-content mean difference between its clips' encoded control points and *normal*'s, averaged over
the contents, so what the contents share (the style) stays and what they do (the content) cancels.  The
directions are stored in the checkpoint as the principal ones are (``extra.style.directions`` in the
safetensors, ``info.style_names`` / ``info.style_descriptions`` in the JSON): ``backend.motion.style``
applies them.

Two shapes were measured (``python -m training.studies.style_eval --shape``; docs/latent-controls.md):
``slot`` -- one offset per control point slot ``[K, d]`` -- and ``segment`` -- one vector ``[d]`` added to
all K points.  The slot shape is stored (see the study's table).  Alternatives written down and not built:
a small learned map (control points -> styled control points) and a style-conditioned decoder (both need
training; the mean difference needs none, and is exactly 0 at strength 0).

The style classifier (``StyleClassifier``) reads a clip's style from its pooled encoded control points:
softmax regression on each clip's mean over segments of the [K, d] points, trained on the train split.

    python -m training.style --checkpoint backend/checkpoints/motion_autoencoder.json \\
        --data /tmp/data/bandai-namco-2/bvh --cache .cache
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NEUTRAL = "normal"
STYLES = ("active", "elderly", "exhausted", "feminine", "masculine", "normal", "youthful")
# one line each, for the panel's menu (what the performers were asked to play)
DESCRIPTIONS = {
    "active": "Energetic and lively: bigger, quicker movement, as the Bandai performers played 'active'.",
    "elderly": "An old person: stooped, smaller and more careful movement.",
    "exhausted": "Tired out: a slumped upper body, heavy and slower-looking movement.",
    "feminine": "Played feminine: narrower steps, arms closer to the body.",
    "masculine": "Played masculine: a wider stance and broader arm swing.",
    "youthful": "A child or teenager: light and bouncy movement.",
}
# dataset 1's styles under dataset 2's names, where one means the other (for the classifier's off-archive read)
DATASET1_AS = {"active": "active", "feminine": "feminine", "masculinity": "masculine", "normal": "normal",
               "old": "elderly", "tired": "exhausted", "childish": "youthful"}


def name_fields(name: str) -> tuple[str, str, str, int]:
    """``dataset-N_{content}_{style}_{id}`` -> (dataset, content, style, id); ValueError otherwise."""
    f = Path(name).name.removesuffix(".bvh").split("_")
    if len(f) != 4 or not f[0].startswith("dataset-") or not f[3].isdigit():
        raise ValueError(f"{name}: not a Bandai clip name (dataset-N_content_style_id)")
    return f[0], f[1], f[2], int(f[3])


def split_of(clip_id: int) -> str:
    """Dataset 2's splits (the data README): id % 10 == 5 test, == 8 validation, else train."""
    r = clip_id % 10
    return "test" if r == 5 else "val" if r == 8 else "train"


@dataclass
class Encoded:
    """Every clip's control points: ``points[starts[i]:starts[i+1]]`` are clip i's segments [S, K, d]."""
    names: list[str]
    points: np.ndarray  # [sum S, K, d]
    starts: np.ndarray  # [C+1]

    @classmethod
    def of(cls, controls) -> "Encoded":
        """From a list of ``backend.motion.controls.Controls``."""
        pts = [c.points for c in controls]
        return cls([c.name for c in controls], np.concatenate(pts), np.concatenate([[0], np.cumsum([len(p) for p in pts])]))

    def clip(self, i: int) -> np.ndarray:
        return self.points[self.starts[i]:self.starts[i + 1]]

    def pooled(self) -> np.ndarray:
        """[C, K*d]: each clip's mean over its segments (the classifier's input)."""
        return np.stack([self.clip(i).mean(0).reshape(-1) for i in range(len(self.names))])


def encode_set(engine, ms, which=None) -> Encoded:
    """Encode clips of a ``training.data.MotionSet`` (all, or the indices ``which``) in one batched call."""
    from backend.maths import timebase
    from backend.motion.skeleton import Clip
    idx = range(len(ms.names)) if which is None else which
    clips = [timebase.to_model_rate(Clip(ms.skeleton, *(a.astype(np.float64) for a in ms.clip(i)), ms.frame_time,
                                         ms.names[i]), engine.frame_time) for i in idx]
    return Encoded.of(engine.encode(clips))


def style_directions(enc: Encoded, shape: str = "slot", split: str = "train", styles=STYLES) -> dict:
    """style -> its direction [K, d]: per content, the mean of the style's segments minus the mean of
    *normal*'s (clips of ``split`` only), averaged over the contents that have both.  ``shape`` "segment"
    averages the K slots into one vector added to every slot."""
    groups: dict = {}
    for i, n in enumerate(enc.names):
        _, content, style, cid = name_fields(n)
        if split_of(cid) == split:
            groups.setdefault((content, style), []).append(enc.clip(i))
    means = {k: np.concatenate(v).mean(0) for k, v in groups.items()}
    contents = sorted({c for c, _ in means})
    out = {}
    for s in styles:
        if s == NEUTRAL:
            continue
        diffs = [means[c, s] - means[c, NEUTRAL] for c in contents if (c, s) in means and (c, NEUTRAL) in means]
        if not diffs:
            raise ValueError(f"no content has clips in both styles {s!r} and {NEUTRAL!r} in the {split} split")
        d = np.mean(diffs, axis=0)
        if shape == "segment":
            d = np.broadcast_to(d.mean(0, keepdims=True), d.shape).copy()
        elif shape != "slot":
            raise ValueError(f"unknown direction shape {shape!r} (slot or segment)")
        out[s] = d
    return out


@dataclass
class StyleClassifier:
    """Softmax regression on standardised pooled control points."""
    classes: tuple
    mean: np.ndarray
    std: np.ndarray
    w: np.ndarray  # [D, C]
    b: np.ndarray  # [C]

    @classmethod
    def fit(cls, x: np.ndarray, labels, classes=STYLES, l2: float = 1e-2, steps: int = 3000, lr: float = 0.5):
        """Full-batch gradient descent (a few thousand clips, a few hundred features: seconds)."""
        y = np.array([classes.index(s) for s in labels])
        mean, std = x.mean(0), x.std(0) + 1e-6
        z = (x - mean) / std
        w, b = np.zeros((x.shape[1], len(classes))), np.zeros(len(classes))
        onehot = np.eye(len(classes))[y]
        for _ in range(steps):
            p = _softmax(z @ w + b)
            g = (p - onehot) / len(z)
            w -= lr * (z.T @ g + l2 * w)
            b -= lr * g.sum(0)
        return cls(tuple(classes), mean, std, w, b)

    def proba(self, x: np.ndarray) -> np.ndarray:
        return _softmax(((x - self.mean) / self.std) @ self.w + self.b)

    def predict(self, x: np.ndarray) -> list[str]:
        return [self.classes[k] for k in self.proba(x).argmax(1)]

    def accuracy(self, x: np.ndarray, labels) -> float:
        return float(np.mean([p == s for p, s in zip(self.predict(x), labels, strict=True)])) if len(labels) else float("nan")


def _softmax(a):
    a = a - a.max(1, keepdims=True)
    e = np.exp(a)
    return e / e.sum(1, keepdims=True)


def train_classifier(enc: Encoded) -> StyleClassifier:
    """The classifier on dataset 2's train split."""
    rows = [i for i, n in enumerate(enc.names) if split_of(name_fields(n)[3]) == "train"]
    return StyleClassifier.fit(enc.pooled()[rows], [name_fields(enc.names[i])[2] for i in rows])


def store(ckpt, directions: dict, source: str) -> None:
    """Put the directions into a loaded checkpoint (``backend.runtime.checkpoint.Checkpoint``) as the
    principal ones are: one tensor [N, K, d] in ``extra``, names and descriptions in ``info``."""
    import torch
    names = [s for s in STYLES if s in directions]
    ckpt.extra["style.directions"] = torch.tensor(np.stack([directions[s] for s in names]), dtype=torch.float32)
    ckpt.info["style_names"] = names
    ckpt.info["style_descriptions"] = [DESCRIPTIONS[s] for s in names]
    ckpt.info["style_source"] = source


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.style", description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", required=True, help="the motion autoencoder's .json (rewritten in place)")
    ap.add_argument("--data", required=True, help="Bandai dataset 2's BVH folder (dataset-2_{content}_{style}_{id}.bvh)")
    ap.add_argument("--cache", help="training.data's cache folder")
    ap.add_argument("--shape", default="slot", choices=("slot", "segment"))
    args = ap.parse_args(argv)
    from backend.motion.engine import Engine
    from backend.runtime import checkpoint

    from .data import Selection, load_split
    engine = Engine(args.checkpoint, "cpu", runtime="onnx")  # the numpy / ONNX path: encoding only
    ms = load_split(args.data, Selection(("train",)), args.cache)
    enc = encode_set(engine, ms)
    dirs = style_directions(enc, args.shape)
    ckpt = checkpoint.load(args.checkpoint)  # the torch checkpoint: saved as training saves it
    store(ckpt, dirs, f"dataset 2's train split (id % 10 not in {{5, 8}}), {len(enc.names)} clips: per content, "
                      f"the style's mean encoded control points minus normal's, averaged over the contents "
                      f"(training.style, shape {args.shape})")
    checkpoint.save(ckpt.path, ckpt)
    from backend.runtime.export import export_saved
    print(export_saved(ckpt.path))  # (the weights file changed: the graphs point into it again)
    for s, d in dirs.items():
        print(f"{s:10s} |direction| {np.linalg.norm(d):.3f}  {DESCRIPTIONS[s]}")
    print(f"stored {len(dirs)} style directions in {ckpt.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
