"""python -m training.model_card CKPT EVAL.json --command "..." : write NAME.md, record test metrics.

The card says what the checkpoint is (data, split, config, steps, wall time), how it was
made (the exact command) and how it scores on the test split (from training.evaluate).
The metrics are also copied into the checkpoint's JSON ``info.metrics`` (``backend info`` shows them).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from backend.models.spline_transformer import ModelConfig
from backend.runtime.checkpoint import paths_for

ATTRIBUTION = ("Kobayashi et al., \"Motion Capture Dataset for Practical Use of AI-based Motion Editing and "
               "Stylization\", arXiv:2306.08861, 2023. Bandai-Namco-Research-Motiondataset, CC BY-NC 4.0.")


def flat_metrics(report: dict) -> dict:
    """``{column}_{metric}`` numbers (familiar / unfamiliar) for the checkpoint's info."""
    out = {}
    for col, res in (report.get("columns") or {}).items():
        rec = res.get("reconstruction")
        if rec:
            out.update({f"{col}_{k}": round(v, 4) for k, v in rec.items() if isinstance(v, (int, float))})
        for k, row in (res.get("inbetween") or {}).items():
            for method in ("model", "model_unguarded", "lerp_slerp", "blender_bezier"):
                for m, v in (row.get(method) or {}).items():
                    if isinstance(v, (int, float)):
                        out[f"{col}_k{k}_{method}_{m}"] = round(v, 4)
    return out


# The archives a run's --data may name (matched by their folder or archive name): what each is and its terms.
# ``commercial``: its terms let a studio use the output in a commercial production.
SOURCES = (
    ("bandai-namco-2", "Bandai-Namco-Research-Motiondataset-2", "CC BY-NC 4.0", False),
    ("bandai-namco-1", "Bandai-Namco-Research-Motiondataset-1 (the 135-clip part)", "CC BY-NC 4.0", False),
    ("cmu-mocap-daz", "CMU's takes in a DAZ-style conversion (14 takes, all train)", "CMU's terms: free to use, "
     "commercial products included, not to be resold as data", True),
    ("cmu-mocap", "CMU's cmu-mocap-part (98 clips; subjects 05 and 09 are validation)", "CMU's terms: free to use, "
     "commercial products included, not to be resold as data", True),
    ("hdm05", "HDM05 (287 ASF/AMC takes of 5 performers; performer tr is validation)", "CC BY-SA 3.0", True),
    ("reactidle", "ReActIdle (22 idle takes of 16 performers; 012-015 are validation)", "MIT", True),
)


def sources(data: str) -> list[tuple[str, str, str, bool]]:
    """The known archives among ``data`` (comma-separated paths), in the order of :data:`SOURCES`."""
    keys = set()
    for p in (Path(p.strip()) for p in str(data).split(",") if p.strip()):
        text = "/".join(p.parts).lower()
        keys.update(next(([k] for k, *_ in SOURCES if k in text), []))  # the first (most specific) key a path holds
    return [s for s in SOURCES if s[0] in keys]


def licence(found) -> list[str]:
    """The card's Licence section: the strictest terms among the data read."""
    if not found:
        return ["The training data is not one of the archives this card knows; its terms are the data's own."]
    if not all(c for *_, c in found):
        lines = ["Trained on CC BY-NC 4.0 data: these weights, and motion made with them, are for **non-commercial "
                 "use only**."]
    else:
        lines = ["Trained only on data whose terms allow commercial use: motion made with these weights may be used "
                 "in a commercial production."]
        if any(t.startswith("CC BY-SA") for _, _, t, _ in found):
            lines.append("Part of the data is CC BY-SA 3.0 (HDM05): share the weights, if you share them, under the "
                         "same terms and name the source.")
    lines += ["", "| data | terms |", "|---|---|"] + [f"| {what} | {terms} |" for _, what, terms, _ in found]
    if any(k.startswith("bandai") for k, *_ in found):
        lines += ["", f"> {ATTRIBUTION}"]
    return lines


def card(doc: dict, report: dict, command: str, name: str) -> str:
    info, model = doc["info"], doc["model"]
    cfg = info.get("config", {})
    found = sources(cfg.get("data", ""))
    lines = [f"# Model card: {name}", "",
             f"- **Task**: {info.get('task')} ({ModelConfig.from_json(model).family} transformer: d={model['latent']}, c={model['width']}, "
             f"n={ModelConfig.from_json(model).depth_text()}, h={model['heads']}, {model['controls']} control points, "
             f"{info.get('parameters')} parameters)",
             f"- **Data**: {'; '.join(what for _, what, _, _ in found) or cfg.get('data')}"
             f"{' (other skeletons read through backend.humanoid conversion)' if len(found) > 1 else ''}, "
             f"{info.get('train_clips')} "
             f"train clips ({info.get('train_frames')} frames); split: {info.get('split')}; kinds left out: "
             f"{', '.join(info.get('left_out_kinds') or []) or 'none'}; validation on the val splits; test numbers "
             f"on dataset-2's test split (id % 10 == 5), never used for tuning.",
             f"- **Training**: {info.get('steps')} steps, batch {cfg.get('batch_size')}, windows of "
             f"{cfg.get('min_window')}–{cfg.get('window')} frames, RAdam lr {cfg.get('lr')} with {cfg.get('warmup')} "
             f"warm-up steps and cosine annealing to {cfg.get('min_lr')}, gradient clipping {cfg.get('clip_grad')}, "
             f"FK loss weight {cfg.get('fk_weight')}, planted-foot loss weight {cfg.get('foot_weight', 0.0)}, "
             f"loss {cfg.get('loss', 'absolute')}, augmentation: yaw "
             f"{cfg.get('augment_yaw')}, mirror {cfg.get('augment_mirror', 0)}, time reversal "
             f"{cfg.get('augment_reverse', 0)}, speed 0.5-2x {cfg.get('augment_speed', 0)}, body mix "
             f"{cfg.get('augment_mix', 0)}, proportions +-{cfg.get('augment_scale', 0)}; normaliser floor "
             f"{cfg.get('norm_floor', 1e-3)}; converted clips drawn {cfg.get('converted_weight', 1.0)}x; linear path {cfg.get('linear_path', False)}; seed {cfg.get('seed')}; "
             f"{info.get('wall_time_s')} s wall on {cfg.get('threads') or 'all'} CPU thread(s) "
             f"({info.get('windows_per_s')} windows/s).",
             f"- **Best validation** (mean local rotation error, {'keys every 15' if info.get('task') == 'inbetween' else 'reconstruction'}): "
             f"{info.get('val_rot_deg', float('nan')):.3f} deg.",
             *_style_lines(info),
             "", "## Reproduce", "", "```bash", command, "```", "",
             "## Test metrics (training.evaluate: the data README's protocol, 61-frame windows, stride 61, in the "
             "generalisation protocol's familiar and unfamiliar columns, and the other studio's validation "
             "subjects where the report has them)", ""]
    md = report.get("markdown") or ""
    lines += [md.strip(), ""] if md else []
    twin = report.get("twin_markdown")
    if twin:
        lines += ["## Unfamiliar motion: the leave-out twin", "",
                  "The same recipe trained with `--leave_out=protocol` (every stage), so the unfamiliar column below "
                  "is motion it never saw; the model above trained on those kinds.", "", twin.strip(), ""]
    lines += ["## Licence", "", *licence(found), ""]
    return "\n".join(lines)


def _style_lines(info: dict) -> list[str]:
    """The style directions (training.style), when the checkpoint has them: names, each one's line, the source."""
    names = info.get("style_names") or []
    if not names:
        return []
    texts = info.get("style_descriptions") or [""] * len(names)
    return [f"- **Style directions** ({len(names)}, `python -m training.style`; {info.get('style_source', '')}):"] + [
        f"  - *{n}*: {t}" for n, t in zip(names, texts, strict=True)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.model_card", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", type=Path)
    ap.add_argument("report", type=Path, help="eval-test.json from training.evaluate")
    ap.add_argument("--command", required=True, help="the exact training command")
    ap.add_argument("--twin", type=Path, default=None,
                    help="eval-test.json of the recipe's leave-out twin (its unfamiliar column goes on the card)")
    args = ap.parse_args(argv)
    jpath, _ = paths_for(args.checkpoint)
    doc = json.loads(jpath.read_text())
    report = json.loads(args.report.read_text())
    md_path = args.report.with_suffix(".md")
    report["markdown"] = md_path.read_text().split("\n", 1)[1] if md_path.exists() else ""
    if args.twin is not None:
        twin_md = args.twin.with_suffix(".md")
        report["twin_markdown"] = twin_md.read_text().split("\n", 1)[1] if twin_md.exists() else ""
    doc["info"]["metrics"] = flat_metrics(report)
    doc["info"]["command"] = args.command
    jpath.write_text(json.dumps(doc, indent=1))
    out = jpath.with_suffix(".md")
    out.write_text(card(doc, report, args.command, jpath.stem))
    print(f"wrote {out} and metrics into {jpath}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
