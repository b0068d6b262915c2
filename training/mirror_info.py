"""python -m training.mirror_info CKPT.json [--data ...] [--cache ...]: store a checkpoint's mirror map.

Runs trained with ``--augment_mirror`` carry ``info.mirror`` (the left/right map of
``backend.motion.mirror``, fitted to the training data as the augmentation fits it); this adds it to a
checkpoint trained before, in its JSON only (the weights file is not touched).  With it the
in-betweener averages its fill with the mirrored fill of the mirrored keys (``backend.motion.inbetween.fill``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from backend.formats.atomic import write_text

from .augment import fit_mirror
from .data import DEFAULT_DATA, load_split


def mirror_of_training_data(data, cache=None, exclude=()):
    """The mirror map fitted as ``training.augment.Augmenter`` fits it, on the train split."""
    ms = load_split(data, "train", cache, verbose=False, exclude=exclude)
    sample = ms.rotations[:: max(1, len(ms.rotations) // 4096)]
    return fit_mirror(ms.skeleton.names, ms.skeleton.parents, ms.positions.mean(0), sample)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.mirror_info", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--cache", default=None)
    args = ap.parse_args(argv)
    doc = json.loads(args.checkpoint.read_text())
    mirror = mirror_of_training_data(args.data, args.cache, tuple(doc.get("info", {}).get("left_out_kinds", [])))
    if mirror is None:
        print(f"error: {args.checkpoint}: the skeleton has no left/right pairs", file=sys.stderr)
        return 1
    doc.setdefault("info", {})["mirror"] = mirror.to_info()
    write_text(args.checkpoint, json.dumps(doc, indent=1), args.checkpoint.with_suffix(".json.tmp"))
    print(f"{args.checkpoint}: info.mirror stored ({int((mirror.partner != np.arange(len(mirror.partner))).sum())} "
          "joints with a partner)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
