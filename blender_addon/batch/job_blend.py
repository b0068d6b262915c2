"""The commands on a .blend file, in a worker (real bpy): open safely, work per armature, save a copy
(opening and saving: ``blend_file``).

Longer than 300 lines: each command's work per armature beside the safe open and save they share.
"""
from __future__ import annotations

import dataclasses
import fnmatch
from pathlib import Path

import bpy
import numpy as np

from .. import bridge
from ..core import constraints, layer_math
from ..core.errors import Refusal
from ..inbetween import fill
from ..io import bone_map as bone_map_io
from ..io import keys as keys_io
from ..io import nla
from ..io import scene as scene_io
from ..latent import core as latent_core
from ..latent import slider
from ..latent.armature import encode as latent_encode
from .blend_file import blend_writer, open_blend
from .errors import JobError


# -- choosing armatures and keys ---------------------------------------------------------------
def objects_of_type(patterns: list[str], entry: dict, kind: str, noun: str) -> list:
    """The file's local (not linked) objects of type ``kind``, by name; with ``patterns`` (--objects)
    only those matching, and a match of another type is named in the entry's warnings."""
    objs = sorted((o for o in bpy.data.objects if o.library is None), key=lambda o: o.name)
    if patterns:
        objs = [o for o in objs if any(fnmatch.fnmatchcase(o.name, p) for p in patterns)]
        for o in objs:
            if o.type != kind:
                entry["warnings"].append(f"{o.name} matches --objects but is a {o.type.lower()}, not {noun}")
    return [o for o in objs if o.type == kind]


def armatures(patterns: list[str], entry: dict) -> list:
    return objects_of_type(patterns, entry, "ARMATURE", "an armature")


def skip_linked(patterns: list[str], entry: dict) -> None:
    """Linked armatures (from another .blend) cannot be changed here: each is named as skipped, with
    the fix, so that a file holding only linked ones does not read as "the file has no armature"."""
    for o in sorted((o for o in bpy.data.objects if o.library is not None and o.type == "ARMATURE"),
                    key=lambda o: o.name):
        if not patterns or any(fnmatch.fnmatchcase(o.name, p) for p in patterns):
            _skip({"name": o.name, "status": "skipped", "reason": f"is linked from {o.library.filepath}, so its keys "
                   f"cannot be changed in this file ({scene_io.MAKE_LOCAL}, or run the batch on the library file)"},
                  entry)


def match(obj, info: bridge.ModelInfo, given: dict | None = None) -> list[str] | str:
    """The armature's mapped bones in the model's joint order (``given`` map, else the armature's own,
    else detected), or why it does not fit."""
    try:
        _, bones = bone_map_io.resolve(obj, info.names, info.parents, given)
    except Refusal as e:
        return f"does not fit the model's skeleton ({e})"
    return [b for b in bones if b]


def key_range(curves: dict) -> tuple[int, int] | None:
    xs = [fc.range() for fcs in curves.values() for fc in fcs if keys_io.count(fc)]
    if not xs:
        return None
    return int(np.floor(min(x[0] for x in xs) + 1e-4)), int(np.ceil(max(x[1] for x in xs) - 1e-4))


def _frames_of(obj, curves: dict, keys: dict) -> list[int]:
    src = keys["source"]
    if src == "every":
        lo, hi = key_range(curves)
        frames = list(range(lo, hi + 1, int(keys["every"])))
        return frames + ([hi] if frames[-1] != hi else [])
    if src == "marker":
        scenes = list(obj.users_scene) or [bpy.context.scene]
        return sorted({m.frame for s in scenes for m in s.timeline_markers
                       if fnmatch.fnmatchcase(m.name, keys["marker"])})
    return sorted({int(f) for f in keys["frames"]})


def select_frames(curves: dict, frames: list[int]) -> None:
    """Select exactly the keys on ``frames`` on the matched bones' curves; where no curve has a key
    on one of the frames, key one curve there with its own value (the handles of its other keys
    are put back, so the curve outside the filled range does not move)."""
    want = np.asarray(sorted(frames), dtype=np.float64)
    covered = set()
    for fcs in curves.values():
        for fc in fcs:
            x = keys_io.read(fc, ("co",))["co"][:, 0].astype(np.float64)
            on = np.isin(np.round(x), want) & (np.abs(x - np.round(x)) < 1e-4)
            keys_io.select(fc, on)
            covered.update(int(round(v)) for v in x[on])
    missing = [int(f) for f in want if int(f) not in covered]
    anchor = next((fc for fcs in curves.values() for fc in fcs), None)
    if not missing or anchor is None:
        return
    keys_io.insert_selected(anchor, missing)


def _has_gap(selected: dict) -> bool:
    return any(np.any(np.diff(sorted({round(f) for f in fr})) > 1) for fr in selected.values() if len(fr) >= 2)


def _fps(obj) -> float:
    scene = obj.users_scene[0] if obj.users_scene else bpy.context.scene
    return scene.render.fps / scene.render.fps_base


def _prepare(obj, info, entry: dict, need_keys: bool = True, given: dict | None = None):
    """(bones, bag, curves) for an armature that can take part, else a skip record."""
    bones = match(obj, info, given)
    if isinstance(bones, str):
        return {"name": obj.name, "status": "skipped", "reason": bones}
    if nla.only_in_nla(obj):
        return {"name": obj.name, "status": "skipped", "reason": nla.only_in_nla(obj)}
    bag = scene_io.channelbag(obj)
    curves = scene_io.curves_by_bone(bag, bones) if bag is not None else {}
    if need_keys and key_range(curves) is None:
        return {"name": obj.name, "status": "skipped", "reason": "has no keys on the model's bones"}
    return bones, bag, curves


def _skip(rec: dict, entry: dict) -> None:
    entry["objects"].append(rec)
    entry["warnings"].append(f"{rec['name']}: skipped, {rec['reason']}")


def _finish(entry: dict, what: str) -> None:
    if not any(o["status"] == "ok" for o in entry["objects"]) and not entry["errors"]:
        reasons = "; ".join(f"{o['name']}: {o['reason']}" for o in entry["objects"]) or "the file has no armature"
        entry["errors"].append(f"no armature was {what} ({reasons})")


# -- commands ----------------------------------------------------------------------------------
def inbetween(job: dict, state, entry: dict, progress):
    opts, keys = job["options"], job["options"]["keys"]
    open_blend(job["source"], entry)
    info = bridge.describe(state.backend)
    fill_opts = fill.Options(blend=float(opts.get("blend", 1.0)),
                             key_mode="EVERY_N" if int(opts.get("write_every", 1)) > 1 else "EVERY_FRAME",
                             step=max(2, int(opts.get("write_every", 1))),
                             all_bones=bool(opts.get("all_bones")) or keys["source"] in ("every", "marker", "frames"),
                             editable=bool(opts.get("editable", True)),
                             replace_latent=bool(opts.get("replace_latent")),
                             contacts=bool(opts.get("contacts", True)),
                             name_map=dict(opts.get("bone_map") or {}))
    skip_linked(opts.get("objects") or [], entry)
    for obj in armatures(opts.get("objects") or [], entry):
        got = _prepare(obj, info, entry, given=opts.get("bone_map"))
        if isinstance(got, dict):
            _skip(got, entry)
            continue
        bones, bag, curves = got
        problem = scene_io.action_problem(obj)  # before keys are selected or added
        if problem:
            entry["objects"].append({"name": obj.name, "status": "failed", "error": problem})
            entry["errors"].append(f"{obj.name}: {problem}")
            continue
        if keys["source"] == "present":
            for fcs in curves.values():
                for fc in fcs:
                    keys_io.select(fc, True)
        elif keys["source"] != "selected":
            frames = _frames_of(obj, curves, keys)
            if len(frames) < 2:
                entry["objects"].append({"name": obj.name, "status": "failed", "error": "fewer than two key frames"})
                entry["errors"].append(f"{obj.name}: fewer than two key frames ({keys['source']}: {frames})")
                continue
            select_frames(curves, frames)
        selected = {b: scene_io.selected_frames(c) for b, c in curves.items()}
        if not any(selected.values()):
            _skip({"name": obj.name, "status": "skipped", "reason": "has no selected keys"}, entry)
            continue
        if not _has_gap({"all": sorted(set().union(*selected.values()))} if fill_opts.all_bones else selected):
            _skip({"name": obj.name, "status": "skipped", "reason": "no frame lies between its selected keys"}, entry)
            continue
        try:
            *_, plan = fill.prepare(obj, state.backend, fill_opts, _fps(obj))
            message = fill.run(obj, state.backend, fill_opts, _fps(obj))
        except Refusal as e:
            entry["objects"].append({"name": obj.name, "status": "failed", "error": str(e)})
            entry["errors"].append(f"{obj.name}: {e}")
            continue
        written = sorted({int(f) for b in plan.gaps for f in plan.written_frames(b)})
        rec = {"name": obj.name, "status": "ok", "keys": plan.keys, "gaps": len({g for gl in plan.gaps.values()
                                                                               for g in gl}),
               "frames_written": len(written), "bones_written": len(plan.gaps), "message": message,
               "latent_controls": _latent_summary(obj)}
        if plan.left:  # bones under constraints: left as they were, and said so
            rec["constrained"] = dict(plan.left)
            entry["warnings"].append(f"{obj.name}: {constraints.report(plan.left)}")
        entry["objects"].append(rec)
        progress(rec["frames_written"])
    _finish(entry, "in-betweened")
    return blend_writer(job["source"])


def _latent_summary(obj) -> dict | None:
    st = getattr(obj, "splinetween_latent", None)
    if st is None or not st.active:
        return None
    out = {"task": st.task.lower(), "frames": [st.frame_start, st.frame_end], "segments": len(st.segments),
           "amplify": [round(seg.amplify, 6) for seg in st.segments],
           "timing": [round(seg.timing, 6) for seg in st.segments], "principal_names": latent_core.names(st)}
    fit = latent_core.fidelity(st)
    if fit is not None:  # the panel's readout: how well the model reconstructs each segment
        out["fidelity"] = {"rotation_deg": [round(float(r[0]), 3) for r in fit],
                           "position_cm": [round(float(r[1]), 3) for r in fit],
                           "warning": layer_math.fidelity_problem(fit)}
    return out


def _encode(obj, state, opts: dict) -> str:
    """The Encode button on one armature (range: --range, else the action's frame range)."""
    a, b = opts["range"] if opts.get("range") else latent_encode.action_range(obj)
    return latent_encode.encode(obj, state.backend, state.autoencoder, int(a), int(b), _fps(obj),
                                opts.get("bone_map"))


def _encode_each(job: dict, state, entry: dict, progress, edit_opts: dict | None):
    opts = job["options"]
    if edit_opts is not None and edit_opts.get("keep_duration"):
        raise JobError("--keep-duration is for .bvh files (in a .blend, set the scene's frame rate)")
    open_blend(job["source"], entry)
    info = bridge.describe(dataclasses.replace(state.backend, checkpoint=str(state.autoencoder)))
    skip_linked(opts.get("objects") or [], entry)
    for obj in armatures(opts.get("objects") or [], entry):
        got = _prepare(obj, info, entry, given=opts.get("bone_map"))
        if isinstance(got, dict):
            _skip(got, entry)
            continue
        st = obj.splinetween_latent
        try:
            if st.active and edit_opts is None:
                _skip({"name": obj.name, "status": "skipped", "reason": f"already has latent controls (frames "
                       f"{st.frame_start}-{st.frame_end})"}, entry)
                continue
            message = _encode(obj, state, opts) if not st.active else "its existing latent controls"
            frames = st.frames
            if edit_opts is not None:
                edited, frames = _edit(obj, state, edit_opts)
                message += "; " + edited
        except (Refusal, JobError) as e:
            entry["objects"].append({"name": obj.name, "status": "failed", "error": str(e)})
            entry["errors"].append(f"{obj.name}: {e}")
            continue
        rec = {"name": obj.name, "status": "ok", "message": message, "frames_written": frames,
               "latent_controls": _latent_summary(obj)}
        if st.active and "left" in st and len(st["left"]):
            rec["constrained"] = sorted(st["left"])
            entry["warnings"].append(f"{obj.name}: {len(st['left'])} bone(s) driven by constraints are never written "
                                     f"by the sliders: {', '.join(sorted(st['left']))}; mute the constraint or key "
                                     "its controller")
        entry["objects"].append(rec)
        progress(rec["frames_written"])
    _finish(entry, "edited" if edit_opts is not None else "encoded")
    return blend_writer(job["source"])


def _edit(obj, state, opts: dict) -> tuple[str, int]:
    """The sliders (every segment alike), then Resample and Bake as asked; -> (what, frames written)."""
    st = obj.splinetween_latent
    names = latent_core.names(st)
    pcs = [float(v) for v in opts.get("pc") or []]
    if len(pcs) > len(names):
        raise JobError(f"--pc: the checkpoint has {len(names)} principal direction(s)"
                       + (f" ({', '.join(names)})" if names else ""))
    style = dict(opts.get("style") or {})
    if opts.get("match_style"):
        raise JobError("--match-style is for .bvh files (a .blend's segments hold one named style each); give "
                       "--style NAME, or edit the .bvh")
    if len(style) > 1:
        raise JobError("a .blend's latent controls hold one style per segment; give one --style")
    if style and opts.get("free_root"):
        raise JobError("--free-root is for .bvh files (a .blend's Style keeps the root's path)")
    if style and st.task != "AUTOENCODER":
        raise JobError("these latent controls were made by Inbetween; a style applies to encoded ranges "
                       "(bake them first)")
    known, _ = latent_core.style_names(st.checkpoint)
    for name in style:
        if name not in known:
            raise JobError(f"unknown style {name!r}; {Path(st.checkpoint).name} knows: {', '.join(known) or 'none'}")
    with latent_core.suspended():  # one decode below, not one per slider
        for seg in st.segments:
            seg.amplify = float(opts.get("amplify", 1.0))
            seg.timing = float(opts.get("timing", 0.0))
            seg.principal = tuple(pcs + [0.0] * (len(seg.principal) - len(pcs)))
            for name, strength in style.items():
                seg.style, seg.style_strength = name, float(strength)
    slider.sync(obj)
    done = [f"amplify {opts.get('amplify', 1.0):g}, timing {opts.get('timing', 0.0):g}"
            + (f", principal {pcs}" if any(pcs) else "")
            + "".join(f", style {n} {s:g}" for n, s in style.items())]
    n = int(opts.get("supersample", 1))
    if n > 1:
        done.append(slider.resample(obj, state.backend, (st.frames - 1) * n + 1))
    frames = st.frames
    if opts.get("bake"):
        done.append(slider.bake(obj))
    return "; ".join(done), frames


def encode(job: dict, state, entry: dict, progress):
    return _encode_each(job, state, entry, progress, None)


def edit(job: dict, state, entry: dict, progress):
    return _encode_each(job, state, entry, progress, job["options"])


def info(job: dict, state, entry: dict, progress):
    opts = job["options"]
    open_blend(job["source"], entry, writes=False)
    model = bridge.describe(state.backend)
    for obj in armatures(opts.get("objects") or [], entry):
        bones = match(obj, model, opts.get("bone_map"))
        rec = {"name": obj.name, "bones": len(obj.data.bones), "fits_model": not isinstance(bones, str)}
        if isinstance(bones, str):
            rec["reason"] = bones
        ad = obj.animation_data
        rec["action"] = ad.action.name if ad is not None and ad.action is not None else None
        bag = scene_io.channelbag(obj)
        if bag is not None:
            pose_curves = [fc for fc in bag.fcurves if fc.data_path.startswith("pose.bones[")]
            rec["fcurves"] = len(bag.fcurves)
            rec["keys"] = sum(keys_io.count(fc) for fc in bag.fcurves)
            rng = key_range({"all": pose_curves})
            rec["key_range"] = list(rng) if rng else None
            rec["selected_key_frames"] = [int(round(f)) for f in scene_io.selected_frames(pose_curves)]
        scenes = list(obj.users_scene)
        rec["fps"] = _fps(obj)
        rec["markers"] = sorted(([m.name, m.frame] for s in scenes for m in s.timeline_markers), key=lambda m: m[1])
        rec["latent_controls"] = _latent_summary(obj)
        entry["objects"].append(rec)
    before = len(entry["warnings"])
    skip_linked(opts.get("objects") or [], {"objects": [], "warnings": entry["warnings"]})
    if not entry["objects"] and len(entry["warnings"]) == before:
        entry["warnings"].append("the file has no armature" + (" matching --objects" if opts.get("objects") else ""))
    return None
