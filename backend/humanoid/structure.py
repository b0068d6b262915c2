"""A humanoid found by its structure: the hierarchy and the bones' lengths first, names only as a hint.

Pure Python and numpy.  Input as ``bone_map.detect``'s: ``{bone: (parent, head, tail)}`` (rest heads in
any axes and unit).  Lengths along the hierarchy do not depend on the rest pose, so a skeleton lying
down, in inches or Z up is read the same as one standing in centimetres:

* the **pelvis** is the first bone below the root (past a control root) where two long branches part;
  the **legs** are the two long branches (or the two halves of one that parts again, Reallusion's
  ``CC_Base_Pelvis``) that part no more, the **spine** the branch that leads to the **chest**, the bone
  where the two arms part; the **neck and head** are the chest's longest other branch;
* along each chain, extra bones (hip joints, several spine or neck segments, twist bones, end sites)
  are passed through: a joint takes the first bone of its chain whose name says so (``thigh``,
  ``lfemur``, ``CC_Base_L_Calf``, ``lShldr``: ``names.SYNONYMS``), else the bone its place along the
  chain says (the foot where the leg turns forward, the knee halfway between hip and foot, ...);
* left and right come from the names (any spelling ``names.normalise`` reads), else from geometry
  (the feet point forward, left is up x forward).

``find`` gives ``{joint: bone}`` with the reason for each (``structure`` or ``structure, side by
geometry``), or ``None`` when no two legs, two arms and a head can be told apart.
"""
from __future__ import annotations

import numpy as np

from .names import normalise, parts_named

LONG = 0.25  # a branch this long (of the longest path from the pelvis) is a limb, not a finger, toe or face bone
TWIN = 0.7  # the shorter limb of a pair is at least this share of the longer


class _Tree:
    def __init__(self, bones: dict):
        self.bones = bones
        self.names = list(bones)
        self.head = {b: np.asarray(v[1], dtype=np.float64) for b, v in bones.items()}
        self.parent = {b: (v[0] if v[0] in bones else None) for b, v in bones.items()}
        self.kids: dict = {b: [] for b in bones}
        for b, p in self.parent.items():
            if p is not None:
                self.kids[p].append(b)
        self.length = {b: 0.0 if p is None else float(np.linalg.norm(self.head[b] - self.head[p]))
                       for b, p in self.parent.items()}
        self.reach: dict = {}
        for b in self._post_order():
            self.reach[b] = max((self.length[k] + self.reach[k] for k in self.kids[b]), default=0.0)

    def _post_order(self) -> list:
        out, stack = [], [(r, False) for r in self.names if self.parent[r] is None]
        while stack:
            b, done = stack.pop()
            if done:
                out.append(b)
                continue
            stack.append((b, True))
            stack += [(k, False) for k in self.kids[b]]
        return out

    def branch(self, k) -> float:
        return self.length[k] + self.reach[k]

    def long_kids(self, b, scale: float) -> list:
        return [k for k in self.kids[b] if self.branch(k) >= LONG * scale]

    def path(self, start) -> list:
        """``start`` and the bones down its longest branch to the tip."""
        out = [start]
        while self.kids[out[-1]]:
            out.append(max(self.kids[out[-1]], key=self.branch))
        return out

    def runs_to_split(self, start, scale: float) -> list:
        """``start`` and the bones down its one long branch, to the first bone where long branches part."""
        out = [start]
        while len(long := self.long_kids(out[-1], scale)) == 1:
            out.append(long[0])
        return out


def _limbs(tree: _Tree, root) -> tuple | None:
    """(pelvis, [leg starts], chest, [arm starts], neck start, spine bones) or None."""
    pelvis = tree.runs_to_split(root, tree.reach[root])[-1]
    branches = tree.long_kids(pelvis, tree.reach[root])
    if len(branches) < 2:
        return None
    scale = max(tree.branch(k) for k in branches)  # lengths from the pelvis on (a control root adds nothing)
    runs = {k: tree.runs_to_split(k, scale) for k in branches}
    parts = {k: tree.long_kids(runs[k][-1], scale) for k in branches}
    plain = [k for k in branches if not parts[k]]
    forked = [k for k in branches if parts[k]]
    if len(plain) == 2 and len(forked) == 1:  # two legs and the spine from the pelvis (Mixamo, CMU)
        legs, spine = plain, forked[0]
    elif not plain and len(forked) == 2:  # the legs hang from one bone of their own (Reallusion's pelvis)
        spine = max(forked, key=lambda k: float(_along(tree, runs[k], pelvis)[-1]))
        pair = parts[forked[0] if spine == forked[1] else forked[1]]
        if len(pair) != 2 or any(tree.long_kids(tree.runs_to_split(p, scale)[-1], scale) for p in pair):
            return None
        legs = pair
    else:
        return None
    chest = runs[spine][-1]
    arms = sorted(parts[spine], key=tree.branch, reverse=True)[:2]  # (a long neck parts there too: Arena's)
    others = [k for k in tree.kids[chest] if k not in arms]
    if len(arms) != 2 or not others or not _twins(tree, arms) or not _twins(tree, legs):
        return None
    return pelvis, legs, chest, arms, max(others, key=tree.branch), runs[spine][:-1]


def _twins(tree: _Tree, pair: list) -> bool:
    """Two limbs of a pair are about as long (a neck is no arm: a body with one arm is not read as two)."""
    a, b = (tree.branch(k) for k in pair)
    return min(a, b) >= TWIN * max(a, b)


def _along(tree: _Tree, chain: list, origin) -> np.ndarray:
    """Path length from ``origin``'s head to each bone of ``chain`` (a downward path below ``origin``)."""
    s, at, out = 0.0, origin, []
    for b in chain:
        s += float(np.linalg.norm(tree.head[b] - tree.head[at]))
        out.append(s)
        at = b
    return np.array(out)


def _named(chain: list, part: str, words_of, start: int = 0) -> int | None:
    """The first bone of ``chain`` from ``start`` on whose name says ``part``."""
    for i in range(start, len(chain)):
        if part in words_of(chain[i]):
            return i
    return None


def _leg(tree: _Tree, chain: list, pelvis, words_of) -> dict:
    s = _along(tree, chain, pelvis)
    moving = [i for i in range(len(chain)) if tree.length[chain[i]] > 1e-9 * max(s[-1], 1e-12)]
    foot = _named(chain, "Foot", words_of)
    if foot is None:  # where the leg turns most (the shin goes down, the foot forward), past its middle
        turn = {}
        for i in moving:
            nxt = [j for j in moving if j > i]
            prev = [j for j in moving if j < i]
            if not nxt or not prev or s[i] < 0.5 * s[-1]:
                continue
            a = tree.head[chain[i]] - tree.head[chain[prev[-1]]]
            b = tree.head[chain[nxt[0]]] - tree.head[chain[i]]
            turn[i] = float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
        foot = min(turn, key=turn.get) if turn else len(chain) - 1
    hip, knee = _named(chain, "UpperLeg", words_of), _named(chain, "LowerLeg", words_of)
    if hip is None or knee is None or not hip < knee < foot:
        hip, knee = _two_segments(s, [i for i in moving if i < foot], foot)
    toes = _named(chain, "Toes", words_of, foot + 1)
    if toes is None:
        toes = next((i for i in moving if i > foot), None)
    out = {"UpperLeg": chain[hip], "LowerLeg": chain[knee], "Foot": chain[foot]}
    if toes is not None:
        out["Toes"] = chain[toes]
    return out


def _two_segments(s: np.ndarray, before: list, end: int, ratio: float = 1.0) -> tuple[int, int]:
    """(start, middle) among ``before`` making two segments up to ``end`` nearest ``ratio`` in length (thigh and
    shin, upper arm and forearm), each at least a quarter of the whole; the higher start of equals."""
    best, pick = None, (before[0], before[-1]) if before else (end, end)
    for a in before:
        for m in before:
            if m <= a:
                continue
            first, second = s[m] - s[a], s[end] - s[m]
            if min(first, second) < 0.25 * (s[end] - s[before[0]]):
                continue
            score = abs(np.log(first / second / ratio))
            if best is None or score < best - 1e-9:
                best, pick = score, (a, m)
    return pick


def _arm(tree: _Tree, chain: list, chest, words_of) -> dict:
    s = _along(tree, chain, chest)
    moving = [i for i in range(len(chain)) if tree.length[chain[i]] > 1e-9 * max(s[-1], 1e-12)]
    hand = _named(chain, "Hand", words_of)
    if hand is None:  # where the fingers part, else the last bone that is not a finger's
        scale = s[-1]
        hand = next((i for i in range(len(chain)) if s[i] >= 0.5 * scale and
                     len([k for k in tree.kids[chain[i]] if tree.kids[k]]) >= 2), None)
        if hand is None:
            hand = next((i for i in moving if s[i] >= 0.85 * scale), len(chain) - 1)
    upper, lower = _named(chain, "UpperArm", words_of), _named(chain, "LowerArm", words_of)
    if upper is None or lower is None or not upper < lower < hand:
        upper, lower = _two_segments(s, [i for i in moving if i < hand], hand, 1.1)
    out = {"UpperArm": chain[upper], "LowerArm": chain[lower], "Hand": chain[hand]}
    shoulder = _named(chain, "Shoulder", words_of)
    if shoulder is None or shoulder >= upper:  # (Arena's "LeftShoulder" is the upper arm, "LeftCollar" above it)
        shoulder = 0 if upper > 0 else None
    if shoulder is not None:
        out["Shoulder"] = chain[shoulder]
    return out


def _spine(tree: _Tree, run: list, pelvis, words_of) -> dict:
    """The spine joint among the bones between the pelvis and the chest: by name, else the middle one with
    a length."""
    inner = run[1:] if run and run[0] == pelvis else run
    named = _named(inner, "Spine", words_of)
    if named is not None:
        return {"Spine": inner[named]}
    moving = [b for b in inner if tree.length[b] > 0]
    return {"Spine": moving[(len(moving) - 1) // 2]} if moving else {}


def _neck(tree: _Tree, start, words_of) -> dict:
    chain = tree.path(start)
    head = _named(chain, "Head", words_of)
    neck = _named(chain, "Neck", words_of)
    moving = [i for i, b in enumerate(chain) if tree.length[b] > 0]
    if head is None:
        head = moving[1] if len(moving) > 1 else len(chain) - 1
    if neck is None or neck >= head:
        neck = next((i for i in moving if i < head), None)
    out = {"Head": chain[head]}
    if neck is not None:
        out["Neck"] = chain[neck]
    return out


def _side_by_geometry(at, pelvis, chest, leg_maps: list, arm_maps: list) -> tuple[list, list]:
    """('L'/'R' for the two legs, for the two arms) from geometry: ``at[bone]`` its head ``[F, 3]`` on F
    poses (the rest, or frames of the motion).  Up the spine, forward the feet (from hip to toe where no
    toe is found), left = up x forward; the arm nearer the left leg is the left arm.  Votes summed over
    the poses, so one odd frame does not decide."""
    up = at[chest] - at[pelvis]
    up = up / np.maximum(np.linalg.norm(up, axis=-1, keepdims=True), 1e-12)
    fwd = sum(at[m.get("Toes", m["Foot"])] - at[m["Foot"] if "Toes" in m else m["UpperLeg"]] for m in leg_maps)
    fwd = fwd - (fwd * up).sum(-1, keepdims=True) * up
    left = np.cross(up, fwd)
    legs = float(((at[leg_maps[0]["UpperLeg"]] - at[leg_maps[1]["UpperLeg"]]) * left).sum())
    leg_sides = ["L", "R"] if legs > 0 else ["R", "L"]
    left_leg = at[leg_maps[leg_sides.index("L")]["UpperLeg"]] - at[pelvis]
    arms = float(((at[arm_maps[0]["UpperArm"]] - at[arm_maps[1]["UpperArm"]]) * left_leg).sum())
    return leg_sides, (["L", "R"] if arms > 0 else ["R", "L"])


def find(joint_names, bones: dict, posed: dict | None = None) -> tuple[dict, dict] | None:
    """(``{model joint: bone}``, ``{model joint: reason}``) for the model's joints (``joint_names`` as
    ``Hips``, ``UpperLeg_L``, ...), or None.  ``posed``: ``{bone: heads [F, 3]}`` on frames of the motion
    (same axes as the rest), what the sides are read from where the names say nothing (a rest pose may
    say nothing useful: the data set's own lies along one axis)."""
    words_of, side_of = parts_named, (lambda b: normalise(b)[1])
    tree = _Tree(bones)
    roots = [b for b in tree.names if tree.parent[b] is None]
    if not roots:
        return None
    root = max(roots, key=lambda r: tree.reach[r])
    limbs = _limbs(tree, root)
    if limbs is None:
        return None
    pelvis, legs, chest, arms, neck, spine_run = limbs
    found = {"Hips": pelvis, "Chest": chest, **_spine(tree, spine_run, pelvis, words_of), **_neck(tree, neck, words_of)}
    leg_maps = [_leg(tree, tree.path(k), pelvis, words_of) for k in legs]
    arm_maps = [_arm(tree, tree.path(k), chest, words_of) for k in arms]
    by_name = [_chain_side(tree, k, side_of) for k in legs], [_chain_side(tree, k, side_of) for k in arms]
    leg_sides = by_name[0] if sorted(map(str, by_name[0])) == ["L", "R"] else None
    arm_sides = by_name[1] if sorted(map(str, by_name[1])) == ["L", "R"] else None
    geo = leg_sides is None or arm_sides is None
    if geo:
        at = posed if posed else {b: h[None] for b, h in tree.head.items()}
        by_geometry = _side_by_geometry(at, pelvis, chest, leg_maps, arm_maps)
        leg_sides, arm_sides = leg_sides or by_geometry[0], arm_sides or by_geometry[1]
    for side, m in list(zip(leg_sides, leg_maps, strict=True)) + list(zip(arm_sides, arm_maps, strict=True)):
        for part, b in m.items():
            found[f"{part}_{side}"] = b
    reason = "structure, side by geometry" if geo else "structure"
    out = {j: found.get(j.replace("joint_", "") if j == "joint_Root" else j) for j in joint_names}
    out = {j: b for j, b in out.items() if b}
    return out, {j: (reason if j[-2:] in ("_L", "_R") else "structure") for j in out}


def _chain_side(tree: _Tree, start, side_of) -> str | None:
    """The side the chain's names say (their majority), None when they say nothing."""
    votes = [side_of(b) for b in tree.path(start)]
    left, right = votes.count("L"), votes.count("R")
    return None if left == right else ("L" if left > right else "R")
