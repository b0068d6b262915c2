"""python -m training.studies.style_eval --data BANDAI2[,BANDAI1]: does a style edit read as the style, and
keep the content?

On dataset 2's held-out *normal* test clips (id % 10 == 5), each of the six other styles is applied at
strength 1 (``backend.motion.style.styled_decode``: root path pinned, the contact pass on the styled
decode), and per style it reports:

* the project's classifier's reading (``training.style.StyleClassifier`` on the re-encoded edit: % read as
  the style asked; chance 1/7 = 14 %) beside its accuracy on the real test clips of that style;
* root travel: the pelvis's ground path length over the source clip's (median ratio; target within 15 %);
* foot contacts: IoU of the planted (frame, foot joint) cells with the source clip's (median; target >= 0.7).

``--shape slot,segment`` measures both direction shapes (directions computed from the train split here);
by default the checkpoint's stored directions are measured.  ``--free-root`` measures with the root path
left to the style.  ``--markdown`` prints the table for docs/latent-controls.md.

    python -m training.studies.style_eval --data /tmp/data/bandai-namco-2/bvh,/tmp/data/bandai-namco-1-part/bvh \\
        --cache .cache --markdown
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from backend.maths import quat_np, timebase
from backend.motion import style as style_edit
from backend.motion.skeleton import Clip
from backend.runtime.checkpoint import StyleSet

from ..style import (
    DATASET1_AS,
    DESCRIPTIONS,
    NEUTRAL,
    STYLES,
    Encoded,
    encode_set,
    name_fields,
    split_of,
    style_directions,
    train_classifier,
)


def travel(clip: Clip, joint: int, up: int) -> float:
    """The length of ``joint``'s path over the ground (every axis but ``up``)."""
    p = np.delete(clip.positions[:, joint], up, axis=1)
    return float(np.linalg.norm(np.diff(p, axis=0), axis=1).sum())


def contact_cells(clip: Clip) -> np.ndarray:
    down = style_edit.source_contacts(clip.skeleton, quat_np.normalize(clip.rotations), clip.positions,
                                      clip.frame_time)
    return np.zeros((clip.num_frames, 0), bool) if down is None else down


def iou(a: np.ndarray, b: np.ndarray) -> float:
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 1.0


def measure(engine, clf, sources: list[Clip], styles: StyleSet, strength: float, pin: bool) -> list[dict]:
    """One row per style (and the strength-0 baseline first)."""
    work = [timebase.to_model_rate(c, engine.frame_time) for c in sources]
    controls = engine.encode(work)
    joint, up = int(engine.layout.position_joints[0]), engine.layout.up_axis
    src_travel = [travel(c, joint, up) for c in work]
    src_cells = [contact_cells(c) for c in work]
    rows = []
    for name in ("(none)",) + tuple(styles.names):
        asked = {} if name == "(none)" else {name: strength}
        outs = [style_edit.styled_decode(engine, ctl, ctl.points, asked, like=c, pin=pin, styles=styles)
                for ctl, c in zip(controls, work, strict=True)]
        read = clf.predict(Encoded.of(engine.encode(outs)).pooled())
        ratios = [travel(o, joint, up) / max(t, 1e-6) for o, t in zip(outs, src_travel, strict=True)]
        moving = [r for r, t in zip(ratios, src_travel, strict=True) if t > 20.0]  # clips that travel (cm): the ratio means something
        rows.append({"style": name, "read": float(np.mean([r == (name if asked else NEUTRAL) for r in read])),
                     "travel": float(np.median(moving)) if moving else float("nan"),
                     "iou": float(np.median([iou(contact_cells(o), s) for o, s in zip(outs, src_cells, strict=True)])),
                     "read_as": {s: read.count(s) for s in sorted(set(read))}})
    return rows


def real_accuracy(clf, enc: Encoded, split: str) -> dict:
    """Per style, the classifier's accuracy on dataset 2's real clips of ``split``."""
    out = {}
    x = enc.pooled()
    for s in STYLES:
        rows = [i for i, n in enumerate(enc.names) if name_fields(n)[2] == s and split_of(name_fields(n)[3]) == split]
        out[s] = clf.accuracy(x[rows], [s] * len(rows))
    return out


def dataset1_read(engine, clf, data, cache) -> dict:
    """Dataset 1's clips in styles that map onto dataset 2's (``DATASET1_AS``): per style, (clips, % read as it)."""
    from ..data import Selection, load_split
    ms = load_split(data, Selection(("train", "val")), cache, verbose=False)
    keep = [i for i, n in enumerate(ms.names) if name_fields(n)[0] == "dataset-1" and name_fields(n)[2] in DATASET1_AS]
    if not keep:
        return {}
    enc = encode_set(engine, ms, keep)
    read = clf.predict(enc.pooled())
    out = {}
    for n, r in zip(enc.names, read, strict=True):
        s1 = name_fields(n)[2]
        out.setdefault(s1, []).append(r == DATASET1_AS[s1])
    return {s: (len(v), float(np.mean(v))) for s, v in out.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.studies.style_eval", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="dataset 2's BVH folder, and optionally dataset 1's (comma-separated)")
    ap.add_argument("--checkpoint", help="the motion autoencoder (default: the shipped one)")
    ap.add_argument("--cache")
    ap.add_argument("--shape", default="", help="slot,segment: directions computed here in these shapes "
                                                "(default: the checkpoint's stored ones)")
    ap.add_argument("--strength", type=float, default=1.0)
    ap.add_argument("--free-root", action="store_true", help="let the style move the root path")
    ap.add_argument("--limit", type=int, default=0, help="at most this many normal test clips (0: all)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    from backend.motion.engine import Engine

    from ..data import Selection, load_split
    paths = [p for p in args.data.split(",") if p.strip()]
    d2 = [p for p in paths if "namco-2" in p or "dataset-2" in p] or paths[:1]
    d1 = [p for p in paths if p not in d2]
    engine = Engine(args.checkpoint, "cpu", runtime="onnx")
    ms = load_split(",".join(d2), Selection(("train", "val", "test")), args.cache, verbose=False)
    enc = encode_set(engine, ms)
    clf = train_classifier(enc)
    real = real_accuracy(clf, enc, "test")
    normal = [i for i, n in enumerate(ms.names) if name_fields(n)[2] == NEUTRAL and split_of(name_fields(n)[3]) == "test"]
    if args.limit:
        normal = normal[:args.limit]
    sources = [Clip(ms.skeleton, *(a.astype(np.float64) for a in ms.clip(i)), ms.frame_time, ms.names[i]) for i in normal]
    sets = {}
    if args.shape:
        for shape in args.shape.split(","):
            d = style_directions(enc, shape)
            sets[shape] = StyleSet(tuple(d), tuple(DESCRIPTIONS[s] for s in d), np.stack(list(d.values())))
    else:
        if engine.styles() is None:
            raise SystemExit(style_edit.no_styles_message(engine.path.name))
        sets["stored"] = engine.styles()
    print(f"{len(sources)} normal test clips; the classifier on real test clips: "
          + ", ".join(f"{s} {100 * a:.0f} %" for s, a in real.items()), file=sys.stderr)
    for label, styles in sets.items():
        rows = measure(engine, clf, sources, styles, args.strength, not args.free_root)
        root = "free" if args.free_root else "pinned"
        print(f"\n### directions: {label}; strength {args.strength:g}; root path {root}; {len(sources)} normal "
              f"test clips of dataset 2\n")
        print("| style asked | read as asked (project classifier) | classifier on real test clips of the style "
              "| root travel / source (median) | foot-contact IoU vs source (median) |")
        print("|---|---:|---:|---:|---:|")
        for r in rows:
            name = r["style"] if r["style"] != "(none)" else "none (strength 0: the plain decode)"
            acc = real.get(r["style"], real[NEUTRAL])
            print(f"| {name} | {100 * r['read']:.0f} % | {100 * acc:.0f} % | {r['travel']:.3f} | {r['iou']:.3f} |")
        if not args.markdown:
            for r in rows:
                print(f"  {r['style']}: read as {r['read_as']}", file=sys.stderr)
    if d1:
        got = dataset1_read(engine, clf, ",".join(d1), args.cache)
        print("\n| dataset-1 style (as dataset 2's) | clips | read as it |\n|---|---:|---:|")
        for s, (n, a) in got.items():
            print(f"| {s} ({DATASET1_AS[s]}) | {n} | {100 * a:.0f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
