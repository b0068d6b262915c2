"""Knees and elbows bend about the model's own axes: a rig's hinge convention found in its motion.

Pure numpy.  The rest pose gives each bone's direction, not its roll: ``rest_pose`` keeps the reference's
twist, so a studio whose solver puts the elbow's axis elsewhere about the upper arm (CMU's: 36-42 degrees
from the data set's) reaches the model as an elbow bending about an axis the data set's never bends
about, read as hundreds of the normaliser's spreads (docs/results.md, *Autoencoder*: the autoencoder off-studio).

The fix is a twist ``T`` about the parent bone (the hinge joint's offset ``u`` in its parent's frame) on
both rest-pose differences, ``D_a <- D_a T^-1`` and ``D_j <- D_j T^-1``: the hinge's local rotation
becomes ``T R_j T^-1`` (its axis turned by ``T``), the parent's ``R_a T^-1`` and the children's ``T R_c``.
The world motion is unchanged and the conversion stays its own exact inverse (only ``D`` changes).

``T``'s angle is read from the motion: the rotation vectors of the hinge's frames bent more than
``BENT_DEGREES``, summed and projected off ``u`` (a forearm's pronation lies along it), against the
model's axis ``AXES``.  Within ``TOLERANCE`` (the scatter of the data set's own clips) nothing turns,
so motion the model's own convention made (and the data set's rig) converts as before.  Angles are
whole degrees, so an edit of a few keys does not move the conversion.
"""
from __future__ import annotations

import numpy as np

from . import axes

BENT_DEGREES = 20.0  # frames bent less say little about the axis
MIN_FRAMES = 3  # fewer bent frames than this: the hinge is left as it is
FRAMES = 240  # at most this many of a motion's frames (its keys, in the add-on) are read
# The model's hinge axes, in the hinge joint's local frame (BVH axes, the data set's skeleton), and how
# far a rig's may lie from them before it is turned (degrees).  From `python -m training.hinge_axes`:
# every frame of the training split bent more than 20 degrees; the tolerance is above the 99th
# percentile of the training clips' own angle from these axes (knees 0.5 and 0.2, elbows 17 and 15).
AXES = {"LowerLeg_L": (0.0, 1.0, -0.0005), "LowerLeg_R": (-0.0001, 1.0, -0.0001),
        "LowerArm_L": (0.0, -0.9832, 0.1828), "LowerArm_R": (0.0, -0.9986, 0.0537)}
TOLERANCE = {"LowerLeg_L": 2.0, "LowerLeg_R": 2.0, "LowerArm_L": 25.0, "LowerArm_R": 25.0}


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-12 else v


def axis(local: np.ndarray, u: np.ndarray) -> np.ndarray | None:
    """The hinge's axis (unit, off ``u``) from its local rotations ``[F, 4]``, or None when fewer than
    ``MIN_FRAMES`` frames are bent more than ``BENT_DEGREES``."""
    q = np.asarray(local, dtype=np.float64).reshape(-1, 4)
    q = q * np.where(q[:, :1] < 0.0, -1.0, 1.0)
    s = np.linalg.norm(q[:, 1:], axis=1)
    angle = 2.0 * np.arctan2(s, q[:, 0])
    bent = angle > np.radians(BENT_DEGREES)
    if int(bent.sum()) < MIN_FRAMES:
        return None
    v = q[bent, 1:] / s[bent, None] * angle[bent, None]
    u = _unit(u)
    w = v.sum(0)
    w = w - np.dot(w, u) * u
    return None if np.linalg.norm(w) < 1e-9 else _unit(w)


def pick(count: int) -> np.ndarray:
    """Which of ``count`` frames (a file's, or a rig's keyed frames in order) are read: all, or ``FRAMES``
    spread evenly over them; the add-on and the batch choose alike, so a file and its import agree."""
    if count <= FRAMES:
        return np.arange(count)
    return np.linspace(0, count - 1, FRAMES).round().astype(int)


def signed_angle(a, b, u) -> float:
    """Degrees from ``a`` to ``b`` about ``u`` (both taken off ``u``)."""
    u = _unit(u)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    a, b = a - np.dot(a, u) * u, b - np.dot(b, u) * u
    return float(np.degrees(np.arctan2(np.dot(np.cross(a, b), u), np.dot(a, b))))


def twists(names, parents, offsets, local: np.ndarray) -> dict[int, float]:
    """``{hinge joint: degrees}`` turning each hinge's axis in the model's local rotations ``local [F, J, 4]``
    onto ``AXES`` (whole degrees), for hinges beyond ``TOLERANCE`` whose motion shows their axis."""
    out = {}
    for name, want in AXES.items():
        if name not in names:
            continue
        j = list(names).index(name)
        if parents[j] < 0:
            continue
        u = np.asarray(offsets[j], dtype=np.float64)
        have = axis(local[:, j], u)
        if have is None:
            continue
        phi = round(signed_angle(have, want, u))
        if abs(phi) > TOLERANCE[name]:
            out[j] = float(phi)
    return out


def turn(u, degrees: float) -> np.ndarray:
    """The quaternion turning by ``degrees`` about ``u``."""
    half = np.radians(degrees) / 2.0
    return np.concatenate([[np.cos(half)], np.sin(half) * _unit(u)])


def turned_rest_diff(rest_diff: np.ndarray, parents, offsets, by: dict[int, float]) -> np.ndarray:
    """``D`` with each hinge ``j`` of ``by`` and its parent turned: ``D <- D T^-1``."""
    d = np.array(rest_diff, dtype=np.float64)
    for j, phi in by.items():
        t_inv = axes.qconj(turn(offsets[j], phi))
        for k in (parents[j], j):
            d[k] = axes.qmul(d[k], t_inv)
    return d
