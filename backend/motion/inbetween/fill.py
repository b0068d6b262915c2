"""Engine.inbetween: keys in, every frame out, keys kept exactly.

A clip is cut into segments that start and end on keys (at most one training window
long); the segments are batched by length, encoded from their keys only, decoded over
the SLERP/LERP base, and joined at their shared keys, which are the input's own poses.
"""
from __future__ import annotations

import numpy as np

from ...maths import quat_np, timebase
from ...runtime.onnx_runner import sample_times
from .. import units
from ..controls import Controls, group_by_length
from ..features_np import poses_from_features
from ..keyframes_np import bracket, inbetween_inputs, segments_on_keys, snap_to_keys, validate_keys
from ..skeleton import Clip
from . import blender_curves as fcurves
from .contacts import plant_feet
from .guard import MAX_HIDDEN_GAP, agreement_alphas, blend, fit_alpha, frame_alphas, holdout_passes


def key_only(clip: Clip, keys: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Copies of the clip's arrays in which only key frames hold data (the rest is never read)."""
    rot = np.zeros(clip.rotations.shape, dtype=clip.rotations.dtype)  # (C order, whatever the clip's layout:
    rot[..., 0] = 1.0                                                   # numpy's sums round by the layout)
    pos = np.zeros(clip.positions.shape, dtype=clip.positions.dtype)
    rot[keys], pos[keys] = clip.rotations[keys], clip.positions[keys]
    return rot, pos


def keys_clip(controls, skeleton) -> Clip:
    """A clip holding only the key poses stored in in-betweened ``controls`` (the rest is never read)."""
    n = controls.num_frames
    rot = np.zeros((n, skeleton.num_joints, 4))
    rot[..., 0] = 1.0
    pos = np.zeros((n, skeleton.num_joints, 3))
    rot[controls.keys], pos[controls.keys] = controls.key_rotations, controls.key_positions
    return Clip(skeleton, rot, pos, controls.frame_time, controls.name)


def fill(engine, items, with_base: bool = True):
    """Model and Hermite-base fills of ``items`` [(clip, keys)] (keys validated), batched by segment
    length: per item (rot, pos, base_rot, base_pos [F, J, *] numpy, controls [S, K, d], origins [S, 3],
    segments).  Only key frames are read; segments start and end on keys.  Without ``with_base`` (the
    guard off) the base is not converted to poses and base_rot, base_pos are None."""
    ck, layout = engine.ckpt, engine.layout
    prepared, jobs = [], []
    for ii, (clip, keys) in enumerate(items):
        rot, pos = key_only(clip, keys)
        segs = segments_on_keys(keys, ck.window)
        prepared.append((clip, keys, rot, pos, segs, clip.positions[keys[0]].astype(np.float32)))
        jobs += [(ii, si, a, b) for si, (a, b) in enumerate(segs)]
    results = {}
    joints = items[0][0].skeleton.num_joints if items else 0  # (every clip has the checkpoint's skeleton)
    for n, group in group_by_length(jobs).items():
        rot = np.stack([prepared[i][2][a:b + 1] for i, _, a, b in group]).astype(np.float32)
        pos = np.stack([prepared[i][3][a:b + 1] for i, _, a, b in group]).astype(np.float32)
        mask = np.zeros((len(group), n), dtype=bool)
        for g, (i, _, a, b) in enumerate(group):
            mask[g, [k - a for k in prepared[i][1] if a <= k <= b]] = True
        keys_n, base_n, origin = inbetween_inputs(rot, pos, mask, layout, engine.norm, ck.config.base)
        ctrl = engine.model.encode_keys(keys_n, mask)
        times, positions = sample_times(n, n, 0.0)
        feat = snap_to_keys(engine.norm.inverse(engine.model.decode_keys(ctrl, base_n, mask, times, positions)),
                            engine.norm.inverse(keys_n), mask)
        # the group's poses in one conversion (per row: each segment's as alone), each with its clip's template
        # (the model's float32 precision whatever the clip's dtype: a clip of key poses only, as the service
        # gets them, fills the numbers of the whole clip)
        template = np.stack([prepared[i][5] for i, _, _, _ in group])[:, None]
        poses = [[a.astype(np.float32) for a in poses_from_features(f, layout, origin[:, None], template, joints)]
                 for f in ((feat, engine.norm.inverse(base_n)) if with_base else (feat,))]
        for g, (i, si, _, _) in enumerate(group):
            results[i, si] = ([(r[g], p[g]) for r, p in poses], origin[g], ctrl[g])
    out = []
    for i, (clip, _, _, _, segs, _) in enumerate(prepared):
        # frames outside the keys are no segment's: they start as the clip's own (finite, never garbage)
        arrays = [clip.rotations.copy(), clip.positions.copy()]
        if with_base:
            arrays += [clip.rotations.copy(), clip.positions.copy()]
        for si, (a, b) in enumerate(segs):
            for k, (r, p) in enumerate(results[i, si][0]):
                arrays[2 * k][a:b + 1], arrays[2 * k + 1][a:b + 1] = r, p
        if not with_base:
            arrays += [None, None]
        out.append((*arrays, np.stack([results[i, si][2] for si in range(len(segs))]),
                    np.stack([results[i, si][1] for si in range(len(segs))]), segs))
    return out


def fill_pairs(engine, items, with_base: bool = True, which=None):
    """``fill`` of ``items`` and, for the items chosen by ``which`` (default: all; none when the engine is
    not symmetric, i.e. has no ``mirror``), the mirrored fill of the mirrored keys, mirrored back
    (rotations, positions; None for the others).  One batch: the mirrored items run with the others."""
    m = engine.mirror if getattr(engine, "symmetric", False) else None
    backs: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(items)
    if m is None:  # no mirrored fills
        return fill(engine, list(items), with_base), backs
    chosen = [i for i in range(len(items)) if which is None or which[i]]
    mirrored = []
    for i in chosen:
        clip, keys = items[i]
        rot, pos = key_only(clip, keys)
        rot[keys], pos[keys] = m.apply(clip.rotations[keys], clip.positions[keys])
        mirrored.append((Clip(clip.skeleton, rot, pos, clip.frame_time, clip.name), keys))
    fills = fill(engine, list(items) + mirrored, with_base)
    for i, other in zip(chosen, fills[len(items):], strict=True):
        mr, mp = m.apply(other[0], other[1])
        backs[i] = (np.where((mr * fills[i][0]).sum(-1, keepdims=True) < 0, -mr, mr), mp)
    return fills[:len(items)], backs


def mirror_mean(own, back):
    """A ``fill`` result with its poses the mean of its own and the mirrored-back ones (``fill_pairs``): a
    person moves the same way in a mirror, and the mean of the two answers misses less than either
    (docs/results.md, *In-betweening*: each part of the fill switched off).  The Hermite base, control points and origins stay the item's own."""
    rot, pos, *rest = own
    return (quat_np.normalize(rot + back[0]).astype(rot.dtype), (0.5 * (pos + back[1])).astype(pos.dtype), *rest)


def guard_passes(engine, keys) -> list[list[int]]:
    """The guard's key lists with every other interior key hidden where the doubled gap is at most
    ``engine.guard_limit`` frames (``backend.motion.inbetween.guard.MAX_HIDDEN_GAP``; the model's window - 1: every spacing)."""
    return holdout_passes(list(keys), engine.ckpt.window - 1, limit=getattr(engine, "guard_limit", MAX_HIDDEN_GAP))


def hidden_jobs(keys, passes) -> list[tuple[list[int], list[int]]]:
    """The guard's hidden-key passes as curve jobs: (the pass's keys, the keys it hides)."""
    return [(list(p), sorted(set(keys) - set(p))) for p in passes]


def guard_weight(engine, clip: Clip, keys: list[int], fills=None, pair=None, curves=None, held=None) -> np.ndarray:
    """``backend.motion.inbetween.guard``'s alpha per gap between ``keys`` [len(keys) - 1].  Where keys are hidden
    (``guard_passes``) one alpha for the clip: the passes are filled (or taken from ``fills``, their
    ``fill`` results) and compared, with the curves through the same keys (``backend.motion.inbetween.blender_curves``; ``held``:
    theirs at the hidden keys, ``fcurves.at_many`` of ``hidden_jobs``, or drawn here), with the hidden keys.
    Where the mirror average answers (``uses_mirror``), each gap's from the agreement of the model's two
    readings (``pair``: the clip's own, mirrored-back and mean poses, each (rotations, positions), or
    filled here) against the curves through the keys (``curves``, or drawn here)."""
    keys = list(keys)
    rj, pj = engine.layout.rotation_joints, engine.layout.position_joints
    if uses_mirror(engine, keys):
        if pair is None:
            (own,), (back,) = fill_pairs(engine, [(clip, keys)], with_base=False)
            pair = own[:2], back, mirror_mean(own, back)[:2]
        if curves is None:
            curves = fcurves.fill(clip.skeleton, clip.rotations, clip.positions, keys)
        own_poses, back_poses, mean_poses = pair
        return agreement_alphas(own_poses, back_poses, mean_poses, curves, keys, rj, pj)
    passes = guard_passes(engine, keys)
    if fills is None:
        fills = fill(engine, [(clip, p) for p in passes], with_base=False)
    jobs = hidden_jobs(keys, passes)
    hidden = [f for _, h in jobs for f in h]
    if not hidden:
        return np.ones(len(keys) - 1)
    model = [(mr[h], mp[h]) for (_, h), (mr, mp, *_) in zip(jobs, fills, strict=True)]
    if held is None:
        held = fcurves.at_many(clip.skeleton, clip.rotations, clip.positions, jobs)

    def cat(lst):
        return np.concatenate([r for r, _ in lst]), np.concatenate([q for _, q in lst])
    alpha = fit_alpha((clip.rotations[hidden], clip.positions[hidden]), cat(model), cat(held), rj, pj)
    return np.full(len(keys) - 1, alpha)


def checked_keys(keys, num_frames: int, frame_time: float, max_gap: int, model_ft: float) -> list[int]:
    """``validate_keys`` with the gap limit in the clip's own frames (``max_gap`` model frames), named in
    its frames and seconds when the clip runs at another rate than the model."""
    if timebase.same_rate(frame_time, model_ft):
        return validate_keys(keys, num_frames, max_gap)
    keys = validate_keys(keys, num_frames, num_frames)
    limit = timebase.max_scene_gap(max_gap, frame_time, model_ft)
    gaps = np.diff(keys)
    if gaps.max() > limit:
        k = int(np.argmax(gaps))
        raise ValueError(timebase.gap_message(keys[k], keys[k + 1], max_gap, frame_time, model_ft))
    return keys


def on_model_grid(clip: Clip, keys: list[int], model_ft: float, max_gap: int) -> tuple[Clip, list[int]]:
    """The key poses of a clip at another rate on the model's frame grid, the first key on frame 0."""
    mkeys = timebase.model_keys(keys, clip.frame_time, model_ft, max_gap)
    n, j = mkeys[-1] + 1, clip.skeleton.num_joints
    rot = np.zeros((n, j, 4), dtype=clip.rotations.dtype)
    rot[..., 0] = 1.0
    pos = np.zeros((n, j, 3), dtype=clip.positions.dtype)
    rot[mkeys], pos[mkeys] = clip.rotations[keys], clip.positions[keys]
    return Clip(clip.skeleton, rot, pos, model_ft, clip.name), mkeys


def to_scene_grid(clip: Clip, keys, mkeys, rot, pos) -> tuple[np.ndarray, np.ndarray]:
    """The model's fill on its grid read back on the clip's frames (keys..keys: SLERP/linear between model
    frames; frames outside the keys are the clip's own)."""
    out_rot, out_pos = np.array(clip.rotations, copy=True), np.array(clip.positions, copy=True)
    span = np.arange(keys[0], keys[-1] + 1)
    r, p = timebase.sample(quat_np.fix_hemisphere(rot), pos, timebase.model_times(keys, mkeys, span))
    out_rot[span], out_pos[span] = r, p
    return out_rot, out_pos


def inbetween(engine, clips: list[Clip], keys_list: list[list[int]]):
    """-> list of (clip, controls); raises ValueError naming the clip for bad keys.

    With ``engine.guard`` (the default) each clip's fill is the guarded blend of the model and the curves
    Blender draws through the keys (``backend.motion.inbetween.guard``, ``backend.motion.inbetween.blender_curves``); the hidden-key passes run in
    the same batches.  With ``engine.symmetric`` a fill the guard does not judge is the mean of the model
    and its mirror image (``fill_pairs``, ``mirror_mean``).  With ``engine.contacts`` the feet the keys plant are held
    (``planted``), on the model's grid.
    """
    ck = engine.ckpt
    mft = getattr(engine, "frame_time", timebase.MODEL_FRAME_TIME)
    checked, spans, mirror = [], [], []
    items: list[tuple[Clip, list[int]]] = []  # spans: each clip's items (its fill, then its hidden-key passes)
    for clip, keys in zip(clips, keys_list, strict=True):
        try:
            keys = checked_keys(keys, clip.num_frames, clip.frame_time, ck.window - 1, mft)
        except ValueError as e:
            raise ValueError(f"{clip.name}: {e}") from None
        engine.check_clip(clip, keys)
        cm, unit = units.in_centimetres(clip, ck.skeleton.offsets)  # a file in metres or inches: the model's cm
        # another frame rate: the model fills its own grid (``backend.maths.timebase``), read back below
        same = timebase.same_rate(clip.frame_time, mft)
        work, wkeys = (cm, keys) if same else on_model_grid(cm, keys, mft, ck.window - 1)
        checked.append((clip, keys, work, wkeys, cm, unit))
        passes = guard_passes(engine, wkeys) if engine.guard else []
        spans.append(slice(len(items), len(items) + 1 + len(passes)))
        items += [(work, wkeys)] + [(work, p) for p in passes]
        mirror += [uses_mirror(engine, wkeys)] + [False] * len(passes)
    fills, backs = fill_pairs(engine, items, with_base=False, which=mirror)
    out = []
    for (clip, keys, work, wkeys, cm, unit), span in zip(checked, spans, strict=True):
        mine, back = fills[span], backs[span.start]
        own = mine[0]
        rot, pos, _, _, ctrl, origins, segs = own if back is None else mirror_mean(own, back)
        if engine.guard:
            # the curves through the keys and through each hidden-key pass: one conversion, one handle solve
            passes = [p for _, p in items[span][1:]]
            curves, held = fcurves.fill_and_at(work.skeleton, work.rotations, work.positions, wkeys,
                                               hidden_jobs(wkeys, passes))
            alphas = guard_weight(engine, work, wkeys, mine[1:], None if back is None else (own[:2], back, (rot, pos)),
                                  curves, held)
            engine.remember_guard(wkeys, work, alphas)
            rot, pos = blend((rot, pos), curves, frame_alphas(wkeys, alphas, len(rot)))
        # feet planted on the model's grid, like everything else the fill does: a clip at another frame rate
        # reads the same motion at its own times (tests/test_timebase.py)
        rot = follow_keys(rot, wkeys, still_joints(engine))  # (before the feet: they are solved under it)
        rot = planted(engine, work.skeleton, rot, pos, wkeys, work.frame_time, alphas if engine.guard else None)
        if work is not cm:
            rot, pos = to_scene_grid(cm, keys, wkeys, rot, pos)
        rot, pos = rot.astype(clip.rotations.dtype), (pos / unit).astype(clip.positions.dtype)
        # keys exactly as given; frames before the first key and after the last copied as they are
        kept = np.r_[0:keys[0], keys, keys[-1] + 1:clip.num_frames]
        rot[kept], pos[kept] = clip.rotations[kept], clip.positions[kept]
        rot = quat_np.fix_hemisphere(rot)
        rot[kept] = clip.rotations[kept]  # hemisphere fixing may flip a kept frame's sign: put it back
        meta = {}
        src = clip.meta.get("source_channels")
        if src is not None:
            ref = np.full_like(src, np.nan)
            ref[kept] = src[kept]
            meta["source_channels"] = ref  # Euler hints: kept frames as in the file, the rest continuous
        result = Clip(clip.skeleton, rot, pos, clip.frame_time, clip.name, meta)
        template = cm.positions[keys[0]].astype(np.float32).astype(np.float64)  # (controls: the model's cm)
        controls = Controls(ctrl, origins, segs, template, work.frame_time, clip.name, keys=list(wkeys),
                            key_rotations=clip.rotations[keys].copy(), key_positions=cm.positions[keys].copy())
        out.append((result, controls))
    return out


def decode_inbetween(engine, controls, points=None, supersample: int = 1, timing: float = 0.0, like=None):
    """Re-decode in-betweened motion from its (possibly edited) control points.

    The key poses stored in ``controls`` rebuild the interpolation base; with ``supersample``
    s the segment is decoded at s times the frame density (keys land on every s-th frame);
    ``timing`` re-times the latent spline.  Keys come out exactly as stored.
    """
    from ..edits import warp_times
    from ..skeleton import Clip
    engine.require("inbetween")
    s = max(1, int(supersample))
    pts = controls.points if points is None else points
    skel = like.skeleton if like is not None else engine.skeleton
    unit = units.cm_per_unit(skel.offsets, engine.skeleton.offsets)  # controls are in the model's cm
    wskel = units.scaled_skeleton(skel, unit)
    keys = list(controls.keys)
    total = (controls.num_frames - 1) * s + 1
    rot = np.zeros((total, wskel.num_joints, 4))
    rot[..., 0] = 1.0
    pos = np.zeros((total, wskel.num_joints, 3))
    dense_keys = [k * s for k in keys]
    rot[dense_keys], pos[dense_keys] = controls.key_rotations, controls.key_positions
    template = np.asarray(controls.template, dtype=np.float32)
    out_rot, out_pos = rot.copy(), pos.copy()
    for si, (a, b) in enumerate(controls.segments):
        lo, hi = a * s, b * s
        m = hi - lo + 1
        mask = np.zeros((1, m), dtype=bool)
        mask[0, [k * s - lo for k in keys if a <= k <= b]] = True
        r = rot[lo:hi + 1][None].astype(np.float32)
        p = pos[lo:hi + 1][None].astype(np.float32)
        keys_n, base_n, origin = inbetween_inputs(r, p, mask, engine.layout, engine.norm, engine.ckpt.config.base)
        uniform = np.linspace(0.0, 1.0, m) if m > 1 else np.zeros(1)
        times = warp_times(uniform, timing).astype(np.float32)
        positions = (uniform * (b - a)).astype(np.float32)
        ctrl = np.asarray(pts[si], dtype=np.float32)[None]
        feat = engine.norm.inverse(engine.model.decode_keys(ctrl, base_n, mask, times, positions))
        feat = snap_to_keys(feat, engine.norm.inverse(keys_n), mask)[0]
        out_rot[lo:hi + 1], out_pos[lo:hi + 1] = poses_from_features(feat, engine.layout, origin[0], template,
                                                                     wskel.num_joints)
    if uses_mirror(engine, keys):
        c_rot, c_pos = mirror_correction(engine, controls, wskel)
        if s > 1:  # the correction, per frame, interpolated between frames at the denser sampling
            c_rot, c_pos = timebase.resample_uniform(c_rot, c_pos, (len(c_rot) - 1) * s + 1)
        out_rot, out_pos = quat_np.mul(c_rot, out_rot), out_pos + c_pos
    alphas = engine.guard_for(controls, wskel) if engine.guard else None
    if engine.guard:  # (after the mirror correction: ``inbetween`` blends the mirror mean)
        out_rot, out_pos = blend((out_rot, out_pos), fcurves.fill(wskel, rot, pos, dense_keys),
                                 frame_alphas(dense_keys, alphas, total))
    out_rot[dense_keys], out_pos[dense_keys] = controls.key_rotations, controls.key_positions
    out_rot = follow_keys(out_rot, dense_keys, still_joints(engine))  # as ``inbetween`` does
    out_rot = quat_np.fix_hemisphere(planted(engine, wskel, out_rot, out_pos, dense_keys, controls.frame_time / s,
                                             alphas))
    out_rot[dense_keys], out_pos[dense_keys] = controls.key_rotations, controls.key_positions  # keys as stored
    return Clip(skel, out_rot, out_pos / unit, controls.frame_time / s, controls.name)


def still_joints(engine) -> list[int]:
    """The joints the training data never turned: every one of their rotation features has the normaliser's
    floor as its spread (``--norm_floor``; 1e-3 before it was a setting).  The model's output there is its
    noise in the floor's units (with a floor of 0.05, up to 0.09 degrees on the data set's root, which a
    walk 4 m from the origin turns into a 0.6 cm slide), so it is not the model's to move."""
    floor = float(engine.ckpt.info.get("config", {}).get("norm_floor", 1e-3))
    std, layout = np.asarray(engine.norm.std, dtype=np.float64), engine.layout
    return [j for j in layout.rotation_joints if (std[layout.rotation_columns(j)] <= floor * (1 + 1e-6)).all()]


def still_as_trained(engine, feat: np.ndarray) -> np.ndarray:
    """Decoded features ``[..., D]`` with the rotation features of ``still_joints`` set to the value the
    training data always had (the normaliser's mean): the autoencoder's counterpart of ``follow_keys``, so
    a slider never turns the data set's root."""
    cols = [c for j in still_joints(engine) for c in engine.layout.rotation_columns(j)]
    if not cols:
        return feat
    out = np.array(feat, copy=True)
    out[..., cols] = np.asarray(engine.norm.mean, dtype=out.dtype)[cols]
    return out


def follow_keys(rot: np.ndarray, keys, joints) -> np.ndarray:
    """``rot`` with ``joints`` SLERPed between the keys (a joint the keys hold still stays exactly still)."""
    if not joints:
        return rot
    mask = np.zeros(len(rot), dtype=bool)
    mask[list(keys)] = True
    prev, nxt, alpha = bracket(mask)
    out = np.array(rot, copy=True)
    out[:, joints] = quat_np.slerp(rot[prev][:, joints], rot[nxt][:, joints], alpha.astype(np.float64)[:, None])
    return out


def planted(engine, skeleton, rot, pos, keys, frame_time: float, alphas=None) -> np.ndarray:
    """The fill's rotations with its planted feet held (``backend.motion.inbetween.contacts``) unless ``engine.contacts``
    is off; key frames are not changed.  ``alphas``: the guard's weight per gap between ``keys`` (where it
    is below 1 the feet are planted firmer: ``ContactConfig.untrusted_ease``)."""
    if not getattr(engine, "contacts", False):
        return rot
    untrusted = None if alphas is None else np.asarray(alphas) < 1
    return plant_feet(skeleton.parents, skeleton.names, rot, pos, keys, frame_time, untrusted=untrusted)


def uses_mirror(engine, keys) -> bool:
    """Whether ``inbetween`` answered these keys with the mirror average (``mirror_mean``): a
    symmetric engine where the guard hides no key of a doubled gap up to ``guard.MAX_HIDDEN_GAP`` frames
    (with those passes the mirror would double a cost already twice the model's: the 10 ms budget per
    window)."""
    return bool(getattr(engine, "symmetric", False)) and not (
        engine.guard and holdout_passes(list(keys), engine.ckpt.window - 1))


def mirror_correction(engine, controls, skeleton) -> tuple[np.ndarray, np.ndarray]:
    """(rotation [F, J, 4], offset [F, J, 3]) taking the model's own decode of the encoded control
    points to the mirror-averaged fill ``inbetween`` wrote: the mirrored half depends on the keys
    only, so a re-decode (edited or not) applies the same correction and unedited control points
    give the written fill again.  Cached per keys like the guard's weights."""
    key = ("mirror",) + (engine.guard_key(controls.keys, controls.key_rotations, controls.key_positions),)
    cache = engine.guard_cache
    if key not in cache:
        clip, keys = keys_clip(controls, skeleton), list(controls.keys)
        (own,), (back,) = fill_pairs(engine, [(clip, keys)], with_base=False)
        sym = mirror_mean(own, back)
        cache[key] = (quat_np.normalize(quat_np.mul(sym[0], quat_np.inv(own[0]))), sym[1] - own[1])
    return cache[key]

