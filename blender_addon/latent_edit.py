"""The work behind Encode, Bake, Remove, Reset and Resample (thin operators call these).

Like ``fill``: every check and the backend call come before the first write, so a refusal
leaves the scene exactly as it was.
"""
from __future__ import annotations

import time

import bpy
import numpy as np

from . import bridge, latent, latent_io, rig_math, scene_io
from . import latent_math as LM
from .latent import Refusal


def _armature(obj):
    if obj is None or obj.type != "ARMATURE":
        raise Refusal("the active object is not an armature")
    problem = scene_io.action_problem(obj)  # linked or overridden: refuse before anything is written
    if problem:
        raise Refusal(problem)
    bag = scene_io.channelbag(obj)
    if bag is None or not len(bag.fcurves):
        raise Refusal(f"{obj.name} has no keys in its active action")
    return bag


def _shared_action(obj) -> str | None:
    action = obj.animation_data.action
    for other in bpy.data.objects:
        if other is not obj and other.type == "ARMATURE" and other.splinetween_latent.active \
                and other.animation_data and other.animation_data.action == action:
            return other.name
    return None


def action_range(obj) -> tuple[int, int]:
    a, b = obj.animation_data.action.frame_range
    return int(round(a)), int(round(b))


def encode(obj, settings: bridge.BackendSettings, path, start: int, end: int, fps: float = 30.0) -> str:
    """Encode scene frames ``start..end`` of the armature's driven channels and write the decode."""
    t0 = time.perf_counter()
    if obj is not None and obj.type == "ARMATURE" and obj.splinetween_latent.active:
        raise Refusal(f"{obj.name} already has latent controls (frames {obj.splinetween_latent.frame_start}-"
                      f"{obj.splinetween_latent.frame_end}); Bake or Remove them first")
    other = _shared_action(obj) if obj is not None and obj.animation_data else None
    if other:
        raise Refusal(f"{obj.name} shares its action with {other}, which has latent controls; "
                      "give this armature its own action (the number next to the action's name makes a copy)")
    bag = _armature(obj)
    meta = latent.checkpoint_meta(path)
    if meta["task"] != "autoencoder":
        raise Refusal(f"{path.name} is an {meta['task']} checkpoint; Encode needs a motion autoencoder "
                      "(Preferences > Add-ons > Splinetween > Autoencoder)")
    n = end - start + 1
    if n < meta["min_frames"]:
        raise Refusal(f"frames {start}-{end} are {n} frame{'s' * (n != 1)}; the model needs at least "
                      f"{meta['min_frames']} (encode a longer range)")
    try:
        info = bridge.describe(bridge.BackendSettings(checkpoint=str(path)))
        bones = rig_math.match_bones(info.names, info.parents, scene_io.bone_parents(obj))
    except bridge.BridgeError as e:
        raise Refusal(str(e)) from None
    except rig_math.RigMismatch as e:
        raise Refusal(f"{obj.name} does not match the model's skeleton ({path.name}): {e}") from None
    rig = scene_io.rig_frames(obj, bones, info.offsets)
    frames = np.arange(start, end + 1, dtype=np.float64)
    rot, pos = rig_math.blender_to_bvh(rig, *latent_io.read_pose(obj, bag, bones, frames))
    bad = ~(np.isfinite(rot).all((1, 2)) & np.isfinite(pos).all((1, 2)))
    if bad.any():
        raise Refusal(f"the curves hold NaN or infinite values at frame(s) {frames[bad][:5].astype(int).tolist()}")
    header = {"op": "encode", "checkpoint": str(path), "frame_time": 1.0 / fps}
    try:
        reply, out = bridge.request(settings, header, {"offsets": rig.bvh_offsets(), "rotations": rot,
                                                       "positions": pos})
    except bridge.BridgeError as e:
        raise Refusal(f"the backend failed, nothing was changed: {e}") from None
    channels = latent_io.driven_channels(obj, bones, info.rotation_joints, info.position_joints)
    snap = latent_io.snapshot(bag, [(scene_io.bone_path(b, p), i) for b, p, size, _ in channels
                                    for i in range(size)])
    latent.install(obj, kind="AUTOENCODER", path=path, start=start, frames=n, bones=bones,
                   rotation_joints=info.rotation_joints, position_joints=info.position_joints,
                   cm_per_unit=rig.cm_per_unit, segments=reply["segments"], points=out["points"],
                   origins=out["origins"], template=out["template"], principal_names=reply["principal_names"],
                   snapshot=snap)
    try:
        latent.sync(obj, force=True, fresh=True)
    except Refusal:
        latent.clear(obj)
        raise
    s = len(reply["segments"])
    return (f"Encoded frames {start}-{end} into {s} segment{'s' * (s != 1)} of {LM.POINTS} control points "
            f"in {1e3 * (time.perf_counter() - t0):.0f} ms")


def install_inbetween(obj, path, plan_start: int, keys, bones, info, rig, key_rot, key_pos, reply, out,
                      snap, out_rot, out_pos) -> None:
    """After Inbetween wrote every frame between its keys: keep its control points editable."""
    points = np.asarray(out["points"], dtype=np.float64)
    n = keys[-1] + 1
    latent.install(obj, kind="INBETWEEN", path=path, start=plan_start, frames=n, bones=bones,
                   rotation_joints=info.rotation_joints, position_joints=info.position_joints,
                   cm_per_unit=rig.cm_per_unit, segments=reply["segments"], points=points, origins=out["origins"],
                   template=out["template"], principal_names=[], snapshot=snap, keys=keys,
                   key_rotations=key_rot, key_positions=key_pos)
    st = obj.splinetween_latent
    bounds, sigs = latent.plan(st, points)
    with latent.suspended():
        for s, (a, b) in enumerate(bounds):  # the keys show the neutral decode: prime the cache with it
            latent._parts[st.token, s, sigs[s]] = (out_rot[a:b + 1], out_pos[a:b + 1])
            st.segments[s].signature = sigs[s]


def bake(obj) -> str:
    if obj.type == "MESH":
        from . import mesh_latent
        return mesh_latent.bake(obj)
    st = obj.splinetween_latent
    if not st.active:
        raise Refusal(f"{obj.name} has no latent controls")
    a, b = st.frame_start, st.frame_end
    latent.clear(obj)
    return f"Baked frames {a}-{b}: plain keys, latent controls removed"


def remove(obj) -> str:
    if obj.type == "MESH":
        from . import mesh_latent
        return mesh_latent.remove(obj)
    st = obj.splinetween_latent
    if not st.active:
        raise Refusal(f"{obj.name} has no latent controls")
    bag = scene_io.channelbag(obj)
    a, b = st.frame_start, st.frame_end
    note = ""
    if bag is None:
        note = " (the action is gone: nothing to restore)"
    else:
        latent_io.restore(bag, latent.original_keys(st), a, b, a + st.source_frames - 1)
    latent.clear(obj)
    return f"Removed the latent controls of frames {a}-{b}; the original keys are back{note}"


def reset(obj, segment: int | None = None) -> str:
    """Sliders back to neutral (one segment, or all) and the raw points back to the encoded ones."""
    st = obj.splinetween_latent
    if not st.active:
        raise Refusal(f"{obj.name} has no latent controls")
    which = range(len(st.segments)) if segment is None else [segment]
    if segment is not None and not 0 <= segment < len(st.segments):
        raise Refusal(f"there is no segment {segment + 1}")
    with latent.suspended():
        for s in which:
            seg = st.segments[s]
            seg.amplify, seg.timing, seg.principal = 1.0, 0.0, (0.0,) * len(seg.principal)
    latent.sync(obj)
    return f"Reset {'all segments' if segment is None else f'segment {segment + 1}'}"


def resample(obj, settings, frames: int) -> str:
    """Decode the range into ``frames`` frames (2x, 4x, or any length): the range stretches or
    compresses from its start, later keys move with its end, and the sliders keep working."""
    if obj.type == "MESH":
        from . import mesh_latent
        return mesh_latent.resample(obj, settings, frames)
    st = obj.splinetween_latent
    path, nothing = latent.resample_checkpoint(obj, st, frames)
    if path is None:
        return nothing
    bag = scene_io.channelbag(obj)
    if bag is None:
        raise Refusal(f"{obj.name} has no action any more; Bake or Remove the latent controls")
    src = [(seg.start, seg.end) for seg in st.segments]
    raw = latent.read_raw(obj, st)
    bounds, sigs = latent.plan(st, raw, frames)
    latent.decode(obj, st, path, settings, raw, range(len(src)), bounds, sigs)  # may refuse: nothing written yet
    if not st.snapshot_all:  # every curve is about to be re-timed: keep the originals of all
        have = {(p, int(i)) for p, i in zip(st["original"]["paths"], st["original"]["index"])}
        extra = [(fc.data_path, fc.array_index) for fc in bag.fcurves
                 if not LM.is_raw_path(fc.data_path) and (fc.data_path, fc.array_index) not in have]
        orig = latent.original_keys(st)
        merged = [(p, i, k) for (p, i), k in orig.items()] + latent_io.snapshot(bag, extra)
        with latent.suspended():
            st["original"] = LM.pack_curves(merged)
            st.snapshot_all = True
    channels = set()
    bones = list(st["bones"])
    rj = set(np.array(st["rotation_joints"]).tolist())
    pj = set(np.array(st["position_joints"]).tolist())
    for b, p, size, _ in latent_io.driven_channels(obj, bones, rj, pj):
        channels |= {(scene_io.bone_path(b, p), i) for i in range(size)}
    protected = latent._protected(st)
    lo, old_hi, new_hi = st.frame_start, st.frame_end, st.frame_start + frames - 1
    for fc in list(bag.fcurves):
        written = (fc.data_path, fc.array_index) in channels
        latent_io.retime_curve(fc, lo, old_hi, new_hi, keep_inside=not written, protected=protected)
    old = st.frames
    with latent.suspended():
        st.frames = frames
    latent.sync(obj, force=True, fresh=True)
    return f"Resampled frames {lo}-{old_hi} ({old} frames) to {lo}-{new_hi} ({frames} frames)"
