"""Synthetic curve families (paper §4.1) and the Table 1 comparison harness."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for plain `pytest`

from training.compare import main, run_synthetic, synthetic_markdown
from training.synthetic import FAMILIES, bezier

torch.set_num_threads(1)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_shapes_range_and_params(name):
    fam = FAMILIES[name]
    curves, params = fam.sample(64, 0)
    assert curves.shape == (64, 256, 2) and curves.dtype == np.float32
    assert params.shape == (64, fam.latent)
    assert np.isfinite(curves).all()
    assert np.abs(curves).max() <= 1.0 + 1e-6
    assert curves.std() > 0.1  # roughly unit range, not collapsed


@pytest.mark.parametrize("name", list(FAMILIES))
def test_deterministic_per_seed(name):
    fam = FAMILIES[name]
    a, pa = fam.sample(16, 7)
    b, pb = fam.sample(16, 7)
    c, _ = fam.sample(16, 8)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(pa, pb)
    assert not np.allclose(a, c)
    # a Generator continues its stream: consecutive draws differ
    rng = np.random.default_rng(7)
    first, second = fam.sample(16, rng)[0], fam.sample(16, rng)[0]
    np.testing.assert_array_equal(first, a)
    assert not np.allclose(first, second)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_curves_differ_across_params(name):
    curves, params = FAMILIES[name].sample(32, 3)
    flat = curves.reshape(32, -1)
    dist = np.linalg.norm(flat[:, None] - flat[None], axis=-1)
    assert dist[~np.eye(32, dtype=bool)].min() > 1e-3
    assert len(np.unique(params.round(9), axis=0)) == 32


def test_bezier_end_points_and_validation():
    curves, _ = bezier(5, np.random.default_rng(0), d=64)
    np.testing.assert_allclose(curves[:, 0], np.broadcast_to([-0.8, -0.5], (5, 2)), atol=1e-6)
    np.testing.assert_allclose(curves[:, -1], np.broadcast_to([0.8, 0.5], (5, 2)), atol=1e-6)
    with pytest.raises(ValueError):
        bezier(2, np.random.default_rng(0), d=3)


def test_compare_end_to_end_tiny(tmp_path):
    doc = run_synthetic(steps=30, batch_size=4, test_curves=20, families=["bezier2"],
                        out=tmp_path / "r.json", width=16, layers=1, heads=2)
    assert [r["kind"] for r in doc["runs"]] == ["alibi", "alibi_cat", "spline"]
    for r in doc["runs"]:
        assert math.isfinite(r["test_mse"]) and r["test_mse"] > 0
        assert r["parameters"] > 0 and r["steps"] == 30
    saved = json.loads((tmp_path / "r.json").read_text())
    assert len(saved["runs"]) == 3
    md = (tmp_path / "r.md").read_text()
    assert "Spline (Ours)" in md and "Bézier (2D)" in md and md == synthetic_markdown(saved)


def test_compare_cli(tmp_path, capsys):
    out = tmp_path / "cli.json"
    assert main(["synthetic", "--steps", "2", "--batch-size", "2", "--test-curves", "4",
                 "--families", "lissajous", "--kinds", "spline,alibi", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert {r["kind"] for r in doc["runs"]} == {"spline", "alibi"}
    assert "--steps 2" in doc["command"]
    assert "| ALiBi-Cat | n/a |" in capsys.readouterr().out
