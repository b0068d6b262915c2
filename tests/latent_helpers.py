"""Shared helpers for the latent-editing tests (real bpy, in-process backend unless a test says so).

The autoencoder is the shipped one (backend/checkpoints/motion_autoencoder.json).  While it is
still being trained, ``SPLINETWEEN_TEST_AUTOENCODER=/path/to/copy.json`` points the tests at
another one (for example a copy with principal directions added by ``training.principal``).
"""
from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from addon_helpers import (
    ROOT,
    assert_same_keys,
    bpy,
    channelbag,
    copy_armature,
    disable_addon,
    fresh_scene_with_addon,
    import_bvh,
    prefs,
    use_test_backend,
)

EXAMPLE = ROOT / "examples" / "bvh" / "dataset-2_walk_normal_001.bvh"  # 273 frames: 10 segments
WAVE = ROOT / "examples" / "bvh" / "dataset-2_wave-both-hands_normal_003.bvh"
AUTOENCODER = Path(os.environ.get("SPLINETWEEN_TEST_AUTOENCODER")
                   or ROOT / "backend" / "checkpoints" / "motion_autoencoder.json")


def info() -> dict:
    return json.loads(AUTOENCODER.read_text())["info"]


def encoded_segments(frames: int) -> list[tuple[int, int]]:
    """The segments Encode cuts ``frames`` frames into with the shipped autoencoder's window (read from
    its JSON: no torch needed, so this also runs under Blender 4.5's own Python)."""
    from backend.motion.controls import segment_bounds
    return segment_bounds(frames, int(json.loads(AUTOENCODER.read_text())["window"]))


def require_principal() -> list[str]:
    """The principal directions' names; a clear failure while the checkpoint has none."""
    names = info().get("principal_names", [])
    assert names, (f"{AUTOENCODER} has no principal directions; ship it with them "
                   f"(python -m training.principal {AUTOENCODER.name} --data ... , as scripts/ship_checkpoint.sh does)")
    return names


def reversed_bvh(folder: Path, path: Path = WAVE) -> Path:
    """A clip played backwards (motion the model never saw: arms lowered before they are raised, weight
    shifting in reverse), written with backend.formats.bvh."""
    from dataclasses import replace

    from backend.formats.bvh import read_bvh, write_bvh
    clip = read_bvh(path)
    meta = {k: v[::-1].copy() for k, v in clip.meta.items() if k == "source_channels"}
    out = Path(folder) / f"{path.stem}_reversed.bvh"
    write_bvh(out, replace(clip, rotations=clip.rotations[::-1].copy(), positions=clip.positions[::-1].copy(),
                           meta=meta, name=out.stem))
    return out


def shaken_bvh(folder: Path, degrees: float = 25.0, path: Path = EXAMPLE) -> Path:
    """The walk with every joint shaken by a random turn of up to ``degrees`` on every frame: motion no
    person makes, which the model reconstructs poorly (the fidelity readout warns)."""
    from dataclasses import replace

    from backend.formats.bvh import read_bvh, write_bvh
    from backend.maths import quat_np as Q
    clip = read_bvh(path)
    rng = np.random.default_rng(0)
    axis = rng.normal(size=clip.rotations.shape[:2] + (3,))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    half = np.radians(rng.uniform(0, degrees, clip.rotations.shape[:2] + (1,))) / 2
    shake = np.concatenate([np.cos(half), np.sin(half) * axis], -1)
    out = Path(folder) / f"{path.stem}_shaken_{degrees:g}.bvh"
    write_bvh(out, replace(clip, rotations=Q.mul(clip.rotations, shake), meta={}, name=out.stem))
    return out


def setup_scene(path=EXAMPLE):
    """Factory scene, add-on enabled, in-process backend, the test autoencoder; -> the armature of ``path``
    (default: the example clip)."""
    fresh_scene_with_addon()
    use_test_backend()
    prefs().autoencoder = str(AUTOENCODER)
    return import_bvh(path)


# named apart from its function, so a test's `source` argument shadows no import (pyflakes' F811)
@pytest.fixture(scope="module", name="source")
def source_fixture():
    """The example's armature in a fresh scene with the add-on, for a whole test module (by name)."""
    obj = setup_scene()
    yield obj.name
    disable_addon()


@contextlib.contextmanager
def temporary(obj):
    """A test's own armature: removed afterwards (unless the test did) and the autoencoder preference reset."""
    name = obj.name
    try:
        yield obj
    finally:
        if name in bpy().data.objects:
            bpy().data.objects.remove(bpy().data.objects[name])
        prefs().autoencoder = str(AUTOENCODER)


def fresh_copy(name: str):
    """A copy (own action) of the named armature, made active."""
    return copy_armature(bpy().data.objects[name])


def encoded_copy(name: str, **kw):
    obj = fresh_copy(name)
    assert bpy().ops.anim.splinetween_encode(**kw) == {"FINISHED"}
    assert obj.splinetween_latent.active
    return obj


def curves(obj) -> dict:
    """(data_path, index) -> key frames and values ``[n, 2]`` (float32, as stored)."""
    out = {}
    for fc in channelbag(obj).fcurves:
        co = np.zeros(2 * len(fc.keyframe_points), dtype=np.float32)
        fc.keyframe_points.foreach_get("co", co)
        out[fc.data_path, fc.array_index] = co.reshape(-1, 2)
    return out


def same(a: dict, b: dict) -> None:
    """Two ``snapshot``s hold the same curves, key for key (``assert_same_keys``)."""
    assert a.keys() == b.keys()
    for k in a:
        assert_same_keys(a[k], b[k])


def changed_frames(a: dict, b: dict) -> np.ndarray:
    """Frames whose key value differs between two ``curves`` snapshots (same key frames)."""
    frames = set()
    for k in a:
        assert np.array_equal(a[k][:, 0], b[k][:, 0]), k
        frames |= set(a[k][a[k][:, 1] != b[k][:, 1], 0].astype(int).tolist())
    return np.array(sorted(frames))


def segment_frames(obj, s: int) -> tuple[int, int]:
    """Scene frames of segment ``s`` now (shared ends included)."""
    from blender_addon.core import latent_math as LM
    st = obj.splinetween_latent
    a, b = LM.output_bounds([(g.start, g.end) for g in st.segments], st.source_frames, st.frames)[s]
    return st.frame_start + a, st.frame_start + b


def reach(obj, s: int) -> tuple[int, int]:
    """Scene frames a change of segment ``s`` may rewrite: the segment, and the frames over which
    its neighbours ease into the seams they share with it (encoded ranges; see latent_math.ramp)."""
    from blender_addon.core import latent_math as LM
    a, b = segment_frames(obj, s)
    st = obj.splinetween_latent
    if st.task != "AUTOENCODER":
        return a, b
    if s > 0:
        pa, pb = segment_frames(obj, s - 1)
        a -= len(LM.ramp(pb - pa + 1)) - 1
    if s < len(st.segments) - 1:
        na, nb = segment_frames(obj, s + 1)
        b += len(LM.ramp(nb - na + 1)) - 1
    return a, b


def pose_bvh(obj, names, frames):
    """The armature's F-curves at scene ``frames`` in the checkpoint's convention."""
    from blender_addon.core import rig_math
    from blender_addon.io import scene as scene_io
    rig = scene_io.rig_frames(obj, names, np.zeros((len(names), 3)))
    rig.cm_per_unit = obj.splinetween_latent.cm_per_unit if obj.splinetween_latent.active else 1.0
    return rig_math.blender_to_bvh(rig, *scene_io.read_pose(obj, channelbag(obj), names, frames))


def ui_edit(obj, name: str, index: int, value: float) -> None:
    """Type a value into a raw property as the UI does (the RNA update tags the object), then let
    the depsgraph update run, which is when Blender calls the add-on's handler."""
    obj[name][index] = value
    obj.path_resolve(f'["{name}"]', False).update()
    bpy().context.view_layer.update()


EDIT_CURVE = ('pose.bones["UpperLeg_L"].rotation_euler', 0)  # a curve every latent test armature drives


def key_value(obj, frame, path=EDIT_CURVE[0], index=EDIT_CURVE[1]) -> np.float32 | None:
    """The key value on ``frame`` (None: no key there)."""
    co = curves(obj)[path, index]
    hit = np.abs(co[:, 0] - frame) < 1e-3
    return co[hit, 1][0] if hit.any() else None


def edit_by_hand(obj, frame, value, path=EDIT_CURVE[0], index=EDIT_CURVE[1]) -> np.float32:
    """Move one key to ``value`` as the Graph Editor does (handles go with it); -> the value as stored."""
    fc = channelbag(obj).fcurves.find(path, index=index)
    kp = next(k for k in fc.keyframe_points if abs(k.co.x - frame) < 1e-3)
    kp.co_ui = (kp.co.x, value)
    fc.update()
    bpy().context.view_layer.update()
    return key_value(obj, frame, path, index)
