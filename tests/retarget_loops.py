"""The conversion's per-joint loops as they were before ``Retarget.to_model``/``to_rig`` were vectorised
over joints: the reference the faster path must equal bit for bit (``test_retarget``)."""
from __future__ import annotations

import numpy as np

from backend.humanoid.retarget import _C, _C_INV, _ID, qconj, qmul, qrotate


def to_model(self, basis: np.ndarray, loc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every read bone's channels (``basis [F, B, 4]``, ``loc [F, B, 3]``) -> the model's local
    rotations ``[F, J, 4]`` and positions ``[F, J, 3]`` (cm, BVH axes)."""
    f, j_count = basis.shape[0], len(self.joint_bone)
    c = self.contributions(basis)
    rot = np.broadcast_to(self.neutral, (f, j_count, 4)).copy()
    pos = np.broadcast_to(self.offsets, (f, j_count, 3)).copy()
    d = self.rest_diff
    simple, other = _split(self)
    if simple:  # one step each, vectorised over the joints
        bs = [self.chains[j][0] for j in simple]
        step = self._off(bs) + qrotate(self.loc_frame[bs], loc[:, bs])
        r = qmul(qmul(_C_INV, c[:, bs]), _C)
        p = self.scale * qrotate(_C_INV, step)
        if d is not None:
            da_inv = qconj(_above_diff(self, simple))
            r = qmul(qmul(da_inv, r), d[simple])
            p = qrotate(da_inv, p)
        rot[:, simple], pos[:, simple] = r, p
    for j in other:
        k, disp = _walk(self, self.chains[j], c, loc)
        r = qmul(qmul(_C_INV, k), _C)
        p = self.scale * qrotate(_C_INV, disp)
        a = self.above[j]
        if d is not None:
            da_inv = qconj(d[a]) if a >= 0 else _ID
            r = qmul(qmul(da_inv, r), d[j])
            p = qrotate(da_inv, p)
        for n in self.between[j]:  # the neutral joints in between: R_j = N_n^-1 ... N_1^-1 (...)
            r = qmul(qconj(self.neutral[n]), r)
            p = qrotate(qconj(self.neutral[n]), p - self.offsets[n])
        rot[:, j] = r
        pos[:, j] = p
    return rot, pos

def to_rig(self, rot: np.ndarray, pos: np.ndarray, basis=None, loc=None) -> tuple[np.ndarray, np.ndarray]:
    """The model's motion (``rot [F, J, 4]``, ``pos [F, J, 3]``) -> channels of the mapped bones
    (``[F, J, 4]`` rotation quaternions, ``[F, J, 3]`` locations; the rows of unmapped joints are
    the identity and zero), given the read bones' own channels ``basis``/``loc [F, B, ...]`` on the
    same frames (only the bones in between, ``inner_bones``, are used: they keep theirs)."""
    f, j_count = rot.shape[:2]
    c = None if basis is None else self.contributions(basis)  # (None: no chain has bones in between)
    out_b = np.zeros((f, j_count, 4))
    out_b[..., 0] = 1.0
    out_l = np.zeros((f, j_count, 3))
    d = self.rest_diff
    simple, other = _split(self)
    if simple:
        bs = [self.chains[j][0] for j in simple]
        r, p = rot[:, simple], pos[:, simple]
        if d is not None:
            da = _above_diff(self, simple)
            r = qmul(qmul(da, r), qconj(d[simple]))
            p = qrotate(da, p)
        k = qmul(qmul(_C, r), _C_INV)
        disp = qrotate(_C, p) / self.scale
        out_b[:, simple] = qmul(qmul(qconj(self.rest[bs]), k), self.rest[bs])
        out_l[:, simple] = qrotate(qconj(self.loc_frame[bs]), disp - self._off(bs))
    for j in other:
        chain = self.chains[j]
        r, p = rot[:, j], pos[:, j]
        a = self.above[j]
        for n in reversed(self.between[j]):  # the model's own motion of unmapped joints in between;
            if a < 0:  # above every mapped joint (a root the rig has no bone for): neutral, as on the way in
                p = self.offsets[n] + qrotate(self.neutral[n], p)
                r = qmul(self.neutral[n], r)
                continue
            p = pos[:, n] + qrotate(rot[:, n], p)
            r = qmul(rot[:, n], r)
        if d is not None:
            da = d[a] if a >= 0 else _ID
            r = qmul(qmul(da, r), qconj(d[j]))
            p = qrotate(da, p)
        k = qmul(qmul(_C, r), _C_INV)
        disp = qrotate(_C, p) / self.scale
        kin, din = _walk(self, chain[:-1], c, loc)  # the bones in between, as they are
        b = chain[-1]
        if kin is not None:
            k = qmul(qconj(kin), k)
            disp = qrotate(qconj(kin), disp - din)
        out_b[:, j] = qmul(qmul(qconj(self.rest[b]), k), self.rest[b])
        out_l[:, j] = qrotate(qconj(self.loc_frame[b]), disp - self._off([b])[0])
    return out_b, out_l


def _walk(self, chain, c, loc):
    """(K, displacement) along a chain: the product of its contributions and the last bone's head
    relative to the head of the bone above the chain, in that bone's rest-relative frame."""
    k, disp = None, None
    for b in chain:
        q = self.bone_parent[b]
        off = self.heads[b] - (self.heads[q] if q >= 0 else 0.0)
        step = off + qrotate(self.loc_frame[b], loc[..., b, :])
        disp = step if k is None else disp + qrotate(k, step)
        k = c[..., b, :] if k is None else qmul(k, c[..., b, :])
    return k, disp


def _split(self) -> tuple[list[int], list[int]]:
    """Mapped joints on a bone right under their parent joint's bone (converted all at once), and the rest."""
    simple = [j for j in self.mapped if len(self.chains[j]) == 1 and not self.between[j]]
    return simple, [j for j in self.mapped if j not in simple]


def _above_diff(self, js) -> np.ndarray:
    return np.array([self.rest_diff[self.above[j]] if self.above[j] >= 0 else _ID for j in js]).reshape(-1, 4)
