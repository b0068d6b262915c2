"""python -m backend: reconstruct, inbetween, edit, info, export.

Each input file succeeds or fails on its own: a bad file is reported with its name and
no output is written for it; the exit status is 1 when any input failed, 2 for a usage error
(nothing is done), 130 when interrupted with Ctrl+C.  Outputs never replace an input and two
inputs never share an output (see ``cli_outputs``); docs/refusals.md lists every refusal.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from ..formats.bvh import BVHError, read_bvh
from ..maths import timebase
from ..runtime.checkpoint import CheckpointError
from . import interrupts
from . import outputs as cli_outputs


def _add_common(p, default_help="the shipped motion autoencoder"):
    p.add_argument("--checkpoint", help=f"checkpoint .json (default: {default_help})")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda", "mps"),
                   help="auto picks CUDA, then MPS, then CPU")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m backend", description="Splinetween backend: latent-spline motion.")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("reconstruct", help="encode each BVH to latent control points and decode it again",
                       description="Encode then decode BVH files; writes DIR/<same name>.bvh with the "
                                   "input's hierarchy, channels, frame time and frame count.")
    r.add_argument("inputs", nargs="+", type=Path, metavar="IN.bvh")
    r.add_argument("--out-dir", required=True, type=Path)
    _add_common(r)
    b = sub.add_parser("inbetween", help="fill every frame between key frames with learned motion",
                       description="Keep the key frames of each BVH and predict every frame between them. "
                                   "Frames that are not keys are never read (a stepped blocking pass is fine). "
                                   "Writes DIR/<same name>.bvh with the input's hierarchy, channels, frame "
                                   "time and frame count.")
    b.add_argument("inputs", nargs="+", type=Path, metavar="IN.bvh")
    keys = b.add_mutually_exclusive_group(required=True)
    keys.add_argument("--keys", help="0-based key frames, comma separated: 0,15,30")
    keys.add_argument("--every", type=int, metavar="K",
                      help="keys at frames 0, K, 2K, ... and the last frame (from the first frame of motion: a "
                           "capture's leading calibration frames, such as CMU's T-pose, are copied as they are)")
    b.add_argument("--out-dir", required=True, type=Path)
    b.add_argument("--no-contacts", dest="contacts", action="store_false",
                   help="leave the feet as the model moves them (by default a foot planted at two keys, or by "
                        "the model, stays planted between them)")
    _add_common(b, "the shipped in-betweening model")
    e = sub.add_parser("edit", help="edit the latent spline of each BVH: amplify, re-time, super-sample",
                       description="Encode each BVH with the autoencoder, edit its latent control points and "
                                   "decode: --amplify moves the inner control points away from the chord (>1 "
                                   "exaggerates, <1 tones down), --timing shifts where the motion happens, "
                                   "--pc I=S adds S standard deviations of principal direction I, "
                                   "--supersample N decodes N times as many frames (slow motion at the same "
                                   "frame time, or the same motion at N x the frame rate with --keep-duration).")
    e.add_argument("inputs", nargs="+", type=Path, metavar="IN.bvh")
    e.add_argument("--amplify", type=float, default=1.0)
    e.add_argument("--timing", type=float, default=0.0, help="-1..1; > 0 earlier, < 0 later")
    e.add_argument("--pc", action="append", default=[], metavar="I=S",
                   help="principal direction I (1-based) by S standard deviations; repeatable")
    e.add_argument("--style", action="append", default=[], metavar="NAME",
                   help="add the checkpoint's style NAME (an unknown name lists the known ones); repeatable")
    e.add_argument("--match-style", type=Path, metavar="REF.bvh",
                   help="take the style of another clip (any humanoid skeleton): REF is read as a mix of the "
                        "checkpoint's styles, printed, and that mix is added to each input")
    e.add_argument("--style-strength", type=float, default=1.0, metavar="S",
                   help="with --style or --match-style: 0 = as it is, 1 = the style as performed (default), "
                        ">1 exaggerates")
    e.add_argument("--free-root", action="store_true",
                   help="with --style: let the style change the root's path (by default it stays the source's)")
    e.add_argument("--supersample", type=int, default=1, metavar="N")
    e.add_argument("--keep-duration", action="store_true",
                   help="with --supersample: divide the frame time by N (same duration, higher frame rate)")
    e.add_argument("--out-dir", required=True, type=Path)
    _add_common(e)
    i = sub.add_parser("info", help="print what a checkpoint is", description="Print a checkpoint's skeleton, "
                       "sizes, training data and metrics.")
    i.add_argument("checkpoint", nargs="?", type=Path, metavar="CKPT")
    i.add_argument("--json", action="store_true", help="print JSON instead of text")
    x = sub.add_parser("export", help="write each checkpoint's ONNX graphs (the add-on's built-in backend)",
                       description="Write NAME.encode.onnx and NAME.decode.onnx next to each checkpoint's JSON "
                                   "(default: every shipped checkpoint), their weights pointing into the "
                                   "checkpoint's own safetensors; rerun when a checkpoint's weights change.")
    x.add_argument("checkpoints", nargs="*", type=Path, metavar="CKPT.json")
    return ap


def _load_inputs(paths, prepare, out_dir: Path, finite: bool = True):
    """Read and prepare each input on its own: a failure is recorded with the file's name.  Inputs
    whose output would replace an input or collide with another input's are refused first.
    -> (jobs, errors, targets)"""
    paths, targets, errors = cli_outputs.plan(list(paths), out_dir)
    jobs = []
    for p in paths:
        try:
            jobs.append((p, *prepare(read_bvh(p, finite=finite))))
        except (BVHError, ValueError) as e:
            errors.append(_named(p, e))
    return jobs, errors, targets


def _named(p, e) -> str:
    text = str(e) if str(p) in str(e) else f"{p}: {e}"
    if "skeleton does not match the checkpoint" in text:  # another skeleton: the batch command maps it
        text += (f"; a BVH of another skeleton in-betweens through a bone map (detected, or --bone-map "
                 f"MAP.json): python -m blender_addon.batch inbetween {p} --out-dir DIR")
    return text


def _out_dir(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"{path}: cannot create the output folder ({e.strerror})") from None
    return path


def _report(done: int, verb: str, errors: list[str], t0: float) -> int:
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    print(f"{done} {verb}, {len(errors)} failed in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    return 1 if errors else 0


def _checked(engine):
    def prepare(clip):
        engine.check_clip(clip)
        return (clip,)
    return prepare


def cmd_reconstruct(args) -> int:
    from ..motion.engine import Engine
    t0 = time.perf_counter()
    engine = Engine(args.checkpoint, args.device)
    jobs, errors, targets = _load_inputs(args.inputs, _checked(engine), args.out_dir)
    _out_dir(args.out_dir)
    done = 0
    if jobs:
        for (p, _), out in zip(jobs, engine.reconstruct([c for _, c in jobs]), strict=True):
            done += cli_outputs.write(targets[p], out, p, errors, "")
    return _report(done, "reconstructed", errors, t0)


def _parse_keys(text: str) -> list[int]:
    try:
        keys = [int(k) for k in text.replace(" ", "").split(",") if k != ""]
    except ValueError:
        raise ValueError(f"--keys {text!r}: expected comma-separated frame numbers like 0,15,30") from None
    if not keys:
        raise ValueError(f"--keys {text!r}: no frames given; list at least two 0-based key frames, like "
                         "--keys 0,15,30")
    return keys


def cmd_inbetween(args) -> int:
    from ..motion.calibration import motion_keys
    from ..motion.engine import DEFAULT_INBETWEEN, Engine
    from ..motion.inbetween.fill import checked_keys
    t0 = time.perf_counter()
    if args.every is not None and args.every < 1:
        raise ValueError("--every must be at least 1")
    fixed = _parse_keys(args.keys) if args.keys is not None else None
    engine = Engine(args.checkpoint or DEFAULT_INBETWEEN, args.device)
    engine.contacts = args.contacts

    def prepare(clip):
        keys = fixed if fixed is not None else motion_keys(clip.rotations, clip.frame_time, args.every)
        # the gap limit is the model's 2 s in the file's own frames (its Frame Time)
        checked_keys(keys, clip.num_frames, clip.frame_time, engine.ckpt.window - 1, engine.frame_time)
        engine.check_clip(clip, keys)  # only the key frames are read ...
        outside = [f for f in cli_outputs.bad_frames(clip) if f < keys[0] or f > keys[-1]]
        if outside:  # ... and the frames outside the keys, which are copied as they are
            raise ValueError(f"NaN or infinite values in frame(s) {outside[:5]}, outside the keys {keys[0]}.."
                             f"{keys[-1]} (they would be copied as they are; add keys that cover them)")
        return clip, keys

    jobs, errors, targets = _load_inputs(args.inputs, prepare, args.out_dir, finite=False)
    _out_dir(args.out_dir)
    done = 0
    if jobs:  # all good inputs in one batched call
        results = engine.inbetween([c for _, c, _ in jobs], [k for _, _, k in jobs])
        for (p, _, keys), (out, _) in zip(jobs, results, strict=True):
            done += cli_outputs.write(targets[p], out, p, errors, f", {len(keys)} keys")
    return _report(done, "in-betweened", errors, t0)


def _parse_pcs(items: list[str], available: int) -> list[float]:
    amounts = [0.0] * available
    for item in items:
        try:
            index, value = item.split("=")
            i, v = int(index), float(value)
        except ValueError:
            raise ValueError(f"--pc {item!r}: expected I=S, for example --pc 1=2.0") from None
        if not math.isfinite(v):
            raise ValueError(f"--pc {item!r}: S must be a finite number of standard deviations, for example "
                             "--pc 1=2.0")
        if not 1 <= i <= available:
            raise ValueError(f"--pc {item!r}: the checkpoint has principal directions 1..{available}")
        amounts[i - 1] = v
    return amounts


def cmd_edit(args) -> int:
    from ..motion.edits import check_supersample, edit_points
    from ..motion.engine import Engine
    t0 = time.perf_counter()
    if args.supersample < 1:
        raise ValueError("--supersample must be at least 1")
    if not -1.0 <= args.timing <= 1.0:
        raise ValueError("--timing must be between -1 and 1")
    if not math.isfinite(args.amplify):
        raise ValueError(f"--amplify {args.amplify}: give a finite factor (>1 exaggerates, <1 tones down), "
                         "for example --amplify 1.5")
    engine = Engine(args.checkpoint, args.device)
    pca = engine.principal()
    if args.pc and pca is None:
        raise ValueError(f"{engine.path}: this checkpoint has no principal directions (--pc needs them)")
    amounts = _parse_pcs(args.pc, len(pca[1]) if pca else 0)
    from ..motion import style as style_edit
    strengths = style_edit.checked_strengths(engine.styles(), {n: args.style_strength for n in args.style},
                                             engine.path.name)  # before any file is read
    reference = _match_reference(engine, args.match_style) if args.match_style else None

    def prepare(clip):
        engine.check_clip(clip)
        check_supersample(args.supersample, min(clip.num_frames, engine.ckpt.window))  # before decoding
        return (clip,)

    jobs, errors, targets = _load_inputs(args.inputs, prepare, args.out_dir)
    _out_dir(args.out_dir)
    done = 0
    for p, clip in jobs:
        try:  # at the model's rate, and back on the file's frames (backend.maths.timebase)
            work = timebase.to_model_rate(clip, engine.frame_time)
            controls = engine.encode(work)
            pts = edit_points(controls.points, amplify_by=args.amplify, principal=pca, amounts=amounts)
            asked = strengths
            if reference is not None:
                from ..motion import style_match
                read, mix = style_match.matched(engine, reference, controls, args.style_strength)
                print(f"{p.name}: {args.match_style.name} reads as {style_match.describe(read)}")
                asked = dict(strengths)
                for n, s in mix.items():
                    asked[n] = asked.get(n, 0.0) + s
            out = style_edit.styled_decode(engine, controls, pts, asked, scale=args.supersample,
                                           timing=args.timing, like=work, pin=not args.free_root)
            out = timebase.to_clip_rate(out, clip, args.supersample)
        except ValueError as e:
            errors.append(_named(p, e))
            continue
        if args.keep_duration is False:
            out.frame_time = clip.frame_time  # slow motion: more frames at the same rate
        done += cli_outputs.write(targets[p], out, p, errors, "")
    return _report(done, "edited", errors, t0)


def _match_reference(engine, path: Path):
    """--match-style's reference read and encoded (``style_match.reference_controls``)."""
    from ..motion import style_match
    try:
        ref = read_bvh(path)
    except (BVHError, OSError) as e:
        raise ValueError(f"--match-style {path}: cannot read the reference ({e})") from None
    try:
        return style_match.reference_controls(engine, ref)
    except ValueError as e:
        raise type(e)(f"--match-style {path}: {e}") from None


def cmd_info(args) -> int:
    from ..motion.engine import DEFAULT_CHECKPOINT
    from ..runtime.checkpoint import load
    ck = load(args.checkpoint or DEFAULT_CHECKPOINT)
    skeleton, layout, info = ck.skeleton, ck.layout, ck.info
    if skeleton is None or layout is None:
        raise ValueError(f"{ck.path}: a mesh-sequence checkpoint; info describes motion checkpoints (skeleton, "
                         "features): read its JSON for the rest")
    if args.json:
        print(json.dumps({"path": str(ck.path), "model": ck.config.to_json(), "window": ck.window,
                          "joints": list(skeleton.names), "features": layout.to_json(), "info": info},
                         indent=1))
        return 0
    c = ck.config
    print(f"checkpoint  {ck.path}")
    print(f"model       {c.family} transformer: d={c.latent} c={c.width} n={c.depth_text()} h={c.heads} "
          f"controls={c.controls if c.family == 'spline' else 1} ({info.get('parameters', '?')} parameters)")
    print(f"task        {info.get('task', 'autoencoder')}, window {ck.window} frames")
    print(f"skeleton    {skeleton.num_joints} joints: {', '.join(skeleton.names)}")
    print(f"features    {len(layout.position_joints)} position joints, {len(layout.rotation_joints)} "
          f"rotation joints (6D), {layout.dim} values per frame")
    print(f"data        {info.get('data', '?')} [{info.get('split', '?')}]")
    print(f"training    {info.get('steps', '?')} steps, {info.get('wall_time_s', '?')} s wall")
    for k, v in sorted(info.get("metrics", {}).items()):
        print(f"metric      {k} = {v}")
    return 0


def cmd_export(args) -> int:
    from ..runtime.checkpoint import DEFAULT_DIR
    from ..runtime.export import export
    t0 = time.perf_counter()
    paths = args.checkpoints or sorted(p for p in DEFAULT_DIR.glob("*.json"))
    for p in paths:
        for out in export(p):
            print(f"{out} ({out.stat().st_size} bytes)")
    print(f"{len(paths)} exported in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "out_dir", None) is not None:  # temporaries removed there if Ctrl+C must force the exit
        interrupts.watch(args.out_dir)
    try:
        return {"reconstruct": cmd_reconstruct, "inbetween": cmd_inbetween, "edit": cmd_edit,
                "info": cmd_info, "export": cmd_export}[args.command](args)
    except (CheckpointError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted (Ctrl+C): stopped; files written before are complete, none is half-written",
              file=sys.stderr)
        return 130
