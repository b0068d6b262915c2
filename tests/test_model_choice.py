"""The shipped in-betweeners a user chooses between: the preferences' Model and the batch's --model give the open-data
model (its output usable commercially), the tooltip names the model and its terms, and the default stays the studio
mix."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backend.formats import bvh
from batch_helpers import load_report, run_batch

pytestmark = pytest.mark.blender
ROOT = Path(__file__).resolve().parents[1]
WALK = ROOT / "examples/bvh/dataset-2_walk_normal_001.bvh"


def test_both_shipped_models_are_there_with_their_terms():
    from blender_addon import bridge
    for key, (name, _label, _tip) in bridge.SHIPPED_INBETWEENERS.items():
        path = bridge.default_checkpoint(key)
        assert path.name == name and path.with_suffix(".safetensors").exists() and path.with_suffix(".md").exists()
        card = path.with_suffix(".md").read_text()
        assert ("non-commercial use only" in card) == (key == "STUDIO"), key
        assert ("commercial production" in card) == (key == "OPEN"), key


def test_batch_model_open_fills_with_the_open_model(tmp_path):
    outs = {}
    for model in ("studio", "open"):
        out = tmp_path / model
        r = run_batch("inbetween", WALK, "--every", 10, "--model", model, "--out-dir", out, "--jobs", 1,
                      "--device", "cpu")
        assert r.returncode == 0, r.stdout + r.stderr
        outs[model] = bvh.read_bvh(out / WALK.name)
        assert load_report(out)["files"][0]["status"] == "ok"
    src = bvh.read_bvh(WALK)
    a, b = outs["studio"].rotations, outs["open"].rotations
    assert np.allclose(a[::10], src.rotations[:len(a):10], atol=1e-4) and np.allclose(b[::10], a[::10], atol=1e-4)
    assert np.abs(a - b).max() > 1e-2  # another model between the keys


def test_batch_model_and_checkpoint_together_are_refused(tmp_path):
    r = run_batch("inbetween", WALK, "--model", "open", "--checkpoint", ROOT / "backend/checkpoints/inbetween.json",
                  "--out-dir", tmp_path)
    assert r.returncode == 2 and "give one of them" in r.stderr
    assert not any(tmp_path.iterdir())


def test_preference_model_names_the_checkpoint_and_the_tooltip_its_terms():
    from addon_helpers import disable_addon, fresh_scene_with_addon, prefs
    fresh_scene_with_addon(test_backend=False)
    import bpy

    from blender_addon import preferences
    from blender_addon.inbetween.op_inbetween import ANIM_OT_splinetween_inbetween as Op
    p = prefs()
    try:
        assert p.model == "STUDIO" and preferences.settings(bpy.context).checkpoint == ""
        assert "non-commercial" in Op.description(bpy.context, None)
        p.model = "OPEN"
        assert Path(preferences.settings(bpy.context).checkpoint).name == "inbetween_open.json"
        assert "commercial production" in Op.description(bpy.context, None)
        p.checkpoint = str(ROOT / "backend/checkpoints/inbetween.json")  # a named checkpoint wins
        assert preferences.settings(bpy.context).checkpoint.endswith("inbetween.json")
        assert "Checkpoint preference" in Op.description(bpy.context, None)
    finally:
        p.model, p.checkpoint = "STUDIO", ""
        disable_addon()
