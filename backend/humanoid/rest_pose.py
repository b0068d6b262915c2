"""The rest-pose difference ``D_j`` between a rig's bones and the model's joints (A-pose, T-pose, other axes).

Pure numpy.  ``D_j`` is the model's global rotation of joint ``j`` (BVH axes) when the rig stands in its
rest pose: the model skeleton posed with it points every bone where the rig's bone points.  It is
found against a *reference* posture of the model, which gives the twist a bone direction cannot:

* the model's own rest (every local rotation the identity: a BVH import of the data set), and
* a standing T-pose made from the data set's mean pose (its natural twists), turned upright and
  facing the rig, spine and legs straightened, arms out to the sides (``standing_reference``).

The reference whose worst joint is nearest is used.  A joint with two or more mapped children
(hips, chest) takes the rotation that best aligns its children's directions (Kabsch); a joint with
one takes the shortest swing from the reference's direction to the rig's (keeping the reference's
twist); a joint with none keeps the reference's rotation relative to its mapped parent.  Unmapped
joints get the reference's local rotation (the neutral fill).  A joint whose rest differs from the
reference by more than ``MAX_DEGREES`` makes the conversion untrustworthy: refused, bones named.
"""
from __future__ import annotations

import numpy as np

from . import axes

MAX_DEGREES = 60.0  # a mapped bone this far from the nearest reference (after its A/T-pose swing) is refused
SNAP_DEGREES = 0.5  # against the data set's rest, a joint this close is taken as resting exactly so
_ID = np.array([1.0, 0.0, 0.0, 0.0])

# The data set's mean local rotations (w, x, y, z) over the two test clips of the data set
# (tests/fixtures: a walk and a tired guide, 800 frames), hemisphere-aligned to the first frame:
# natural twists for every joint.  Only the relative rotations matter (the hips are re-aimed).
MEAN_POSE = {
    "joint_Root": (1.0, 0.0, 0.0, 0.0), "Hips": (0.71177, -0.03966, 0.01537, 0.70113),
    "Spine": (0.70118, 0.70982, -0.04341, 0.05117), "Chest": (0.99768, 0.01222, 0.01097, 0.06602),
    "Neck": (0.99899, -0.01706, 0.01311, 0.03954), "Head": (0.99810, -0.01492, -0.04344, 0.04100),
    "Shoulder_L": (0.54445, -0.43481, -0.44626, -0.56158), "UpperArm_L": (0.79272, 0.11142, -0.23692, -0.55050),
    "LowerArm_L": (0.97945, 0.07125, -0.18846, 0.00969), "Hand_L": (0.99419, 0.05278, -0.04577, 0.08194),
    "Shoulder_R": (0.57718, 0.47682, -0.42558, 0.50832), "UpperArm_R": (0.82018, 0.05582, -0.24903, -0.51202),
    "LowerArm_R": (0.98649, 0.03424, -0.16021, 0.00052), "Hand_R": (0.99374, 0.04713, -0.00299, 0.10128),
    "UpperLeg_L": (0.03870, -0.07590, 0.06871, -0.99399), "LowerLeg_L": (0.96536, -0.00001, 0.26094, 0.00002),
    "Foot_L": (0.87437, -0.00699, -0.48510, 0.00979), "Toes_L": (0.98525, -0.00190, -0.17111, -0.00060),
    "UpperLeg_R": (0.11026, 0.99125, -0.01776, -0.07040), "LowerLeg_R": (0.96742, -0.00013, 0.25316, 0.00013),
    "Foot_R": (0.87659, 0.00831, -0.48065, 0.02219), "Toes_R": (0.98104, -0.00163, -0.19381, -0.00062),
}
# T-pose directions (BVH axes: Y up, the character's left +X, facing +Z) of the bones to straighten,
# each towards its first child joint.
UP, LEFT = np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0])
T_POSE = {"Spine": UP, "Chest": UP, "Neck": UP, "Shoulder_L": LEFT, "UpperArm_L": LEFT, "LowerArm_L": LEFT,
          "Shoulder_R": -LEFT, "UpperArm_R": -LEFT, "LowerArm_R": -LEFT,
          "UpperLeg_L": -UP, "LowerLeg_L": -UP, "UpperLeg_R": -UP, "LowerLeg_R": -UP}

# Feet stand flat on the ground in any standing rest pose; where a capture marks the ankle and the toe
# joint higher or lower (CMU's foot bone points 13 degrees down, the data set's standing one 32) the difference is the
# markers', not a pose: a foot takes only its heading from the rig.
FLAT = ("Foot_L", "Foot_R")


# -- small rotation helpers ----------------------------------------------------------------------
def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def swing(a, b) -> np.ndarray:
    """The shortest rotation taking direction ``a`` to direction ``b``."""
    a, b = _unit(a), _unit(b)
    d = float(np.dot(a, b))
    if d < -1 + 1e-12:  # opposite: any perpendicular axis
        axis = _unit(np.cross(a, [1.0, 0, 0] if abs(a[0]) < 0.9 else [0, 1.0, 0]))
        return np.concatenate([[0.0], axis])
    q = np.concatenate([[1.0 + d], np.cross(a, b)])
    return q / np.linalg.norm(q)


def kabsch(src, dst) -> np.ndarray:
    """The rotation that best takes the unit directions ``src [n, 3]`` to ``dst [n, 3]`` (n >= 2)."""
    h = sum(np.outer(_unit(s), _unit(d)) for s, d in zip(src, dst, strict=True))
    u, _, vt = np.linalg.svd(h)
    sign = np.sign(np.linalg.det(vt.T @ u.T)) or 1.0
    m = vt.T @ np.diag([1.0, 1.0, sign]) @ u.T
    return axes.q_from_matrix(m)


def angle_deg(q) -> float:
    return float(np.degrees(2 * np.arccos(min(1.0, abs(float(np.asarray(q)[0]))))))


def _fk(local, parents, offsets):
    g = np.zeros_like(local)
    x = np.zeros((len(parents), 3))
    for j, p in enumerate(parents):
        g[j] = local[j] if p < 0 else axes.qmul(g[p], local[j])
        x[j] = offsets[j] if p < 0 else x[p] + axes.qrotate(g[p], offsets[j])
    return g, x


def _first_child(j, parents):
    kids = [k for k, p in enumerate(parents) if p == j]
    return kids[0] if kids else None


# -- references ----------------------------------------------------------------------------------
def standing_reference(names, parents, offsets) -> np.ndarray | None:
    """Global rotations ``[J, 4]`` of the model in a standing T-pose (None for another skeleton)."""
    key = (tuple(names), tuple(int(p) for p in parents), np.asarray(offsets, dtype=np.float64).tobytes())
    if key not in _standing:
        _standing[key] = _standing_reference(names, parents, np.asarray(offsets, dtype=np.float64))
    return _standing[key]


_standing: dict = {}


def _standing_reference(names, parents, offsets) -> np.ndarray | None:
    if set(names) != set(MEAN_POSE):
        return None
    idx = {n: i for i, n in enumerate(names)}
    local = np.array([MEAN_POSE[n] for n in names], dtype=np.float64)
    local /= np.linalg.norm(local, axis=-1, keepdims=True)
    g, x = _fk(local, parents, offsets)
    up = _unit(x[idx["Neck"]] - x[idx["Hips"]])
    left = x[idx["UpperLeg_L"]] - x[idx["UpperLeg_R"]]
    left = _unit(left - np.dot(left, up) * up)
    body = np.stack([left, up, np.cross(left, up)], 1)  # columns: the body's left, up, forward
    turn = axes.q_from_matrix(body.T)  # body axes -> X, Y, Z
    hips = idx["Hips"]
    local[hips] = axes.qmul(turn, g[hips])  # (joint_Root, above it, is the identity)
    for j, n in enumerate(names):  # straighten, parents first: each global swung onto its direction
        if n not in T_POSE:
            continue
        g, _ = _fk(local, parents, offsets)
        c = _first_child(j, parents)
        swung = axes.qmul(swing(axes.qrotate(g[j], offsets[c]), T_POSE[n]), g[j])
        local[j] = swung if parents[j] < 0 else axes.qmul(axes.qconj(g[parents[j]]), swung)
    return _fk(local, parents, offsets)[0]


def _targets(j, parents, mapped):
    """The nearest mapped joint down each branch below joint ``j``."""
    out, stack = [], [k for k, p in enumerate(parents) if p == j]
    while stack:
        k = stack.pop(0)
        if mapped[k]:
            out.append(k)
        else:
            stack += [c for c, p in enumerate(parents) if p == k]
    return out


def difference(ref: np.ndarray, parents, offsets, heads: np.ndarray, mapped, position_joints=(), flat=()) -> tuple[
        np.ndarray, np.ndarray, np.ndarray]:
    """(D ``[J, 4]``, neutral local rotations ``[J, 4]``, deviation from the reference in degrees ``[J]``)
    against the reference globals ``ref``; ``heads [J, 3]``: the rig's rest heads of the mapped joints'
    bones in BVH axes (any unit).  Position joints are no direction (their offset is not a bone); the
    joints ``flat`` (the feet) take only their heading from the rig."""
    parents = np.asarray(parents)
    x = _fk_positions(ref, parents, offsets)
    j_count = len(parents)
    d = np.tile(_ID, (j_count, 1))
    dev = np.zeros(j_count)
    targets = [[k for k in _targets(j, parents, mapped) if k not in position_joints] if mapped[j] else []
               for j in range(j_count)]
    body = None  # the rig's turn against the reference: from the first joint with two directions (the hips)
    for j in range(j_count):
        if len(targets[j]) >= 2:
            ts = targets[j]
            if _parallel([heads[k] - heads[j] for k in ts]):  # (Arena's neck and collars start at one point)
                ts = ts + [g for k in ts for g in targets[k]]
            d[j] = axes.qmul(kabsch([x[k] - x[j] for k in ts], [heads[k] - heads[j] for k in ts]), ref[j])
            if body is None:
                body = axes.qmul(d[j], axes.qconj(ref[j]))
    body = _ID if body is None else body
    for j in range(j_count):
        if not mapped[j]:
            continue
        turned = axes.qmul(body, ref[j])  # the reference, facing as the rig
        ts = targets[j]
        a = _mapped_above(j, parents, mapped)
        if len(ts) == 1:
            have, want = axes.qrotate(body, x[ts[0]] - x[j]), heads[ts[0]] - heads[j]
            if j in flat:  # the heading only: both feet stand flat, whatever the markers' heights
                up = axes.qrotate(body, UP)
                have, want = have - np.dot(have, up) * up, want - np.dot(want, up) * up
            d[j] = axes.qmul(swing(have, want), turned)
        elif not ts:
            d[j] = axes.qmul(d[a], axes.qmul(axes.qconj(ref[a]), ref[j])) if a >= 0 else turned
        dev[j] = angle_deg(axes.qmul(axes.qconj(turned), d[j]))
    neutral = np.array([ref[j] if p < 0 else axes.qmul(axes.qconj(ref[p]), ref[j]) for j, p in enumerate(parents)])
    return d, neutral, dev


def _parallel(directions, degrees: float = 10.0) -> bool:
    """All ``directions`` within ``degrees`` of the first: no turn about them can be read from them."""
    u = [_unit(v) for v in directions]
    return all(float(np.dot(u[0], v)) > np.cos(np.radians(degrees)) for v in u[1:])


def _fk_positions(glob, parents, offsets):
    x = np.zeros((len(parents), 3))
    for j, p in enumerate(parents):
        x[j] = offsets[j] if p < 0 else x[p] + axes.qrotate(glob[p], offsets[j])
    return x


def _mapped_above(j, parents, mapped):
    p = parents[j]
    while p >= 0 and not mapped[p]:
        p = parents[p]
    return p


def choose(names, parents, offsets, heads, mapped, position_joints=()) -> tuple[str, np.ndarray, np.ndarray,
                                                                              np.ndarray]:
    """(reference name, D, neutral, deviation) for the reference the rig is nearest to."""
    offsets = np.asarray(offsets, dtype=np.float64)
    refs = {"the data set's rest pose": np.tile(_ID, (len(names), 1))}
    standing = standing_reference(names, parents, offsets)
    if standing is not None:
        refs["a standing T-pose"] = standing
    best = None
    for name, ref in refs.items():
        d, neutral, dev = difference(ref, parents, offsets, heads, mapped, position_joints,
                                     {j for j, n in enumerate(names) if n in FLAT})
        if best is None or dev.max() < best[3].max():
            best = (name, d, neutral, dev)
    return best
