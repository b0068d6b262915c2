"""Shared helpers for the add-on tests (real bpy, no mocks).

Importing this module points BLENDER_USER_RESOURCES at a temporary folder *before* bpy is
imported, so the tests never touch the user's Blender configuration or add-ons.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-blender-"))
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

TEST_CLIP = ROOT / "tests" / "fixtures" / "dataset-2_walk_normal_005.bvh"
ADDON = "blender_addon"


def bpy():
    import bpy as _bpy
    return _bpy


def fresh_scene_with_addon(test_backend: bool = True):
    """Factory settings (with a window, so undo works headless) and the add-on enabled from the
    source tree through addon_utils, so it has real preferences; with ``test_backend`` the model runs
    as ``use_test_backend`` says (PyTorch here or in the backend process: the add-on enabled from the
    source has no ONNX Runtime in Blender 4.5's Python; the built-in backend is tested on the installed
    zip, tests/test_build.py, and on the service, tests/test_onnx.py)."""
    b = bpy()
    import addon_utils
    b.ops.wm.read_factory_settings(use_empty=False)
    for obj in list(b.data.objects):
        b.data.objects.remove(obj)
    addon_utils.enable(ADDON, default_set=True)
    if test_backend:
        use_test_backend()
    return b.context.scene


def disable_addon():
    import addon_utils

    from blender_addon import bridge
    addon_utils.disable(ADDON, default_set=True)
    bridge.shutdown()


def prefs():
    return bpy().context.preferences.addons[ADDON].preferences


def torch_here() -> bool:
    """Whether this Python has PyTorch: not in the Blender 4.5 run (tests/blender45.py)."""
    import importlib.util
    return importlib.util.find_spec("torch") is not None


def backend_mode_here() -> str:
    """The model in Blender's own Python (in-process) where PyTorch imports, else in the backend process
    of the interpreter the add-on defaults to (SPLINETWEEN_PYTHON, or this repository's .venv): the way
    Blender 4.5, whose Python has no PyTorch, runs it."""
    return "IN_PROCESS" if torch_here() else "SUBPROCESS"


def use_test_backend():
    prefs().backend_mode = backend_mode_here()


def import_bvh(path=TEST_CLIP):
    b = bpy()
    before = set(b.data.objects)
    # the scene at the file's rate (the factory scene is 24 fps): the model reads the motion at its own speed
    assert b.ops.import_anim.bvh(filepath=str(path), global_scale=1.0, update_scene_fps=True) == {"FINISHED"}
    (obj,) = set(b.data.objects) - before
    b.context.view_layer.objects.active = obj
    return obj


def channelbag(obj):
    from blender_addon.io import scene as scene_io
    return scene_io.channelbag(obj)


def thin_every(obj, every: int = 15) -> tuple[int, list[int]]:
    """Thin ``obj``'s keys to a key every ``every`` frames from frame 1, and the last frame (the operator
    tests' layout, ``backend.motion.keyframes_np.every_k``), all selected: -> (frames of the action, key frames)."""
    from backend.motion.keyframes_np import every_k  # (without torch)
    n = int(obj.animation_data.action.frame_range[1])
    keys = [1 + k for k in every_k(n, every)]
    thin_keys(obj, keys)
    return n, keys


def thin_keys(obj, keep, select=True):
    """Delete every key not on a frame in ``keep`` (scene frames); select the rest (or none)."""
    keep = set(int(k) for k in keep)
    for fc in channelbag(obj).fcurves:
        kp = fc.keyframe_points
        co = np.zeros(2 * len(kp), dtype=np.float32)
        kp.foreach_get("co", co)
        for i in reversed(np.flatnonzero([int(round(x)) not in keep for x in co[0::2]])):
            kp.remove(kp[int(i)], fast=True)
        fc.update()
        kp.foreach_set("select_control_point", np.full(len(kp), bool(select)))


def select_keys(obj, frames=None, bones=None):
    """Select exactly the keys on ``frames`` (all when None) of ``bones`` (all when None)."""
    for fc in channelbag(obj).fcurves:
        kp = fc.keyframe_points
        co = np.zeros(2 * len(kp), dtype=np.float32)
        kp.foreach_get("co", co)
        bone = fc.data_path.split('"')[1]
        on = np.ones(len(kp), bool) if frames is None else np.isin(np.round(co[0::2]).astype(int), list(frames))
        if bones is not None and bone not in bones:
            on[:] = False
        kp.foreach_set("select_control_point", on)


def snapshot(obj):
    from blender_addon.io import scene as scene_io
    return scene_io.fcurve_arrays(channelbag(obj))


def heads(obj, frames):
    """Evaluated bone heads (world space) at scene frames: ``[n, bones, 3]``."""
    b = bpy()
    out = []
    for f in frames:
        b.context.scene.frame_set(int(f))
        out.append([tuple(obj.matrix_world @ pb.head) for pb in obj.pose.bones])
    return np.array(out)


def keys_on(curve_keys, frames):
    """Row mask of a snapshot's keys that sit on any of ``frames``."""
    return np.isin(np.round(curve_keys["co"][:, 0]).astype(int), list(frames))


def assert_same_keys(a, b, rows_a=None, rows_b=None, skip=()):
    """Two read_keys() dicts (optionally row-selected) are bit-identical, attribute by attribute."""
    for attr in a:
        if attr in skip:
            continue
        x = a[attr] if rows_a is None else a[attr][rows_a]
        y = b[attr] if rows_b is None else b[attr][rows_b]
        assert np.array_equal(x, y), f"{attr} differs"


def copy_armature(obj, name=None):
    """A copy of an armature with its own armature data and its own copy of the action, made active."""
    b = bpy()
    arm = obj.copy()
    arm.data = obj.data.copy()
    if name:
        arm.name = name
    b.context.collection.objects.link(arm)
    arm.animation_data.action = obj.animation_data.action.copy()
    assert channelbag(arm) is not None
    b.context.view_layer.objects.active = arm
    return arm


def driven(path, hips="Hips"):
    """Whether the model drives this F-curve: every bone's rotation, and the location of Hips."""
    return ".rotation" in path or path == f'pose.bones["{hips}"].location'


