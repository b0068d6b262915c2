"""Any rig <-> the model's skeleton, through a bone map: chains of bones, rest-pose differences, scale.

Pure numpy (no bpy).  Notation as in ``rig_math``: a bone ``b`` contributes the armature-axes rotation
``c_b = M_b B_b M_b^T`` (``M_b`` its rest orientation, ``B_b`` its rotation channels), so its rotation
relative to rest is ``G_b = G_parent c_b``.  A mapped joint ``j`` whose nearest mapped ancestor joint is
``a`` sees the chain of bones below ``a``'s bone down to ``j``'s bone: ``K_j = G_a^-1 G_j`` is the
product of their contributions (bones in between keep their own animation and count here at every
frame, on the way in and on the way back).

The model's global rotation of a mapped joint is ``G_model_j = C^T G_j C D_j`` (``C`` the BVH -> Blender
axis change, ``D_j`` the rest-pose difference: the model's global rotation when the rig is at rest,
see ``rest_pose``), so its local rotation is ``R_j = N^-1 D_a^-1 C^T K_j C D_j`` with ``N`` the neutral
local rotations of the unmapped joints between ``a`` and ``j``.  Positions: the displacement along the
chain in ``a``'s frame, ``s D_a^-1 C^T (...)`` with ``s`` model centimetres per Blender unit (the ratio
of leg lengths for another body, the power of ten of ``rig_math.cm_per_unit`` for the data set's own).

For a rig that *is* the model's skeleton (every joint on a bone parented to its parent joint's bone,
the same rest posture) every ``D`` is the identity and this is ``rig_math.blender_to_bvh`` exactly.

Longer than 300 lines: one conversion both ways, whose halves must stay exact inverses of each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..maths import quat_np
from . import axes, hinges, rest_pose

qconj = axes.qconj


def qmul(a, b):
    """``quat_np.mul`` in float64 (``rig_math.qmul``'s numbers for any input)."""
    return quat_np.mul(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


def qrotate(q, v):
    """``quat_np.rotate`` in float64."""
    return quat_np.rotate(np.asarray(q, dtype=np.float64), np.asarray(v, dtype=np.float64))


_C = axes.BVH_TO_BLENDER
_C_INV = axes.qconj(_C)
_ID = np.array([1.0, 0.0, 0.0, 0.0])


@dataclass
class RigBone:
    """What the conversion needs of one bone: its parent, rest matrix (``matrix_local``), location frame."""
    parent: str | None
    matrix: np.ndarray  # [4, 4] armature space
    local_location: bool = True


@dataclass
class Retarget:
    joint_bone: list  # [J] index into ``bones`` of each joint's bone, -1 where unmapped
    above: np.ndarray  # [J] nearest mapped ancestor joint, -1 at the top
    between: list  # [J] unmapped joints strictly between ``above`` and the joint, top-down
    chains: list  # [J] bone indices below ``above``'s bone down to the joint's bone, top-down (mapped joints)
    bones: list  # every bone the conversion reads, parents before children
    bone_parent: np.ndarray  # [B] index into ``bones``, -1 at a root
    rest: np.ndarray  # [B, 4]
    heads: np.ndarray  # [B, 3] rest heads, armature space
    loc_frame: np.ndarray  # [B, 4]
    scale: float  # model centimetres per Blender unit
    rest_diff: np.ndarray | None  # [J, 4] D_j, None when all are the identity
    neutral: np.ndarray  # [J, 4] local rotations of unmapped joints
    offsets: np.ndarray  # [J, 3] the rest offsets sent with the poses (cm, model axes)
    parents: np.ndarray  # [J] the model's joint parents
    position_joints: tuple
    native: bool  # the data set's own skeleton (one bone per joint, direct parents, same rest posture)
    reference: str = "the data set's rest pose"  # the posture the rest-pose differences are measured against
    world: np.ndarray | None = None  # [4] the turn that stands the capture up (a Z-up file), None: none
    model_offsets: np.ndarray | None = None  # [J, 3] the model's own rest offsets (cm, BVH axes)
    hinge_turns: dict = field(default_factory=dict)  # {hinge joint name: degrees} (``hinged``)

    def upright(self, world: np.ndarray) -> Retarget:
        """The same conversion with the whole motion turned by ``world`` on the way in (and back on the way
        out): the model's Y up for a capture whose world is another axis up."""
        return replace(self, world=np.asarray(world, dtype=np.float64), native=False,
                       rest_diff=np.tile(_ID, (len(self.joint_bone), 1)) if self.rest_diff is None else self.rest_diff)

    def hinged(self, names, basis: np.ndarray, loc: np.ndarray) -> Retarget:
        """The same conversion with each knee and elbow whose motion (the rig's channels ``basis``/``loc``
        ``[F, B, ...]``) bends about another axis than the model's turned onto it (``hinges``); itself
        when none is, and always for a rig that rests as the data set does (its hinges are the model's)."""
        if self.rest_diff is None:
            return self
        local = self.to_model(basis, loc)[0]
        model_offsets = np.asarray(self.model_offsets, dtype=np.float64)
        by = {j: phi for j, phi in hinges.twists(names, self.parents, model_offsets, local).items()
              if self.joint_bone[j] >= 0 and self.above[j] == self.parents[j]}
        if not by:
            return self
        out = replace(self, rest_diff=hinges.turned_rest_diff(self.rest_diff, self.parents, model_offsets, by),
                      native=False, hinge_turns={names[j]: phi for j, phi in by.items()})
        out.offsets = rest_offsets(out)
        return out

    @property
    def mapped(self) -> list[int]:
        return [j for j, b in enumerate(self.joint_bone) if b >= 0]

    def bone_of(self, j: int) -> str:
        return self.bones[self.joint_bone[j]]

    def on_mapped(self, joints) -> list[int]:
        """Joint indices -> indices into the mapped joints' bones (``mapped`` order); unmapped joints drop out."""
        at = {j: i for i, j in enumerate(self.mapped)}
        return [at[j] for j in joints if j in at]

    def contributions(self, basis: np.ndarray) -> np.ndarray:
        """``c_b = M_b B_b M_b^T`` for every bone: ``basis [..., B, 4]`` -> ``[..., B, 4]``."""
        return qmul(qmul(self.rest, basis), qconj(self.rest))

    def _off(self, bones) -> np.ndarray:
        """Rest head minus the rest head of the parent (the origin at a root), armature space."""
        q = self.bone_parent[bones]
        return self.heads[bones] - np.where((q >= 0)[:, None], self.heads[np.maximum(q, 0)], 0.0)

    def inner_bones(self) -> list[int]:
        """Indices of the bones in between (their channels are needed on the way back)."""
        return sorted({b for ch in self.chains for b in ch[:-1]})

    def _plan(self) -> _Plan:
        """The chains and the joints in between as index arrays over the mapped joints (made once)."""
        plan = self.__dict__.get("_plan_cache")
        if plan is None:
            plan = self.__dict__["_plan_cache"] = _Plan.of(self)
        return plan

    # -- rig -> model ---------------------------------------------------------------------------
    def to_model(self, basis: np.ndarray, loc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every read bone's channels (``basis [F, B, 4]``, ``loc [F, B, 3]``) -> the model's local
        rotations ``[F, J, 4]`` and positions ``[F, J, 3]`` (cm, BVH axes).

        All mapped joints at once: chains are padded at the top, joints in between at the end, with a
        bone/joint that is the identity (rotation (1, 0, 0, 0), zero offset), and multiplying by the
        identity or adding zero gives the same floats, so this is the per-joint walk number for number
        (computed component by component, ``[4, F, joints]``, the same arithmetic as ``qmul``/``qrotate``)."""
        f, j_count = basis.shape[0], len(self.joint_bone)
        pl = self._plan()
        rot = np.broadcast_to(self.neutral, (f, j_count, 4)).copy()
        pos = np.broadcast_to(self.offsets, (f, j_count, 3)).copy()
        if not pl.js:
            return rot, pos
        rest = pl.full("rest", f, lambda: pl.rest[:, :, :-1])
        rest_inv = pl.full("rest~", f, lambda: _qconj_c(pl.rest[:, :, :-1]))
        c = _cat_id(_qmul_c(_qmul_c(rest, _comp(basis)), rest_inv))
        k, disp = pl.walk(c, _cat_zero(_comp(loc)), pl.steps, "chain", f)
        r = _mul_c(_c_mul(-_CX, k), _CX)  # C^-1 K C
        p = self.scale * _c_rot(-_CX, disp)
        if pl.diff is not None:
            da_inv = pl.full("da~", f, lambda: _qconj_c(pl.above_diff))
            r = _qmul_c(_qmul_c(da_inv, r), pl.full("d", f, lambda: pl.diff))
            p = _qrot_c(da_inv, p)
        if len(pl.between):
            neutral, offsets = self._padded_joints()
            for n in pl.between:  # the neutral joints in between, top-down: R_j = N_n^-1 ... N_1^-1 (...)
                inv = _qconj_c(neutral[:, None, n])
                r = _qmul_c(inv, r)
                p = _qrot_c(inv, p - offsets[:, None, n])
        rot[:, pl.js], pos[:, pl.js] = np.moveaxis(r, 0, -1), np.moveaxis(p, 0, -1)
        return rot, pos

    def _padded_joints(self) -> tuple[np.ndarray, np.ndarray]:
        """Neutral rotations ``[4, J + 1]`` and offsets ``[3, J + 1]`` with the identity joint last (not
        kept in the plan: ``build`` sets ``offsets`` after a first conversion)."""
        return _cat_id(_comp(self.neutral)), _cat_zero(_comp(self.offsets))

    # -- model -> rig ---------------------------------------------------------------------------
    def to_rig(self, rot: np.ndarray, pos: np.ndarray, basis=None, loc=None,
               positions=None) -> tuple[np.ndarray, np.ndarray]:
        """The model's motion (``rot [F, J, 4]``, ``pos [F, J, 3]``) -> channels of the mapped bones
        (``[F, J, 4]`` rotation quaternions, ``[F, J, 3]`` locations; the rows of unmapped joints are
        the identity and zero), given the read bones' own channels ``basis``/``loc [F, B, ...]`` on the
        same frames (only the bones in between, ``inner_bones``, are used: they keep theirs).
        ``positions``: the joints whose locations are wanted (the others' stay zero and their arithmetic is
        skipped), None: all.  All mapped joints at once, padded with the identity as in
        ``to_model``."""
        f, j_count = rot.shape[:2]
        pl = self._plan()
        out_b = np.zeros((f, j_count, 4))
        out_b[..., 0] = 1.0
        out_l = np.zeros((f, j_count, 3))
        if not pl.js:
            return out_b, out_l
        rot_c, pos_c = _comp(rot), _comp(pos)
        r, p = rot_c[:, :, pl.js], pos_c[:, :, pl.js]
        wb, wi = pl.with_between, pl.with_inner  # (only these joints: the identity steps change nothing)
        cols = list(range(len(pl.js))) if positions is None else [i for i, j in enumerate(pl.js) if j in positions]
        sel = slice(None) if positions is None else cols  # (no copy for all)
        if wb:  # the model's own motion of unmapped joints in between (neutral above every mapped joint)
            neutral, offsets = self._padded_joints()
            rot_x, pos_x = _cat_id(rot_c), _cat_zero(pos_c)
            top, rb, pb = pl.top[wb], r[:, :, wb], p[:, :, wb]
            for n in pl.between[::-1, wb]:
                q = np.where(top, neutral[:, None, n], rot_x[:, :, n])
                pb = np.where(top, offsets[:, None, n], pos_x[:, :, n]) + _qrot_c(q, pb)
                rb = _qmul_c(q, rb)
            r[:, :, wb], p[:, :, wb] = rb, pb
        if pl.diff is not None:
            da = pl.full("da", f, lambda: pl.above_diff)
            r = _qmul_c(_qmul_c(da, r), pl.full("d~", f, lambda: _qconj_c(pl.diff)))
            p = _qrot_c(da[:, :, sel], p[:, :, sel])
        else:
            p = p[:, :, sel]
        k = _mul_c(_c_mul(_CX, r), -_CX)  # C R C^-1
        disp = _c_rot(_CX, p) / self.scale  # (the ``cols`` joints)
        if wi:  # the bones in between, as they are
            inner = pl.inner
            b_in, l_in = basis[:, inner], loc[:, inner]
            g = 1 if (b_in == b_in[:1]).all() and (l_in == l_in[:1]).all() else f  # (still: one frame's floats
            # are every frame's, so they are worked out once: an unanimated twist bone or control root)
            c = np.empty((4, g, len(self.bones) + 1))
            c[:, :, -1] = _ID[:, None]
            rest = pl.rest[:, :, inner]
            c[:, :, inner] = _qmul_c(_qmul_c(rest, _comp(b_in[:g])), _qconj_c(rest))
            kin, din = pl.walk(c, _cat_zero(_comp(loc[:g])), pl.steps[:-1, wi], "inner", g)
            kin = _qconj_c(np.broadcast_to(kin, (4, f, kin.shape[2])))
            din = np.broadcast_to(din, (3, f, din.shape[2]))
            k[:, :, wi] = _qmul_c(kin, k[:, :, wi])
            at = {c: i for i, c in enumerate(cols)}
            both = [i for i, c in enumerate(wi) if c in at]  # (columns of ``kin``, then of ``disp``)
            moved = [at[wi[i]] for i in both]
            if both:
                disp[:, :, moved] = _qrot_c(kin[:, :, both], disp[:, :, moved] - din[:, :, both])
        b = pl.steps[-1]
        rest = pl.full("rest b", f, lambda: pl.rest[:, :, b])
        rest_inv = pl.full("rest b~", f, lambda: _qconj_c(pl.rest[:, :, b]))
        out_b[:, pl.js] = np.moveaxis(_qmul_c(_qmul_c(rest_inv, k), rest), 0, -1)
        frame_inv = pl.full("loc frame b~", f, lambda: _qconj_c(pl.loc_frame[:, :, b]))[:, :, sel]
        off = pl.full("off b", f, lambda: pl.off[:, :, b])[:, :, sel]
        out_l[:, [pl.js[c] for c in cols]] = np.moveaxis(_qrot_c(frame_inv, disp - off), 0, -1)
        return out_b, out_l


# Quaternions component by component (``[4, ...]``, vectors ``[3, ...]``): ``quat_np.mul_parts`` and ``qrotate``'s
# arithmetic term for term (the same floats) on contiguous arrays, quicker than on the last axis.
def _comp(x) -> np.ndarray:
    """``[..., k]`` -> ``[k, ...]``."""
    return np.ascontiguousarray(np.moveaxis(np.asarray(x, dtype=np.float64), -1, 0))


def _cat_id(q) -> np.ndarray:
    """``[4, ..., n]`` -> ``[4, ..., n + 1]`` with the identity last."""
    return np.concatenate([q, np.broadcast_to(_ID.reshape((4,) + (1,) * (q.ndim - 1)), q.shape[:-1] + (1,))], -1)


def _cat_zero(v) -> np.ndarray:
    return np.concatenate([v, np.zeros(v.shape[:-1] + (1,))], -1)


_qmul_c = quat_np.mul_parts


def _qconj_c(q):
    return np.stack((q[0], -q[1], -q[2], -q[3]))


def _qrot_c(q, v):
    w, x, y, z = q
    v0, v1, v2 = v
    t0, t1, t2 = 2.0 * (y * v2 - z * v1), 2.0 * (z * v0 - x * v2), 2.0 * (x * v1 - y * v0)
    return np.stack((v0 + w * t0 + (y * t2 - z * t1), v1 + w * t1 + (z * t0 - x * t2), v2 + w * t2 + (x * t1 - y * t0)))


# The axis change C = (w, x, 0, 0): qmul/qrotate with its zero terms left out (adding a zero product changes
# no float, only the sign of a zero), a third of the operations.
_CW, _CX = float(_C[0]), float(_C[1])


def _c_mul(cx, b):
    """``qmul((w, cx, 0, 0), b)`` for C (``cx = x``) or C^-1 (``cx = -x``)."""
    bw, bx, by, bz = b
    return np.stack((_CW * bw - cx * bx, _CW * bx + cx * bw, _CW * by - cx * bz, _CW * bz + cx * by))


def _mul_c(a, cx):
    """``qmul(a, (w, cx, 0, 0))``."""
    aw, ax, ay, az = a
    return np.stack((aw * _CW - ax * cx, aw * cx + ax * _CW, ay * _CW + az * cx, az * _CW - ay * cx))


def _c_rot(cx, v):
    """``qrotate((w, cx, 0, 0), v)``."""
    v0, v1, v2 = v
    t1, t2 = -2.0 * (cx * v2), 2.0 * (cx * v1)
    return np.stack((v0, v1 + _CW * t1 - cx * t2, v2 + _CW * t2 + cx * t1))


@dataclass
class _Plan:
    """A Retarget's mapped joints ``js`` with their chains as rows ``steps [L, len(js)]`` of bone indices
    (top-down, padded at the top with the extra identity bone ``B``; the last row is each joint's bone) and
    the joints in between as rows ``between [M, len(js)]`` (top-down, padded at the end with the extra
    identity joint ``J``).  Per-bone and per-joint arrays are component-major ``[k, 1, n]``."""
    js: list
    steps: np.ndarray
    between: np.ndarray
    top: np.ndarray  # [len(js)] no mapped joint above
    inner: list  # the bones in between (rows but the last)
    with_between: list  # columns of the joints with joints in between
    with_inner: list  # columns of the joints with bones in between
    rest: np.ndarray  # [4, 1, B + 1]
    off: np.ndarray  # [3, 1, B + 1] rest head minus the parent's, zero for the identity bone
    loc_frame: np.ndarray  # [4, 1, B + 1]
    diff: np.ndarray | None  # [4, 1, len(js)] D_j
    above_diff: np.ndarray | None  # [4, 1, len(js)] D_a (the identity at the top)
    _full: dict = field(default_factory=dict)

    @classmethod
    def of(cls, rt: Retarget) -> _Plan:
        js = rt.mapped
        b_count, j_count = len(rt.bones), len(rt.joint_bone)
        depth = max((len(rt.chains[j]) for j in js), default=1)
        steps = np.array([[b_count] * (depth - len(rt.chains[j])) + list(rt.chains[j]) for j in js], dtype=int)
        depth = max((len(rt.between[j]) for j in js), default=0)
        between = np.array([list(rt.between[j]) + [j_count] * (depth - len(rt.between[j])) for j in js], dtype=int)
        d = rt.rest_diff
        top = _ID if rt.world is None else qconj(rt.world)  # D_a of the top joints: the world's turn
        above = rt.above[js]

        def per(x):
            return _comp(x)[:, None, :]
        return cls(js, steps.T.reshape(-1, len(js)), between.T.reshape(-1, len(js)), above < 0, rt.inner_bones(),
                   [i for i, j in enumerate(js) if rt.between[j]],
                   [i for i, j in enumerate(js) if len(rt.chains[j]) > 1],
                   per(np.concatenate([rt.rest.reshape(-1, 4), _ID[None]])),
                   per(np.concatenate([rt._off(np.arange(b_count)).reshape(-1, 3), np.zeros((1, 3))])),
                   per(np.concatenate([rt.loc_frame.reshape(-1, 4), _ID[None]])),
                   None if d is None else per(d[js]),
                   None if d is None else per(np.where((above >= 0)[:, None], d[np.maximum(above, 0)], top)))

    def full(self, name: str, f: int, make) -> np.ndarray:
        """``make()`` (``[k, 1, n]``, per joint) spread over ``f`` frames and kept: numpy's arithmetic runs
        a third faster on whole arrays than broadcast along the frames (and gives the same floats)."""
        got = self._full.get((name, f))
        if got is None:
            if len(self._full) > 64:
                self._full.clear()
            x = make()
            got = self._full[name, f] = np.ascontiguousarray(np.broadcast_to(x, (x.shape[0], f, x.shape[2])))
        return got

    def walk(self, c, loc, steps, name: str, f: int):
        """(K, displacement) along the chains' rows ``steps`` (``c [4, F, B + 1]``, ``loc [3, F, B + 1]``):
        the product of the contributions and the last bone's head relative to the head of the bone above
        the chain, in that bone's rest-relative frame."""
        k, disp = None, None
        for s, b in enumerate(steps):
            off = self.full(f"{name} off {s}", f, lambda b=b: self.off[:, :, b])
            step = off + _qrot_c(self.full(f"{name} frame {s}", f, lambda b=b: self.loc_frame[:, :, b]), loc[:, :, b])
            disp = step if k is None else disp + _qrot_c(k, step)
            k = c[:, :, b] if k is None else _qmul_c(k, c[:, :, b])
        return k, disp


def build(names, parents, model_offsets, joint_bones: list, rig: dict, position_joints=(1,)) -> Retarget:
    """The conversion for a checked map (``joint_bones [J]`` bone name or None, ``bone_map.check``);
    ``rig``: ``{bone: RigBone}`` of the whole armature."""
    parents = np.asarray(parents)
    j_count = len(names)
    needed: list[str] = []
    for b in joint_bones:  # the mapped bones and all their ancestors, parents first
        if not b:
            continue
        line = [b]
        p = rig[b].parent
        while p is not None:
            line.append(p)
            p = rig[p].parent
        for x in reversed(line):
            if x not in needed:
                needed.append(x)
    index = {b: i for i, b in enumerate(needed)}
    bone_parent = np.array([index[rig[b].parent] if rig[b].parent is not None else -1 for b in needed], dtype=int)
    mats = np.array([np.asarray(rig[b].matrix, dtype=np.float64) for b in needed]).reshape(-1, 4, 4)
    rest = axes.q_from_matrix(mats[:, :3, :3]) if needed else np.zeros((0, 4))
    par_rest = np.array([rest[q] if q >= 0 else _ID for q in bone_parent]).reshape(-1, 4)
    local = np.array([rig[b].local_location for b in needed], dtype=bool)
    loc_frame = np.where(local[:, None], rest, par_rest)
    heads = mats[:, :3, 3]
    joint_bone = [index[b] if b else -1 for b in joint_bones]
    above = np.full(j_count, -1)
    between, chains = [], []
    for j in range(j_count):
        p, mid = parents[j], []
        while p >= 0 and joint_bone[p] < 0:
            mid.append(int(p))
            p = parents[p]
        above[j] = p
        between.append(mid[::-1])
        chain = []
        if joint_bone[j] >= 0:
            stop = joint_bone[p] if p >= 0 else -1
            b = joint_bone[j]
            while b != stop and b >= 0:
                chain.append(b)
                b = bone_parent[b]
            chain = chain[::-1]
        chains.append(chain)
    model_offsets = np.asarray(model_offsets, dtype=np.float64)
    mapped = np.array([b >= 0 for b in joint_bone])
    heads_j = np.zeros((j_count, 3))
    heads_j[mapped] = qrotate(_C_INV, heads[[b for b in joint_bone if b >= 0]])
    reference, d, neutral, dev = rest_pose.choose(names, parents, model_offsets, heads_j, mapped, tuple(position_joints))
    # Any rest converts: a bone far from the reference is swung onto the rig's direction like a near one (the
    # same world motion then reaches the model alike, training/studies/rest_pose.py); only a skeleton that is no
    # humanoid is refused, by the map (``bone_map``).
    # Exactly the identity where the rig rests as the data set does (float32 rest matrices differ by ~1e-5 deg).
    small = np.array([rest_pose.angle_deg(q) < rest_pose.SNAP_DEGREES for q in d]) & \
        (reference == "the data set's rest pose")
    d[small] = _ID
    identity = bool(small[mapped].all()) and reference == "the data set's rest pose"
    direct = identity and all(b >= 0 for b in joint_bone) and all(len(ch) == 1 for ch in chains) and \
        all((bone_parent[joint_bone[j]] == (joint_bone[parents[j]] if parents[j] >= 0 else bone_parent[joint_bone[j]]))
            for j in range(j_count))
    if direct:
        rig_off = heads[joint_bone] - np.where((bone_parent[joint_bone] >= 0)[:, None], heads[bone_parent[joint_bone]],
                                               0.0)
        scale = axes.cm_per_unit(rig_off, model_offsets)
    else:
        scale = leg_scale(names, heads, joint_bone, model_offsets)
    if identity:
        neutral = np.tile(_ID, (j_count, 1))
    rt = Retarget(joint_bone, above, between, chains, needed, bone_parent, rest, heads, loc_frame, scale,
                  None if identity else d, neutral, model_offsets.copy(), parents, tuple(position_joints), direct,
                  reference, model_offsets=model_offsets.copy())
    rt.offsets = rest_offsets(rt)
    return rt


def rest_offsets(rt: Retarget) -> np.ndarray:
    """The offsets sent with the poses: the rig's rest pose seen by the model (its bones' rest offsets
    in the model's axes and scale), the model's own for unmapped joints."""
    b = len(rt.bones)
    basis = np.zeros((1, b, 4))
    basis[..., 0] = 1.0
    return rt.to_model(basis, np.zeros((1, b, 3)))[1][0]


_LEG = (("UpperLeg_L", "LowerLeg_L", "Foot_L"), ("UpperLeg_R", "LowerLeg_R", "Foot_R"))


def leg_scale(names, heads, joint_bone, model_offsets) -> float:
    """Model centimetres per Blender unit from the legs (hip to ankle), the model's over the rig's;
    without both legs mapped, from all mapped joints' distances to their mapped ancestors."""
    idx = {n: i for i, n in enumerate(names)}
    model, user = 0.0, 0.0
    for leg in _LEG:
        if all(n in idx and joint_bone[idx[n]] >= 0 for n in leg):
            for a, b in zip(leg, leg[1:], strict=False):
                model += float(np.linalg.norm(model_offsets[idx[b]]))
                user += float(np.linalg.norm(heads[joint_bone[idx[b]]] - heads[joint_bone[idx[a]]]))
    if model <= 0 or user <= 0:
        return 1.0
    ratio = model / user
    near = 10.0 ** np.round(np.log10(ratio))
    return float(near) if abs(ratio / near - 1.0) < 1e-3 else float(ratio)  # the same body in other units
