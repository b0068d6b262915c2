"""The armature requests' work (``inbetween``, ``encode``, ``decode``), shared with the add-on's
in-process mode: key poses or clips in the checkpoint's convention -> frames and latent splines."""
from __future__ import annotations

import contextlib

import numpy as np

from ..maths import quat_np, timebase
from .engines import check_gaps, check_reply_size, principal_amounts


@contextlib.contextmanager
def contacts_as(engine, header: dict):
    """The request's ``"contacts"`` (default on: planted feet held, ``backend.motion.inbetween.contacts``) on the shared
    engine for the request's length."""
    before = getattr(engine, "contacts", None)
    if before is not None:
        engine.contacts = bool(header.get("contacts", True))
    try:
        yield
    finally:
        if before is not None:
            engine.contacts = before


def inbetween_keys(engine, offsets: np.ndarray, keys, key_rotations: np.ndarray, key_positions: np.ndarray,
                   frame_time: float = 1.0 / 30.0) -> tuple[np.ndarray, np.ndarray]:
    """Key poses only (local rotations ``[K, J, 4]``, positions ``[K, J, 3]`` in the checkpoint's
    convention, keys 0-based from 0) -> every frame ``[F, J, 4]``, ``[F, J, 3]``."""
    rot, pos, _ = inbetween_with_controls(engine, offsets, keys, key_rotations, key_positions, frame_time)
    return rot, pos


def inbetween_with_controls(engine, offsets, keys, key_rotations, key_positions, frame_time=1.0 / 30.0):
    """:func:`inbetween_keys` plus the latent spline it decoded: ``(rot, pos, Controls)``."""
    from dataclasses import replace

    from ..motion.skeleton import Clip
    keys = [int(k) for k in keys]
    if not keys or keys[0] != 0:
        raise ValueError(f"keys must start at frame 0, got {keys[:3]}")
    j = engine.skeleton.num_joints
    if key_rotations.shape != (len(keys), j, 4) or key_positions.shape != (len(keys), j, 3) \
            or offsets.shape != (j, 3):
        raise ValueError(f"key arrays {key_rotations.shape}, {key_positions.shape}, offsets {offsets.shape} "
                         f"do not match {len(keys)} keys x {j} joints")
    check_gaps(keys, engine.ckpt.window - 1, "blender", frame_time=frame_time,
               model_frame_time=engine.frame_time)  # the clip's name below: refused before allocating
    f = keys[-1] + 1
    rot = np.zeros((f, j, 4))
    rot[..., 0] = 1.0
    pos = np.broadcast_to(offsets, (f, j, 3)).astype(np.float64)
    rot[keys], pos[keys] = key_rotations, key_positions
    skel = replace(engine.skeleton, offsets=np.asarray(offsets, dtype=np.float64))
    out, controls = engine.inbetween(Clip(skel, rot, pos, frame_time, "blender"), keys)
    return out.rotations, out.positions, controls


def segments_reply(keys, controls) -> dict:
    """The in-betweened segments in the request's frames (``segments``); at another frame rate also on the
    model's grid (``model_segments``, ``model_keys``: a decode request names them).  Segments start and end
    on keys, so each end maps to its key."""
    keys = [int(k) for k in keys]
    model = [[int(a), int(b)] for a, b in controls.segments]
    if list(controls.keys) == keys:
        return {"segments": model}
    at = {int(m): k for m, k in zip(controls.keys, keys, strict=True)}
    return {"segments": [[at[a], at[b]] for a, b in model], "model_segments": model,
            "model_keys": [int(m) for m in controls.keys]}


def encode_clip(engine, offsets, rotations, positions, frame_time=1.0 / 30.0, decode: bool = False):
    """Every frame of a clip (checkpoint convention) -> (header, arrays) of its latent spline.

    With ``decode`` the reply also carries every segment's neutral decode, each on its own and laid
    one after the other (``rotations``, ``positions``: exactly what ``decode`` answers for the same
    points), and ``fidelity``: per segment, how far that decode is from the clip (mean local
    rotation error over the modelled joints in degrees, mean global joint position error in cm)."""
    from dataclasses import replace

    from ..motion.skeleton import Clip
    j = engine.skeleton.num_joints
    if rotations.shape[1:] != (j, 4) or positions.shape[1:] != (j, 3) or offsets.shape != (j, 3) \
            or len(rotations) != len(positions):
        raise ValueError(f"arrays {rotations.shape}, {positions.shape}, offsets {offsets.shape} do not match "
                         f"{j} joints")
    skel = replace(engine.skeleton, offsets=np.asarray(offsets, dtype=np.float64))
    rotations, positions = np.asarray(rotations, np.float64), np.asarray(positions, np.float64)
    model_rot, model_pos, n = rotations, positions, len(rotations)
    resampled = not timebase.same_rate(frame_time, engine.frame_time)
    if resampled:  # another frame rate: encoded on the model's grid, the segments mapped back (backend.maths.timebase)
        model_rot, model_pos = timebase.resample_uniform(quat_np.fix_hemisphere(rotations), positions,
                                                  timebase.model_length(n, frame_time, engine.frame_time))
    c = engine.encode(Clip(skel, model_rot, model_pos, engine.frame_time if resampled else frame_time, "blender"))
    model_segs = [[int(a), int(b)] for a, b in c.segments]
    segs = ([[int(a), int(b)] for a, b in timebase.map_bounds(c.segments, len(model_rot), n)] if resampled
            else model_segs)
    reply = {"segments": segs, "principal_names": engine.principal_names(),
             "principal_descriptions": engine.principal_descriptions(),
             "min_frames": engine.min_frames}
    if resampled:
        reply["model_segments"] = model_segs
    out = {"points": c.points, "origins": c.origins, "template": c.template}
    if decode:
        neutral: dict = {"segments": segs, "lengths": [b - a + 1 for a, b in segs], "amplify": [1.0] * len(segs),
                   "timing": [0.0] * len(segs), "principal": [[]] * len(segs), "keys": None,
                   "model_segments": reply.get("model_segments")}
        out["rotations"], out["positions"] = decode_parts(engine, neutral, out)
        reply["fidelity"] = fidelity(engine, segs, rotations, positions, out["rotations"], out["positions"])
    return reply, out


def fidelity(engine, segments, rotations, positions, dec_rot, dec_pos) -> list[list[float]]:
    """Per segment ``[rotation error deg, joint position error cm]`` between the clip and the segments'
    neutral decodes laid one after the other (as ``decode`` answers): the readout after Encode."""
    from ..maths import quat_np
    parents, rj = engine.skeleton.parents, list(engine.layout.rotation_joints)
    at = np.cumsum([0] + [b - a + 1 for a, b in segments])
    out = []
    for s, (a, b) in enumerate(segments):
        r, p = dec_rot[at[s]:at[s + 1]], dec_pos[at[s]:at[s + 1]]
        t_r, t_p = rotations[a:b + 1], positions[a:b + 1]
        deg = np.degrees(quat_np.angle_between(r[:, rj], t_r[:, rj])).mean()
        got, want = quat_np.fk(quat_np.normalize(r), p, parents)[1], quat_np.fk(t_r, t_p, parents)[1]
        cm = np.linalg.norm(got - want, axis=-1).mean()
        out.append([float(deg), float(cm)])
    return out


def decode_parts(engine, header: dict, arrays: dict) -> tuple[np.ndarray, np.ndarray]:
    """The ``decode`` request: each listed segment decoded on its own (a batch of one, so a
    segment decodes to the same numbers whichever others are asked for with it).  In-betweened
    segments are decoded through the guard (``backend.motion.inbetween.guard``) unless ``"guard": false``: the add-on's
    latent layer asks without it, so a slider's edit is the model's own, not scaled by the guard."""
    from ..motion.controls import Controls
    from ..motion.edits import edit_points
    from ..motion.inbetween.fill import decode_inbetween
    segs, lengths = header["segments"], [int(m) for m in header["lengths"]]
    amplify, timing, principal = header["amplify"], header["timing"], header["principal"]
    points, origins = np.asarray(arrays["points"], np.float64), np.asarray(arrays["origins"], np.float64)
    template = np.asarray(arrays["template"], np.float64)
    keys = header.get("keys")
    model_segs = header.get("model_segments")  # a range encoded at another frame rate: its segments on the model's grid
    if model_segs is not None and (len(model_segs) != len(segs) or any(int(b) - int(a) < 1 for a, b in model_segs)):
        raise ValueError("decode: model_segments must give one span of at least 2 frames per segment")
    if model_segs is not None and keys is not None and len(header.get("model_keys") or ()) != len(keys):
        raise ValueError("decode: an in-betweened range at another frame rate needs model_keys, one per key")
    if not (len(segs) == len(lengths) == len(amplify) == len(timing) == len(principal) == len(points) == len(origins)):
        raise ValueError("decode: segments, lengths, edits and points differ in count")
    pca = engine.principal()
    j = engine.skeleton.num_joints
    check_reply_size(sum(lengths), j * 4 * 8, "decode")  # rotations [F, J, 4] float64, the largest reply
    rots, poss = [], []
    edited, plans = [], []
    for i, (a, b) in enumerate(segs):
        n, m = int(b) - int(a) + 1, lengths[i]
        if n < 2 or m < 2:
            raise ValueError(f"segment {a}-{b} -> {m} frames: a segment needs at least 2 frames")
        amounts = principal_amounts(engine, pca, principal[i])
        edited.append(edit_points(points[i], amplify_by=float(amplify[i]), principal=pca, amounts=amounts))
        # encoded at another frame rate: decoded on the model's grid (times the range's stretch), spread
        # back over the segment's frames (backend.maths.timebase); both the edited and the neutral decode
        # take this path, so the layer's difference is 0 at neutral
        n_model = n if model_segs is None else int(model_segs[i][1]) - int(model_segs[i][0]) + 1
        n_dec = m if model_segs is None else int(round((n_model - 1) * (m - 1) / (n - 1))) + 1
        plans.append((n_model, (n_dec - 1) / (n_model - 1), float(timing[i])))
    styled = _styled(engine, header.get("style"), len(segs), keys is not None)
    sources = {i: len(edited) + k for k, i in enumerate(styled)}  # the unstyled decode of each styled segment
    if styled:
        from ..motion.style import style_points
        extra = [edited[i] for i in styled]
        edited = [style_points(pts, engine.styles(), styled.get(i, {})) if i in styled else pts
                  for i, pts in enumerate(edited)] + extra
        plans = plans + [plans[i] for i in styled]
        origins = np.concatenate([origins, origins[list(styled)]])
    poses = _decoded_poses(engine, edited, origins, plans, template) if keys is None else {}
    for i in styled:  # the style changes how, not what: root path and planted feet as without it
        poses[i] = _content_kept(engine, poses[i], poses[sources[i]], header.get("free_root", False))
    for i, (a, b) in enumerate(segs):
        n, m = int(b) - int(a) + 1, lengths[i]
        pts = edited[i]
        if keys is None:
            r, p = poses[i]
            if len(r) != m:
                r, p = timebase.resample_uniform(quat_np.fix_hemisphere(r), p, m)
        else:
            if (m - 1) % (n - 1):
                raise ValueError(f"an in-betweened segment ({n} frames) stretches only by whole factors, not to {m}")
            inside = [k for k, key in enumerate(keys) if a <= key <= b]
            s = (m - 1) // (n - 1)
            # filled at another frame rate: decoded on the model's grid, read back at the scene's frames
            # (backend.maths.timebase: piecewise linear between the keys, exact at them)
            am, bm = (int(a), int(b)) if model_segs is None else (int(model_segs[i][0]), int(model_segs[i][1]))
            mkeys = keys if model_segs is None else header["model_keys"]
            sub_keys = [int(mkeys[k]) - am for k in inside]
            sub = Controls(pts[None], origins[i:i + 1], [(0, bm - am)], template, 1.0 / 30.0,
                           keys=sub_keys,
                           key_rotations=np.asarray(arrays["key_rotations"], np.float64)[inside],
                           key_positions=np.asarray(arrays["key_positions"], np.float64)[inside])
            guarded, engine.guard = engine.guard, bool(header.get("guard", True)) and engine.guard
            try:
                out = decode_inbetween(engine, sub, sub.points, s, float(timing[i]))
            finally:
                engine.guard = guarded
            r, p = out.rotations, out.positions
            if model_segs is not None:
                times = timebase.model_times([(int(keys[k]) - int(a)) * s for k in inside], [x * s for x in sub_keys],
                                      np.arange(m))
                r, p = timebase.sample(quat_np.fix_hemisphere(r), p, times)
        if len(r) != m:
            raise ValueError(f"segment {a}-{b} decoded to {len(r)} frames, not {m}")
        rots.append(r)
        poss.append(p)
    empty = (np.zeros((0, j, 4)), np.zeros((0, j, 3)))
    return (np.concatenate(rots), np.concatenate(poss)) if rots else empty


def _styled(engine, asked, count: int, inbetween: bool) -> dict:
    """``header["style"]`` (one ``{name: strength}`` per segment, or absent) -> ``{segment: strengths}`` of the
    segments with a nonzero strength, the names checked against the checkpoint's styles."""
    from ..motion.style import checked_strengths
    if not asked:
        return {}
    if not isinstance(asked, list) or len(asked) != count or not all(isinstance(a, dict) for a in asked):
        raise ValueError("decode: style must give one {name: strength} per segment")
    out = {}
    for i, a in enumerate(asked):
        got = {k: v for k, v in checked_strengths(engine.styles(), a, engine.path.name).items() if v != 0.0}
        if got:
            out[i] = got
    if out and inbetween:
        raise ValueError("a style is applied to an encoded (autoencoder) range; this range was in-betweened "
                         "(bake it and Encode it to add a style)")
    return out


def _content_kept(engine, styled: tuple, source: tuple, free_root: bool) -> tuple:
    """A styled segment's (rotations, positions) with the unstyled decode's root path over the ground (unless
    ``free_root``) and its feet held planted where the unstyled decode plants them (``backend.motion.style``)."""
    from ..motion import style
    rot, pos = styled
    if not free_root:
        for j in engine.layout.position_joints:
            pos = style.pin_root(pos, source[1], int(j), engine.layout.up_axis)
    down = style.source_contacts(engine.skeleton, quat_np.normalize(source[0]), source[1], engine.frame_time)
    return style.keep_contacts(engine.skeleton, quat_np.normalize(rot), pos, down, engine.frame_time), pos


def _decoded_poses(engine, points: list, origins: np.ndarray, plans: list, template: np.ndarray) -> dict:
    """Segment index -> (rotations, positions) of its decode: every segment in one model call
    (``Engine.decode_features``, lengths may differ) and one conversion to poses, the segments laid end to
    end.  Each segment's numbers are the ones it gets alone (tests/test_latent_service.py checks it), so
    the layer's caches stay valid."""
    from ..motion.features_np import poses_from_features
    if not points:
        return {}
    jobs = [(n, int(round((n - 1) * scale)) + 1, timing) for n, scale, timing in plans]
    sizes = [m for _, m, _ in jobs]
    feat = engine.decode_features(np.stack(points), jobs)
    origin = np.repeat(origins.astype(np.float32), sizes, axis=0)  # (as the model's float32 features carry it)
    r, p = poses_from_features(feat, engine.layout, origin, template, engine.skeleton.num_joints)
    out, at = {}, 0
    for i, m in enumerate(sizes):
        out[i] = (r[at:at + m], p[at:at + m])
        at += m
    return out
