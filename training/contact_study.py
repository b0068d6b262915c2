"""python -m training.contact_study KEY=VALUE[,KEY=VALUE] [evaluate's arguments]: the in-betweener as
shipped, its planted feet judged with another ``backend.contacts.ContactConfig`` (``slow=1.5``,
``near_ground=0.15``...), through ``training.evaluate`` (same windows, same columns): the trade between
feet that stay planted and rotations the fill would have made, chosen on validation.

    python -m training.contact_study slow=1.5 backend/checkpoints/inbetween.json --split val --every 6 \\
        --shipped-only --data <bandai folders> --other-data <cmu folder> --out runs/contacts_slow1.5

With ``untrusted`` among the fields (``outside=1,ease=8,untrusted``) the config judges only the gaps the guard
does not trust (its weight there below 1: the model blended towards the curves), the shipped one the others
(each gap is judged on its own frames, so the two passes' frames combine gap by gap).
"""
from __future__ import annotations

import dataclasses
import sys

import numpy as np

from backend import contacts, inbetween
from backend.engine import Engine

from . import evaluate

INTEGERS = ("min_frames", "ease")
BOOLEANS = ("ground_only", "outside")


def config(text: str) -> contacts.ContactConfig:
    """``slow=1.5,near_ground=0.15`` -> the shipped config with those fields changed."""
    names = {f.name for f in dataclasses.fields(contacts.ContactConfig)}
    changes = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        if key not in names:
            raise SystemExit(f"contact_study: {key!r} is not a ContactConfig field ({', '.join(sorted(names))})")
        if key in BOOLEANS and value.lower() not in ("1", "true", "0", "false"):
            raise SystemExit(f"contact_study: {key}={value!r}: use 1 / true or 0 / false")
        changes[key] = (int(value) if key in INTEGERS else value.lower() in ("1", "true") if key in BOOLEANS
                        else float(value))
    return dataclasses.replace(contacts.ContactConfig(), **changes)


def planted_where_untrusted(plant, cfg: contacts.ContactConfig, judged: dict):
    """``plant`` (``contacts.plant_feet``'s arguments) judging with ``cfg`` the gaps whose last guard weights
    (``judged["last"]``: the keys and a weight per gap, as ``Engine.remember_guard`` gets them) are below 1,
    with the shipped config the others and wherever those weights are not this call's keys'."""
    def planted(*a, **k):
        keys, weights = judged.get("last", (None, None))
        base = plant(*a)
        if keys != sorted(int(x) for x in a[4]) or not (weights < 1).any():
            return base
        other = plant(*a, cfg=cfg)
        for (x, y), w in zip(zip(keys, keys[1:]), weights):
            if w < 1:
                base[x + 1:y] = other[x + 1:y]
        return base
    return planted


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    fields = argv.pop(0).split(",")
    cfg = config(",".join(f for f in fields if f != "untrusted"))
    shipped, remember = inbetween.plant_feet, Engine.remember_guard
    judged = {}  # the guard's last weights, read by the planted-feet pass that follows them in Engine.inbetween

    def remember_and_keep(self, keys, clip, weights):
        judged["last"] = (list(keys), np.asarray(weights))
        return remember(self, keys, clip, weights)
    inbetween.plant_feet = (planted_where_untrusted(shipped, cfg, judged) if "untrusted" in fields
                            else lambda *a, **k: shipped(*a, cfg=cfg))
    Engine.remember_guard = remember_and_keep
    try:
        return evaluate.main(argv)
    finally:
        inbetween.plant_feet, Engine.remember_guard = shipped, remember


if __name__ == "__main__":
    sys.exit(main())
