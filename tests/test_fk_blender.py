"""Our forward kinematics agrees with Blender's own BVH importer, bone by bone, frame by frame.

What Blender's importer (``io_anim_bvh``, bpy 5.0) does, checked below rather than assumed:

* Axes: its defaults ``axis_forward='-Z', axis_up='Y'`` describe the *file*; it converts to
  Blender's Z-up with ``axis_conversion(from_forward='-Z', from_up='Y')``, a +90 degree turn
  about X, and bakes it into the armature (object matrix stays identity).  So a BVH point
  ``(x, y, z)`` lands at Blender ``(x, -z, y)``.
* Frames: the importer keeps an internal rest frame 0 and skips it, so BVH frame ``i``
  (0-based) becomes scene frame ``frame_start + i``; all F frames are imported.
* Position channels are honoured on every joint, not just the root (bones with location
  channels are left unconnected and keyed with ``location``).  In this dataset the moving
  joint is ``Hips``, a child of ``joint_Root``, and the other joints' position channels equal
  their offsets to ~1e-5 cm, so the comparison below needs no special treatment; a second
  test moves a non-root joint away from its offset to prove it.
* Blender stores keys and matrices in float32: with ~500 cm of root travel that is about
  1e-4 cm of noise, hence the 1e-3 cm tolerance (2e-6 of the clip's extent).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

# Keep Blender away from the user's config and add-ons; must happen before `import bpy`.
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-blender-"))

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repo root, for plain `pytest`

bpy = pytest.importorskip("bpy")
from bpy_extras.io_utils import axis_conversion  # noqa: E402

from backend.formats.bvh import read_bvh, write_bvh  # noqa: E402
from backend.maths import quat_np  # noqa: E402

pytestmark = pytest.mark.blender

FIXTURE = ROOT / "examples" / "bvh" / "dataset-2_run_normal_002.bvh"
BVH_TO_BLENDER = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # (x, y, z) -> (x, -z, y)
TOL_CM = 1e-3


def import_bvh(path):
    """Import with Blender's defaults (scale 1: 1 cm in the file = 1 Blender unit)."""
    before = set(bpy.data.objects)
    assert bpy.ops.import_anim.bvh(filepath=str(path), global_scale=1.0) == {"FINISHED"}
    (obj,) = set(bpy.data.objects) - before
    assert obj.type == "ARMATURE"
    return obj


@pytest.fixture(scope="module")
def blender():
    bpy.ops.wm.read_factory_settings(use_empty=True)
    yield bpy.context.scene
    bpy.ops.wm.read_factory_settings(use_empty=True)


@pytest.fixture(scope="module")
def imported(blender):
    clip = read_bvh(FIXTURE)
    return clip, import_bvh(FIXTURE)


def blender_heads(obj, scene, names, frame):
    scene.frame_set(frame)
    return np.array([tuple(obj.matrix_world @ obj.pose.bones[n].head) for n in names])


def our_heads(clip, frames):
    _, gpos = quat_np.fk(clip.rotations, clip.positions, clip.skeleton.parents)
    return gpos[frames] @ BVH_TO_BLENDER.T


def test_importer_axis_defaults_are_y_up_minus_z_forward(blender):
    props = bpy.ops.import_anim.bvh.get_rna_type().properties
    assert (props["axis_forward"].default, props["axis_up"].default) == ("-Z", "Y")
    conversion = np.array(axis_conversion(from_forward="-Z", from_up="Y"))
    np.testing.assert_allclose(conversion, BVH_TO_BLENDER, atol=1e-7)


def test_frames_map_one_to_one(imported, blender):
    clip, obj = imported
    start, end = obj.animation_data.action.frame_range
    assert (start, end) == (1, clip.num_frames)  # BVH frame i -> scene frame 1 + i, none dropped
    np.testing.assert_allclose(np.array(obj.matrix_world), np.eye(4), atol=1e-7)  # axis change is baked in


def test_bone_heads_match_our_fk(imported, blender):
    clip, obj = imported
    names = clip.skeleton.names
    frames = [0, 1, clip.num_frames // 2, clip.num_frames - 1]
    ours = our_heads(clip, frames)
    extent = np.ptp(ours.reshape(-1, 3), axis=0).max()
    assert extent > 100  # the clip really moves (the root travels several metres)
    worst = 0.0
    for k, i in enumerate(frames):
        err = np.abs(blender_heads(obj, blender, names, 1 + i) - ours[k]).max()
        worst = max(worst, err)
    assert worst < TOL_CM, f"max head error {worst:.2e} cm"
    # the wrong axis convention is far off: the check has teeth
    _, gpos = quat_np.fk(clip.rotations, clip.positions, clip.skeleton.parents)
    assert np.abs(blender_heads(obj, blender, names, 1) - gpos[0]).max() > 10


def test_bone_orientations_match_our_fk(imported, blender):
    clip, obj = imported
    grot, _ = quat_np.fk(clip.rotations, clip.positions, clip.skeleton.parents)
    frame = clip.num_frames // 3
    blender.frame_set(1 + frame)
    for j, name in enumerate(clip.skeleton.names):
        pb = obj.pose.bones[name]
        # pose matrix = (global BVH rotation, in Blender axes) @ (the bone's rest orientation)
        posed = np.array(pb.matrix.to_3x3()) @ np.array(pb.bone.matrix_local.to_3x3()).T
        expected = BVH_TO_BLENDER @ quat_np.to_matrix(grot[frame, j]) @ BVH_TO_BLENDER.T
        np.testing.assert_allclose(posed, expected, atol=1e-5, err_msg=name)


def test_non_root_position_channels_are_honoured(blender, tmp_path):
    clip = read_bvh(FIXTURE)
    skel = clip.skeleton
    spine = skel.index("Spine")
    assert skel.parent_name(spine) == "Hips" and skel.parents[skel.index("Hips")] == 0  # second level
    clip.positions[:, spine] += np.array([0.0, 7.5, -4.0])  # 8.5 cm away from its offset
    clip.meta.pop("source_channels")
    path = tmp_path / "moved_spine.bvh"
    write_bvh(path, clip)
    obj = import_bvh(path)
    frames = [0, clip.num_frames - 1]
    ours = our_heads(read_bvh(path), frames)
    for k, i in enumerate(frames):
        err = np.abs(blender_heads(obj, blender, skel.names, 1 + i) - ours[k]).max()
        assert err < TOL_CM, f"frame {i}: max head error {err:.2e} cm"
    bpy.data.objects.remove(obj)
