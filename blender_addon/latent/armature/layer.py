"""The armature layer's numbers: decoded segments (cached by fingerprint), their seam joins, and the
original moved by decode(edited) - decode(encoded) on the frames an edit reaches (``armature`` writes them).
"""
from __future__ import annotations

import functools

import numpy as np

from ...core import latent_math, layer_math, slider_math
from ...core.errors import Refusal
from ...io import latent as latent_io
from .. import core as latent_core
from .. import decode, state
from . import retarget

# kept per range (``state``): the original in the model's convention ("original view"); each segment's frames
# eased into its seams by the signatures they come from ("joins"); per segment the maps K and neutral
# positions ("maps") and per plan their concatenation ("neutral plans")
JOINS_MAX = 512
MAPS_MAX = 64


def stored(st) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(origins, template, the encoded points) of the range, read once."""
    return state.of(st).memo("inputs", None, lambda: (latent_core.array(st, "origins", (-1, 3)),
                                                       latent_core.array(st, "template", (-1, 3)),
                                                       latent_core.encoded_points(st)))


def _ask(st, todo) -> tuple[dict, dict]:
    """The armature's ``decode`` request for ``todo`` (``decode.Request``)."""
    keys = latent_core.array(st, "keys", dtype=np.int64).tolist() if st.task == "INBETWEEN" else None
    header = {"op": "decode", "task": "inbetween" if keys else "autoencoder", "keys": keys, "guard": False}
    if "model_segments" in st:  # encoded at another frame rate: decoded on the model's grid, spread back
        model = latent_core.array(st, "model_segments", (-1, 2), dtype=np.int64)
        header["model_segments"] = [model[j.segment].tolist() for j in todo]
        if "model_keys" in st:
            header["model_keys"] = latent_core.array(st, "model_keys", dtype=np.int64).tolist()
    origins, template, _ = stored(st)
    arrays = {"origins": origins[[j.segment for j in todo]], "template": template}
    if keys:
        n = len(template)
        arrays["key_rotations"] = latent_core.array(st, "key_rotations", (len(keys), n, 4))
        arrays["key_positions"] = latent_core.array(st, "key_positions", (len(keys), n, 3))
    return header, arrays


def _split(st, out, lengths) -> list:
    rot, pos = out["rotations"], out["positions"]
    if not (np.isfinite(rot).all() and np.isfinite(pos).all()) or len(rot) != sum(lengths):
        raise Refusal("the backend returned an unusable result (wrong size or NaN); nothing was changed")
    return [(rot[k], pos[k]) for k in decode.pieces(lengths)]


REQUEST = decode.Request(_ask, _split)


def prime(st, rot, pos) -> None:
    """The neutral decode of every segment laid one after the other (as ``decode`` answers): cached."""
    bounds = latent_math.output_bounds([(s.start, s.end) for s in st.segments], st.source_frames, st.frames)
    nsigs = latent_core.neutral_signatures(st, bounds)
    for s, k in enumerate(decode.pieces([b - a + 1 for a, b in bounds])):
        decode.keep(st.token, s, nsigs[s], (rot[k], pos[k]))


@functools.lru_cache(maxsize=MAPS_MAX)
def _needed_parts(bounds: tuple, frames: bytes, seams: bool) -> tuple[dict, frozenset]:
    """``layer_math.needed_parts`` of the frames given as int64 bytes, made once per layout (a dragged
    slider asks for the same every change; a pure function of its arguments, so shared by every range)."""
    plan, need = layer_math.needed_parts(list(bounds), np.frombuffer(frames, dtype=np.int64), seams)
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
    joins = state.of(st).table("joins", JOINS_MAX)
    todo = [(s, plan[s][0]) for s, key in keys.items() if key not in joins]
    for (s, _), values in zip(todo, latent_math.segments_values(parts, todo, len(bounds), seams) if todo else (), strict=True):
        joins[keys[s]] = values
    rots, poss = [], []
    for s, (_sides, mine) in plan.items():
        rot, pos = joins[keys[s]]
        rots.append(rot[mine - bounds[s][0]])
        poss.append(pos[mine - bounds[s][0]])
    return np.concatenate(rots), np.concatenate(poss)


def _original(obj, st, channels, base):
    """The original's channel rotations on every frame ``[F, J, 4]`` with the rig's conversions
    (``slider_math``): ``(key, groups, basis, turns, location maps)``, made once per version of the original."""
    key = (st.token, st.base_version, st.frames, tuple(c[3] for c in channels))

    def make():
        bones = list(st["bones"])
        rig = latent_io.rig_for(obj, bones, st.cm_per_unit)
        groups = latent_io.channel_groups(channels, bones)
        basis, _ = latent_io.values_to_pose(channels, bones, base, groups)
        return key, groups, basis, slider_math.rest_turns(rig), slider_math.location_maps(rig)
    return state.of(st).memo("original view", key, make)


def _neutral(st, view, parts: dict, keysig, bounds, plan: dict, seams: bool) -> tuple[np.ndarray, np.ndarray]:
    """At the planned frames: the maps ``K`` that take the edited decode to channel rotations
    (``slider_math.rotation_maps``) and the neutral decode's positions, each segment's made once per
    original and neutral decode (no slider changes them) and cached."""
    key0, _, basis, turns, _ = view
    whole = (st.token, key0, tuple((s, sides, mine.tobytes(), _seam_key(st, s, sides, keysig)[3:])
                                   for s, (sides, mine) in plan.items()))
    memory = state.of(st)
    plans, segment_maps = memory.table("neutral plans", MAPS_MAX), memory.table("maps", MAPS_MAX)
    if whole in plans:  # (a slider dragged: the same frames, the same neutral, every change)
        return plans[whole]
    maps, poss = [], []
    for s, (sides, mine) in plan.items():
        a, b = bounds[s]
        key = (key0, *_seam_key(st, s, sides, keysig)[1:])
        if key not in segment_maps:
            rot, pos = latent_math.segment_values(parts, s, len(bounds), seams, sides)
            segment_maps[key] = (slider_math.rotation_maps(basis[a:b + 1], rot, turns), pos)
        k, pos = segment_maps[key]
        maps.append(k[mine - a])
        poss.append(pos[mine - a])
    out = np.concatenate(maps), np.concatenate(poss)
    for a in out:
        a.setflags(write=False)
    plans[whole] = out
    return out


def layer_frames(obj, st, path, settings, plan_now, nsigs, frames: np.ndarray, channels, base):
    """(frames, channel values ``[n, C]``) of the layered motion at ``frames`` (relative, sorted): the
    original moved by decode(edited) - decode(encoded), each Euler triple nearest the original's.
    ``plan_now``: ``core.plan``'s answer for the raw points ``raw``, as ``(raw, bounds, sigs, edits)``."""
    raw, bounds, sigs, edits = plan_now
    seams = st.task == "AUTOENCODER"
    plan, need = _needed_parts(tuple(bounds), np.asarray(frames, dtype=np.int64).tobytes(), seams)
    order = np.concatenate([mine for _, mine in plan.values()])
    got = decode.decoded(st, path, settings, decode.jobs(raw, stored(st)[2], bounds, sigs, nsigs, edits, need),
                         REQUEST)
    e_rot, e_pos = _joined(st, {s: got[s, sigs[s]] for s in need}, lambda s: sigs[s], bounds, plan, seams)
    if retarget.is_mapped(st):  # another rig than the data set's skeleton: through its conversion
        n_rot, n_pos = _joined(st, {s: got[s, nsigs[s]] for s in need}, lambda s: nsigs[s], bounds, plan, seams)
        return order, retarget.layer_values(obj, st, path, channels, base, order, e_rot, e_pos, n_rot, n_pos)
    view = _original(obj, st, channels, base)
    maps, n_pos = _neutral(st, view, {s: got[s, nsigs[s]] for s in need}, lambda s: nsigs[s], bounds, plan, seams)
    rot = slider_math.layered_rotations(maps, e_rot)
    ref = base[order]
    out = np.empty_like(ref)
    for is_loc, mode, joints, cols in view[1]:
        if is_loc:
            out[:, cols] = slider_math.layered_locations(ref[:, cols], view[4][joints], e_pos[:, joints],
                                                         n_pos[:, joints])
        else:
            out[:, cols] = slider_math.channels_near(rot[:, joints], mode, ref[:, cols])
    return order, out  # (the plan lists each segment's frames in turn: sorted, as ``frames``)
