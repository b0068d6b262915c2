"""``python -m blender_addon.batch``: arguments, the list of files, skipping what is done, the run.

Exit status: 0 when every file is ok (or was already done), 1 when any file failed, 2 for a usage
error (nothing is done), 130 when interrupted with Ctrl+C.
"""
from __future__ import annotations

import argparse
import math
import os
import secrets
import sys
from pathlib import Path

from .. import bridge
from . import inputs, report, safe_io

COMMANDS = ("inbetween", "encode", "edit", "info", "mesh-inbetween", "mesh-encode")
BACKENDS = {"auto": "AUTO", "in-process": "IN_PROCESS", "process": "SUBPROCESS"}


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} must be at least 1")
    return v


def _frames(text: str) -> list[int]:
    try:
        frames = [int(k) for k in text.replace(" ", "").split(",") if k != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated frame numbers like 0,15,30") from None
    if len(frames) < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least two key frames, like 0,15,30")
    if frames != sorted(set(frames)):  # the same for .blend and .bvh files, as python -m backend
        raise argparse.ArgumentTypeError(f"{text!r}: key frames must be increasing and distinct (write "
                                         f"{','.join(map(str, sorted(set(frames))))})")
    return frames


def _range(text: str) -> list[int]:
    try:
        a, b = (int(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected FIRST:LAST scene frames, like 1:120") from None
    if b <= a:
        raise argparse.ArgumentTypeError(f"{text!r}: LAST must be after FIRST")
    return [a, b]


def _pc(text: str) -> tuple[int, float]:
    try:
        i, v = text.split("=")
        i, v = int(i), float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected I=S, for example 1=2.0") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r}: S must be a finite number of standard deviations, like 1=2.0")
    if i < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: principal directions are numbered from 1")
    return i, v


def _common(p: argparse.ArgumentParser, writes: bool = True, in_place: bool = True, what: str = "armatures") -> None:
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=".blend / .bvh / .amc files, globs (quoted: "
                   "'shots/**/*.blend') or folders (every .blend, .bvh and .amc below)")
    if writes:
        where = p.add_mutually_exclusive_group(required=True)
        where.add_argument("--out-dir", type=Path, help="write the outputs here, mirroring the input names")
        if in_place:
            where.add_argument("--in-place", action="store_true",
                               help="overwrite each input, after copying it to NAME1 (as Blender's .blend1)")
        p.add_argument("--force", action="store_true", help="redo files whose output is already complete")
    else:
        p.add_argument("--out-dir", type=Path, help="folder for the report")
    p.add_argument("--objects", "--object", action="append", default=[], metavar="PATTERN",
                   help=f"{what} whose name matches (fnmatch, repeatable; default: every one of them)")
    p.add_argument("--jobs", "-j", type=_positive, default=os.cpu_count() or 1,
                   help="worker processes (default: the number of cores, %(default)s here)")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                   help="where the model runs: auto (CUDA when available), cpu, cuda")
    p.add_argument("--backend", default="auto", choices=tuple(BACKENDS),
                   help="the model in the worker's Python (in-process), in a backend process, or auto")
    p.add_argument("--interpreter", default="", help="Python for --backend process (default: as the add-on)")
    p.add_argument("--checkpoint", default="", help="checkpoint .json (default: the shipped one for the command)")
    p.add_argument("--report", type=Path, help="the JSON report (default: OUT_DIR/splinetween-COMMAND-TIME.json)")
    if what == "armatures":
        p.add_argument("--asf", type=Path, metavar="FILE.asf", help=".amc: the takes' skeleton (default: the .asf "
                       "the take's name begins with, as CMU's 01.asf for 01_02.amc, else the one .asf beside it)")
        p.add_argument("--bone-map", type=Path, metavar="FILE.json", help=".blend: the model joint -> bone map "
                       "(a preset exported from the Bone Map panel) for every armature; by default each armature's "
                       "own map, else auto-detection")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds one file may take before its worker is "
                   "stopped and the file reported failed (0: no limit; default %(default)g)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m blender_addon.batch",
                                 description="Splinetween without a window: in-between, encode, edit or describe many "
                                             ".blend, .bvh and .amc files. .blend files are opened with scripts disabled.")
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("inbetween", help="fill the frames between keys with the model's motion")
    _common(b)
    keys = b.add_mutually_exclusive_group()
    keys.add_argument("--selected", action="store_const", dest="key_source", const="selected",
                      help=".blend: the keys selected in the file (the default), as the Inbetween button")
    keys.add_argument("--present", action="store_const", dest="key_source", const="present",
                      help=".blend: every key present on the rig's bones")
    keys.add_argument("--every", type=_positive, metavar="K", help="keys at the first frame, every K-th frame and "
                      "the last (.bvh: frames 0, K, ..., from the first frame of motion: a capture's calibration frames, such as "
                      "CMU's T-pose, are copied as they are; .blend: from the first key of the rig)")
    keys.add_argument("--marker", metavar="PATTERN", help=".blend: the frames of timeline markers whose name "
                      "matches (fnmatch)")
    keys.add_argument("--keys", type=_frames, metavar="F,F,...", help="these frames (.bvh: 0-based frame indices; "
                      ".blend: scene frame numbers)")
    b.add_argument("--model", default="studio", choices=[m.lower() for m in bridge.SHIPPED_INBETWEENERS],
                   help="the shipped in-betweener (without --checkpoint): " + "; ".join(
                       f"{m.lower()}: {label}" for m, (_, label, _tip) in bridge.SHIPPED_INBETWEENERS.items())
                   + " (default %(default)s; the terms of its training data are the terms of its output)")
    b.add_argument("--all-bones", action="store_true", help=".blend with --selected/--present: fill every bone of "
                   "the rig, not only the bones with selected keys (always on for --every, --marker, --keys)")
    b.add_argument("--write-every", type=_positive, default=1, metavar="N", help=".blend: a LINEAR key on every "
                   "frame (1, default) or BEZIER keys every N frames whose handles follow the motion")
    b.add_argument("--blend", type=float, default=1.0, help=".blend: 0 keeps the current curves, 1 (default) writes "
                   "the model's motion")
    b.add_argument("--no-editable", dest="editable", action="store_false",
                   help=".blend: plain keys only; by default, as the button, a range filled on every frame of every "
                        "bone keeps the model's control points as Latent Controls")
    b.add_argument("--no-contacts", dest="contacts", action="store_false",
                   help="leave the feet as the model moves them; by default, as the button, a foot planted "
                        "at two keys (or by the model) stays planted between them (.blend and .bvh)")
    b.add_argument("--replace-latent", action="store_true",
                   help=".blend: an armature that has Latent Controls gets them baked (their motion kept as keys) "
                        "and is in-betweened; by default it is left as it is and the report says why")
    for name, text in (("encode", "latent control points: .blend -> Latent Controls on each armature (as the "
                                  "Encode button); .bvh -> NAME.bvh.controls.json"),
                       ("edit", "encode, edit the control points, decode: amplify, re-time, principal directions")):
        e = sub.add_parser(name, help=text)
        _common(e, in_place=True)
        e.add_argument("--range", type=_range, metavar="FIRST:LAST",
                       help=".blend: scene frames to encode (default: the action's frame range, as the button)")
        if name == "edit":
            e.add_argument("--amplify", type=float, default=1.0, help=">1 exaggerates, <1 tones down")
            e.add_argument("--timing", type=float, default=0.0, help="-1..1; > 0 earlier, < 0 later")
            e.add_argument("--pc", type=_pc, action="append", default=[], metavar="I=S",
                           help="principal direction I (1-based) by S standard deviations; repeatable")
            e.add_argument("--style", action="append", default=[], metavar="NAME",
                           help="add the checkpoint's style NAME (active, elderly, ... for the shipped one; an "
                                "unknown name lists them); repeatable")
            e.add_argument("--match-style", type=Path, metavar="REF.bvh",
                           help=".bvh: take the style of another clip (any humanoid skeleton), read as a mix of "
                                "the checkpoint's styles against each input (python -m backend edit --match-style)")
            e.add_argument("--style-strength", type=float, default=1.0, metavar="S",
                           help="with --style or --match-style: 0 = the motion as it is, 1 = the style as performed (default), "
                                ">1 exaggerates, <0 moves away")
            e.add_argument("--free-root", action="store_true",
                           help="with --style: let the style change the root's path (by default it keeps the source's)")
            e.add_argument("--supersample", type=_positive, default=1, metavar="N", help=".bvh: N times the frames")
            e.add_argument("--keep-duration", action="store_true",
                           help=".bvh with --supersample: same duration at N times the frame rate")
            e.add_argument("--bake", action="store_true", help=".blend: keep plain keys, drop the latent controls "
                           "(default: the output keeps them, with the sliders set, for more editing in Blender)")
    _mesh_parsers(sub)
    i = sub.add_parser("info", help="what each file holds: armatures, keys, markers, scripts; whether rigs fit")
    _common(i, writes=False)
    i.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    return ap


def _mesh_parsers(sub) -> None:
    for name, text in (("mesh-inbetween", "mesh sequences (.blend): keep key frames of each mesh's evaluated shape, "
                                          "fill the rest (the Inbetween Mesh button); a PC2 per object"),
                       ("mesh-encode", "mesh sequences (.blend): latent controls on each mesh (the Encode Mesh "
                                       "button); the decode as a PC2 per object")):
        m = sub.add_parser(name, help=text)
        _common(m, what="mesh objects")
        m.add_argument("--range", type=_range, metavar="FIRST:LAST",
                       help="scene frames (default: the scene's frame range, or its preview range, as the button)")
        if name == "mesh-inbetween":
            keys = m.add_mutually_exclusive_group()
            keys.add_argument("--every", type=_positive, default=5, metavar="N",
                              help="key frames: the range's first frame, every N-th and its last (default %(default)s)")
            keys.add_argument("--keys", type=_frames, metavar="F,F,...", help="these scene frames as the key frames")


def _options(args) -> dict:
    """The options that change a file's output (they go into the done marker's digest)."""
    opts = {"objects": sorted(args.objects), "checkpoint": str(Path(args.checkpoint).expanduser().resolve())
            if args.checkpoint else ""}
    if getattr(args, "bone_map_bones", None) is not None:
        opts["bone_map"] = args.bone_map_bones
    if getattr(args, "asf", None) is not None:
        opts["asf"] = str(args.asf.expanduser().resolve())
    if args.command == "inbetween":
        src = ("every" if args.every else "marker" if args.marker else "frames" if args.keys is not None
               else args.key_source or "selected")
        opts["keys"] = {"source": src, "every": args.every, "marker": args.marker, "frames": args.keys}
        opts.update(all_bones=args.all_bones, write_every=args.write_every, blend=args.blend, editable=args.editable,
                    replace_latent=args.replace_latent, contacts=args.contacts)
    if args.command in ("encode", "edit", "mesh-encode", "mesh-inbetween"):
        opts["range"] = args.range
    if args.command == "mesh-inbetween":
        opts["keys"] = {"source": "frames" if args.keys is not None else "every",
                        "every": None if args.keys is not None else args.every, "frames": args.keys}
    if args.command == "edit":
        pcs = dict(args.pc)
        opts.update(amplify=args.amplify, timing=args.timing, supersample=args.supersample,
                    keep_duration=args.keep_duration, bake=args.bake, free_root=args.free_root,
                    style={n: args.style_strength for n in args.style},
                    match_style=str(args.match_style.expanduser().resolve()) if args.match_style else "",
                    style_strength=args.style_strength,
                    pc=[pcs.get(i + 1, 0.0) for i in range(max(pcs, default=0))])
    return opts


def _bone_map(ap, path: Path) -> dict:
    """A bone map preset file's joint -> bone map (its contents go into the options' digest)."""
    from ..humanoid import bone_map
    from ..io import bone_map_file
    try:
        return bone_map_file.read_file(Path(path).expanduser()).bones
    except OSError as e:
        ap.error(f"--bone-map {path}: {getattr(e, 'strerror', None) or e}")
    except bone_map.BoneMapError as e:
        ap.error(f"--bone-map {path}: {e}")


def _check_styles(ap, args) -> None:
    """--style names the checkpoint knows, at a finite strength: refused before any file is opened."""
    if not math.isfinite(args.style_strength):
        ap.error(f"--style-strength {args.style_strength}: give a finite number (0 = as it is, 1 = the style)")
    path = Path(args.checkpoint).expanduser() if args.checkpoint else bridge.default_autoencoder()
    try:
        known = bridge.read_model(path).style_names
    except bridge.BridgeError as e:
        ap.error(f"--checkpoint: {e}")
    if not known:
        ap.error(bridge.numpy_module("motion.style").no_styles_message(path.name))
    unknown = [n for n in args.style if n not in known]
    if unknown:
        ap.error(f"--style {unknown[0]}: unknown style; {path.name} knows: {', '.join(known)}")


def _validate(ap, args) -> None:
    if getattr(args, "bone_map", None) is not None:
        args.bone_map_bones = _bone_map(ap, args.bone_map)
    if getattr(args, "asf", None) is not None:
        asf = bridge.numpy_module("formats.asf")
        try:
            asf.read_asf(args.asf.expanduser())  # a skeleton that cannot be read fails no file: nothing starts
        except asf.ASFError as e:
            ap.error(f"--asf: {e}")
    if args.command == "inbetween" and not 0.0 <= args.blend <= 1.0:
        ap.error("--blend must be between 0 and 1")
    if args.command == "inbetween" and args.model != "studio":
        if args.checkpoint:
            ap.error(f"--model {args.model} and --checkpoint {args.checkpoint}: give one of them")
        args.checkpoint = str(bridge.default_checkpoint(args.model.upper()))
    if args.command == "edit" and not -1.0 <= args.timing <= 1.0:
        ap.error("--timing must be between -1 and 1")
    if args.command == "edit" and not math.isfinite(args.amplify):
        ap.error(f"--amplify {args.amplify}: give a finite factor (>1 exaggerates, <1 tones down), for example 1.5")
    if args.command == "edit" and (args.style or args.match_style):
        _check_styles(ap, args)
    if args.command == "edit" and args.match_style and not args.match_style.expanduser().is_file():
        ap.error(f"--match-style {args.match_style}: no such file (give the reference clip's .bvh)")
    if args.timeout < 0:
        ap.error("--timeout must be 0 (no limit) or more")
    if args.out_dir is not None:
        problem = inputs.folder_problem(args.out_dir)
        if problem:
            ap.error(f"--out-dir {args.out_dir}: {problem}")
    if args.report is not None:
        problem = inputs.folder_problem(args.report.expanduser().parent)
        if problem or args.report.expanduser().is_dir():
            ap.error(f"--report {args.report}: {problem or 'is a folder; give a file name, like report.json'}")


def _keep_duration_problem(args, items) -> str:
    """Why ``edit --supersample N --keep-duration`` cannot write these inputs, or "": an ``.amc`` holds no frame
    rate, so its N times the frames would be read at the rate every reader assumes (120 fps), N times slower."""
    n = getattr(args, "supersample", 1)
    takes = [it.source.name for it in items if it.file_type == "amc" and not it.problem]
    if args.command != "edit" or not getattr(args, "keep_duration", False) or n <= 1 or not takes:
        return ""
    names = ", ".join(takes[:3]) + (f" and {len(takes) - 3} more" if len(takes) > 3 else "")
    return (f"--keep-duration with --supersample {n}: {names} {'is an .amc' if len(takes) == 1 else 'are .amc'} "
            f"take{'s' if len(takes) > 1 else ''}, and an AMC holds no frame rate (its readers assume 120 fps), "
            f"so the same duration at {n} times the rate cannot be written; leave out --keep-duration ({n} times "
            "the frames at the take's rate: slow motion), or leave the .amc takes out of this run")


def _output_name(command: str):
    if command == "encode":  # a .bvh's latent spline goes beside it; a .blend keeps it on its armatures
        return lambda rel: rel.with_name(rel.name + ".controls.json") if rel.suffix.lower() in (".bvh", ".amc") else rel
    return None


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = build_parser()
    args = ap.parse_args(argv)  # exits 2 on a usage error
    _validate(ap, args)
    writes = args.command != "info"
    in_place = bool(getattr(args, "in_place", False))
    try:
        items = inputs.plan(args.inputs, args.out_dir if writes else None, in_place, _output_name(args.command),
                            file_types=("blend",) if args.command.startswith("mesh-") else None)
    except inputs.UsageError as e:
        ap.error(str(e))
    problem = _keep_duration_problem(args, items)
    if problem:
        ap.error(problem)  # (before any file is written)
    options = _options(args)
    digest = safe_io.options_digest(args.command, options)
    settings = {"command": args.command, "mode": BACKENDS[args.backend], "checkpoint": options["checkpoint"],
                "device": args.device,
                "interpreter": args.interpreter, "timeout": args.timeout or 1e9}
    run_id = secrets.token_hex(3)  # in the report's name and in every claim: which run holds what
    report_path = args.report.expanduser().resolve() if args.report is not None else None
    if report_path is None and (writes or args.out_dir):
        folder = args.out_dir if args.out_dir else inputs.common_base(items)
        report_path = report.default_path(Path(folder).resolve(), args.command, run_id)
    atomic = bridge.numpy_module("formats.atomic")
    who = atomic.owner(f"python -m blender_addon.batch {args.command}", run=run_id,
                       report=str(report_path) if report_path else "")
    held = None
    if args.report is not None:  # a name the user chose may be another run's too: one writer per report
        try:
            held = atomic.claim(report_path, who)
        except atomic.Busy as e:
            ap.error(f"--report {args.report}: {atomic.holder(e.owner)} is writing that report; give another "
                     "--report, or leave --report out (each run then writes its own, named with its run id)")
        except OSError as e:
            ap.error(f"--report {args.report}: cannot lock it ({e.strerror or e}); choose a folder you can write to")
    from .run import execute
    try:
        return execute(args, argv, items, options, digest, settings, report_path, in_place, who)
    finally:
        if held is not None:
            held.release()
