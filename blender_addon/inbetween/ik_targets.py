"""Inbetween's IK targets: the chain under an IK constraint is left unwritten, its target follows the model.

``core.ik_follow`` has the arithmetic; this module finds the chain's pose in the fill (the model's
rotations for the bones it drives, the pose as it stands for the others), places the target on every frame
strictly inside the owner's gaps, and writes its ``location`` curves there (keys outside the gaps, and at
their ends, keep every attribute but their automatic handles, as for the bones).
"""
from __future__ import annotations

import numpy as np

from ..core import ik_follow
from ..io import constraints as constraints_io
from ..io import keys as keys_io


def plan_moves(obj, bones: list[str], plan, left_gaps: dict, basis: np.ndarray, loc: np.ndarray, position_joints,
               blend: float = 1.0) -> tuple[list, list[str]]:
    """Where the targets of the IK chains that were left go (reads only): -> (moves for :func:`apply`,
    "label (why not)" for the targets that stay).  ``basis [F, J, 4]``, ``loc [F, J, 3]``: the fill in
    Blender's channels on the plan's frames."""
    moves, not_moved = [], []
    index = {b: j for j, b in enumerate(bones)}
    frames = np.arange(plan.start, plan.keys[-1] + 1)
    world = np.array(obj.matrix_world)
    for t in constraints_io.ik_targets(obj, set(plan.left), set(bones)):
        gaps = left_gaps.get(t.owner, [])
        if t.why or not gaps:
            if t.why:
                not_moved.append(f"{t.label} ({t.why})")
            continue
        chain = constraints_io.chain_to_root(obj, t.owner)
        rest = np.array([np.array(obj.data.bones[b].matrix_local) for b in chain])
        rot = np.empty((len(frames), len(chain), 4))
        pos = np.empty((len(frames), len(chain), 3))
        for c, b in enumerate(chain):
            q, p = constraints_io.static_basis(obj, b)
            j = index.get(b)
            rot[:, c] = basis[:, j] if j is not None else q
            pos[:, c] = loc[:, j] if j is not None and j in position_joints else p
        pose = ik_follow.chain_pose(rest, rot, pos)
        tips = ik_follow.tip(world[None] @ pose, obj.data.bones[t.owner].length, t.use_tail)
        ends = sorted({f for g in gaps for f in g})
        current = np.array([[fc.evaluate(f) for fc in t.curves] for f in ends])
        at = {f: (ik_follow.to_world(current[i:i + 1], t.matrix)[0], tips[f - plan.start]) for i, f in enumerate(ends)}
        inside = np.concatenate([np.arange(a + 1, b) for a, b in gaps])
        values = ik_follow.to_location(ik_follow.follow(tips[inside - plan.start], inside, gaps, at), t.matrix)
        if blend < 1.0:  # the same mix as the bones: towards the curves as they were
            was = np.array([[fc.evaluate(f) for fc in t.curves] for f in inside])
            values = was + blend * (values - was)
        moves.append((t.label, t.curves, gaps, inside, values))
    return moves, not_moved


def apply(moves) -> list[str]:
    """Write the planned moves: -> the targets' labels."""
    for _, curves, gaps, inside, values in moves:
        for i, fc in enumerate(curves):
            keys_io.replace_in_gaps([fc], [keys_io.read(fc)], gaps, inside, values[:, i][None])
    return [m[0] for m in moves]
