"""The tour of docs/mesh-sequences.md on the example itself: open examples/cloth/cloth_flag.blend (a
copy), Encode Mesh on the simulated cloth, move a slider, Remove (real bpy, headless)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from addon_helpers import bpy, disable_addon, fresh_scene_with_addon, prefs, use_test_backend
from mesh_addon_helpers import FLAG_BLEND, MESH_AUTOENCODER, evaluated, evaluated_range, flag, stack

bpy = bpy()
pytestmark = pytest.mark.blender


@pytest.fixture(scope="module")
def cloth(tmp_path_factory):
    truth = flag()["frames"]
    folder = tmp_path_factory.mktemp("example")
    blend = shutil.copy(FLAG_BLEND if FLAG_BLEND.exists() else flag()["blend"], folder / "cloth_flag.blend")
    fresh_scene_with_addon()
    use_test_backend()
    prefs().mesh_autoencoder = str(MESH_AUTOENCODER)
    assert bpy.ops.wm.open_mainfile(filepath=str(blend)) == {"FINISHED"}
    obj = bpy.data.objects["cloth"]
    bpy.context.view_layer.objects.active = obj
    yield {"obj": obj, "truth": truth, "folder": folder}
    disable_addon()


def test_encode_the_simulated_flag_edit_it_and_remove(cloth):
    obj, truth, folder = cloth["obj"], cloth["truth"], cloth["folder"]
    mods = stack(obj)
    assert bpy.ops.anim.splinetween_mesh_encode() == {"FINISHED"}  # the scene range, 1-60
    st = obj.splinetween_latent
    path = folder / "splinetween" / "cloth_flag_cloth_encoded.pc2"
    assert path.exists() and obj.modifiers[-1].filepath == "//splinetween/cloth_flag_cloth_encoded.pc2"
    assert [m.type for m in obj.modifiers] == ["CLOTH", "MESH_CACHE"]
    from backend.formats.pc2 import read_pc2
    samples, start, _ = read_pc2(path)
    assert start == 1.0 and samples.shape == truth.shape
    for f in (1, 30, 60):  # frame f shows the sample decoded for frame f, over the simulation below it
        assert np.array_equal(evaluated(obj, f), samples[f - 1])
    from backend.mesh.sequences import bbox_diagonal, mean_vertex_error
    assert mean_vertex_error(samples, truth) < 0.05 * bbox_diagonal(truth)
    st.segments[0].amplify = 2.0
    assert st.status == "" and np.abs(evaluated(obj, 30) - samples[29]).max() > 0.01
    assert bpy.ops.anim.splinetween_remove() == {"FINISHED"}
    assert stack(obj) == mods and not path.exists()
    np.testing.assert_allclose(evaluated_range(obj, 1, 10), truth[:10], atol=1e-5)  # the cloth again
