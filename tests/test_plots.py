"""training.plots: each plot from a tiny checkpoint trained once for this module, through the CLI."""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repo root, for plain `pytest`

from training import plots  # noqa: E402

CLIP = ROOT / "examples/bvh/dataset-2_walk_normal_001.bvh"  # 273 frames: several 16-frame segments


def env():
    e = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def run(*args):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env(), capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny run folder (history.json, final.json/.safetensors), trained once."""
    base = tmp_path_factory.mktemp("plots")
    data = base / "data"
    data.mkdir()
    for f in sorted((ROOT / "examples/bvh").glob("*.bvh")):
        shutil.copy(f, data / f.name)
    shutil.copy(ROOT / "examples/bvh/dataset-2_run_normal_002.bvh", data / "val_run_008.bvh")
    out = base / "run"
    r = run("-m", "training.train", f"--data={data}", f"--out={out}", "--width=32", "--heads=4", "--layers=1",
            "--latent=8", "--window=16", "--min_window=8", "--batch_size=8", "--steps=12", "--val_windows=8",
            "--threads=1", "--warmup=3", "--log_every=3", "--val_every=6", "--ckpt_every=6")
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def check_png(path: Path, size: tuple[int, int]):
    assert path.exists()
    assert path.stat().st_size > 20_000, f"{path}: only {path.stat().st_size} bytes"
    assert png_size(path) == size
    import matplotlib.image
    img = matplotlib.image.imread(str(path))[..., :3]
    assert img.shape[:2] == (size[1], size[0])
    # drawn content, not a blank canvas: many colours, and plenty of non-white pixels
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 50
    assert (img.min(-1) < 0.9).mean() > 0.02


def test_curves(trained, tmp_path):
    out = tmp_path / "curves.png"
    r = run("-m", "training.plots", "curves", str(trained), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out)
    check_png(out, plots.SIZES["curves"])
    history, src = plots.read_history(trained)
    assert src.name == "history.json"
    assert any("loss" in e for e in history) and any("val_rot_deg" in e for e in history)


def test_curves_of_a_run_in_progress_and_custom_size(trained, tmp_path):
    """No history.json yet: the history inside last.json is plotted."""
    run_dir = tmp_path / "running"
    run_dir.mkdir()
    for name in ("last.json", "last.safetensors", "config.json"):
        shutil.copy(trained / name, run_dir / name)
    history, src = plots.read_history(run_dir)
    assert src.name == "last.json"
    assert history == json.loads((trained / "history.json").read_text())
    out = plots.plot_curves(run_dir, tmp_path / "c.png", size=(800, 300))
    check_png(out, (800, 300))


def test_latent_spline(trained, tmp_path):
    out = tmp_path / "latent.png"
    r = run("-m", "training.plots", "latent", str(trained / "final.json"), str(CLIP), "--out", str(out),
            "--segment", "3", "--features", "6")
    assert r.returncode == 0, r.stderr
    check_png(out, plots.SIZES["latent"])


def test_latent_spline_data(trained):
    """The dense curve passes through the end control points and has the Bezier's 4 controls."""
    from backend.formats.bvh import read_bvh
    from backend.motion.engine import Engine
    engine = Engine(trained / "final.json", device="cpu")
    d = plots.latent_spline(engine, read_bvh(CLIP), segment=1, features=8)
    assert d["points"].shape == (4, 8)
    np.testing.assert_allclose(d["control_t"], [0, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(d["curve"][0], d["points"][0], atol=1e-6)
    np.testing.assert_allclose(d["curve"][-1], d["points"][-1], atol=1e-6)
    var = d["curve"].var(0)
    assert list(d["features"]) == list(np.argsort(-var, kind="stable")[:8])
    with pytest.raises(plots.PlotError, match="--segment=99"):
        plots.latent_spline(engine, read_bvh(CLIP), segment=99)


def test_reconstruction(trained, tmp_path):
    out = tmp_path / "recon.png"
    r = run("-m", "training.plots", "recon", str(trained / "final.json"), str(CLIP), "--out", str(out),
            "--joints", "Hips,Spine,UpperLeg_L", "--size", "1000x800")
    assert r.returncode == 0, r.stderr
    check_png(out, (1000, 800))


def test_reconstruction_data(trained):
    from backend.formats.bvh import read_bvh
    from backend.motion.engine import Engine
    engine = Engine(trained / "final.json", device="cpu")
    clip = read_bvh(CLIP)
    d = plots.recon_curves(engine, clip, count=3)
    assert len(d["joints"]) == 3
    for j in d["joints"]:
        assert j["gt"].shape == j["rec"].shape == (clip.num_frames, 3)
        assert "".join(j["axes"]) == clip.skeleton.euler_order(clip.skeleton.index(j["name"]))
        assert np.abs(np.diff(j["gt"], axis=0)).max() < 180  # unwrapped: no 360-degree jumps
        assert np.isfinite(j["rec"]).all()


def test_bad_input_is_one_line(trained, tmp_path):
    r = run("-m", "training.plots", "recon", str(tmp_path / "nope.json"), str(CLIP), "--out", str(tmp_path / "x.png"))
    assert r.returncode == 2 and "nope.json" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run("-m", "training.plots", "curves", str(tmp_path), "--out", str(tmp_path / "x.png"))
    assert r.returncode == 2 and str(tmp_path) in r.stderr and "history.json" in r.stderr
    r = run("-m", "training.plots", "recon", str(trained / "final.json"), str(CLIP), "--joints", "Tail",
            "--out", str(tmp_path / "x.png"))
    assert r.returncode == 2 and "Tail" in r.stderr
    assert not (tmp_path / "x.png").exists()


def test_the_layer_figure(tmp_path):
    """docs/latent-layer.png's maths: at neutral the layer is the clip itself; an edit moves it by the
    difference of the two decodes.  And the script writes the PNG."""
    from dataclasses import replace

    from backend.formats.bvh import read_bvh
    from backend.maths import quat_np
    from training import edit_figure
    clip = read_bvh(CLIP)
    rot, pos = edit_figure.layered(clip, clip, clip)
    np.testing.assert_allclose(np.abs(np.sum(rot * clip.rotations, -1)), 1.0, atol=1e-9)
    np.testing.assert_allclose(pos, clip.positions, atol=1e-9)
    moved = replace(clip, rotations=quat_np.normalize(clip.rotations[::-1].copy()), positions=clip.positions + 1.0)
    rot, pos = edit_figure.layered(clip, clip, moved)
    np.testing.assert_allclose(np.abs(np.sum(rot * moved.rotations, -1)), 1.0, atol=1e-9)
    np.testing.assert_allclose(pos, clip.positions + 1.0, atol=1e-9)
    r = run("-m", "training.edit_figure", "--layer", "--out", str(tmp_path / "layer.png"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "layer.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
