"""python -m training.studies.style_eval --data BANDAI2[,BANDAI1]: does a style edit read as the style, and
keep the content?

On dataset 2's held-out *normal* test clips (id % 10 == 5), each of the six other styles is applied at
strength 1 (``backend.motion.style.styled_decode``: root path pinned unless ``--free-root``, the contact
pass on the styled decode), and per style it reports:

* the **motion-feature classifier**'s reading (``training.style_features``: joint speeds, posture, lean,
  cadence, joint angles of the decoded skeleton, never the latent points; trained on the train split): %
  of the edits read as the style asked (chance 1/7 = 14 %), beside its accuracy on the real test clips of
  that style and on their autoencoder decodes (what the decoder lets through: the edit's ceiling);
* the latent classifier's reading (``training.style.StyleClassifier`` on the re-encoded edit): it reads the
  very control points the direction shifts, so it is shown, not claimed;
* root travel: the pelvis's ground path length over the source clip's (median over clips that travel at
  least a leg length; target within 15 %);
* foot contacts: IoU of the (frame, foot joint) cells planted in the edit -- detected again on the edited
  motion's own joints (``contact_cells``), not copied from the source -- against the real source clip's
  (median over the clips that step: a foot joint both planted and lifted; most contents stand in place,
  feet planted throughout, where the IoU is 1 for any edit that does not lift a foot); beside it the same
  with the contact pass off, and the plain decode's;
* strength 0: clips whose decode is the plain decode bit for bit.

``--markdown`` prints the table for docs/latent-controls.md.

    python -m training.studies.style_eval --data /tmp/data/bandai-namco-2/bvh --cache .cache
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from backend.maths import quat_np, timebase
from backend.motion import style as style_edit
from backend.motion import style_match
from backend.motion.skeleton import Clip

from .. import style_features
from ..style import DATASET1_AS, NEUTRAL, Encoded, encode_set, name_fields, train_classifier


def travel(clip: Clip, joint: int, up: int) -> float:
    """The length of ``joint``'s path over the ground (every axis but ``up``), from global positions."""
    g = quat_np.fk(quat_np.normalize(clip.rotations), clip.positions, clip.skeleton.parents)[1]
    p = np.delete(g[:, joint], up, axis=1)
    return float(np.linalg.norm(np.diff(p, axis=0), axis=1).sum())


def contact_cells(clip: Clip) -> np.ndarray:
    """[F, N] bool: the foot joints planted in ``clip``'s own motion (``style.source_contacts``)."""
    down = style_edit.source_contacts(clip.skeleton, quat_np.normalize(clip.rotations), clip.positions,
                                      clip.frame_time)
    return np.zeros((clip.num_frames, 0), bool) if down is None else down


def steps(cells: np.ndarray, least: float = 0.1) -> bool:
    """Whether some foot joint is both planted and lifted for at least ``least`` of the frames."""
    share = cells.mean(0) if len(cells) else np.zeros(0)
    return bool(((share >= least) & (share <= 1 - least)).any())


def iou(a: np.ndarray, b: np.ndarray) -> float:
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 1.0


def _median(v) -> float:
    return float(np.median(v)) if len(v) else float("nan")


def measure(engine, feat_clf, lat_clf, sources: list[Clip], strength: float, pin: bool, styles=None) -> list[dict]:
    """One row per style, the plain decode (strength 0) first."""
    styles = engine.styles() if styles is None else styles
    work = [timebase.to_model_rate(c, engine.frame_time) for c in sources]
    controls = engine.encode(work)
    joint, up = int(engine.layout.position_joints[0]), engine.layout.up_axis
    size = float(np.mean([np.linalg.norm(engine.skeleton.offsets[j]) for j in range(1, engine.skeleton.num_joints)]))
    src_travel = np.array([travel(c, joint, up) for c in work])
    moving = src_travel > 4 * size  # (about a leg length)
    src_cells = [contact_cells(c) for c in work]
    stepping = np.array([steps(s) for s in src_cells])
    plain = [engine.decode(ctl, like=c) for ctl, c in zip(controls, work, strict=True)]
    rows = []
    for name in ("(none)",) + tuple(styles.names):
        asked = {} if name == "(none)" else {name: strength}
        outs = [style_edit.styled_decode(engine, ctl, ctl.points, asked, like=c, pin=pin, styles=styles)
                for ctl, c in zip(controls, work, strict=True)]
        bare = [style_edit.styled_decode(engine, ctl, ctl.points, asked, like=c, pin=pin, contacts=False, styles=styles)
                for ctl, c in zip(controls, work, strict=True)] if asked else outs
        zero = [style_edit.styled_decode(engine, ctl, ctl.points, {name: 0.0} if asked else {}, like=c, styles=styles)
                for ctl, c in zip(controls, work, strict=True)]
        same = sum(z.rotations.tobytes() == p.rotations.tobytes() and z.positions.tobytes() == p.positions.tobytes()
                   for z, p in zip(zero, plain, strict=True))
        want = name if asked else NEUTRAL
        feat_read = feat_clf.predict(np.stack([style_features.clip_features(o) for o in outs]))
        lat_read = lat_clf.predict(Encoded.of(engine.encode(outs)).pooled())
        ratios = np.array([travel(o, joint, up) for o in outs]) / np.maximum(src_travel, 1e-9)
        cells = [contact_cells(o) for o in outs]
        ious = np.array([iou(c, s) for c, s in zip(cells, src_cells, strict=True)])
        bare_ious = np.array([iou(contact_cells(o), s) for o, s in zip(bare, src_cells, strict=True)])
        rows.append({"style": name, "read": float(np.mean([r == want for r in feat_read])),
                     "latent_read": float(np.mean([r == want for r in lat_read])),
                     "travel": _median(ratios[moving]), "iou_steps": _median(ious[stepping]),
                     "iou_steps_bare": _median(bare_ious[stepping]), "iou_all": _median(ious),
                     "zero_same": same, "n": len(outs),
                     "read_as": {s: feat_read.count(s) for s in sorted(set(feat_read))}})
    for r in rows:
        r["moving"], r["stepping"] = int(moving.sum()), int(stepping.sum())
    return rows


def measure_match(engine, feat_clf, ms, sources: list[int], test_rows: list[int], strength: float,
                  lat_clf=None) -> list[dict]:
    """Match Style (``backend.motion.style_match``) with real test clips of each style as the reference,
    applied to the normal test clips ``sources``: per reference style, the % of edits the motion-feature
    classifier reads as the reference's style and the % whose largest read weight is that style, twice --
    a reference of the source's own content (another take) and one of another content (the next content
    that has the style, in name order).  With ``lat_clf`` (``training.style.StyleClassifier`` on pooled
    points) the alternative weighting too: the classifier's probabilities of the six styles as the mix
    (normal's share adds nothing), read as the reference's style in ``read_clf``."""
    styles = engine.styles()
    clip_of = {}

    def controls(i):
        if i not in clip_of:
            c = timebase.to_model_rate(Clip(ms.skeleton, *(a.astype(np.float64) for a in ms.clip(i)), ms.frame_time,
                                            ms.names[i]), engine.frame_time)
            clip_of[i] = (c, engine.encode(c))
        return clip_of[i]

    rows = []
    for want in (NEUTRAL,) + tuple(styles.names):
        refs = [i for i in test_rows if name_fields(ms.names[i])[2] == want]
        contents = sorted({name_fields(ms.names[i])[1] for i in refs})
        row = {"style": want}
        for pairing in ("same content", "other content"):
            reads, tops, mass, clf_reads, n = [], [], [], [], 0
            for s in sources:
                content = name_fields(ms.names[s])[1]
                if pairing == "same content":
                    pick = [i for i in refs if name_fields(ms.names[i])[1] == content and i != s]
                else:
                    others = [c for c in contents if c > content] + [c for c in contents if c < content]
                    pick = [i for i in refs if others and name_fields(ms.names[i])[1] == others[0]]
                if not pick:
                    continue
                src, ctl = controls(s)
                _, ref_ctl = controls(pick[0])
                w = style_match.read_style(styles, ref_ctl.points, ctl.points)
                out = style_edit.styled_decode(engine, ctl, ctl.points, style_match.scaled(w, strength), like=src)
                reads.append(feat_clf.predict(style_features.clip_features(out)[None])[0] == want)
                total = sum(w.values())
                top = max(w, key=w.get) if total > 0.05 else NEUTRAL
                tops.append(top == want)
                mass.append(total)
                if lat_clf is not None:
                    p = lat_clf.proba(ref_ctl.points.mean(0).reshape(1, -1))[0]
                    mix = {c: strength * float(q) for c, q in zip(lat_clf.classes, p, strict=True) if c != NEUTRAL}
                    o2 = style_edit.styled_decode(engine, ctl, ctl.points, mix, like=src)
                    clf_reads.append(feat_clf.predict(style_features.clip_features(o2)[None])[0] == want)
                n += 1
            row[pairing] = {"n": n, "read": float(np.mean(reads)) if n else float("nan"),
                            "top": float(np.mean(tops)) if n else float("nan"),
                            "weight": _median(mass),
                            "read_clf": float(np.mean(clf_reads)) if clf_reads else float("nan")}
        rows.append(row)
    return rows


def match_table(match_rows, named_rows, strength: float) -> list[str]:
    named = {("normal" if r["style"] == "(none)" else r["style"]): r["read"] for r in named_rows}
    out = [f"### Match Style, strength {strength:g}: real test clips of each style as the reference, on normal test "
           f"clips", "",
           "| reference style | named style: read as it | match, same content: read as the reference's style "
           "| largest weight is it | total weight (median) | match, other content: read as it | largest weight "
           "| total weight | alternative (latent classifier's probabilities as weights): same / other content |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in match_rows:
        a, b = r["same content"], r["other content"]
        out.append(f"| {r['style']} | {100 * named.get(r['style'], float('nan')):.0f} % "
                   f"| {100 * a['read']:.0f} % ({a['n']}) | {100 * a['top']:.0f} % | {a['weight']:.2f} "
                   f"| {100 * b['read']:.0f} % ({b['n']}) | {100 * b['top']:.0f} % | {b['weight']:.2f} "
                   f"| {100 * a['read_clf']:.0f} % / {100 * b['read_clf']:.0f} % |")
    return out


def decoded_accuracy(engine, feat_clf, ms, rows: list[int]) -> dict:
    """Per style, the feature classifier's accuracy on the autoencoder's decodes of real clips ``rows``."""
    clips = [timebase.to_model_rate(Clip(ms.skeleton, *(a.astype(np.float64) for a in ms.clip(i)), ms.frame_time,
                                         ms.names[i]), engine.frame_time) for i in rows]
    outs = [engine.decode(ctl, like=c) for ctl, c in zip(engine.encode(clips), clips, strict=True)]
    x = np.stack([style_features.clip_features(o) for o in outs])
    return style_features.per_style(feat_clf, x, [name_fields(ms.names[i])[2] for i in rows])


def dataset1_read(engine, feat_clf, data, cache) -> dict:
    """Dataset 1's clips in styles that map onto dataset 2's (``DATASET1_AS``): per style, (clips, % the
    motion-feature classifier reads as it)."""
    from ..data import Selection, load_split
    ms = load_split(data, Selection(("train", "val")), cache, verbose=False)
    keep = [i for i, n in enumerate(ms.names) if name_fields(n)[0] == "dataset-1" and name_fields(n)[2] in DATASET1_AS]
    if not keep:
        return {}
    read = feat_clf.predict(style_features.set_features(ms, keep))
    out = {}
    for i, r in zip(keep, read, strict=True):
        s1 = name_fields(ms.names[i])[2]
        out.setdefault(s1, []).append(r == DATASET1_AS[s1])
    return {s: (len(v), float(np.mean(v))) for s, v in out.items()}


def table(rows, real: dict, decoded: dict, label: str) -> list[str]:
    r0 = rows[0]
    out = [f"### {label}; {r0['n']} normal test clips of dataset 2 ({r0['moving']} travel, {r0['stepping']} step)", "",
           "| style asked | motion-feature classifier: edits read as asked | on real test clips of the style "
           "| on their decodes | latent classifier (not evidence) | root travel / source (median) "
           "| contact IoU, stepping clips (pass off) | contact IoU, all clips | strength 0 bit for bit |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        s = r["style"] if r["style"] != "(none)" else NEUTRAL
        name = r["style"] if r["style"] != "(none)" else "none (the plain decode; read as normal)"
        off = "" if r["style"] == "(none)" else f" ({r['iou_steps_bare']:.2f})"
        out.append(f"| {name} | {100 * r['read']:.0f} % | {100 * real[s]:.0f} % | {100 * decoded[s]:.0f} % "
                   f"| {100 * r['latent_read']:.0f} % | {r['travel']:.3f} | {r['iou_steps']:.2f}{off} "
                   f"| {r['iou_all']:.2f} | {r['zero_same']}/{r['n']} |")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.studies.style_eval", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="dataset 2's BVH folder, and optionally dataset 1's (comma-separated)")
    ap.add_argument("--checkpoint", help="the motion autoencoder (default: the shipped one)")
    ap.add_argument("--cache")
    ap.add_argument("--strength", type=float, default=1.0)
    ap.add_argument("--free-root", action="store_true", help="also measure with the root path left to the style")
    ap.add_argument("--limit", type=int, default=0, help="at most this many normal test clips (0: all)")
    ap.add_argument("--match", action="store_true",
                    help="also measure Match Style (real test clips of each style as the reference)")
    args = ap.parse_args(argv)
    from backend.motion.engine import Engine

    from ..data import Selection, load_split
    paths = [p for p in args.data.split(",") if p.strip()]
    d2 = [p for p in paths if "namco-2" in p or "dataset-2" in p] or paths[:1]
    d1 = [p for p in paths if p not in d2]
    engine = Engine(args.checkpoint, "cpu", runtime="onnx")
    if engine.styles() is None:
        raise SystemExit(style_edit.no_styles_message(engine.path.name))
    ms = load_split(",".join(d2), Selection(("train", "val", "test")), args.cache, verbose=False)
    feat_clf, tried, x_of, y_of = style_features.fit_on(ms)
    real = style_features.per_style(feat_clf, x_of["test"], y_of["test"])
    test_rows, _ = style_features.labelled(ms, "test")
    decoded = decoded_accuracy(engine, feat_clf, ms, test_rows)
    lat_clf = train_classifier(encode_set(engine, ms))
    print(f"motion-feature classifier ({x_of['train'].shape[1]} features, L2 by val accuracy: "
          + ", ".join(f"{k:g} {100 * v:.1f} %" for k, v in tried.items())
          + f"): real test clips {100 * feat_clf.accuracy(x_of['test'], y_of['test']):.1f} % of {len(y_of['test'])}",
          file=sys.stderr)
    normal = [i for i in test_rows if name_fields(ms.names[i])[2] == NEUTRAL]
    if args.limit:
        normal = normal[::max(1, len(normal) // args.limit)][:args.limit]  # spread over the contents
    sources = [Clip(ms.skeleton, *(a.astype(np.float64) for a in ms.clip(i)), ms.frame_time, ms.names[i]) for i in normal]
    for pin in (True, False) if args.free_root else (True,):
        rows = measure(engine, feat_clf, lat_clf, sources, args.strength, pin)
        label = f"strength {args.strength:g}, root path {'pinned' if pin else 'free'}"
        print("\n" + "\n".join(table(rows, real, decoded, label)))
        for r in rows:
            print(f"  {r['style']}: read as {r['read_as']}", file=sys.stderr)
        if args.match and pin:
            matched = measure_match(engine, feat_clf, ms, normal, test_rows, args.strength, lat_clf)
            print("\n" + "\n".join(match_table(matched, rows, args.strength)))
    if d1:
        got = dataset1_read(engine, feat_clf, ",".join(d1), args.cache)
        print("\n| dataset-1 real clips, style (as dataset 2's) | clips | motion-feature classifier reads it |\n"
              "|---|---:|---:|")
        for s, (n, a) in got.items():
            print(f"| {s} ({DATASET1_AS[s]}) | {n} | {100 * a:.0f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
