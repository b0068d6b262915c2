"""Encode and edit of .bvh files: the backend's own ``Engine`` in this worker, as ``python -m backend
edit`` runs it, so that a .bvh comes out exactly as the backend CLI writes it.

The engine is the backend service's cached one (``backend.service.get_engine``, the cache the
add-on's in-process mode uses too), found the way the bridge finds the backend (the copy bundled
in the extension, else the source tree's).  This needs PyTorch in the worker's Python, as
``python -m blender_addon.batch`` in the project's environment has; .blend files go through the
add-on's latent controls and the bridge instead (in-process or the backend process).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from .. import bridge
from . import safe_io
from .errors import JobError


def autoencoder(state):
    """The motion autoencoder (``--checkpoint``, default the shipped one), loaded once per worker."""
    if not bridge.torch_available():
        raise JobError("encode and edit of .bvh files run the model in the worker's Python, which cannot import "
                       "PyTorch; run the batch with an interpreter that has it (python -m blender_addon.batch)")
    try:
        return bridge.backend_module("service").get_engine(str(state.autoencoder), state.backend.device, "autoencoder")
    except ValueError as e:
        raise JobError(str(e)) from None


def preload(state) -> str:
    if bridge.resolve_mode(state.backend) == "IN_PROCESS":
        engine = autoencoder(state)
        return f"in-process backend, {engine.path.name} on {engine.device}"
    info = bridge.describe(dataclasses.replace(state.backend, checkpoint=str(state.autoencoder)))
    header = {"op": "decode", "checkpoint": str(state.autoencoder), "task": "autoencoder", "segments": [],
              "lengths": [], "amplify": [], "timing": [], "principal": [], "keys": None}
    arrays = {"points": np.zeros((0, 4, 1)), "origins": np.zeros((0, 3)), "template": np.zeros((len(info.names), 3))}
    reply, _ = bridge.request(state.backend, header, arrays)  # an empty decode: loads the model, nothing else
    return f"backend process, {Path(state.autoencoder).name} on {reply.get('device')}"


def check_clip(engine, clip) -> None:
    try:
        engine.check_clip(clip)
    except ValueError as e:
        raise JobError(str(e)) from None


def encode(engine, clip):
    """The clip's control points, encoded at the model's rate (a 24 fps file is resampled to it first: the
    controls' ``frames`` and ``frame_time`` are the model's grid)."""
    check_clip(engine, clip)
    return engine.encode(bridge.backend_module("maths.timebase").to_model_rate(clip, engine.frame_time))


def edit(engine, clip, opts: dict):
    """Encode, edit the control points (amplify, principal directions, styles), decode (timing, supersample):
    the steps of ``python -m backend edit``."""
    edits = bridge.backend_module("motion.edits")
    check_clip(engine, clip)
    pca = engine.principal()
    amounts = [float(v) for v in opts.get("pc") or []]
    if any(amounts) and pca is None:
        raise JobError(f"{engine.path.name} has no principal directions (--pc needs them)")
    if pca is not None and len(amounts) > len(pca[1]):
        raise JobError(f"--pc: {engine.path.name} has principal directions 1..{len(pca[1])}")
    try:  # bounded before decoding, as python -m backend edit
        edits.check_supersample(int(opts.get("supersample", 1)), min(clip.num_frames, engine.ckpt.window))
    except ValueError as e:
        raise JobError(str(e)) from None
    style = bridge.backend_module("motion.style")
    try:  # (the CLI checked the names against the checkpoint's; a worker told another checkpoint checks again)
        strengths = style.checked_strengths(engine.styles(), dict(opts.get("style") or {}), engine.path.name)
    except ValueError as e:
        raise JobError(str(e)) from None
    timebase = bridge.backend_module("maths.timebase")
    work = timebase.to_model_rate(clip, engine.frame_time)  # at the model's rate, and back on the file's frames
    controls = engine.encode(work)
    if opts.get("match_style"):  # the reference's style, read against this input (python -m backend edit)
        strengths = dict(strengths)
        for n, s in _matched(engine, Path(opts["match_style"]), controls, float(opts.get("style_strength", 1.0))):
            strengths[n] = strengths.get(n, 0.0) + s
    pts = edits.edit_points(controls.points, amplify_by=float(opts.get("amplify", 1.0)), principal=pca,
                            amounts=amounts)
    scale = int(opts.get("supersample", 1))
    # no style (or every strength 0): engine.decode itself, bit for bit; else root path and contacts kept
    out = style.styled_decode(engine, controls, pts, strengths, scale=scale, timing=float(opts.get("timing", 0.0)),
                              like=work, pin=not opts.get("free_root"))
    out = timebase.to_clip_rate(out, clip, scale)
    if not opts.get("keep_duration"):
        out.frame_time = clip.frame_time  # slow motion: more frames at the same rate
    if not (np.isfinite(out.rotations).all() and np.isfinite(out.positions).all()):
        raise JobError("the edited motion has NaN or infinite values; nothing was written (use smaller edits)")
    return out


def _matched(engine, ref: Path, controls, strength: float):
    """--match-style's mix for one input: ``(name, strength)`` pairs."""
    match, bvh = bridge.backend_module("motion.style_match"), bridge.backend_module("formats.bvh")
    try:
        mix = match.matched(engine, match.reference_controls(engine, bvh.read_bvh(ref)), controls, strength)[1]
    except (ValueError, OSError) as e:
        raise JobError(f"--match-style {ref.name}: {e}") from None
    return list(mix.items())


def controls_json(controls) -> dict:
    return {"frames": controls.num_frames, "frame_time": controls.frame_time,
            "segments": [list(s) for s in controls.segments], "points": np.asarray(controls.points).tolist(),
            "origins": np.asarray(controls.origins).tolist(), "template": np.asarray(controls.template).tolist()}


def json_writer(job: dict, engine, found: dict):
    doc = {"format": "splinetween-controls", "version": 1, "source": job["source"], "checkpoint": str(engine.path),
           "principal_names": engine.principal_names(), "principal_descriptions": engine.principal_descriptions(),
           "clips": found}

    def write(tmp: Path) -> None:
        safe_io.write_checked(tmp, (json.dumps(doc) + "\n").encode("utf-8"))
    return write
