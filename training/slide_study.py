"""python -m training.slide_study CKPT --data <folder> [--split val] [--every 30] [--cache DIR] [--by-clip]
[--oracle [KEY=VALUE,...]]: where a planted foot slides.

The foot-sliding figure (``training.evaluate.foot_sliding``) averages a foot joint's speed over the frame
steps in which the capture plants it.  This splits those steps by what the fill's planted-feet pass
(``backend.motion.inbetween.contacts``) made of them, judged on the fill before that pass: *held* (fully, at both ends of
the step), *easing* (in or out of a hold) or *not held* (then: the fill has the joint in the air, or moving
faster than the pass holds), and prints each part's share of the steps, its mean speed and its share of
the figure.  A slide in held steps is the pass's to fix; one in unheld steps is the fill stepping at
another time than the capture.  ``--by-clip`` also prints the figure per clip beside the capture's own
speed on the same steps, and each clip's share of the excess over the capture (where the slide is).
``--oracle [outside=1,...]`` also prints the figure with the planted-feet pass holding the capture's own
contacts instead of the fill's (``backend.motion.inbetween.contacts.plant_feet``'s ``down``), as shipped or with the given
contact settings: what a perfectly learned contact would give, the bound on that lever.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np

from backend.maths import quat_np
from backend.motion.inbetween import contacts as C

from .data import Selection, protocol_windows
from .evaluate import load_windows


def classify(skeleton, rot, pos, free, planted, keys, frame_time, cfg=C.ContactConfig()):
    """One window: the capture ``rot``, ``pos`` [F, J, *], the fill before (``free``) and after
    (``planted``) the planted-feet pass, as (rotations, positions).  -> {part: speeds (cm/s)} and the
    unheld steps' reasons {"in the air": n, "fast": n, "other": n}."""
    parents = skeleton.parents
    legs = C.find_legs(skeleton.names, parents)
    joints = C.foot_joints(legs)
    steps = C.planted_step_mask(parents, legs, rot, pos, keys, frame_time)  # the figure's steps [F-1, N]
    speed = C.foot_step_speeds(parents, legs, planted[0], planted[1], frame_time)
    # the pass's own reading of the fill before it: hold weights, low joints, low and slow joints
    gf = quat_np.fk(quat_np.normalize(free[0]), free[1], parents)[1]
    up = C.up_vector(gf[keys], legs, parents)
    length = max(C.leg_length(pos[keys[0]], leg) for leg in legs)
    _, w, _ = C.hold_targets(gf, keys, joints, up, frame_time, length, cfg)
    low = C.ground_contacts(gf, joints, up, frame_time, length, dataclasses.replace(cfg, slow=np.inf))
    slow = C.ground_contacts(gf, joints, up, frame_time, length, cfg)
    inner = w.copy()
    inner[keys] = np.inf  # a key end of a step is not the pass's to hold
    held = steps & (np.minimum(inner[:-1], inner[1:]) > 0.99)
    easing = steps & ~held & (np.maximum(w[:-1], w[1:]) > 0)
    loose = steps & ~held & ~easing
    in_air = loose & ~(low[:-1] & low[1:])
    fast = loose & ~in_air & ~(slow[:-1] & slow[1:])
    parts = {"held": speed[held], "easing": speed[easing], "not held": speed[loose]}
    why = {"in the air": int(in_air.sum()), "fast": int(fast.sum()), "other": int((loose & ~in_air & ~fast).sum())}
    return parts, why


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--data", required=True, help="BVH folder(s) (another studio's are converted)")
    ap.add_argument("--split", default="val")
    ap.add_argument("--every", type=int, default=30, help="frames between keys")
    ap.add_argument("--cache", default=None)
    ap.add_argument("--by-clip", action="store_true", help="the figure per clip, and its share of the excess")
    ap.add_argument("--oracle", nargs="?", const="", default=None, metavar="KEY=VALUE,...",
                    help="the figure with the capture's own contacts held (by the pass as shipped, or with these "
                         "ContactConfig fields changed, as training.contact_study takes them)")
    args = ap.parse_args(argv)
    from backend.motion.engine import Engine
    from backend.motion.keyframes_np import every_k
    from backend.motion.skeleton import Clip
    eng = Engine(args.checkpoint, "cpu")
    rot, pos, ms = load_windows(args.data, Selection((args.split,)), args.cache, skeleton=eng.skeleton)
    ft = float(ms.frame_time)
    keys = every_k(rot.shape[1], args.every)
    clips = [Clip(eng.skeleton, rot[i], pos[i], ft) for i in range(len(rot))]
    eng.contacts = False
    free = [c for c, _ in eng.inbetween(clips, [keys] * len(clips))]
    eng.contacts = True
    planted = [c for c, _ in eng.inbetween(clips, [keys] * len(clips))]
    parts, why = {"held": [], "easing": [], "not held": []}, {"in the air": 0, "fast": 0, "other": 0}
    starts = protocol_windows(ms, rot.shape[1], rot.shape[1])[:, 0]
    clip_of = [ms.names[c] for c in np.searchsorted(ms.starts, starts, side="right") - 1]
    per_clip = {}  # name -> [windows, steps, the fill's speed summed, the capture's]
    for i in range(len(rot)):
        p, w = classify(eng.skeleton, rot[i], pos[i], (free[i].rotations, free[i].positions),
                        (planted[i].rotations, planted[i].positions), keys, ft)
        for k in parts:
            parts[k].append(p[k])
        if args.by_clip:
            fill, own = capture_speeds(eng.skeleton, rot[i], pos[i], planted[i], keys, ft)
            row = per_clip.setdefault(clip_of[i], [0, 0, 0.0, 0.0])
            row[0] += 1
            row[1] += len(fill)
            row[2] += float(fill.sum())
            row[3] += float(own.sum())
        for k in why:
            why[k] += w[k]
    parts = {k: np.concatenate(v) for k, v in parts.items()}
    every = np.concatenate(list(parts.values()))
    if not len(every):
        print("no planted steps in these windows", file=sys.stderr)
        return 1
    print(f"{len(rot)} windows, keys every {args.every}: {len(every)} planted steps, feet {every.mean():.2f} cm/s")
    for k, v in parts.items():
        mean = f"{v.mean():7.2f}" if len(v) else "      —"
        print(f"  {k:9s} {len(v) / len(every):6.1%} of the steps, {mean} cm/s, {v.sum() / every.sum():6.1%} of the figure")
    print("  not held because the fill has the joint: " + ", ".join(f"{k} {n}" for k, n in why.items()))
    if args.oracle is not None:
        from .contact_study import config
        cfg = config(args.oracle)
        fill, own = zip(*(capture_speeds(eng.skeleton, rot[i], pos[i], oracle(eng.skeleton, rot[i], pos[i], free[i],
                                                                               keys, ft, cfg), keys, ft)
                          for i in range(len(rot))), strict=True)
        fill, own = np.concatenate(fill), np.concatenate(own)
        print(f"with the capture's own contacts held (an oracle{', ' + args.oracle if args.oracle else ''}): "
              f"feet {fill.mean():.2f} cm/s, "
              f"{fill.mean() / own.mean():.2f} x the capture's {own.mean():.2f}")
    if args.by_clip:
        excess = sum(r[2] - r[3] for r in per_clip.values())
        print("by clip (most of the excess first): windows, planted steps, the fill's and the capture's cm/s, "
              "share of the excess")
        for name, (n, steps, fill, own) in sorted(per_clip.items(), key=lambda kv: kv[1][3] - kv[1][2]):
            share = f"{(fill - own) / excess:6.1%}" if excess else "     —"
            print(f"  {name:32s} {n:3d} {steps:5d} {fill / max(steps, 1):7.2f} {own / max(steps, 1):7.2f} {share}")
    return 0


def capture_speeds(skeleton, rot, pos, fill, keys, frame_time):
    """The fill's and the capture's foot speeds (cm/s) over the figure's steps of one window."""
    legs = C.find_legs(skeleton.names, skeleton.parents)
    steps = C.planted_step_mask(skeleton.parents, legs, rot, pos, keys, frame_time)
    return (C.foot_step_speeds(skeleton.parents, legs, fill.rotations, fill.positions, frame_time)[steps],
            C.foot_step_speeds(skeleton.parents, legs, rot, pos, frame_time)[steps])


def oracle(skeleton, rot, pos, free, keys, frame_time, cfg=C.ContactConfig()):
    """The fill ``free`` (a Clip, planted feet off) with its feet held where the capture ``rot``, ``pos``
    plants them (``contacts.CAPTURE``, the figure's own reading) instead of where the fill sets them down."""
    legs = C.find_legs(skeleton.names, skeleton.parents)
    down = C.capture_contacts(skeleton.parents, legs, rot, pos, keys, frame_time)
    held = C.plant_feet(skeleton.parents, skeleton.names, free.rotations, free.positions, keys, frame_time, cfg,
                        down=down)
    return dataclasses.replace(free, rotations=held)


if __name__ == "__main__":
    raise SystemExit(main())
