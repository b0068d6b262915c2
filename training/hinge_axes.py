"""python -m training.hinge_axes [--data ...] [--other-data ...]: the model's hinge axes and their tolerance.

Prints, for each knee and elbow of the data set's skeleton: its axis over every training frame bent more
than ``backend.humanoid.hinges.BENT_DEGREES`` (what ``hinges.AXES`` holds), the angle of each training
clip's own axis from it (median, 99th percentile, largest: what ``hinges.TOLERANCE`` must stay above, so
the data set's own motion is never turned), and the other studio's clips' angles as the conversion gives
them (turned: near zero).  Reads the training split only, as a model would.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from backend.humanoid import hinges

from .data import CMU_DATA, DEFAULT_DATA, Selection, load_split


def clip_angles(ms, j: int, u, want) -> np.ndarray:
    """Each clip's axis of joint ``j`` against ``want`` (degrees; clips whose motion does not show it left out)."""
    out = []
    for c in range(len(ms.names)):
        have = hinges.axis(ms.clip(c)[0][:, j], u)
        if have is not None:
            out.append(hinges.signed_angle(have, want, u))
    return np.array(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.hinge_axes", description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--other-data", default=CMU_DATA, help="another studio's capture ('' to skip)")
    ap.add_argument("--cache", default=None)
    args = ap.parse_args(argv)
    train = load_split(args.data, Selection(("train",)), args.cache, verbose=False)
    skel = train.skeleton
    other = load_split(args.other_data, Selection(("train", "val")), args.cache, verbose=False, skeleton=skel) \
        if args.other_data else None
    print("| hinge | axis (all training frames) | in hinges.AXES | clips | median | 99th pct | largest | "
          "tolerance | other studio as converted (turned), median |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name, shipped in hinges.AXES.items():
        j = skel.names.index(name)
        u = skel.offsets[j]
        axis = hinges.axis(train.rotations[:, j], u)
        a = np.abs(clip_angles(train, j, u, axis))
        o = np.abs(clip_angles(other, j, u, axis)) if other is not None else np.array([np.nan])
        print(f"| {name} | {np.round(axis, 4).tolist()} | {list(shipped)} | {len(a)} | {np.median(a):.1f} | "
              f"{np.percentile(a, 99):.1f} | {a.max():.1f} | {hinges.TOLERANCE[name]:.0f} | {np.median(o):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
