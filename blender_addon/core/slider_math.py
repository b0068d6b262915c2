"""A slider change's maths without bpy, for every bone and frame at once.

The layer (``layer_math``) moves the original by the edit: in the model's convention a frame's rotation
is ``o * n^-1 * e`` (``o`` the original, ``n`` the neutral decode, ``e`` the edited one), and the pose
channels come back through each bone's rest frame, ``basis = A^-1 * rot * A`` with ``A = C^-1 * rest``
(``rig_math.bvh_to_blender``).  Since ``o = A * B * A^-1`` for the original's own channel rotation ``B``,

    basis = B * A^-1 * n^-1 * e * A = K @ e,    K = L(B) L(A^-1) L(n^-1) R(A)

with ``L(q)``/``R(q)`` the 4x4 matrices of multiplying by ``q`` on the left/right.  ``K`` depends only
on the original and the neutral decode, which no slider changes: it is computed once per segment and
cached, and a slider change costs one 4x4 product per bone and frame.  Locations are linear:
``loc = loc_o + M (e_pos - n_pos)`` with ``M`` the rotation ``location_frame^-1 * C`` over cm per unit.
The results equal ``layer_math.compose`` + ``rig_math.bvh_to_blender`` to float rounding (tested).
"""
from __future__ import annotations

import numpy as np

from . import continuity, layer_math, quat, rig_math

conj, left_matrix, right_matrix = quat.conj, quat.left_matrix, quat.right_matrix  # (the backend's: core/quat.py)


def rest_turns(rig: rig_math.RigFrames) -> np.ndarray:
    """``A = C^-1 * rest`` per joint ``[J, 4]``: the model's frame of each bone in its rest frame."""
    return rig_math.qmul(rig_math.qconj(rig_math.BVH_TO_BLENDER), rig.rest)


def rotation_maps(original: np.ndarray, neutral: np.ndarray, turns: np.ndarray) -> np.ndarray:
    """``K [F, J, 4, 4]`` of each frame and joint (module docstring): ``original [F, J, 4]`` the original's
    channel rotations, ``neutral [F, J, 4]`` the neutral decode (model convention), ``turns [J, 4]`` ``A``."""
    inner = left_matrix(conj(turns))[None] @ left_matrix(conj(neutral)) @ right_matrix(turns)[None]
    return left_matrix(original) @ inner


def layered_rotations(maps: np.ndarray, edited: np.ndarray) -> np.ndarray:
    """``K @ e``: the layered channel rotations ``[F, J, 4]`` for the edited decode ``e``, unit to float
    rounding (``K`` is a product of unit quaternions' matrices) and normalised where they are used
    (:func:`channels_near`; the Euler angles take ratios and need no normalising)."""
    return np.einsum("...ij,...j->...i", maps, edited)


def location_maps(rig: rig_math.RigFrames) -> np.ndarray:
    """``M [J, 3, 3]``: a model-convention position difference (cm) -> a ``location`` difference."""
    turn = rig_math.qmul(rig_math.qconj(rig.location_frame), rig_math.BVH_TO_BLENDER)
    return rig_math.q_to_matrix(turn) / rig.cm_per_unit


def layered_locations(original: np.ndarray, maps: np.ndarray, edited: np.ndarray, neutral: np.ndarray) -> np.ndarray:
    """``loc_o + M (e - n)``: ``original [F, P, 3]`` the original's locations, ``maps [P, 3, 3]``,
    ``edited``/``neutral [F, P, 3]`` the decodes' positions of the same joints."""
    return original + np.einsum("pij,fpj->fpi", maps, edited - neutral)


_PAIRS = [(a, b) for a in range(4) for b in range(a, 4)]  # the 10 distinct products q_a q_b, a <= b
_FIRST, _SECOND = np.array([a for a, _ in _PAIRS]), np.array([b for _, b in _PAIRS])


def _matrix_of_products() -> np.ndarray:
    """``[10, 9]``: the rotation matrix of a unit quaternion (row by row) as a linear map of its distinct
    pairwise products ``q_a q_b`` (``_PAIRS``; every entry is a quadratic form of ``q``)."""
    w, x, y, z = range(4)
    forms = [[(w, w, 1), (x, x, 1), (y, y, -1), (z, z, -1)], [(x, y, 2), (w, z, -2)], [(x, z, 2), (w, y, 2)],
             [(x, y, 2), (w, z, 2)], [(w, w, 1), (x, x, -1), (y, y, 1), (z, z, -1)], [(y, z, 2), (w, x, -2)],
             [(x, z, 2), (w, y, -2)], [(y, z, 2), (w, x, 2)], [(w, w, 1), (x, x, -1), (y, y, -1), (z, z, 1)]]
    out = np.zeros((len(_PAIRS), 9))
    for e, terms in enumerate(forms):
        for a, b, c in terms:
            out[_PAIRS.index((min(a, b), max(a, b))), e] = c
    return out


_MATRIX_OF_PRODUCTS = np.ascontiguousarray(_matrix_of_products().T)  # [9, 10]


def euler_near(q: np.ndarray, mode: str, ref: np.ndarray) -> np.ndarray:
    """Quaternions ``[..., 4]`` (of any length near 1: the angles take ratios of the matrix's entries) ->
    Blender Euler ``[..., 3]`` in ``mode``, of the two solutions each
    shifted by whole turns the one nearest ``ref`` (L1, the first on a tie): ``rig_math.quat_to_euler``
    with ``compat``, the matrix from the quaternion's products in one matrix product and the first
    angle's sine and cosine from the two numbers its arctangent takes (no trigonometry on them).
    Everything runs on rows of all bones and frames (an entry, an angle: one contiguous row each),
    which reads a quarter less memory than columns of a 9-wide matrix."""
    order = mode[::-1]
    i, j, k = (rig_math.AXIS_INDEX[ch] for ch in order)
    s = 1.0 if (i, j, k) in ((0, 1, 2), (1, 2, 0), (2, 0, 1)) else -1.0
    comps = np.ascontiguousarray(q.reshape(-1, 4).T)  # [4, N]
    m = _MATRIX_OF_PRODUCTS @ (comps[_FIRST] * comps[_SECOND])  # [9, N]: the matrix, entry by entry
    mii, mij, mik, mjk, mkk = m[4 * i], m[3 * i + j], m[3 * i + k], m[3 * j + k], m[4 * k]
    mkj, mjj, mji, mki = m[3 * k + j], m[4 * j], m[3 * j + i], m[3 * k + i]
    cb = np.hypot(mii, mij)
    b = np.arctan2(s * mik, cb)
    lock = cb < 1e-12
    ya, xa = np.where(lock, s * mkj, -s * mjk), np.where(lock, mjj, mkk)
    a = np.arctan2(ya, xa)
    r = np.hypot(ya, xa)
    some = r > 0  # (arctan2(0, 0) = 0: sine 0, cosine 1)
    r = np.where(some, r, 1.0)
    sa, ca = ya / r, np.where(some, xa / r, 1.0)
    c = np.arctan2(s * ca * mji + sa * mki, ca * mjj + s * sa * mkj)
    cands = np.empty((2, 3) + a.shape)  # [solution, angle, N]
    cands[0, 0], cands[0, 1], cands[0, 2] = a, b, c
    cands[1, 0], cands[1, 1], cands[1, 2] = a + np.pi, np.pi - b, c + np.pi
    near = np.broadcast_to(np.asarray(ref, dtype=np.float64), q.shape[:-1] + (3,)).reshape(-1, 3).T[[i, j, k]]
    ang = continuity.nearest(cands, near, axis=0)
    out = np.empty(q.shape[:-1] + (3,))
    flat = out.reshape(-1, 3)
    flat[:, i], flat[:, j], flat[:, k] = ang[0], ang[1], ang[2]
    return out


def channels_near(q: np.ndarray, mode: str, ref: np.ndarray) -> np.ndarray:
    """``layer_math.channels_near`` with the Euler modes through :func:`euler_near` (which takes ratios of
    the rotation matrix's entries: ``q`` need not be normalised there); the other modes get unit ``q``."""
    if mode in rig_math.EULER_MODES:
        return euler_near(q, mode, ref)
    return layer_math.channels_near(q / np.sqrt(np.einsum("...i,...i->...", q, q))[..., None], mode, ref)
