"""python -m training.train mesh and the mesh evaluation, on small analytic PC2 sequences."""
from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.torch import load_file

from backend.formats.pc2 import write_pc2
from backend.mesh.engine import MeshEngine
from backend.mesh.sequences import linear_interpolation, mean_vertex_error
from tests.mesh_helpers import ripple, write_ripples
from training import train as train_cli
from training.evaluate import main as evaluate_main

TINY = ["--components=8", "--latent=8", "--width=32", "--layers=1", "--heads=4", "--window=31", "--min_window=16",
        "--batch_size=8", "--val_every=15", "--ckpt_every=10", "--val_windows=8", "--threads=1", "--principal=2", "--fit_windows=512"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_ripples(tmp_path_factory.mktemp("ripples"), 20)


@pytest.fixture(scope="module")
def runs(data, tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    out = {}
    for task in ("autoencoder", "inbetween"):
        shared = [f"--basis={root / 'autoencoder' / 'best.json'}"] if task == "inbetween" else []
        assert train_cli.main(["mesh", f"--data={data}", f"--out={root / task}", f"--task={task}", "--steps=30",
                               *shared, *TINY]) == 0
        out[task] = root / task / "best.json"
    return out


def test_autoencoder_run_gives_a_mesh_checkpoint_with_basis_and_sliders(runs, data):
    engine = MeshEngine(runs["autoencoder"], "cpu")
    assert engine.task == "autoencoder" and engine.num_vertices == 100 and engine.basis.size == 8
    assert len(engine.principal_names()) == 2 and engine.principal()[0].shape == (2, 4 * 8)
    info = engine.ckpt.info
    assert info["train_sequences"] == 16 and info["val_sequences"] == 2 and info["steps"] <= 30
    seq = ripple(9, 70)  # a test sequence: two segments of at most 31 frames... three, sharing ends
    controls = engine.encode(seq)
    assert [b - a + 1 for a, b in controls.segments] == [24, 24, 24]
    out = engine.decode(controls)
    assert out.shape == seq.shape and np.isfinite(out).all()
    assert engine.decode(controls, scale=2).shape == (139, 100, 3)
    moved = engine.decode(controls, points=controls.points + 0.5)
    assert mean_vertex_error(moved, out) > 1e-4  # the control points drive the output


def test_inbetween_run_keeps_keys_bit_exact_and_redecodes_the_same(runs):
    engine = MeshEngine(runs["inbetween"], "cpu")
    # trained with --basis: the asset's two models read the same coefficients
    assert np.array_equal(engine.basis.components, MeshEngine(runs["autoencoder"], "cpu").basis.components)
    seq = ripple(19, 50)
    keys = [0, 5, 10, 20, 30, 40, 49]
    holes = seq.copy()
    holes[np.setdiff1d(np.arange(50), keys)] = np.nan  # non-key frames are never read
    out, controls = engine.inbetween(holes, keys)
    assert np.array_equal(out[keys], seq[keys]) and np.isfinite(out).all()
    assert np.array_equal(engine.decode(controls), out)
    dense = engine.decode(controls, scale=2)
    assert dense.shape == (99, 100, 3) and np.array_equal(dense[[2 * k for k in keys]], seq[keys])
    # frames before the first key and after the last come out as they went in
    part, _ = engine.inbetween(seq, [3, 10, 20, 30, 40, 45])
    assert part.shape == seq.shape and np.array_equal(part[:4], seq[:4]) and np.array_equal(part[45:], seq[45:])
    assert np.isfinite(part).all()
    # even a barely trained model starts from the Hermite base, which already beats linear on a smooth wave
    gaps = np.setdiff1d(np.arange(50), keys)
    assert mean_vertex_error(out, seq, gaps) < mean_vertex_error(linear_interpolation(seq, keys), seq, gaps)


def test_inbetween_linear_path_is_fitted_before_training_and_beats_its_base(runs):
    info = MeshEngine(runs["inbetween"], "cpu").ckpt.info
    fit = info["key_regression"]
    assert fit["windows"] == 512
    # the ridge strength is chosen on validation among three
    assert len(fit["ridge_val_pct"]) == 3 and fit["ridge_val_pct"][f"{fit['ridge']:g}"] == min(fit["ridge_val_pct"].values())
    # validation with keys every 5 and every 10 frames: the fitted regression misses less than the spline
    assert fit["val_vertex_pct_every_5"] < 0.9 * fit["val_base_pct_every_5"]
    assert fit["val_vertex_pct_every_10"] < 0.9 * fit["val_base_pct_every_10"]
    # the fitted step 0 is validated like any other: the shipped best is never worse than it
    history = json.loads((runs["inbetween"].parent / "history.json").read_text())
    assert history[0]["step"] == 0 and info["val_vertex_pct"] <= history[0]["val_vertex_pct"]


def test_resume_after_an_interruption_is_exact(data, tmp_path):
    full, cut = tmp_path / "full", tmp_path / "cut"
    assert train_cli.main(["mesh", f"--data={data}", f"--out={full}", "--steps=20", "--principal=0", *TINY]) == 0
    assert train_cli.main(["mesh", f"--data={data}", f"--out={cut}", "--steps=10", "--principal=0", *TINY]) == 0
    (cut / "final.json").unlink()
    assert train_cli.main(["mesh", f"--data={data}", f"--out={cut}", "--steps=20", "--principal=0", *TINY]) == 0
    a, b = load_file(str(full / "final.safetensors")), load_file(str(cut / "final.safetensors"))
    assert all(np.array_equal(a[k].float().numpy(), b[k].float().numpy()) for k in a)


def test_bad_inputs_stop_before_training(data, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert train_cli.main(["mesh", f"--data={empty}", f"--out={tmp_path / 'r'}"]) == 2
    assert "no PC2, MDD or .blend files" in capsys.readouterr().err
    assert train_cli.main(["mesh", f"--data={data}", "--componets=8"]) == 2
    assert "--componets: unknown config key" in capsys.readouterr().err
    assert train_cli.main(["mesh", f"--data={data}", f"--out={tmp_path / 'r'}", "--window=200"]) == 2
    assert "shorter than --window=200" in capsys.readouterr().err
    # one sequence of another mesh is skipped with a warning, naming it
    odd = tmp_path / "odd"
    write_ripples(odd, 12, 40)
    write_pc2(odd / "ripple_0100.pc2", ripple(0, 40, n=11))
    assert train_cli.main(["mesh", f"--data={odd}", f"--out={tmp_path / 'o'}", "--steps=2", "--principal=0",
                           *TINY]) == 0
    err = capsys.readouterr().err
    assert "ripple_0100.pc2: 121 vertices, the others have 100" in err


def test_evaluate_writes_the_reconstruction_and_inbetween_tables(runs, data, tmp_path, capsys):
    assert evaluate_main([str(runs["autoencoder"]), f"--data={data}", "--split=test", f"--out={tmp_path}"]) == 0
    rep = json.loads((tmp_path / "eval-best-test.json").read_text())
    e = rep["autoencoder"]["error_pct"]
    assert rep["sequences"] == 2 and e["pca_k"] <= e["pca_budget"] and e["model"] > 0
    # the linear code is the untrained model's output: 30 steps from it, the model is near it
    assert e["linear_code"] > e["pca_k"] and abs(e["model"] - e["linear_code"]) < 0.5 * e["linear_code"]
    assert evaluate_main([str(runs["inbetween"]), f"--data={data}", "--split=test", f"--out={tmp_path / 'ib'}"]) == 0
    ib = json.loads((tmp_path / "ib" / "eval-best-test.json").read_text())["inbetween"]
    assert set(ib) == {"5", "10"} and ib["5"]["keys_exact"] and ib["5"]["error_pct"]["linear"] > 0
    # the fitted regression alone (the transformer's correction off) is reported beside the model
    assert all(0 < r["error_pct"]["regression"] < r["error_pct"]["linear"] for r in ib.values())
    out = capsys.readouterr().out
    assert "| keys every |" in out and out.count("the latent's budget") == 1
