"""Mesh sequences in the backend: basis, baselines, checks, checkpoints and MeshEngine refusals."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from backend.mesh.engine import MeshEngine
from backend.mesh.sequences import (
    MeshError,
    bbox_diagonal,
    check_sequence,
    fit_basis,
    join_frames,
    linear_interpolation,
    mean_vertex_error,
    project,
    reconstruct,
)
from backend.models.registry import build_model
from backend.models.spline_transformer import ModelConfig
from backend.motion.engine import Engine, EngineError
from backend.runtime import checkpoint
from tests.mesh_helpers import ripple


def test_basis_is_orthonormal_and_reconstructs_its_span():
    frames = np.concatenate([ripple(i, 40) for i in range(4)])
    basis = fit_basis(frames, 12)
    gram = basis.components.astype(np.float64) @ basis.components.T.astype(np.float64)
    assert np.abs(gram - np.eye(12)).max() < 1e-5
    assert np.all(np.diff(basis.variance) <= 1e-9)  # strongest first
    # each ripple is a * sin(wt + phase(x)) * x: rank 2 per sequence, so 12 components cover 4 sequences
    rec = reconstruct(project(frames, basis), basis)
    assert mean_vertex_error(rec, frames) < 1e-5
    again = fit_basis(frames, 12)
    assert np.array_equal(again.components, basis.components)  # same data, same basis (signs fixed)


def test_truncated_basis_is_worse_and_linear_interpolation_keeps_keys():
    frames = np.concatenate([ripple(i, 40) for i in range(4)])
    basis = fit_basis(frames, 12)
    small = basis.truncated(2)
    assert mean_vertex_error(reconstruct(project(frames, small), small), frames) > 1e-3
    seq = ripple(7, 21)
    keys = [0, 10, 20]
    lin = linear_interpolation(seq, keys)
    assert np.array_equal(lin[keys], seq[keys])
    np.testing.assert_allclose(lin[5], 0.5 * (seq[0] + seq[10]), atol=1e-6)
    assert bbox_diagonal(seq) == pytest.approx(np.linalg.norm(seq.reshape(-1, 3).max(0) - seq.reshape(-1, 3).min(0)))


def test_bad_sequences_are_refused_by_name():
    seq = ripple(0, 10)
    with pytest.raises(MeshError, match="empty"):
        check_sequence(seq[:0], name="Cloth")
    with pytest.raises(MeshError, match=r"Cloth: 100 vertices.*trained on a mesh of 5041"):
        check_sequence(seq, 5041, "Cloth")
    bad = seq.copy()
    bad[3, 7, 1] = np.nan
    with pytest.raises(MeshError, match=r"frame\(s\) \[3\]"):
        check_sequence(bad)
    check_sequence(bad, frames_to_check=[0, 9])  # only key frames are looked at when in-betweening


def test_segments_join_without_a_step():
    a = np.zeros((11, 2, 3), np.float32)
    b = np.ones((11, 2, 3), np.float32)
    out = join_frames([a, b])
    assert out.shape == (21, 2, 3)
    np.testing.assert_allclose(out[10], 0.5)
    assert np.abs(np.diff(out[:, 0, 0])).max() < 0.3  # eased over a quarter segment, not one jump of 0.5+
    assert out[0, 0, 0] == 0 and out[-1, 0, 0] == 1


def _mesh_checkpoint(tmp_path, basis_ok=True):
    frames = np.concatenate([ripple(i, 30) for i in range(3)])
    basis = fit_basis(frames, 6)
    cfg = ModelConfig(input_dim=6, output_dim=6, width=32, latent=8, layers=1, heads=4)
    from backend.motion.features import Normalizer
    from training.config import MeshTrainConfig
    from training.mesh.loop import _mesh_checkpoint as make
    from training.mesh.loop import basis_tensors
    c = make(cfg, Normalizer.fit(torch.from_numpy(project(frames, basis))), basis, MeshTrainConfig(window=30), {})
    if not basis_ok:
        c.extra = {k: v for k, v in basis_tensors(basis).items() if k != "basis.components"}
    torch.manual_seed(0)
    return checkpoint.save(tmp_path / "m", c, build_model(cfg))


def test_mesh_checkpoint_round_trip_and_cross_refusals(tmp_path):
    path = _mesh_checkpoint(tmp_path)
    loaded = checkpoint.load(path)
    assert loaded.is_mesh and loaded.skeleton is None and loaded.asset["vertices"] == 100
    assert loaded.extra["basis.components"].dtype == torch.float16  # stored in half precision
    with pytest.raises(EngineError, match="mesh-sequence checkpoint"):
        Engine(path, "cpu")
    with pytest.raises(EngineError, match="motion \\(armature\\) checkpoint"):
        MeshEngine(checkpoint.DEFAULT_DIR / "motion_autoencoder.json", "cpu")
    engine = MeshEngine(path, "cpu")
    with pytest.raises(MeshError, match="99 vertices, but the checkpoint was trained on a mesh of 100"):
        engine.encode(np.zeros((30, 99, 3), np.float32))
    with pytest.raises(EngineError, match="needs a mesh inbetween checkpoint"):
        engine.inbetween(ripple(0, 30), [0, 29])


def test_mesh_checkpoint_without_its_basis_is_refused(tmp_path):
    path = _mesh_checkpoint(tmp_path, basis_ok=False)
    with pytest.raises(checkpoint.CheckpointError, match="vertex basis"):
        checkpoint.load(path)


def test_models_of_one_asset_share_one_basis_file(tmp_path):
    path = _mesh_checkpoint(tmp_path)
    one = checkpoint.load(path)
    one.asset["basis"] = "asset_basis.safetensors"
    a, b = checkpoint.save(tmp_path / "ship" / "a", one), None
    one.path = None
    b = checkpoint.save(tmp_path / "ship" / "b", one)
    names = sorted(p.name for p in (tmp_path / "ship").iterdir())
    assert names == ["a.json", "a.safetensors", "asset_basis.safetensors", "b.json", "b.safetensors"]
    assert "extra.basis.components" not in load_file(str(tmp_path / "ship" / "a.safetensors"))
    ea, eb = MeshEngine(a, "cpu"), MeshEngine(b, "cpu")
    assert np.array_equal(ea.basis.components, MeshEngine(path, "cpu").basis.components)
    assert np.array_equal(ea.basis.mean, eb.basis.mean)
    (tmp_path / "ship" / "asset_basis.safetensors").unlink()
    with pytest.raises(checkpoint.CheckpointError, match="shared vertex basis is missing"):
        checkpoint.load(a)


def test_a_shrunk_decode_gives_each_segment_its_own_frames(tmp_path):
    # segments of 31 and 32 source frames shrink to 10 frames each at scale 0.3: batched together they
    # must still each attend over their own source frames (the numbers each gets decoded alone)
    engine = MeshEngine(_mesh_checkpoint(tmp_path), "cpu")
    points = np.random.default_rng(4).normal(size=(2, 4, engine.model.cfg.latent)).astype(np.float32)
    both = engine.segment_frames(points, [31, 32], scale=0.3, timing=0.2)
    assert [len(p) for p in both] == [10, 10]
    for k, n in enumerate([31, 32]):
        alone = engine.segment_frames(points[k:k + 1], [n], scale=0.3, timing=0.2)[0]
        np.testing.assert_allclose(both[k], alone, rtol=0, atol=1e-6)
