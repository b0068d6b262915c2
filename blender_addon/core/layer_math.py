"""The latent layer without bpy: which frames an edit reaches, original + (edited - neutral), channel
values nearest the original's, the keys of a layered curve, and the fidelity readout.

Latent edits never replace the user's motion: per frame, the difference between the decode of the
edited control points and the decode of the encoded ones is applied to the original motion, rotations
composed as quaternions in each bone's local frame (model convention) and positions added.  A segment
whose inputs are the encoded ones adds nothing, and its frames keep the original keys themselves.
Frames are 0-based and relative to the start of the range unless a name says otherwise.
"""
from __future__ import annotations

import numpy as np

from . import key_rows, latent_math, rig_math

# Fidelity readout: a segment whose neutral decode is further than this from the motion it encodes
# is one the model knows poorly (docs/latent-controls.md).  The shipped autoencoder reconstructs
# unfamiliar motion at 2.6 deg / 1.8 cm on average (docs/results.md, *Autoencoder*); twice that
# is well outside what it does on any motion it was tested on.
WARN_DEG = 5.0
WARN_CM = 4.0
WARN_MESH_PERCENT = 2.0  # mean vertex error, % of the bounding-box diagonal (the cloth: 0.7 %)
POOR = "the model knows this motion poorly: edits may look unnatural"


# -- which frames a layer touches -------------------------------------------------------------------
def edited_segments(sigs, neutral_sigs) -> list[int]:
    """Segments whose inputs (raw points, sliders) differ from the encoded ones."""
    return [s for s, (a, b) in enumerate(zip(sigs, neutral_sigs, strict=True)) if a != b]


def mesh_ramp(m: int) -> int:
    """Frames over which a mesh segment of ``m`` frames eases into a seam (``backend.mesh.sequences.join_frames``)."""
    return max(1, m // 4)


def armature_ramp(m: int) -> int:
    return len(latent_math.ramp(m))


def reach(bounds, segments, seams: bool, ramp=armature_ramp, protected=()) -> np.ndarray:
    """Frames whose joined decode may change when ``segments`` change: the segments themselves and,
    with ``seams``, the frames over which each neighbour eases into the seam it shares with them;
    never ``protected`` frames (an in-betweened range's keys)."""
    frames = set()
    count = len(bounds)
    for s in segments:
        a, b = bounds[s]
        frames.update(range(a, b + 1))
        if seams and s > 0:
            pa, pb = bounds[s - 1]
            frames.update(range(pb - ramp(pb - pa + 1) + 1, pb + 1))
        if seams and s < count - 1:
            na, nb = bounds[s + 1]
            frames.update(range(na, na + ramp(nb - na + 1)))
    frames -= {int(p) for p in protected}
    return np.array(sorted(frames), dtype=np.int64)


def runs(frames: np.ndarray) -> list[tuple[int, int]]:
    """Sorted integer frames -> runs of consecutive frames ``[(first, last), ...]``."""
    if not len(frames):
        return []
    cut = np.flatnonzero(np.diff(frames) > 1)
    starts = np.concatenate([[0], cut + 1])
    ends = np.concatenate([cut, [len(frames) - 1]])
    return [(int(frames[a]), int(frames[b])) for a, b in zip(starts, ends, strict=True)]


def segments_at(bounds, frames: np.ndarray) -> dict[int, np.ndarray]:
    """Segment -> the frames (of ``frames``) it writes; a shared end frame goes to the left segment."""
    out = {}
    for s, (a, b) in enumerate(bounds):
        lo = a + 1 if s > 0 else a
        mine = frames[(frames >= lo) & (frames <= b)]
        if len(mine):
            out[s] = mine
    return out


def needed_parts(bounds, frames: np.ndarray, seams: bool, ramp=armature_ramp) -> tuple[dict, set]:
    """(segment -> (sides it eases on, its frames among ``frames``), every segment whose decode that needs)."""
    plan, need = {}, set()
    count = len(bounds)
    for s, mine in segments_at(bounds, frames).items():
        a, b = bounds[s]
        r = ramp(b - a + 1)
        left = seams and s > 0 and bool((mine < a + r).any())
        right = seams and s < count - 1 and bool((mine > b - r).any())
        plan[s] = ((left, right), mine)
        need |= {s} | ({s - 1} if left else set()) | ({s + 1} if right else set())
    return plan, need


def joined(parts: dict, bounds, plan: dict, seams: bool) -> tuple[np.ndarray, np.ndarray]:
    """The decode at the planned frames as the segments join (each easing into its shared end frames,
    ``latent_math.segment_values``), frames in the order of ``plan``: -> rot ``[n, J, 4]``, pos ``[n, J, 3]``."""
    rots, poss = [], []
    for s, (sides, mine) in plan.items():
        rot, pos = latent_math.segment_values(parts, s, len(bounds), seams, sides)
        rots.append(rot[mine - bounds[s][0]])
        poss.append(pos[mine - bounds[s][0]])
    return np.concatenate(rots), np.concatenate(poss)


def compose(o_rot, o_pos, n_rot, n_pos, e_rot, e_pos) -> tuple[np.ndarray, np.ndarray]:
    """Original ``o`` moved by the edit: rotations ``o * (n^-1 * e)`` (the edit in each bone's local
    frame), positions ``o + (e - n)``."""
    delta = rig_math.qmul(rig_math.qconj(n_rot), e_rot)
    return rig_math.qnormalize(rig_math.qmul(o_rot, delta)), o_pos + (e_pos - n_pos)


# -- channel values -----------------------------------------------------------------------------------
def channels_near(q: np.ndarray, mode: str, ref: np.ndarray) -> np.ndarray:
    """Rotations ``[..., 4]`` -> a rotation mode's channel values ``[..., 3|4]``, each the equivalent
    nearest ``ref`` (the original's channel values on the same frame): Euler triples keep the
    original's turns, quaternions its sign, axis-angle its axis direction and turns."""
    ref = np.asarray(ref, dtype=np.float64)
    if mode == "QUATERNION":
        return rig_math.align_hemisphere(q, ref)
    if mode == "AXIS_ANGLE":
        aa = rig_math.quat_to_axis_angle(rig_math.align_hemisphere(q, rig_math.axis_angle_to_quat(ref)))
        flip = np.sum(aa[..., 1:] * ref[..., 1:], -1, keepdims=True) < 0
        aa = np.where(flip, -aa, aa)
        turn = 2 * np.pi * np.round((ref[..., 0] - aa[..., 0]) / (2 * np.pi))
        aa[..., 0] += turn
        return aa
    return rig_math.quat_to_euler(q, mode, compat=ref)


def extend(base_x: np.ndarray, run: tuple[int, int], lo: int, hi: int) -> tuple[int, int]:
    """A written run of frames widened, on one curve, to the frames just after the original's last key
    before it and just before its first key after it (within the range ``lo..hi``): replacing keys
    inside a run changes the curve between it and the nearest kept keys, so those frames are keyed
    too, with the original's own values.  Every whole frame then shows what it should."""
    a, b = run
    x = base_x[(base_x >= lo - latent_math.FRAME_EPS) & (base_x <= hi + latent_math.FRAME_EPS)]
    before, after = x[x < a - latent_math.FRAME_EPS], x[x > b + latent_math.FRAME_EPS]
    a2 = int(np.floor(before.max() + latent_math.FRAME_EPS)) + 1 if len(before) else lo
    b2 = int(np.ceil(after.min() - latent_math.FRAME_EPS)) - 1 if len(after) else hi
    return min(a, max(lo, a2)), max(b, min(hi, b2))


def written_frames(base_x: np.ndarray, reach_abs: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Every scene frame a layered curve keys: the reach's runs, each widened by :func:`extend`."""
    out = []
    for r in runs(reach_abs):
        a, b = extend(base_x, r, lo, hi)
        out.append(np.arange(a, b + 1))
    return np.unique(np.concatenate(out)) if out else np.zeros(0, np.int64)


# -- key arrays -----------------------------------------------------------------------------------------
# what a layer key takes from the original key on its frame: its selection, handle types and easing
INHERITED = ("handle_left_type", "handle_right_type", "easing", "back", "amplitude", "period",
             "select_control_point", "select_left_handle", "select_right_handle")


def moved_keys(rows: dict, frames: np.ndarray, offsets: np.ndarray) -> dict:
    """Keys of the original between two of the layer's whole ``frames`` (sub-frames) moved by the layer's
    ``offsets`` there (per frame, linear between the two around each key): value and handles alike."""
    d = np.interp(rows["co"][:, 0].astype(np.float64), frames, offsets).astype(np.float32)
    out = dict(rows)
    for a in ("co", "handle_left", "handle_right"):
        if a in out:
            out[a] = out[a].copy()
            out[a][:, 1] += d
    return out


def layered_curve(current: dict | None, base: dict | None, lo: int, hi: int, frames: np.ndarray,
                  values: np.ndarray, enums: dict, attrs=None, offsets: np.ndarray | None = None) -> dict | None:
    """One curve's keys: the current keys outside the range ``lo..hi``, the original (``base``) keys
    inside it, and LINEAR keys of type Generated on ``frames`` (scene frames), which replace the
    original's keys there and keep their ``INHERITED`` attributes (a frame without one: unselected,
    AUTO_CLAMPED).  None: there is nothing to key (no original curve and nothing written or kept).
    ``attrs``: only these attributes (the others are not computed).  ``offsets``: what the layer adds on
    each of ``frames`` (``values`` minus the original's): the original's keys between two of them are
    kept, moved by it (``moved_keys``); None: they go (a resampled range keys every frame anew)."""
    eps = latent_math.FRAME_EPS
    if attrs is not None:
        pick = (lambda d: d if d is None else {a: d[a] for a in attrs if a in d})
        current, base = pick(current), pick(base)
    parts = []
    if current is not None and len(current["co"]):
        x = current["co"][:, 0]
        out = (x < lo - eps) | (x > hi + eps)
        if out.any():
            parts.append({a: v[out] for a, v in current.items()})
    if base is not None and len(base["co"]):
        x = base["co"][:, 0]
        inside = (x >= lo - eps) & (x <= hi + eps)
        keep = inside.copy()
        for a, b in runs(np.asarray(frames, np.int64)):
            keep &= (x < a - eps) | (x > b + eps)
        if keep.any():
            parts.append(base if keep.all() else {k: v[keep] for k, v in base.items()})
        sub = inside & ~keep & (np.abs(x - np.round(x)) >= eps) if offsets is not None else None
        if sub is not None and sub.any():  # the original's sub-frame keys under the layer: moved with it
            parts.append(moved_keys({k: v[sub] for k, v in base.items()}, np.asarray(frames, np.float64), offsets))
    if len(frames):
        rows = key_rows.new_rows(np.asarray(frames, np.float64), values, enums)
        if attrs is not None:
            rows = {a: rows[a] for a in attrs}
        if base is not None and len(base["co"]) and attrs is None:
            # an original key on the frame lends what is not motion: selection, handle types, easing
            bx = base["co"][:, 0]
            at = np.minimum(np.searchsorted(bx, frames - eps), len(bx) - 1)
            hit = np.abs(bx[at] - frames) < eps
            if hit.any():
                for a in INHERITED:
                    rows[a][hit] = base[a][at[hit]]
        parts.append(rows)
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    attrs = [a for a in parts[-1] if all(a in p for p in parts)]  # (``current`` may hold only some)
    merged = {a: np.concatenate([p[a] for p in parts]) for a in attrs}
    x = merged["co"][:, 0]
    if (np.diff(x) < 0).any():
        order = np.argsort(x, kind="stable")
        merged = {a: v[order] for a, v in merged.items()}
    return merged


# -- fidelity --------------------------------------------------------------------------------------------
def fidelity_problem(rows, mesh: bool = False) -> str | None:
    """The warning for a range's fidelity rows (per segment ``[deg, cm]``, a mesh ``[error, percent]``),
    naming the segments past the threshold, or None."""
    rows = np.asarray(rows, dtype=np.float64).reshape(-1, 2)
    bad = np.flatnonzero(rows[:, 1] > WARN_MESH_PERCENT) if mesh else \
        np.flatnonzero((rows[:, 0] > WARN_DEG) | (rows[:, 1] > WARN_CM))
    if not len(bad):
        return None
    which = ", ".join(str(s + 1) for s in bad[:6]) + (" ..." if len(bad) > 6 else "")
    return f"Segment{'s' * (len(bad) > 1)} {which}: {POOR}"


def fidelity_text(row, mesh: bool = False) -> str:
    """One segment's readout, e.g. ``model fit 1.8 cm, 2.4 deg``."""
    if mesh:
        return f"model fit {row[1]:.2f} % of the size"
    return f"model fit {row[1]:.1f} cm, {row[0]:.1f}\N{DEGREE SIGN}"


# -- mesh sequences ----------------------------------------------------------------------------------
def _ease(n: int) -> np.ndarray:
    """``backend.maths.splines.ease_weights``: smoothstep from 0 to 1 over ``n`` frames, the last 1."""
    t = np.linspace(0.0, 1.0, n + 1)[1:]
    return t * t * (3 - 2 * t)


def mesh_joined(parts: dict, bounds, plan: dict, seams: bool) -> np.ndarray:
    """Vertices ``[n, V, 3]`` at the planned frames as ``backend.mesh.sequences.join_frames`` joins the segments
    (each side of a shared frame eases into the mean of both over a quarter of its length); only the
    planned frames are copied and eased."""
    out = []
    for s, ((left, right), mine) in plan.items():
        own, rel = parts[s], mine - bounds[s][0]
        p = own[rel]  # (a copy: fancy indexing)
        n = mesh_ramp(len(own))
        w = _ease(n).astype(p.dtype)
        if seams and left:  # frame k of the segment eases with weight w[n - 1 - k]
            k = rel < n
            if k.any():
                p[k] += w[n - 1 - rel[k]][:, None, None] * (0.5 * (parts[s - 1][-1] + own[0]) - own[0])
        if seams and right:  # frame len - n + i with weight w[i]
            k = rel >= len(own) - n
            if k.any():
                p[k] += w[rel[k] - (len(own) - n)][:, None, None] * (0.5 * (own[-1] + parts[s + 1][0]) - own[-1])
        out.append(p)
    return np.concatenate(out)


def resample_frames(frames: np.ndarray, m: int) -> np.ndarray:
    """A sequence ``[n, ...]`` at ``m`` evenly spaced times from its first to its last frame, linearly
    interpolated (times that fall on a frame give it exactly; ``m == n`` gives the same array)."""
    n = len(frames)
    if m == n:
        return frames
    t = np.arange(m) * (n - 1) / (m - 1)  # whole numbers times (n - 1) first: frame times come out exact
    i = np.floor(t).astype(np.int64)
    w = (t - i).astype(frames.dtype).reshape((-1,) + (1,) * (frames.ndim - 1))
    a, b = frames[i], frames[np.minimum(i + 1, n - 1)]
    return np.where(w == 0, a, a + w * (b - a))
