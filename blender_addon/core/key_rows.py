"""New F-curve keys as numpy arrays, one array per key attribute (the dict ``io/keys`` reads and writes):
the one maker of them, for Inbetween's gaps and the latent layer's keys alike.  numpy only, so the
layer's maths (``layer_math``) builds keys without Blender; the enum integers come from the caller."""
from __future__ import annotations

import numpy as np

BLENDER_DEFAULTS = {"back": 1.70158, "amplitude": 0.8, "period": 4.1}  # a key inserted in Blender has these


def new_rows(frames, values, enums: dict, handles=None) -> dict:
    """The one maker of new key rows (Inbetween's and the layer's, ``io/keys.write`` writes them): keys of
    type and interpolation ``enums`` gives, unselected, Blender's back / amplitude / period, at ``frames``
    ``[m]`` with ``values [..., m]`` (any leading dimensions: several curves at once); handles on the keys'
    points, or ``handles`` = (left, right) ``[..., m, 2]``.  ``enums``: the integers Blender gives each enum
    attribute (``io/keys.new_key_enums``), one per key where an array ``[m]``."""
    values = np.asarray(values, dtype=np.float64)
    frames = np.broadcast_to(np.asarray(frames, dtype=np.float64), values.shape)
    shape = values.shape
    co = np.stack([frames, values], -1).astype(np.float32)
    rows = {"co": co}
    if handles is None:
        rows["handle_left"], rows["handle_right"] = co.copy(), co.copy()
    else:
        rows["handle_left"], rows["handle_right"] = (np.asarray(h).astype(np.float32) for h in handles)
    for a in ("handle_left_type", "handle_right_type", "interpolation", "type", "easing"):
        rows[a] = np.full(shape, enums[a], np.int32)
    for a, v in BLENDER_DEFAULTS.items():
        rows[a] = np.full(shape, v, np.float32)
    for a in ("select_control_point", "select_left_handle", "select_right_handle"):
        rows[a] = np.zeros(shape, dtype=bool)
    return rows
