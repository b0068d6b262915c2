"""A style classifier that reads the motion, not the latent space: features of joint positions and rotations.

``training.style``'s own classifier reads a clip's encoded control points, the very numbers a style
direction shifts, so an edit reading as its style there is no evidence that the motion changed.  This one
sees only what a viewer could measure on the skeleton (``features``), from a real clip or a decoded edit
alike, normalised for the skeleton's size (leg length) and its facing (the hips' left-right axis):

* posture: each joint's mean and spread in the body's frame (pelvis on the ground, facing forward);
* energy: each joint's world speed (mean, spread, 90th percentile), its speed and acceleration relative to
  the body;
* the root: ground speed, bounce, turning rate;
* the spine's lean (pelvis to head against up) and the head's forward offset;
* step cadence: the dominant frequency of the feet's fore-aft alternation and how much of it there is,
  the fraction of frames each foot is planted (``contacts.capture_contacts``);
* each joint's rotation angle away from the identity (mean, spread): bent knees, elbows, a bowed neck.

The model is softmax regression on standardised features (``training.style.StyleClassifier``), its L2
weight chosen on dataset 2's validation split, trained on the train split; accuracy is reported on the
test split (id % 10 == 5):

    python -m training.style_features --data /tmp/data/bandai-namco-2/bvh --cache .cache
"""
from __future__ import annotations

import argparse
import re
import sys

import numpy as np

from backend.maths import quat_np
from backend.motion.inbetween import contacts as contact_pass

from .style import STYLES, StyleClassifier, name_fields, split_of

L2_CHOICES = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)


def _joint(names, pattern: str) -> int:
    hits = [j for j, n in enumerate(names) if re.search(pattern, n, re.I)]
    if not hits:
        raise ValueError(f"the skeleton has no joint matching {pattern!r} (joints: {', '.join(names)})")
    return hits[0]


def features(skeleton, rot: np.ndarray, pos: np.ndarray, frame_time: float) -> np.ndarray:
    """One clip's feature vector [D] from local rotations [F, J, 4] and positions [F, J, 3] (F >= 8)."""
    names, parents = skeleton.names, skeleton.parents
    rot = quat_np.normalize(np.asarray(rot, np.float64))
    pos = np.asarray(pos, np.float64)
    if len(rot) < 8:
        raise ValueError(f"a clip of {len(rot)} frames is too short to read a style from (8 at least)")
    legs = contact_pass.find_legs(names, parents)
    if len(legs) != 2:
        raise ValueError("the style features need a skeleton with two legs (joints named foot or ankle)")
    _, g = quat_np.fk(rot, pos, parents)
    up = contact_pass.up_vector(g[[0]], legs, parents)
    u = int(np.argmax(np.abs(up)))
    size = float(np.mean([contact_pass.leg_length(pos[0], leg) for leg in legs]))
    g = g / size
    g[..., u] *= np.sign(up[u])
    ground = [a for a in range(3) if a != u]
    pelvis = int(parents[legs[0].hip])
    # the body's frame: the hips' left-right axis on the ground, forward across it
    side = g[:, legs[0].hip, ground] - g[:, legs[1].hip, ground]
    side /= np.maximum(np.linalg.norm(side, axis=1, keepdims=True), 1e-9)
    fwd = np.stack([-side[:, 1], side[:, 0]], 1)
    rel = g.copy()
    rel[..., ground] -= g[:, pelvis:pelvis + 1, ground]
    rel[..., u] -= g[..., u].min()
    body = np.stack([np.einsum("fjk,fk->fj", rel[..., ground], side), rel[..., u],
                     np.einsum("fjk,fk->fj", rel[..., ground], fwd)], -1)  # [F, J, (side, up, forward)]
    fps = 1.0 / frame_time
    vel = np.gradient(g, axis=0) * fps
    speed = np.linalg.norm(vel, axis=-1)
    bvel = np.gradient(body, axis=0) * fps
    bspeed = np.linalg.norm(bvel, axis=-1)
    bacc = np.linalg.norm(np.gradient(bvel, axis=0) * fps, axis=-1)
    root_v = vel[:, pelvis, ground]
    heading = np.unwrap(np.arctan2(fwd[:, 1], fwd[:, 0]))
    head = _joint(names, r"head")
    lean_v = g[:, head] - g[:, pelvis]
    lean = np.degrees(np.arccos(np.clip(lean_v[:, u] / np.maximum(np.linalg.norm(lean_v, axis=1), 1e-9), -1, 1)))
    # cadence: the feet's fore-aft alternation, its strongest frequency in 0.4-4 Hz and its share of the power
    alt = body[:, legs[0].ankle, 2] - body[:, legs[1].ankle, 2]
    alt = alt - alt.mean()
    spec = np.abs(np.fft.rfft(alt * np.hanning(len(alt)))) ** 2
    freq = np.fft.rfftfreq(len(alt), frame_time)
    band = (freq >= 0.4) & (freq <= 4.0)
    peak = float(freq[band][spec[band].argmax()]) if band.any() else 0.0
    share = float(spec[band].max() / max(spec.sum(), 1e-12)) if band.any() else 0.0
    down = contact_pass.capture_contacts(parents, legs, rot, pos, [0, len(rot) - 1], frame_time)
    angle = np.degrees(2 * np.arccos(np.clip(np.abs(rot[..., 0]), 0, 1)))
    parts = [body.mean(0).ravel(), body.std(0).ravel(),
             speed.mean(0), speed.std(0), np.percentile(speed, 90, axis=0),
             bspeed.mean(0), bacc.mean(0),
             [np.linalg.norm(root_v, axis=1).mean(), np.linalg.norm(root_v, axis=1).std(), g[:, pelvis, u].std(),
              g[:, pelvis, u].mean(), np.abs(np.diff(heading)).mean() * fps],
             [lean.mean(), lean.std(), body[:, head, 2].mean(), body[:, head, 1].mean()],
             [peak, share, np.ptp(alt)], down.mean(0),
             angle.mean(0), angle.std(0)]
    return np.concatenate([np.ravel(p) for p in parts])


def clip_features(clip) -> np.ndarray:
    """``features`` of a ``backend.motion.skeleton.Clip``."""
    return features(clip.skeleton, clip.rotations, clip.positions, clip.frame_time)


def set_features(ms, which=None) -> np.ndarray:
    """[C, D]: ``features`` of clips of a ``training.data.MotionSet`` (all, or the indices ``which``)."""
    idx = range(len(ms.names)) if which is None else which
    return np.stack([features(ms.skeleton, *ms.clip(i), ms.frame_time) for i in idx])


def labelled(ms, split: str) -> tuple[list[int], list[str]]:
    """Dataset 2's clips of ``split``: their indices and styles."""
    rows = [i for i, n in enumerate(ms.names) if split_of(name_fields(n)[3]) == split]
    return rows, [name_fields(ms.names[i])[2] for i in rows]


def train(x_of: dict, y_of: dict, l2_choices=L2_CHOICES) -> tuple[StyleClassifier, dict]:
    """Softmax regression on the train split, its L2 weight the best on the val split: (classifier,
    {l2: val accuracy})."""
    tried = {}
    for l2 in l2_choices:
        clf = StyleClassifier.fit(x_of["train"], y_of["train"], STYLES, l2=l2)
        tried[l2] = clf.accuracy(x_of["val"], y_of["val"])
    best = max(tried, key=tried.get)
    return StyleClassifier.fit(x_of["train"], y_of["train"], STYLES, l2=best), tried


def fit_on(ms) -> tuple[StyleClassifier, dict, dict, dict]:
    """The classifier from a MotionSet of dataset 2's clips (every split): (classifier, val accuracy per L2,
    features per split, labels per split)."""
    x_of, y_of = {}, {}
    for split in ("train", "val", "test"):
        rows, y_of[split] = labelled(ms, split)
        x_of[split] = set_features(ms, rows)
    clf, tried = train(x_of, y_of)
    return clf, tried, x_of, y_of


def per_style(clf: StyleClassifier, x: np.ndarray, labels) -> dict:
    labels = list(labels)
    return {s: clf.accuracy(x[[i for i, y in enumerate(labels) if y == s]], [s] * labels.count(s)) for s in STYLES}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.style_features", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="Bandai dataset 2's BVH folder")
    ap.add_argument("--cache", help="training.data's cache folder")
    args = ap.parse_args(argv)
    from .data import Selection, load_split
    ms = load_split(args.data, Selection(("train", "val", "test")), args.cache, verbose=False)
    clf, tried, x_of, y_of = fit_on(ms)
    print(f"{x_of['train'].shape[1]} features; train {len(y_of['train'])}, val {len(y_of['val'])}, test "
          f"{len(y_of['test'])} clips; val accuracy by L2: " + ", ".join(f"{k:g}: {100 * v:.1f} %" for k, v in tried.items()))
    print(f"train accuracy {100 * clf.accuracy(x_of['train'], y_of['train']):.1f} %, test accuracy "
          f"{100 * clf.accuracy(x_of['test'], y_of['test']):.1f} % (chance {100 / len(STYLES):.0f} %)")
    for s, a in per_style(clf, x_of["test"], y_of["test"]).items():
        print(f"  {s:10s} {100 * a:5.1f} % of {y_of['test'].count(s)} real test clips")
    return 0


if __name__ == "__main__":
    sys.exit(main())
