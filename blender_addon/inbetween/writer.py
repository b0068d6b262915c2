"""Inbetween's writing half: the model's motion into the gaps of the F-curves, in bulk.

Three stages, none per frame in Python: read every curve the fill touches once (one
``foreach_get`` per attribute), convert the motion of every (bone, gap) run at once (runs of one
length and rotation mode share one vectorised Euler / quaternion continuity pass, from the values
the curves hold at each gap's first key), then write each curve once (``keys.replace_in_gaps``:
one ``foreach_set`` per attribute, curves with the same key frames merged together).
Values travel on grids over the plan's frames and bones: ``[F, J, 4]`` (rotations, any mode's
channels) and ``[F, J, 3]`` (locations).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import gaps, rig_math
from ..io import keys as keys_io
from ..io import scene as scene_io

_CHANNELS = {"rotation": 4, "location": 3}  # grid width per channel


@dataclass
class _Bone:
    j: int  # joint index (the grids' bone axis)
    name: str
    mode: str  # rotation mode
    channels: list  # [(prop, size, channel)]


def write(obj, bag, bones: list[str], plan: gaps.Plan, basis: np.ndarray, loc: np.ndarray, options,
          rotation_joints, position_joints, locked=frozenset(), progress=None) -> tuple[int, list[str]]:
    """The model's motion (``basis [F, J, 4]`` rotation quaternions, ``loc [F, J, 3]`` locations over
    the plan's frames) into the gaps of every bone the plan writes; locked F-curves are left alone.
    ``progress(j)`` is told before each bone's curves are written.  -> (bones written, names of the
    locked curves skipped)."""
    curves = keys_io.Curves(bag)
    out = []
    for j, name in enumerate(bones):
        rotate, move = j in rotation_joints, j in position_joints
        if name in plan.gaps and (rotate or move):
            mode = obj.pose.bones[name].rotation_mode
            prop, size = scene_io.rotation_property(mode)
            out.append(_Bone(j, name, mode, ([(prop, size, "rotation")] if rotate else []) +
                             ([("location", 3, "location")] if move else [])))
    blend = float(np.clip(options.blend, 0.0, 1.0))
    bezier = options.key_mode == "EVERY_N"
    old, now = _read(obj, curves, plan, out, blend < 1.0, locked, basis.shape[1])
    grids = _values(plan, out, basis, loc, now, blend, options.step if bezier else 1, bezier)
    return _write(obj, curves, plan, out, grids, old, bezier, locked, progress)


def _read(obj, curves, plan, out, dense: bool, locked, n_bones: int):
    """Every written curve's keys (``old``), and the channels' values now on grids (at each gap's
    first key; on every frame of the gaps when blending), before anything is written."""
    old = {}
    now = {k: np.zeros((plan.num_frames, n_bones, w)) for k, w in _CHANNELS.items()}
    for bone in out:
        runs = plan.gaps[bone.name]
        frames = np.unique(np.concatenate([np.arange(a, b + 1) for a, b in runs])) if dense else \
            np.array(sorted({a for a, _ in runs}))
        for prop, size, channel in bone.channels:
            static = getattr(obj.pose.bones[bone.name], prop)
            path = scene_io.bone_path(bone.name, prop)
            for i in range(size):
                fc = curves.get(path, i)
                co = None
                if (path, i) not in locked:  # (a locked curve is read for its value, not written)
                    old[path, i] = keys_io.read(fc) if fc is not None else keys_io.empty()
                    co = old[path, i]["co"]
                has_keys = keys_io.count(fc)
                value = keys_io.values_at(fc, frames, co) if has_keys else static[i]
                now[channel][frames - plan.start, bone.j, i] = value
    return old, now


def _values(plan, out, basis, loc, now, blend: float, step: int, bezier: bool) -> dict:
    """Channel values to key: {channel: (values, left handles, right handles) on grids, written [F, J]}."""
    shape = basis.shape[:2]
    grids = {k: (np.zeros(shape + (w,)), np.zeros(shape + (w, 2)), np.zeros(shape + (w, 2)), np.zeros(shape, bool))
             for k, w in _CHANNELS.items()}
    runs = {}  # (gap length, mode, channel, size) -> [(j, a)]: converted together
    for bone in out:
        for _, size, channel in bone.channels:
            for a, b in plan.gaps[bone.name]:
                mode = bone.mode if channel == "rotation" else ""
                runs.setdefault((b - a, mode, channel, size), []).append((bone.j, a))
    for (length, mode, channel, size), group in runs.items():
        js = np.array([j for j, _ in group])
        first = np.array([a for _, a in group])
        rel = np.arange(length + 1)
        rows = first[None, :] - plan.start + rel[:, None]  # [L+1, P]: each run's frames on the grids
        current = now[channel][rows, js, :size]
        if channel == "location":
            v = loc[rows, js]
            if blend < 1.0:
                v = current * (1 - blend) + v * blend
        else:
            q = basis[rows, js]
            if blend < 1.0:
                q = rig_math.slerp(rig_math.channels_to_quat(current, mode), q, blend)
            v = rig_math.quat_to_channels(q, mode, current[0])  # continuous from each run's first key
        at = gaps.sample_frames(0, length, step)  # the same frames inside every run of this length
        frames = first[None, :] + at[:, None]  # [m, P]
        val, hl, hr, on = grids[channel]
        cell = (frames - plan.start, js[None, :])
        val[cell + (slice(0, size),)] = v[at]
        on[cell] = True
        if bezier:
            left, right = gaps.bezier_handles(frames, v[at], gaps.slopes(v, rel, at), first, first + length)
            hl[cell + (slice(0, size),)] = left
            hr[cell + (slice(0, size),)] = right
    return grids


def _write(obj, curves, plan, out, grids, old, bezier: bool, locked, progress):
    """Each unlocked curve written once; curves with the same key frames and gaps together."""
    groups, written, skipped = {}, 0, []
    for bone in out:
        if progress is not None:
            progress(bone.j)
        wrote = False
        for prop, size, channel in bone.channels:
            val, hl, hr, on = grids[channel]
            rows = np.flatnonzero(on[:, bone.j])
            frames = rows + plan.start
            path = scene_io.bone_path(bone.name, prop)
            for i in range(size):
                if (path, i) in locked:
                    skipped.append(f"{bone.name} {prop}[{i}]")
                    continue
                wrote = True
                keys = old[path, i]
                key = (tuple(plan.gaps[bone.name]), frames.tobytes(), keys["co"][:, 0].tobytes())
                item = groups.setdefault(key, (frames, plan.gaps[bone.name], [], [], [], [], [], []))
                item[2].append(curves.ensure(path, i, bone.name))  # (made in the order the channels come)
                item[3].append(keys)
                item[4].append(val[rows, bone.j, i])
                item[5].append(getattr(obj.pose.bones[bone.name], prop)[i])
                if bezier:
                    item[6].append(hl[rows, bone.j, i])
                    item[7].append(hr[rows, bone.j, i])
        written += wrote
    for frames, runs, fcs, olds, values, statics, lefts, rights in groups.values():
        handles = (np.stack(lefts), np.stack(rights)) if bezier else None
        keys_io.replace_in_gaps(fcs, olds, runs, frames, np.stack(values), handles, statics)
    return written, skipped
