"""The slider's key writer (``io.latent.overwrite_values``) in real Blender: the keys on the given
frames take the new values, every other key and attribute stays, and curves that lack a key on one of
the frames (or do not exist) are left alone and named, on curves keyed alike (one grid) and unlike."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.blender


def _curves(frames_per_curve):
    """A fresh object with one location/rotation curve per entry, keyed (value = frame / 10 + curve) on
    those frames; -> (object, curves)."""
    import bpy

    from blender_addon.io import scene as scene_io
    obj = bpy.data.objects.new("overwrite", None)
    bpy.context.scene.collection.objects.link(obj)
    paths = [("location", i) for i in range(3)] + [("rotation_euler", i) for i in range(3)]
    for path, i in paths[:len(frames_per_curve)]:
        obj.keyframe_insert(path, index=i, frame=1)
    bag = scene_io.channelbag(obj)
    fcs = [bag.fcurves.find(path, index=i) for path, i in paths[:len(frames_per_curve)]]
    for c, (fc, frames) in enumerate(zip(fcs, frames_per_curve, strict=True)):
        fc.keyframe_points.clear()
        fc.keyframe_points.add(len(frames))
        co = np.stack([np.asarray(frames, float), np.asarray(frames, float) / 10 + c], 1).astype(np.float32)
        fc.keyframe_points.foreach_set("co", co.ravel())
        fc.update()
    return obj, fcs


def _read(fc):
    co = np.zeros(2 * len(fc.keyframe_points), np.float32)
    fc.keyframe_points.foreach_get("co", co)
    hl = np.zeros_like(co)
    fc.keyframe_points.foreach_get("handle_left", hl)
    return co.reshape(-1, 2), hl.reshape(-1, 2)


@pytest.mark.parametrize("layout", ["alike", "unlike", "shifted", "missing curve", "frame without key"])
def test_only_the_keys_on_the_frames_change(layout):
    from blender_addon.io import keys as keys_io
    every = list(range(1, 41))
    keyed = {"alike": [every] * 6, "unlike": [every] * 3 + [every[::2]] * 3,
             "shifted": [every] * 3 + [[f + 3 for f in every]] * 3,  # as many keys, other rows
             "missing curve": [every] * 6, "frame without key": [every] * 5 + [[f for f in every if f != 12]]}[layout]
    obj, fcs = _curves(keyed)
    if layout == "missing curve":
        fcs[4] = None
    before = [_read(fc) if fc is not None else None for fc in fcs]
    frames = np.arange(10, 15)
    values = np.arange(len(frames) * len(fcs), dtype=float).reshape(len(frames), len(fcs)) + 100.0
    skipped = keys_io.overwrite_values(fcs, frames, values)
    expected_skipped = {"alike": [], "unlike": [3, 4, 5], "shifted": [], "missing curve": [4],
                        "frame without key": [5]}[layout]
    assert skipped == expected_skipped
    for c, fc in enumerate(fcs):
        if fc is None:
            continue
        (co, hl), (co0, hl0) = _read(fc), before[c]
        np.testing.assert_array_equal(co[:, 0], co0[:, 0])  # no key moved in time
        np.testing.assert_array_equal(hl, hl0)  # handles stay (the layer's keys are LINEAR)
        hit = np.isin(co0[:, 0], frames) & (c not in skipped)
        np.testing.assert_array_equal(co[~hit, 1], co0[~hit, 1])  # every other key as it was
        if c not in skipped:
            np.testing.assert_array_equal(co[hit, 1], values[:, c].astype(np.float32))
    import bpy
    bpy.data.objects.remove(obj)


def test_no_curve_at_all_is_named_not_an_error():
    from blender_addon.io import keys as keys_io
    assert keys_io.overwrite_values([None, None], np.arange(3), np.zeros((3, 2))) == [0, 1]
