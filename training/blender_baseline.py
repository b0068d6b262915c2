"""What a Blender user gets without Splinetween: the same keys on F-curves with Blender's
default interpolation (Bezier, auto-clamped handles), evaluated by real ``bpy``.

Rotations are keyed as Euler angles in each joint's own order (as Blender's BVH importer
keys them), made continuous across keys (no 360-degree flips) first; positions are keyed
per axis.  bpy is imported only when the predictor is built.
"""
from __future__ import annotations

import numpy as np

from backend.formats.bvh import unwrap_euler
from backend.maths import quat_np


def _channelbag(bpy):
    act = bpy.data.actions.new("splinetween_baseline")
    slot = act.slots.new(id_type="OBJECT", name="baseline")
    strip = act.layers.new("baseline").strips.new(type="KEYFRAME")
    return act, strip.channelbag(slot, ensure=True)


def bezier_predictor(skeleton):
    """``predict(rot, pos, keys)`` over windows [W, F, J, *], reading key frames only."""
    import bpy
    assert bpy.context.preferences.edit.keyframe_new_interpolation_type == "BEZIER"
    orders = [skeleton.euler_order(j) for j in range(skeleton.num_joints)]
    act, bag = _channelbag(bpy)
    n_ch = skeleton.num_joints * 6
    curves = [bag.fcurves.new("location" if c % 6 < 3 else "rotation_euler", index=c) for c in range(n_ch)]

    def predict(rot, pos, keys):
        keys = np.asarray(keys)
        frames = np.arange(rot.shape[1])
        for fc in curves:
            fc.keyframe_points.clear()
            fc.keyframe_points.add(len(keys))
        out_r, out_p = np.empty_like(rot), np.empty_like(pos)
        for w in range(rot.shape[0]):
            euler = np.stack([unwrap_euler(quat_np.to_euler(rot[w, keys, j], orders[j]))
                              for j in range(rot.shape[2])], 1)
            values = np.concatenate([pos[w, keys], euler], -1)  # [K, J, 6]
            dense = np.empty((len(frames), rot.shape[2], 6))
            for c, fc in enumerate(curves):
                j, a = divmod(c, 6)
                co = np.stack([keys, values[:, j, a]], -1).astype(np.float32).ravel()
                fc.keyframe_points.foreach_set("co", co)
                fc.update()  # recompute the auto-clamped handles
                dense[:, j, a] = [fc.evaluate(float(f)) for f in frames]
            out_p[w] = dense[..., :3]
            out_r[w] = np.stack([quat_np.from_euler(dense[:, j, 3:], orders[j]) for j in range(rot.shape[2])], 1)
            out_r[w, keys], out_p[w, keys] = rot[w, keys], pos[w, keys]
        return out_r, out_p

    predict.cleanup = lambda: bpy.data.actions.remove(act)
    return predict
