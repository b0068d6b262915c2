"""The work behind the Inbetween operator: selection -> model keys -> backend -> F-curves.

Like the bundled BVH importer's ``load()``, a plain function the thin operator calls.  Every
check and the whole backend call happen before the first write, so a refusal or a backend
failure leaves the scene exactly as it was.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import bridge
from ..core import constraints, gaps
from ..core.errors import Refusal
from ..io import bone_map as bone_map_io
from ..io import constraints as constraints_io
from ..io import latent as latent_io
from ..io import nla
from ..io import scene as scene_io
from . import ik_targets
from .writer import write


@dataclass
class Options:
    blend: float = 1.0  # 0 keeps the existing curves, 1 writes the model's motion
    key_mode: str = "EVERY_FRAME"  # or "EVERY_N": BEZIER keys every ``step`` frames
    step: int = 5
    all_bones: bool = False  # write every matched bone, not only those with selected keys
    name_map: dict = field(default_factory=dict)  # checkpoint joint -> bone name (else the stored map, else detected)
    editable: bool = False  # keep the control points as latent controls (when every frame of every bone is filled)
    replace_latent: bool = False  # bake the armature's latent controls first (else a latent range is refused)
    contacts: bool = True  # keep the feet the keys plant on the ground planted between them


def prepare(obj, settings: bridge.BackendSettings, options: Options, fps: float = 30.0):
    """Checks and reads, no writes: -> (info, bag, conversion, bones, plan); ``bones`` are the mapped
    bones in joint order (the grids' bone axis).  The gap limit is the model's (2 s) in frames of a
    scene at ``fps``."""
    if obj is not None and nla.only_in_nla(obj):
        raise Refusal(nla.only_in_nla(obj) + "; nothing was changed")
    bag = scene_io.editable_keys(obj)  # linked or overridden: refused before anything is written
    try:
        info = bridge.describe(settings)
    except bridge.BridgeError as e:
        raise Refusal(str(e)) from None
    _, joint_bones = bone_map_io.resolve(obj, info.names, info.parents, options.name_map)
    rt = bone_map_io.conversion(obj, info, joint_bones)
    bones = [rt.bone_of(j) for j in rt.mapped]
    curves = scene_io.curves_by_bone(bag, bones)
    selected = {b: scene_io.selected_frames(c) for b, c in curves.items()}
    try:
        plan = gaps.plan(selected, bones, options.all_bones, info.scene_max_gap(fps), fps,
                         info.max_gap * info.frame_time)
    except gaps.PlanError as e:
        raise Refusal(str(e)) from None
    written = constraints.written_channels(bones, rt.on_mapped(info.rotation_joints),
                                           rt.on_mapped(info.position_joints), only=plan.gaps)
    driven = constraints_io.driven_bones(obj, written)
    if driven:  # keys under a constraint change nothing visible: left as they were, and named
        plan = gaps.without(plan, {b: d.describe() for b, d in driven.items()})
        if not plan.gaps:
            drivers = any(constraints.DRIVER in d for d in plan.left.values())
            by = "a constraint or a driver" if drivers else "a constraint"
            raise Refusal(f"every bone to fill is driven by {by}, nothing was changed: "
                          f"{constraints.report(plan.left)}")
    return info, bag, rt, bones, plan


def run(obj, settings: bridge.BackendSettings, options: Options, fps: float = 30.0, progress=None) -> str:
    """Fill the gaps; ``progress(done, total)`` is told about each stage (status-bar progress)."""
    t0 = time.perf_counter()
    step = progress or (lambda done, total: None)
    info, bag, rt, bones, plan = prepare(obj, settings, options, fps)
    rot_j, pos_j = rt.on_mapped(info.rotation_joints), rt.on_mapped(info.position_joints)  # indices into ``bones``
    total = 2 + len(bones)
    step(0, total)
    rot, pos = rt.to_model(*scene_io.read_pose(obj, bag, rt.bones, plan.keys))
    keys = [k - plan.start for k in plan.keys]
    step(1, total)
    locked = {(fc.data_path, fc.array_index) for fc in bag.fcurves if fc.lock}  # never written, named below
    editable = options.editable and hasattr(obj, "splinetween_latent") and _fills_everything(options, plan, bones) \
        and not locked
    if editable:  # latent controls on an action another object plays would move that object too
        from ..latent.armature import take
        shared = take.shared_refusal(obj, "Inbetween (Editable)")
        if shared:
            raise Refusal(f"{shared}; or untick Editable; nothing was changed")
    try:
        header = {"op": "inbetween", "checkpoint": str(info.path), "keys": keys, "frame_time": 1.0 / fps,
                  "contacts": options.contacts}
        reply, latent_out = bridge.request(settings, header, {"offsets": rt.offsets, "key_rotations": rot,
                                                              "key_positions": pos})
        out_rot, out_pos = latent_out["rotations"], latent_out["positions"]
    except bridge.BridgeError as e:
        raise Refusal(f"the backend failed, nothing was changed: {e}") from None
    if out_rot.shape != (plan.num_frames, len(info.names), 4) or not np.isfinite(out_rot).all() \
            or not np.isfinite(out_pos).all():
        raise Refusal("the backend returned an unusable result (wrong size or NaN); nothing was changed")
    frames = np.arange(plan.start, plan.start + plan.num_frames, dtype=np.float64)
    own = bone_map_io.inner_pose(obj, bag, rt, frames)
    out_basis, out_loc = (x[:, rt.mapped] for x in rt.to_rig(out_rot, out_pos, *own,
                                                               positions=info.position_joints))  # (all it writes)
    step(2, total)
    # the IK targets of chains left unwritten: placed now (reads only), written with the bones
    moves, stayed = ik_targets.plan_moves(obj, bones, plan, plan.left_gaps, out_basis, out_loc,
                                          pos_j, options.blend) if plan.left else ([], [])
    note = ""
    st = getattr(obj, "splinetween_latent", None)  # (None when the add-on's properties are not registered)
    if st is not None and st.active:  # its range may be overwritten now: keep its keys, drop its controls
        from ..latent.armature import adapter
        if not options.replace_latent:
            raise Refusal(adapter.replace_refusal(obj))
        where = f" of '{st.action.name}'" if st.action is not None and st.action != obj.animation_data.action else ""
        note = f"; the latent controls of frames {st.frame_start}-{st.frame_end}{where} were baked"
        adapter.bake(obj)
    if editable:
        channels = latent_io.driven_channels(obj, bones, rot_j, pos_j)
        snap = latent_io.snapshot(bag, [(scene_io.bone_path(b, p), i) for b, p, n, _ in channels for i in range(n)])
    written, skipped = write(obj, bag, bones, plan, out_basis, out_loc, options, rot_j, pos_j, locked,
                             lambda j: step(3 + j, total))
    if editable:
        from ..latent.armature import encode
        encode.install_inbetween(obj, info.path, plan.start, keys, bones, info, rt, rot, pos, reply, latent_out, snap)
        note += "; editable in Latent Controls"
    if plan.left:
        note += "; " + constraints.report(plan.left)
        moved = ik_targets.apply(moves)
        if moved:
            note += (f"; IK target{'s' * (len(moved) != 1)} {', '.join(moved)} in-betweened from the model's motion "
                     "(the chain follows)")
        if stayed:
            note += f"; IK target{'s' * (len(stayed) != 1)} not moved: {', '.join(stayed)}"
    if skipped:
        note += (f"; {len(skipped)} locked F-curve{'s' * (len(skipped) != 1)} left as they were: "
                 f"{', '.join(skipped[:8])}{' ...' if len(skipped) > 8 else ''} (unlock them to fill them)")
    note += bone_map_io.unmapped_note(info.names, [rt.bone_of(j) if j in rt.mapped else None
                                                   for j in range(len(info.names))])
    n_gaps = len({g for g_list in plan.gaps.values() for g in g_list})
    return (f"Inbetweened {n_gaps} gap{'s' * (n_gaps != 1)} on {written} bone{'s' * (written != 1)} "
            f"({len(plan.keys)} key frames) in {1e3 * (time.perf_counter() - t0):.0f} ms{note}")


def _fills_everything(options: Options, plan: gaps.Plan, bones: list[str]) -> bool:
    """Whether the fill writes the model's motion on every frame between the first and last key
    of every matched bone: only then can its control points drive the range afterwards."""
    whole = [(a, b) for a, b in zip(plan.keys, plan.keys[1:], strict=False) if b - a > 1]
    return options.key_mode == "EVERY_FRAME" and options.blend >= 1.0 and \
        all(plan.gaps.get(b, []) == whole for b in bones)
