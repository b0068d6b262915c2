"""Feet that stay planted: where the keys (or the fill itself) say a foot is on the ground, the
in-between frames keep it there.

A learned fill, like SLERP, moves a planted foot (docs/results.md, *Feet*: the pass on and off, beside
the capture's own speed), and an animator sees a 2 cm slide.  Per gap between two keys and per foot
joint (ankle, toes):

* **key contacts**: the joint is low (within ``near_ground`` leg lengths of the lower foot) at both
  keys, in the same place (within ``still``), and the fill does not lift it in between (``lift``):
  it is held on the line between its two key positions for the whole gap;
* **fill contacts**: elsewhere, runs of at least ``min_frames`` frames in which the fill's joint is
  low and slower than ``slow`` leg lengths per second are held where they are on average (or at
  the key they touch), eased in and out over ``ease`` frames at lift-off and touch-down (the contact's
  first and last frames; with ``outside``, the frames in the air before and after it, the contact held
  whole); held along the ground only (``ground_only``), so a heel that rises off its toes keeps the fill's
  height.  In a gap the in-betweener's guard does not trust (the model blended towards Blender's curves:
  motion it does not know, where it also steps at other times than the capture) a fill contact is held
  whole and eased in the air over ``untrusted_ease`` frames, a firmer plant where the fill's timing is least
  sure (docs/results.md, *Feet*: the firm plant's length).

The leg is then solved for the held joint: two-bone IK (hip, knee, ankle) with the knee in the plane
of the fill's own leg, the foot turned so a held toe stays put, the hip where the fill puts it.  Only
the leg's rotations change, only between keys, so the keys stay as given bit for bit and a foot in
the air is left alone.  Each gap is judged on its own two keys and its own frames, so a re-decode of
one segment gives what the whole fill gave.  Pure numpy (float64).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from ...maths import quat_np


@dataclass(frozen=True)
class ContactConfig:
    near_ground: float = 0.12  # leg lengths above the lower foot joint at that frame: "on the ground"
    still: float = 0.06  # leg lengths between the two keys' positions: "the same place"
    lift: float = 0.15  # leg lengths the fill may raise a key contact above its keys before it is not one
    slow: float = 2.0  # leg lengths per second: a low joint of the fill moving slower is planted
    min_frames: int = 3  # a fill contact lasts at least this many frames
    ease: int = 4  # frames over which a fill contact is eased in and out
    outside: bool = False  # ease in the air (before touch-down, after lift-off), the contact itself held whole
    ground_only: bool = True  # a fill contact is held along the ground only; its height stays the fill's
    spread: float = 0.0  # leg lengths along the ground a fill contact may stray from its held place (0: any)
    # in a gap the guard does not trust (``plant_feet``'s ``untrusted``: the model blended towards the curves),
    # fill contacts held whole and eased in the air over this many frames (0: as in the others)
    untrusted_ease: int = 16


# The capture's own contacts, which the foot-sliding figure is measured on, are judged stricter than the
# fill's: a fill's sliding foot is still a foot set down.  The fill's settings (slow 2.0, held along the
# ground) were chosen on the validation windows; docs/results.md, *Feet*, has what they give.
CAPTURE = ContactConfig(slow=0.6)  # detection reads near_ground and slow only


@dataclass(frozen=True)
class Leg:
    hip: int  # the thigh's joint (its rotation swings the leg)
    knee: int
    ankle: int
    toe: int | None  # the ankle's first child, when the skeleton has one


_FOOT = re.compile(r"foot|ankle", re.I)


def find_legs(names, parents) -> list[Leg]:
    """The legs of a skeleton by its joint names: a joint called *foot* or *ankle* (not a toe) whose
    parent and grandparent are joints (knee, hip); its first child is the toe."""
    return list(_legs(tuple(names), tuple(int(p) for p in parents)))


@functools.lru_cache(maxsize=64)
def _legs(names: tuple, parents: tuple) -> tuple[Leg, ...]:
    """``find_legs`` once per skeleton (every fill asks again)."""
    legs = []
    for j, n in enumerate(names):
        if not _FOOT.search(n) or re.search(r"toe|end", n, re.I):
            continue
        knee = int(parents[j])
        hip = int(parents[knee]) if knee >= 0 else -1
        if hip <= 0:
            continue
        kids = [c for c in range(len(names)) if parents[c] == j]
        legs.append(Leg(hip, knee, j, kids[0] if kids else None))
    return tuple(legs)


def up_vector(gpos_keys: np.ndarray, legs: list[Leg], parents) -> np.ndarray:
    """The up direction (a signed world axis) from key poses [K, J, 3] (the legs and the joints above
    them at least): the axis along which the pelvis stands above the feet (BVH and the add-on's model
    convention: +Y)."""
    feet = gpos_keys[:, [leg.ankle for leg in legs]].mean(1)
    pelvis = gpos_keys[:, sorted({int(parents[leg.hip]) for leg in legs})].mean(1)
    rise = (pelvis - feet).mean(0)
    up = np.zeros(3)
    a = int(np.argmax(np.abs(rise)))
    up[a] = 1.0 if rise[a] >= 0 else -1.0
    return up


def foot_joints(legs: list[Leg]) -> list[int]:
    return [j for leg in legs for j in (leg.ankle, leg.toe) if j is not None]


def leg_length(pos_key: np.ndarray, leg: Leg) -> float:
    """Thigh plus shin, from one frame's local offsets [J, 3]."""
    return float(np.linalg.norm(pos_key[leg.knee]) + np.linalg.norm(pos_key[leg.ankle]))


def ground_contacts(gpos: np.ndarray, joints, up, frame_time: float, length: float,
                    cfg: ContactConfig = ContactConfig()) -> np.ndarray:
    """[F, len(joints)] bool: the joint is low (``near_ground`` leg lengths above the lowest foot joint
    of that frame) and still (slower than ``slow`` leg lengths per second, central difference) in
    global positions ``gpos [F, J, 3]``: the capture's own contacts, and the fill's."""
    g = gpos[:, joints]
    return _low(g @ up, length, cfg) & _still(g, frame_time, length, cfg)


def _low(h, length: float, cfg: ContactConfig) -> np.ndarray:
    """[F, N] bool: heights ``h`` [F, N] within ``near_ground`` leg lengths of the lowest at that frame."""
    return h - h.min(1, keepdims=True) < cfg.near_ground * length


def _still(g, frame_time: float, length: float, cfg: ContactConfig) -> np.ndarray:
    """[F, N] bool: positions ``g`` [F, N, 3] slower than ``slow`` leg lengths per second."""
    if len(g) < 2:
        return np.zeros(g.shape[:2]) < cfg.slow * length
    # np.gradient's central differences (and one-sided at the ends), without its bookkeeping
    step = np.empty(g.shape)
    step[1:-1] = (g[2:] - g[:-2]) / 2.0
    step[0], step[-1] = g[1] - g[0], g[-1] - g[-2]
    return _norm(step) / frame_time < cfg.slow * length


def _column_runs(flags: np.ndarray) -> list[tuple[int, int, int]]:
    """(column, start, end) of each run of True down the columns of ``flags`` [F, N] (ends inclusive), column
    by column and in time within one: every column's runs in one pass."""
    pad = np.zeros((flags.shape[0] + 2, flags.shape[1]), dtype=np.int8)
    pad[1:-1] = flags
    d = np.diff(pad, axis=0).T  # [N, F + 1]: runs start where +1, end after -1
    col, start = np.nonzero(d == 1)
    end = np.nonzero(d == -1)[1] - 1
    return list(zip(col.tolist(), start.tolist(), end.tolist(), strict=True))


@functools.lru_cache(maxsize=256)
def _ramp(n: int, k: int, ease_in: bool, ease_out: bool) -> np.ndarray:
    """A fill contact's weights over its ``n`` frames, eased over ``k`` at a free start and end (read only)."""
    i = np.arange(n)
    ramp = np.ones(n)
    if ease_in:
        ramp = np.minimum(ramp, _smooth(np.clip((i + 1) / k, 0, 1)))
    if ease_out:
        ramp = np.minimum(ramp, _smooth(np.clip((i[::-1] + 1) / k, 0, 1)))
    ramp.flags.writeable = False
    return ramp


def _smooth(t):
    return t * t * (3 - 2 * t)


def judged_gaps(keys) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The gaps between sorted ``keys`` with a frame in between: (first keys [G], last keys [G], every in-between
    frame [M], its gap [M])."""
    ka = np.asarray(keys[:-1], dtype=np.int64)
    kb = np.asarray(keys[1:], dtype=np.int64)
    wide = kb - ka >= 2
    ka, kb = ka[wide], kb[wide]
    if not len(ka):
        empty = np.zeros(0, dtype=np.int64)
        return ka, kb, empty, empty
    frames = np.concatenate([np.arange(x + 1, y) for x, y in zip(ka, kb, strict=True)])
    return ka, kb, frames, np.repeat(np.arange(len(ka)), kb - ka - 1)


def hold_targets(gpos, keys, joints, up, frame_time: float, length: float, cfg: ContactConfig, down=None,
                 untrusted=None):
    """Per foot joint (``joints``) and frame: held positions [F, N, 3], weights [F, N] in [0, 1]
    (0: not held; the keys and the frames outside them always 0) and where the held height is only the
    fill's [F, N] (``ground_only``: held along the ground).  Each gap is judged on its own two keys and
    the fill's frames between them.  ``down`` [F, N] bool: where a foot joint is set down, when something
    other than the fill's own low, slow joints says so (``training.slide_study --oracle``: the capture's).
    ``untrusted`` [len(keys) - 1] bool: the gaps whose fill contacts are held whole and eased in the air over
    ``cfg.untrusted_ease`` frames."""
    g = gpos[:, joints]
    h = g @ up
    low = _low(h, length, cfg)  # [F, N]
    moving = low & _still(g, frame_time, length, cfg) if down is None else np.asarray(down, bool)  # ground_contacts
    target, weight = g.copy(), np.zeros(h.shape)
    free = np.zeros(h.shape, dtype=bool)
    ka, kb, frames, gap = judged_gaps(keys)
    if not len(ka):
        return target, weight, free
    # every in-between frame's place along its gap
    t = ((frames - ka[gap]) / (kb - ka)[gap])[:, None, None]
    pa, pb = g[ka], g[kb]  # [G, N, 3]
    # key contacts, per gap and joint: low at both keys, in the same place, not lifted in between
    inner = np.maximum.reduceat(h, np.stack([ka + 1, kb], 1).ravel(), axis=0)[::2]  # [G, N]: max over a+1..b-1
    lifted = inner - np.maximum(h[ka], h[kb]) > cfg.lift * length
    keyed = low[ka] & low[kb] & (_norm(pb - pa) < cfg.still * length) & ~lifted
    line = pa[gap] + t * (pb[gap] - pa[gap])  # [M, N, 3]
    on = keyed[gap]
    target[frames] = np.where(on[..., None], line, g[frames])
    weight[frames] = on
    # fill contacts: runs of low, slow frames inside a gap whose joint is not a key contact
    runs_of = np.zeros(h.shape, dtype=bool)
    runs_of[frames] = moving[frames] & ~on
    runs = [(c, s, e) for c, s, e in _column_runs(runs_of) if e - s + 1 >= cfg.min_frames]
    in_gap = np.searchsorted(kb, [s for _, s, _ in runs]).tolist()  # runs end at keys: one gap each
    gap_at = np.concatenate([[0], np.cumsum(kb - ka - 1)]).tolist()  # each gap's first frame in ``frames``
    eased = (np.zeros(len(ka), dtype=bool) if untrusted is None or cfg.untrusted_ease <= 0
             else np.asarray(untrusted, dtype=bool)[np.searchsorted(np.asarray(keys), ka)])  # per judged gap
    for (c, s, e), i_gap in zip(runs, in_gap, strict=True):
        a, b = int(ka[i_gap]), int(kb[i_gap])
        at_a, at_b = s == a + 1 and low[a, c], e == b - 1 and low[b, c]
        held = (line[gap_at[i_gap]:gap_at[i_gap] + e - s + 1, c] if at_a and at_b else g[a, c] if at_a
                else g[b, c] if at_b else np.add.reduce(g[s:e + 1, c], axis=0) / (e - s + 1))  # (the mean's sum)
        away = held - g[s:e + 1, c]
        rise = away @ up
        if cfg.spread > 0 and _norm(away - rise[:, None] * up).max() > cfg.spread * length:
            continue  # a foot gliding over the ground (a slide, a pivot), not one set down
        target[s:e + 1, c] = held - rise[:, None] * up if cfg.ground_only else held
        free[s:e + 1, c] = cfg.ground_only
        k = max(1, cfg.untrusted_ease if eased[i_gap] else cfg.ease)
        if cfg.outside or eased[i_gap]:
            weight[s:e + 1, c] = 1.0
            for side, near in ((not at_a, np.arange(s - 1, max(a, s - k - 1), -1)),
                               (not at_b, np.arange(e + 1, min(b, e + k + 1)))):
                if not side or not len(near):
                    continue
                w = _smooth(1.0 - np.arange(1, len(near) + 1) / (k + 1))
                up_rise = (held - g[near, c]) @ up
                wins = w > weight[near, c]
                near, w = near[wins], w[wins]
                target[near, c] = (held - up_rise[wins, None] * up) if cfg.ground_only else held
                free[near, c] = cfg.ground_only
                weight[near, c] = w
            continue
        weight[s:e + 1, c] = _ramp(e - s + 1, k, not at_a, not at_b)
    return target, weight, free


# The arithmetic below is numpy's and quat_np's, product for product, in fewer and larger operations: a fill's
# few hundred rows cost numpy's per-call overhead, not its arithmetic.
# a cross product's components: a[_NEXT] b[_LAST] - a[_LAST] b[_NEXT]
_NEXT, _LAST = np.array([1, 2, 0]), np.array([2, 0, 1])


def _cross(a, b):
    """``np.cross`` of [..., 3] rows without its axis bookkeeping (a tenth of the time on short rows)."""
    return a[..., _NEXT] * b[..., _LAST] - a[..., _LAST] * b[..., _NEXT]


def _rotate(q, v):
    """``quat_np.rotate`` with ``_cross``, the axis's components gathered once for both products."""
    qn, ql = q[..., _NEXT + 1], q[..., _LAST + 1]
    t = 2.0 * (qn * v[..., _LAST] - ql * v[..., _NEXT])
    return v + q[..., :1] * t + (qn * t[..., _LAST] - ql * t[..., _NEXT])


# quat_np.mul's sixteen products: a's and b's components gathered in product order, signed (a difference is a sum
# with the sign flipped: the same rounding), summed by fours
_MUL_A = np.array([0, 1, 2, 3] * 4)
_MUL_B = np.array([0, 1, 2, 3, 1, 0, 3, 2, 2, 3, 0, 1, 3, 2, 1, 0])
_MUL_SIGN = np.array([1, -1, -1, -1, 1, 1, 1, -1, 1, -1, 1, 1, 1, 1, -1, 1], dtype=np.float64)


def _mul(a, b):
    """``quat_np.mul`` of float64 quaternions, bit for bit: half the time on a few hundred rows (slower on
    thousands)."""
    t = a[..., _MUL_A] * b[..., _MUL_B] * _MUL_SIGN
    return np.add.reduce(t.reshape(t.shape[:-1] + (4, 4)), axis=-1)


def _norm(v, keepdims: bool = False):
    """``np.linalg.norm(v, axis=-1)`` of float rows (its very sum) without its argument checks."""
    return np.sqrt(np.add.reduce(v * v, axis=-1, keepdims=keepdims))


def chain_fk(lrot, lpos, parents, joints):
    """Global rotations and positions [F, J, *] of ``joints`` and their ancestors only (the others left
    zero): forward kinematics for the legs without the arms and head, the joints of one depth at once."""
    roots, levels, js, ps = _fk_levels(tuple(int(p) for p in parents), tuple(int(j) for j in joints))
    grot, gpos = np.zeros(lrot.shape), np.zeros(lpos.shape)
    grot[:, roots], gpos[:, roots] = lrot[:, roots], lpos[:, roots]
    for lj, lp, _ in levels:
        grot[:, lj] = _mul(grot[:, lp], lrot[:, lj])
    # every offset turned by its parent's rotation at once, then added down the chains a depth at a time
    turned = _rotate(grot[:, ps], lpos[:, js])
    for lj, lp, part in levels:
        gpos[:, lj] = turned[:, part] + gpos[:, lp]
    return grot, gpos


@functools.lru_cache(maxsize=64)
def _fk_levels(parents: tuple, joints: tuple):
    """``chain_fk``'s joints by depth, once per skeleton and joint set: the roots; per depth below them, its
    joints, their parents and their slice of all of them; all of them and their parents (index arrays)."""
    depth: dict[int, int] = {}
    for j in joints:
        chain = []
        while j >= 0 and j not in depth:
            chain.append(j)
            j = int(parents[j])
        d = depth[j] if j >= 0 else -1
        for c in reversed(chain):
            d += 1
            depth[c] = d
    by_depth: dict[int, list[int]] = {}
    for j, d in depth.items():
        by_depth.setdefault(d, []).append(j)
    roots, levels, start = np.array(sorted(by_depth.get(0, [])), dtype=np.intp), [], 0
    for d in sorted(by_depth)[1:]:  # (depth 0: the roots)
        js = sorted(by_depth[d])
        levels.append((np.array(js), np.array([parents[j] for j in js]), slice(start, start + len(js))))
        start += len(js)
    js = np.concatenate([lj for lj, _, _ in levels] or [np.zeros(0, np.intp)])
    ps = np.concatenate([lp for _, lp, _ in levels] or [np.zeros(0, np.intp)])
    return roots, tuple(levels), js, ps


_X, _Y = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])


def between(u, v) -> np.ndarray:
    """Shortest-arc quaternions [..., 4] turning directions ``u`` onto ``v`` [..., 3]."""
    u = u / np.maximum(_norm(u, True), 1e-12)
    v = v / np.maximum(_norm(v, True), 1e-12)
    w = 1.0 + np.add.reduce(u * v, axis=-1, keepdims=True)
    q = np.concatenate([w, _cross(u, v)], -1)
    opposite = w < 1e-9
    if opposite.any():  # opposite directions: any axis at right angles to u
        alt = _cross(u, np.where(np.abs(u[..., :1]) < 0.9, _X, _Y))
        q = np.where(opposite, np.concatenate([np.zeros_like(w), alt], -1), q)
    return q / np.maximum(_norm(q, True), 1e-8)  # quat_np.normalize


def solve_leg(grot, gpos, leg: Leg, ankle_goal, foot_goal):
    """Two-bone IK for frames [n]: new global rotations (hip, knee, foot) [n, 4] putting the ankle at
    ``ankle_goal`` [n, 3] (as near as the leg reaches) with the foot turned to ``foot_goal`` [n, 4].
    The hip joint stays where it is; the knee bends in the plane of the given pose (or towards the
    toes where that leg is straight)."""
    fwd = None if leg.toe is None else gpos[:, leg.toe] - gpos[:, leg.ankle]
    hip, knee = _two_bone(grot[:, leg.hip], grot[:, leg.knee], gpos[:, leg.hip], gpos[:, leg.knee],
                          gpos[:, leg.ankle], fwd, ankle_goal)
    return hip, knee, foot_goal


def _two_bone(hip_rot, knee_rot, H, K, A, fwd, ankle_goal):
    """``solve_leg`` on rows [n] of any legs: global hip and knee rotations, hip, knee and ankle positions,
    the foot's forward direction (towards the toes; ``None``, or zero rows, where there is none)."""
    thigh, shin, to, hip_ankle = K - H, A - K, ankle_goal - H, A - H
    l1, l2, reach = _norm(thigh), _norm(shin), _norm(to)
    d = np.minimum(np.maximum(reach, np.abs(l1 - l2) + 1e-6), (l1 + l2) * (1 - 1e-9))  # np.clip's arithmetic
    u = to / np.maximum(reach[:, None], 1e-12)
    u0 = hip_ankle / np.maximum(_norm(hip_ankle, True), 1e-12)
    bend = thigh - np.add.reduce(thigh * u0, axis=-1, keepdims=True) * u0
    if fwd is not None:  # a straight leg: bend towards the toes (rows without toes have fwd zero)
        straight = (_norm(bend) < 1e-4 * l1) & (np.maximum.reduce(np.abs(fwd), axis=-1) > 0)
        bend = np.where(straight[:, None], fwd, bend)
    pole = _rotate(between(u0, u), bend)
    pole = pole - np.add.reduce(pole * u, axis=-1, keepdims=True) * u
    pole /= np.maximum(_norm(pole, True), 1e-12)
    along = (l1 ** 2 - l2 ** 2 + d ** 2) / (2 * d)
    knee = H + along[:, None] * u + np.sqrt(np.maximum(l1 ** 2 - along ** 2, 0.0))[:, None] * pole
    ankle = H + d[:, None] * u
    hip_turn = between(thigh, knee - H)
    knee_turn = between(_rotate(hip_turn, shin), ankle - knee)
    return _mul(hip_turn, hip_rot), _mul(knee_turn, _mul(hip_turn, knee_rot))


def plant_feet(parents, names, rot, pos, keys, frame_time: float, cfg: ContactConfig = ContactConfig(), down=None,
               untrusted=None):
    """Local rotations [F, J, 4] of the fill ``rot``, ``pos`` with every held foot joint planted
    between ``keys`` (see the module's docstring); frames outside the gaps and the keys unchanged.
    ``down``: ``hold_targets``' (the foot joints of ``foot_joints(find_legs(names, parents))``); ``untrusted``: per
    gap between the (sorted) keys, where the guard does not trust the model (``hold_targets``)."""
    legs = find_legs(names, parents)
    keys = sorted(int(k) for k in keys)
    if not legs or len(keys) < 2:
        return rot
    out = np.array(rot, dtype=np.float64, copy=True)
    lrot, lpos = out / np.maximum(_norm(out, True), 1e-8), np.asarray(pos, np.float64)  # quat_np.normalize
    joints = foot_joints(legs)
    grot, gpos = chain_fk(lrot, lpos, parents, joints)
    up = up_vector(gpos[keys], legs, parents)
    length = max(leg_length(pos[keys[0]], leg) for leg in legs)  # offsets: the same in every frame
    target, weight, free = hold_targets(gpos, keys, joints, up, frame_time, length, cfg, down, untrusted)
    if not weight.any():
        return out.astype(np.asarray(rot).dtype)
    # every leg's held frames as rows of one batch: (frame, leg) pairs, the leg's joints gathered per row; a
    # leg without a toe reads its ankle in the toe's place (the toe never held, the foot's direction zero)
    col = {j: c for c, j in enumerate(joints)}
    frames, per_leg = [], []
    for leg in legs:
        toe = leg.ankle if leg.toe is None else leg.toe
        frames.append(np.flatnonzero(np.maximum(weight[:, col[leg.ankle]], weight[:, col[toe]]) > 0))
        per_leg.append([int(parents[leg.hip]), leg.hip, leg.knee, leg.ankle, toe, col[leg.ankle], col[toe],
                        leg.toe is not None])
    fr = np.concatenate(frames)[:, None]
    idx = np.repeat(per_leg, [len(f) for f in frames], axis=0)  # [n, 8]: parent, hip, knee, ankle, toe, columns, toe?
    par_rot, hip_rot, knee_rot, foot = grot[fr, idx[:, 0:4]].transpose(1, 0, 2)
    H, K, A, toe_at = gpos[fr, idx[:, 1:5]].transpose(1, 0, 2)
    (ta, tt), (wa, wt), (fa, ft) = target[fr, idx[:, 5:7]].transpose(1, 0, 2), weight[fr, idx[:, 5:7]].T, \
        free[fr, idx[:, 5:7]].T
    has_toe = idx[:, 7] > 0
    wt, fa, ft = np.where(has_toe, wt, 0.0), fa[:, None], (ft & has_toe)[:, None]
    w = np.maximum(wa, wt)
    toe_vec = toe_at - A
    held_t = (wt > 0)[:, None]
    # a held toe: the ankle goes to its own held place as far as it is held, else where the fill's foot puts it
    # relative to the toe, and the foot turns so the toe reaches its place
    wa_, wt_ = wa[:, None], wt[:, None]
    goal = np.where(held_t, (wa_ * ta + (w[:, None] - wa_) * (tt - toe_vec)) / w[:, None], ta)
    # a foot that rolls between its keys cannot reach both places: the one held less firmly takes the miss
    # (ankle and toe share it evenly when both are held as firmly)
    reach = tt - goal
    miss = reach - _norm(toe_vec, True) * reach / np.maximum(_norm(reach, True), 1e-12)
    # (both fully held: a place the keys hold in 3-D is firmer than one the fill holds along the ground)
    give_a, give_t = 1.0 - wa_, 1.0 - wt_
    share = np.where(give_a + give_t > 1e-9, give_a / np.maximum(give_a + give_t, 1e-12),
                     np.where(fa == ft, 0.5, np.where(fa, 1.0, 0.0)))
    goal = goal + np.where(held_t, miss * share, 0.0)
    turn = np.where(held_t, _mul(between(toe_vec, tt - goal), foot), foot)
    hip, knee = _two_bone(hip_rot, knee_rot, H, K, A, toe_vec, A + w[:, None] * (goal - A))
    foot_new = quat_np.slerp(foot, turn, w)
    # the three new local rotations in one product and one write
    out[fr, idx[:, 1:4]] = _mul(quat_np.inv(np.stack([par_rot, hip, knee], 1)), np.stack([hip, knee, foot_new], 1))
    return out.astype(np.asarray(rot).dtype)


def capture_contacts(parents, legs, true_rot, true_pos, keys, frame_time: float,
                     cfg: ContactConfig = CAPTURE) -> np.ndarray:
    """[F, N] bool over frames and ``foot_joints(legs)``: the capture ``true_rot``, ``true_pos`` [F, J, *]
    has that joint planted (``ground_contacts``, read as the foot-sliding figure reads it)."""
    keys = np.asarray(keys, dtype=np.int64)
    g_true = quat_np.fk(true_rot, true_pos, parents)[1]
    length = max(leg_length(true_pos[keys[0]], leg) for leg in legs)
    return ground_contacts(g_true, foot_joints(legs), up_vector(g_true[keys], legs, parents), frame_time, length,
                           cfg)


def planted_step_mask(parents, legs, true_rot, true_pos, keys, frame_time: float,
                      cfg: ContactConfig = CAPTURE) -> np.ndarray:
    """[F-1, N] bool over frame steps and ``foot_joints(legs)``: the capture has that joint planted
    (``capture_contacts``) at both ends of the step, and the step does not run from key to key."""
    c = capture_contacts(parents, legs, true_rot, true_pos, keys, frame_time, cfg)
    free = np.ones(len(c), dtype=bool)
    free[np.asarray(keys, dtype=np.int64)] = False
    return c[:-1] & c[1:] & (free[:-1] | free[1:])[:, None]


def foot_step_speeds(parents, legs, rot, pos, frame_time: float) -> np.ndarray:
    """[F-1, N]: the speed (units per second) of each of ``foot_joints(legs)`` over each frame step."""
    g = quat_np.fk(quat_np.normalize(rot), pos, parents)[1][:, foot_joints(legs)]
    return np.linalg.norm(np.diff(g, axis=0), axis=-1) / frame_time


def planted_steps(parents, legs, true_rot, true_pos, rot, pos, keys, frame_time: float,
                  cfg: ContactConfig = CAPTURE) -> np.ndarray:
    """Speeds of the foot joints of a fill ``rot``, ``pos`` over the steps of ``planted_step_mask``: the
    foot-sliding figure's samples."""
    return foot_step_speeds(parents, legs, rot, pos, frame_time)[
        planted_step_mask(parents, legs, true_rot, true_pos, keys, frame_time, cfg)]


def planted_speed(parents, legs, true_rot, true_pos, rot, pos, keys, frame_time: float) -> float:
    """Mean of ``planted_steps`` (0 where the capture plants no foot)."""
    s = planted_steps(parents, legs, true_rot, true_pos, rot, pos, keys, frame_time)
    return float(s.mean()) if len(s) else 0.0
