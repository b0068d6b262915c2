"""python -m training.contact_study KEY=VALUE[,KEY=VALUE] [evaluate's arguments]: the in-betweener as
shipped, its planted feet judged with another ``backend.motion.inbetween.contacts.ContactConfig`` (``slow=1.5``,
``near_ground=0.15``...), through ``training.evaluate`` (same windows, same columns): the trade between
feet that stay planted and rotations the fill would have made, chosen on validation.

    python -m training.contact_study slow=1.5 backend/checkpoints/inbetween.json --split val --every 6 \\
        --shipped-only --data <bandai folders> --other-data <cmu folder> --out runs/contacts_slow1.5
"""
from __future__ import annotations

import dataclasses
import sys

from backend.motion.inbetween import contacts
from backend.motion.inbetween import fill as inbetween

from . import evaluate

INTEGERS = ("min_frames", "ease", "untrusted_ease")
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


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    cfg = config(argv.pop(0))
    shipped = inbetween.plant_feet
    inbetween.plant_feet = lambda *a, **k: shipped(*a, cfg=cfg)
    try:
        return evaluate.main(argv)
    finally:
        inbetween.plant_feet = shipped


if __name__ == "__main__":
    sys.exit(main())
