"""Inbetween Mesh on the cloth flag: key frames every K frames or listed, kept bit for bit, the frames
between them filled by the model and editable with the sliders (real bpy, headless)."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import bpy, disable_addon
from mesh_addon_helpers import (
    cache_file,
    cached_grid,
    evaluated,
    evaluated_range,
    flag,
    mesh_data,
    raw_props,
    setup_scene,
    stack,
)

bpy = bpy()
pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_mesh_inbetween


@pytest.fixture(scope="module")
def truth():
    f = flag()
    setup_scene()
    yield f
    disable_addon()


@pytest.fixture(scope="module")
def filled(truth):
    """The flag kept every 5 frames (1, 6, ..., 56, 60) and filled: once for the module."""
    obj = cached_grid(truth["pc2"], "Filled")
    assert OP(key_mode="EVERY", key_step=5, frame_range="SCENE") == {"FINISHED"}
    return {"name": obj.name, "frames": evaluated_range(obj, 1, 60)}


KEYS = [1, 6, 11, 16, 21, 26, 31, 36, 41, 46, 51, 56, 60]


def test_key_frames_stay_exactly_and_the_gaps_are_filled(truth, filled):
    obj = bpy.data.objects[filled["name"]]
    st = obj.splinetween_latent
    assert st.active and st.task == "INBETWEEN" and (st.frame_start, st.frame_end) == (1, 60)
    assert (np.asarray(st["keys"]) + 1).tolist() == KEYS
    out, real = filled["frames"], truth["frames"]
    keys = np.array(KEYS) - 1
    assert np.array_equal(out[keys], real[keys])  # bit for bit
    gaps = np.setdiff1d(np.arange(60), keys)
    assert np.isfinite(out).all()
    held = real[np.array([keys[keys <= g].max() for g in gaps])]  # the previous key, held
    assert (np.abs(out[gaps] - held).max(axis=(1, 2)) > 0).all()  # every gap frame moves
    err = np.linalg.norm(out[gaps] - real[gaps], axis=-1).mean()
    err_held = np.linalg.norm(held - real[gaps], axis=-1).mean()
    assert err < err_held, (err, err_held)


def test_sliders_change_the_gaps_and_never_the_keys(truth, filled):
    obj = bpy.data.objects[filled["name"]]
    st = obj.splinetween_latent
    keys = np.array(KEYS) - 1
    bpy.context.view_layer.objects.active = obj
    try:
        st.segments[0].amplify = 2.5
        st.segments[0].timing = -0.4
        out = evaluated_range(obj, 1, 60)
        assert st.status == "" and np.array_equal(out[keys], truth["frames"][keys])
        assert np.abs(out - filled["frames"]).max() > 1e-3  # millimetres on the 3.7 m flag
    finally:
        assert bpy.ops.anim.splinetween_latent_reset() == {"FINISHED"}
    assert np.array_equal(evaluated_range(obj, 1, 60), filled["frames"])


def test_resample_keeps_the_keys_on_their_new_frames(truth, filled):
    obj = bpy.data.objects[filled["name"]]
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.anim.splinetween_resample(mode="FACTOR", factor=2.0) == {"FINISHED"}
    st = obj.splinetween_latent
    assert st.frame_end == 119
    for k in KEYS:
        assert np.array_equal(evaluated(obj, 1 + 2 * (k - 1)), truth["frames"][k - 1])
    with pytest.raises(RuntimeError, match="stretches only by whole factors"):
        bpy.ops.anim.splinetween_resample(mode="LENGTH", frames=100)
    assert bpy.ops.anim.splinetween_resample(mode="FACTOR", factor=1.0) == {"FINISHED"}
    assert np.array_equal(evaluated_range(obj, 1, 60), filled["frames"])


def test_listed_key_frames_and_undo(truth):
    obj = cached_grid(truth["pc2"], "Listed")
    name, mods, data = obj.name, stack(obj), mesh_data(obj)
    shown = evaluated_range(obj, 1, 40)
    bpy.ops.ed.undo_push(message="before Inbetween Mesh")
    assert OP("EXEC_DEFAULT", True, key_mode="LIST", key_frames="3, 9, 20-40/10") == {"FINISHED"}
    st = obj.splinetween_latent
    assert (st.frame_start, st.frame_end) == (3, 40) and (np.asarray(st["keys"]) + 3).tolist() == [3, 9, 20, 30, 40]
    out = evaluated_range(obj, 1, 41)
    for k in (3, 9, 20, 30, 40):
        assert np.array_equal(out[k - 1], truth["frames"][k - 1])
    assert np.array_equal(out[:2], shown[:2]) and np.array_equal(out[40], truth["frames"][40])  # outside: as before
    path = cache_file(obj)
    assert bpy.ops.ed.undo() == {"FINISHED"}
    obj = bpy.data.objects[name]
    assert not obj.splinetween_latent.active and stack(obj) == mods and not raw_props(obj)
    assert np.array_equal(mesh_data(obj), data) and np.array_equal(evaluated_range(obj, 1, 40), shown)
    path.unlink()  # undo leaves the cache file on disk (documented)
    bpy.data.objects.remove(obj)


def test_a_mesh_checkpoint_names_its_model_family_under_either_name(truth, tmp_path):
    """A checkpoint trained today says "family" where the shipped ones say "kind": Inbetween Mesh takes both."""
    import json
    from pathlib import Path

    from blender_addon.latent.mesh import adapter
    shipped = Path(__file__).resolve().parents[1] / "backend" / "checkpoints" / "cloth_inbetween.json"
    doc = json.loads(shipped.read_text())
    assert doc["model"]["kind"] == "keyframe"
    doc["model"]["family"] = doc["model"].pop("kind")
    (tmp_path / "new.json").write_text(json.dumps(doc))
    assert adapter.meta(tmp_path / "new.json", "inbetween") == adapter.meta(shipped, "inbetween")
    assert adapter.meta(shipped, "inbetween")["task"] == "inbetween"
