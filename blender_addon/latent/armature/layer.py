"""The armature layer's numbers: decoded segments (cached by fingerprint), their seam joins, and the
original moved by decode(edited) - decode(encoded) on the frames an edit reaches (``armature`` writes them).
"""
from __future__ import annotations

import functools
import itertools
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ... import bridge
from ...core import latent_math as LM
from ...core import layer_math as L
from ...core import slider_math as SM
from ...core.errors import Refusal
from ...io import latent as latent_io
from . import retarget
from .. import core as latent

decoded: OrderedDict = OrderedDict()  # (token, segment, signature) -> (rot [m, J, 4], pos [m, J, 3])
DECODED_MAX = 512
_views: dict = {}  # (token, base_version, frames, modes) -> the original in the model's convention
_joins: dict = {}  # (token, segment, sides, signatures) -> the segment's frames eased into its seams
_maps: dict = {}  # (token, original, segment, sides, neutral signatures) -> (K maps, neutral positions)
MAPS_MAX = 64
_neutral_plans: dict = {}  # (token, original, the plan's frames and neutral signatures) -> ``_neutral``'s answer


def forget(token: str) -> None:
    for cache in (decoded, _views, _joins, _maps, _neutral_plans):
        for k in [k for k in cache if k[0] == token]:
            del cache[k]
    _inputs.pop(token, None)
    retarget.forget(token)


_inputs: dict = {}  # token -> (origins, template, encoded points): what Encode stored, read once per range


def _stored(st) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if st.token not in _inputs:
        _inputs[st.token] = (latent.array(st, "origins", (-1, 3)), latent.array(st, "template", (-1, 3)),
                             latent.encoded_points(st))
    return _inputs[st.token]


def decode(st, path: Path, settings, jobs) -> dict:
    """``jobs``: (segment, signature, points [4, d], amplify, timing, principal, frames) -> decoded
    ``{(segment, signature): (rot, pos)}``, from the cache or one backend request for the rest."""
    todo = [j for j in jobs if (st.token, j[0], j[1]) not in decoded]
    todo = list({(j[0], j[1]): j for j in todo}.values())
    if todo:
        keys = latent.array(st, "keys", dtype=np.int64).tolist() if st.kind == "INBETWEEN" else None
        segs = [st.segments[j[0]] for j in todo]
        header = {"op": "decode", "checkpoint": str(path), "task": "inbetween" if keys else "autoencoder",
                  "segments": [[seg.start, seg.end] for seg in segs], "lengths": [j[6] for j in todo],
                  "amplify": [j[3] for j in todo], "timing": [j[4] for j in todo],
                  "principal": [list(j[5]) for j in todo], "keys": keys, "guard": False}
        if "model_segments" in st:  # encoded at another frame rate: decoded on the model's grid, spread back
            model = latent.array(st, "model_segments", (-1, 2), dtype=np.int64)
            header["model_segments"] = [model[j[0]].tolist() for j in todo]
            if "model_keys" in st:
                header["model_keys"] = latent.array(st, "model_keys", dtype=np.int64).tolist()
        origins, template, _ = _stored(st)
        arrays = {"points": np.stack([j[2] for j in todo]), "origins": origins[[j[0] for j in todo]],
                  "template": template}
        if keys:
            n = len(template)
            arrays["key_rotations"] = latent.array(st, "key_rotations", (len(keys), n, 4))
            arrays["key_positions"] = latent.array(st, "key_positions", (len(keys), n, 3))
        try:
            _, out = bridge.request(settings, header, arrays)
        except bridge.BridgeError as e:
            raise Refusal(f"the backend failed, nothing was changed: {e}") from None
        rot, pos = out["rotations"], out["positions"]
        if not (np.isfinite(rot).all() and np.isfinite(pos).all()) or len(rot) != sum(header["lengths"]):
            raise Refusal("the backend returned an unusable result (wrong size or NaN); nothing was changed")
        at = list(itertools.accumulate(header["lengths"], initial=0))
        for k, j in enumerate(todo):
            decoded[st.token, j[0], j[1]] = (rot[at[k]:at[k + 1]], pos[at[k]:at[k + 1]])
    out = {}
    for j in jobs:
        decoded.move_to_end((st.token, j[0], j[1]))
        out[j[0], j[1]] = decoded[st.token, j[0], j[1]]
    while len(decoded) > DECODED_MAX:
        decoded.popitem(last=False)
    return out


def prime(st, rot, pos) -> None:
    """The neutral decode of every segment laid one after the other (as ``decode`` answers): cached."""
    bounds = LM.output_bounds([(s.start, s.end) for s in st.segments], st.source_frames, st.frames)
    at = np.cumsum([0] + [b - a + 1 for a, b in bounds])
    for s, sig in enumerate(latent.neutral_signatures(st, bounds)):
        decoded[st.token, s, sig] = (rot[at[s]:at[s + 1]], pos[at[s]:at[s + 1]])


@functools.lru_cache(maxsize=MAPS_MAX)
def _needed_parts(bounds: tuple, frames: bytes, seams: bool) -> tuple[dict, frozenset]:
    """``layer_math.needed_parts`` of the frames given as int64 bytes, made once per layout (a dragged
    slider asks for the same every change; a pure function of its arguments, so shared by every range)."""
    plan, need = L.needed_parts(list(bounds), np.frombuffer(frames, dtype=np.int64), seams)
    for _, mine in plan.values():
        mine.setflags(write=False)
    return plan, frozenset(need)


def _seam_key(st, s: int, sides, keysig) -> tuple:
    """What segment ``s``'s frames eased into its seams depend on: its signature and, on each side it is
    joined at, its neighbour's."""
    return (st.token, s, sides, keysig(s - 1) if sides[0] else "", keysig(s), keysig(s + 1) if sides[1] else "")


def _joined(st, parts: dict, keysig, bounds, plan: dict, seams: bool) -> tuple[np.ndarray, np.ndarray]:
    """``layer_math.joined``, each segment's eased frames cached by the signatures they come from (the
    neutral ones are the same for every slider change)."""
    keys = {s: _seam_key(st, s, sides, keysig) for s, (sides, _) in plan.items()}
    todo = [(s, plan[s][0]) for s, key in keys.items() if key not in _joins]
    for (s, _), values in zip(todo, LM.segments_values(parts, todo, len(bounds), seams) if todo else ()):
        _joins[keys[s]] = values
    while len(_joins) > DECODED_MAX:
        _joins.pop(next(iter(_joins)))
    rots, poss = [], []
    for s, (sides, mine) in plan.items():
        rot, pos = _joins[keys[s]]
        rots.append(rot[mine - bounds[s][0]])
        poss.append(pos[mine - bounds[s][0]])
    return np.concatenate(rots), np.concatenate(poss)


def _original(obj, st, channels, base):
    """The original's channel rotations on every frame ``[F, J, 4]`` with the rig's conversions
    (``slider_math``): ``(key, groups, basis, turns, location maps)``, made once per version of the original."""
    key = (st.token, st.base_version, st.frames, tuple(c[3] for c in channels))
    if key not in _views:
        for k in [k for k in _views if k[0] == st.token]:
            del _views[k]
        bones = list(st["bones"])
        rig = latent_io.rig_for(obj, bones, st.cm_per_unit)
        groups = latent_io.channel_groups(channels, bones)
        basis, _ = latent_io.values_to_pose(channels, bones, base, groups)
        _views[key] = (key, groups, basis, SM.rest_turns(rig), SM.location_maps(rig))
    return _views[key]


def _neutral(st, view, parts: dict, keysig, bounds, plan: dict, seams: bool) -> tuple[np.ndarray, np.ndarray]:
    """At the planned frames: the maps ``K`` that take the edited decode to channel rotations
    (``slider_math.rotation_maps``) and the neutral decode's positions, each segment's made once per
    original and neutral decode (no slider changes them) and cached."""
    key0, _, basis, turns, _ = view
    whole = (st.token, key0, tuple((s, sides, mine.tobytes(), _seam_key(st, s, sides, keysig)[3:])
                                   for s, (sides, mine) in plan.items()))
    if whole in _neutral_plans:  # (a slider dragged: the same frames, the same neutral, every change)
        return _neutral_plans[whole]
    maps, poss = [], []
    for s, (sides, mine) in plan.items():
        a, b = bounds[s]
        key = (st.token, key0, *_seam_key(st, s, sides, keysig)[1:])  # (the token first: ``forget``)
        if key not in _maps:
            rot, pos = LM.segment_values(parts, s, len(bounds), seams, sides)
            _maps[key] = (SM.rotation_maps(basis[a:b + 1], rot, turns), pos)
            while len(_maps) > MAPS_MAX:
                _maps.pop(next(iter(_maps)))
        k, pos = _maps[key]
        maps.append(k[mine - a])
        poss.append(pos[mine - a])
    out = np.concatenate(maps), np.concatenate(poss)
    for a in out:
        a.setflags(write=False)
    if len(_neutral_plans) >= MAPS_MAX:
        _neutral_plans.pop(next(iter(_neutral_plans)))
    _neutral_plans[whole] = out
    return out


def layer_frames(obj, st, path, settings, raw, bounds, sigs, nsigs, frames: np.ndarray, channels, base):
    """(frames, channel values ``[n, C]``) of the layered motion at ``frames`` (relative, sorted): the
    original moved by decode(edited) - decode(encoded), each Euler triple nearest the original's."""
    seams = st.kind == "AUTOENCODER"
    plan, need = _needed_parts(tuple(bounds), np.asarray(frames, dtype=np.int64).tobytes(), seams)
    order = np.concatenate([mine for _, mine in plan.values()])
    pts, m = _stored(st)[2], len(latent.names(st))
    jobs = []
    for s in need:
        seg, length = st.segments[s], bounds[s][1] - bounds[s][0] + 1
        jobs.append((s, sigs[s], raw[s], seg.amplify, seg.timing, [x + 0.0 for x in seg.principal[:m]], length))
        jobs.append((s, nsigs[s], pts[s], 1.0, 0.0, [0.0] * m, length))
    got = decode(st, path, settings, jobs)
    e_rot, e_pos = _joined(st, {s: got[s, sigs[s]] for s in need}, lambda s: sigs[s], bounds, plan, seams)
    if retarget.is_mapped(st):  # another rig than the data set's skeleton: through its conversion
        n_rot, n_pos = _joined(st, {s: got[s, nsigs[s]] for s in need}, lambda s: nsigs[s], bounds, plan, seams)
        return order, retarget.layer_values(obj, st, path, channels, base, order, e_rot, e_pos, n_rot, n_pos)
    view = _original(obj, st, channels, base)
    maps, n_pos = _neutral(st, view, {s: got[s, nsigs[s]] for s in need}, lambda s: nsigs[s], bounds, plan, seams)
    rot = SM.layered_rotations(maps, e_rot)
    ref = base[order]
    out = np.empty_like(ref)
    for is_loc, mode, joints, cols in view[1]:
        if is_loc:
            out[:, cols] = SM.layered_locations(ref[:, cols], view[4][joints], e_pos[:, joints], n_pos[:, joints])
        else:
            out[:, cols] = SM.channels_near(rot[:, joints], mode, ref[:, cols])
    return order, out  # (the plan lists each segment's frames in turn: sorted, as ``frames``)
