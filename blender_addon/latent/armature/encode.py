"""Encode an armature's motion into latent controls, and keep Inbetween's controls editable.

Like ``fill``: every check and the backend call come before the first write, so a refusal
leaves the scene exactly as it was.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ... import bridge
from ...core import constraints, latent_math, layer_math, rig_math
from ...core.errors import Refusal
from ...io import bone_map as bone_map_io
from ...io import constraints as constraints_io
from ...io import keys as keys_io
from ...io import latent as latent_io
from ...io import nla
from ...io import scene as scene_io
from .. import core as latent_core
from . import layer, retarget, take


def _armature(obj):
    return scene_io.editable_keys(obj)  # linked or overridden: refused before anything is written


def action_range(obj) -> tuple[int, int]:
    a, b = obj.animation_data.action.frame_range
    return int(round(a)), int(round(b))


def encode(obj, settings: bridge.BackendSettings, path, start: int, end: int, fps: float = 30.0,
           bone_map: dict | None = None) -> str:
    """Encode scene frames ``start..end`` of the armature's driven channels.  Nothing is written: the
    keys stay the user's, and the sliders edit them as a layer (``armature``)."""
    t0 = time.perf_counter()
    if obj is not None and obj.type == "ARMATURE" and obj.splinetween_latent.active:
        raise Refusal(f"{obj.name} already has latent controls (frames {obj.splinetween_latent.frame_start}-"
                      f"{obj.splinetween_latent.frame_end}); Bake or Remove them first")
    if obj is not None and nla.only_in_nla(obj):  # (as Inbetween says it: not "no keys")
        raise Refusal(nla.only_in_nla(obj) + "; nothing was changed")
    shared = take.shared_refusal(obj, "Encode") if obj is not None and obj.type == "ARMATURE" else None
    if shared:
        raise Refusal(shared)
    bag = _armature(obj)
    meta = latent_core.checkpoint_meta(path)
    why = bridge.wrong_kind(path, ("motion", "autoencoder"), "Encode")  # (says what it is and what uses it)
    if why:
        raise Refusal(why)
    n = end - start + 1
    timebase = bridge.numpy_module("maths.timebase")
    model_ft = timebase.model_frame_time({"frame_time": meta.get("frame_time")})
    if timebase.model_length(n, 1.0 / fps, model_ft) < meta["min_frames"]:  # the model counts its own frames
        least = next((k for k in range(2, 1000 * meta["min_frames"])
                      if timebase.model_length(k, 1.0 / fps, model_ft) >= meta["min_frames"]), n + 1)
        raise Refusal(f"frames {start}-{end} are {n} frame{'s' * (n != 1)}; the model needs at least "
                      f"{least} at {fps:.4g} fps (encode a longer range)")
    try:
        info = bridge.describe(bridge.BackendSettings(checkpoint=str(path)))
    except bridge.BridgeError as e:
        raise Refusal(str(e)) from None
    rt, bones, rot_j, pos_j = joint_bones(obj, info, bone_map)
    written = constraints.written_channels(bones, rot_j, pos_j)
    left = {b: d.describe() for b, d in constraints_io.driven_bones(obj, written).items()}
    frames = np.arange(start, end + 1, dtype=np.float64)
    curves = keys_io.curve_map(bag)
    channels = latent_io.channel_list(obj, bones, set(rot_j), set(pos_j))
    values = latent_io.read_values(obj, bag, channels, frames, curves)
    if rt.native:  # the data set's skeleton: each bone converts on its own (``rig_math``)
        rig = scene_io.rig_frames(obj, bones, info.offsets)
        offsets, cm_per_unit, mapped = rig.bvh_offsets(), rig.cm_per_unit, None
        rot, pos = rig_math.blender_to_bvh(rig, *latent_io.values_to_pose(channels, bones, values))
    else:  # through the bone map's conversion, as Inbetween reads the rig
        offsets, cm_per_unit = rt.offsets, rt.scale
        mapped = [rt.bone_of(j) if j in rt.mapped else "" for j in range(len(info.names))]
        rot, pos = retarget.model_pose(obj, bag, rt, channels, bones, values, frames)[:2]
    bad = ~(np.isfinite(rot).all((1, 2)) & np.isfinite(pos).all((1, 2)))
    if bad.any():
        raise Refusal(f"the curves hold NaN or infinite values at frame(s) {frames[bad][:5].astype(int).tolist()}")
    header = {"op": "encode", "checkpoint": str(path), "frame_time": 1.0 / fps, "decode": True}
    try:
        reply, out = bridge.request(settings, header, {"offsets": offsets, "rotations": rot,
                                                       "positions": pos})
    except bridge.BridgeError as e:
        raise Refusal(f"the backend failed, nothing was changed: {e}") from None
    snap = latent_io.snapshot(bag, list(dict.fromkeys((scene_io.bone_path(b, p), i) for b, p, i, _ in channels)),
                              curves)
    install(obj, task="AUTOENCODER", path=path, start=start, frames=n, bones=bones,
                     rotation_joints=rot_j, position_joints=pos_j, joint_bones=mapped,
                     cm_per_unit=cm_per_unit, segments=reply["segments"], points=out["points"],
                     origins=out["origins"], template=out["template"], principal_names=reply["principal_names"],
                     principal_descriptions=reply.get("principal_descriptions", ()),
                     fidelity=reply.get("fidelity"), snapshot=snap, values=values,
                     model_segments=reply.get("model_segments"), left=list(left))
    layer.prime(obj.splinetween_latent, out["rotations"], out["positions"])
    s = len(reply["segments"])
    poor = layer_math.fidelity_problem(reply["fidelity"])
    return (f"Encoded frames {start}-{end} into {s} segment{'s' * (s != 1)} of {latent_math.POINTS} control points "
            f"in {1e3 * (time.perf_counter() - t0):.0f} ms; the keys are unchanged"
            + (f". {poor}" if poor else "") + (f"; {constraints.report(left)} (the sliders never write them)"
                                               if left else "")
            + (bone_map_io.unmapped_note(info.names, [b or None for b in mapped]) if mapped else ""))


def install(obj, *, task: str, path: Path, start: int, frames: int, bones, rotation_joints, position_joints,
            cm_per_unit: float, segments, points, origins, template, principal_names, snapshot, values,
            principal_descriptions=(), fidelity=None, base=None, keys=None, key_rotations=None,
            key_positions=None, model_segments=None, model_keys=None, left=(), joint_bones=None) -> None:
    """Store a latent range on the object: bookkeeping, raw control points, the keys before it (Remove)
    and its original (``base`` keys when they differ from those before, ``values`` on every frame).
    ``model_segments``: a range encoded at another frame rate than the model's, its segments on the model's
    grid, and for an in-betweened one ``model_keys`` (every decode request names them: ``backend.maths.timebase``).  ``left``: bones driven by constraints, which
    the sliders never write.  ``joint_bones``: a rig other than the data set's skeleton, the bone of every
    joint ("" where unmapped; ``bones`` are then the mapped ones and the joint lists index into them)."""
    st = obj.splinetween_latent
    latent_core.install_controls(obj, task=task, path=path, start=start, frames=frames, segments=segments,
                                 points=points, principal_names=principal_names,
                                 principal_descriptions=principal_descriptions, fidelity=fidelity)
    with latent_core.suspended():
        st.cm_per_unit = float(cm_per_unit)
        latent_core.store(st, "bones", list(bones))
        latent_core.store(st, "rotation_joints", np.asarray(rotation_joints, dtype=np.int32))
        latent_core.store(st, "position_joints", np.asarray(position_joints, dtype=np.int32))
        latent_core.store(st, "origins", np.asarray(origins, dtype=np.float64).ravel())
        latent_core.store(st, "template", np.asarray(template, dtype=np.float64).ravel())
        if keys is not None:
            latent_core.store(st, "keys", np.asarray(keys, dtype=np.int32))
            latent_core.store(st, "key_rotations", np.asarray(key_rotations, dtype=np.float64).ravel())
            latent_core.store(st, "key_positions", np.asarray(key_positions, dtype=np.float64).ravel())
        if left:
            latent_core.store(st, "left", sorted(left))
        if joint_bones is not None:
            latent_core.store(st, "joint_bones", list(joint_bones))
        if model_segments is not None:
            latent_core.store(st, "model_segments", np.asarray(model_segments, dtype=np.int32).ravel())
        if model_keys is not None:
            latent_core.store(st, "model_keys", np.asarray(model_keys, dtype=np.int32))
        latent_core.store(st, "original", latent_math.pack_curves(snapshot))
        if base is not None:
            latent_core.store(st, "base", latent_math.pack_curves(base))
        latent_core.store(st, "base_values", np.asarray(values, dtype=np.float64).ravel())
        bounds = latent_math.output_bounds([(a, b) for a, b in segments], frames, frames)
        for seg, sig in zip(st.segments, latent_core.neutral_signatures(st, bounds), strict=True):
            seg.signature = sig  # the keys show the original: every segment at neutral
        take.remember(obj)
        st.shown_id = "installed"  # (what the layer writes is recorded from here on: ``carry``)


def joint_bones(obj, info, given: dict | None = None):
    """-> (conversion, the bones the layer writes, their rotation and position joints as indices into
    them), through the armature's bone map (given, else stored, else detected).  The data set's skeleton:
    a bone per joint in joint order; any other rig: the mapped joints' bones (unmapped joints are not
    written; bones in between keep their animation)."""
    _, mapped = bone_map_io.resolve(obj, info.names, info.parents, given)
    rt = bone_map_io.conversion(obj, info, mapped)
    if rt.native:
        return rt, list(mapped), list(info.rotation_joints), list(info.position_joints)
    return (rt, [rt.bone_of(j) for j in rt.mapped], rt.on_mapped(info.rotation_joints),
            rt.on_mapped(info.position_joints))


def install_inbetween(obj, path, plan_start: int, keys, bones, info, rt, key_rot, key_pos, reply, out, snap) -> None:
    """After Inbetween wrote every frame between its keys: keep its control points editable.  The fill
    it wrote is the layer's original (``base``); ``snap`` (the keys before it) is what Remove restores.
    ``bones``: the mapped joints' bones (``rt``: the conversion the fill was written with)."""
    points = np.asarray(out["points"], dtype=np.float64)
    n = keys[-1] + 1
    rot_j, pos_j = rt.on_mapped(info.rotation_joints), rt.on_mapped(info.position_joints)
    mapped = None if rt.native else [rt.bone_of(j) if rt.joint_bone[j] >= 0 else "" for j in range(len(info.names))]
    bag = scene_io.channelbag(obj)
    curves = keys_io.curve_map(bag)
    channels = latent_io.channel_list(obj, bones, set(rot_j), set(pos_j))
    values = latent_io.read_values(obj, bag, channels, np.arange(plan_start, plan_start + n), curves)
    base = latent_io.snapshot(bag, list(dict.fromkeys((scene_io.bone_path(b, p), i) for b, p, i, _ in channels)),
                              curves)
    install(obj, task="INBETWEEN", path=path, start=plan_start, frames=n, bones=bones,
                     rotation_joints=rot_j, position_joints=pos_j, joint_bones=mapped,
                     cm_per_unit=rt.scale, segments=reply["segments"], points=points, origins=out["origins"],
                     template=out["template"], principal_names=[], snapshot=snap, values=values, base=base,
                     keys=keys, key_rotations=key_rot, key_positions=key_pos,
                     model_segments=reply.get("model_segments"), model_keys=reply.get("model_keys"))
