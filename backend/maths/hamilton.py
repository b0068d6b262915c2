"""The Hamilton product's terms, written once for any array type (numpy arrays, torch tensors, floats).

``quat_np.mul`` / ``mul_parts`` and ``quat_torch.mul`` / ``mul_parts`` lay the four components out and call
:func:`terms`; the add-on reaches the same code through ``blender_addon/core/quat.py``.
"""
from __future__ import annotations


def terms(a, b):
    """``a * b`` (``a`` applied after ``b``) of quaternions given as their four components ``(w, x, y, z)``:
    the product's four components."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw)
