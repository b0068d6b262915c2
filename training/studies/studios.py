"""Which model carries to studios it never saw?  Several models' ``training.evaluate`` reports side by side.

``python -m training.studies.studios NAME=EVAL.json [NAME=EVAL.json ...] [--out FILE.md]`` reads the reports
(each from ``python -m training.evaluate CKPT --blender-baseline --left-out HDM05=PATH ...``) and prints, per
column (familiar, unfamiliar kinds, each other studio's validation set, their mean, the left-out studio) and
per key spacing, every model's L2Q ÷ SLERP, MPJPE ÷ Blender's Bézier and planted-foot speed, the baselines of
the same run in the last rows.  Designs are chosen on the *other studio: mean* and the *left-out* rows of the
validation reports, never on one set and never on the test split.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _cell(res: dict, method: str) -> str:
    m = res.get(method)
    if not m:
        return "—"
    bez = (f"{m['mpjpe_cm'] / res['blender_bezier']['mpjpe_cm']:.2f}" if "blender_bezier" in res else "—")
    return f"{m['l2q'] / res['lerp_slerp']['l2q']:.2f} · {bez} · {m.get('foot_cm_s', float('nan')):.1f}"


def table(reports: dict[str, dict]) -> list[str]:
    """Markdown rows: one block per column the reports share, one row per model and spacing."""
    first = next(iter(reports.values()))
    names = [c for c in first["columns"] if all(c in r["columns"] for r in reports.values())]
    lines = []
    for col in names:
        ks = list(first["columns"][col]["inbetween"])
        lines += [f"### {col}", "", "L2Q ÷ SLERP · MPJPE ÷ Blender's Bézier · planted feet (cm/s)", "",
                  "| model | " + " | ".join(f"keys every {k}" for k in ks) + " |", "|---|" + "---|" * len(ks)]
        for label, rep in reports.items():
            lines.append(f"| {label} | " + " | ".join(_cell(rep["columns"][col]["inbetween"][k], "model")
                                                     for k in ks) + " |")
        res = first["columns"][col]["inbetween"]
        for method, label in (("lerp_slerp", "SLERP"), ("blender_bezier", "Blender's Bézier")):
            if all(method in res[k] for k in ks):
                lines.append(f"| {label} | " + " | ".join(_cell(res[k], method) for k in ks) + " |")
        if all("capture_foot_cm_s" in res[k] for k in ks):
            lines.append("| the capture's own feet | " + " | ".join(f"{res[k]['capture_foot_cm_s']:.1f}" for k in ks)
                         + " |")
        lines.append("")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.studies.studios", description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="+", metavar="NAME=EVAL.json")
    ap.add_argument("--out", type=Path, default=None, help="also write the tables to this Markdown file")
    args = ap.parse_args(argv)
    reports = {}
    for item in args.reports:
        name, _, path = item.rpartition("=")
        try:
            reports[name or path] = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            print(f"error: {path}: cannot read the report ({e})", file=sys.stderr)
            return 2
    splits = {r["split"] for r in reports.values()}
    if len(splits) > 1:
        print(f"error: the reports are of different splits ({', '.join(sorted(splits))}); compare one split",
              file=sys.stderr)
        return 2
    text = "\n".join([f"## {splits.pop()} split: " + ", ".join(reports), "", *table(reports)])
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
