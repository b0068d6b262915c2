"""Encode Mesh and Train Mesh Model read a mesh sequence the same way (one reader): on an unbaked
cloth simulation, a range that starts after the cache's first frame is stepped from that frame, so
the training frames are the very vertices Encode Mesh reads (real bpy, the example flag)."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import bpy, disable_addon
from mesh_addon_helpers import flag

bpy = bpy()
from blender_addon.io import mesh as mesh_io  # noqa: E402
from blender_addon.train import data as train_data  # noqa: E402

pytestmark = pytest.mark.blender


@pytest.fixture(scope="module")
def simulated():
    f = flag()
    yield f
    disable_addon()


def fresh_flag(blend):
    """The flag's .blend opened again: its cloth has simulated nothing yet."""
    bpy.ops.wm.open_mainfile(filepath=str(blend), load_ui=False)
    return next(o for o in bpy.context.scene.objects if o.type == "MESH" and
                any(m.type == "CLOTH" for m in o.modifiers))


def test_train_mesh_model_reads_what_encode_mesh_reads_on_an_unbaked_cloth(simulated):
    obj = fresh_flag(simulated["blend"])
    assert not next(m for m in obj.modifiers if m.type == "CLOTH").point_cache.is_baked
    trained = train_data.export_sequence(bpy.context, obj, 11, 30)  # jumps in first: must step from frame 1
    np.testing.assert_array_equal(trained, simulated["frames"][10:30])
    obj = fresh_flag(simulated["blend"])
    np.testing.assert_array_equal(mesh_io.read_mesh_sequence(bpy.context, obj, 11, 30), trained)
