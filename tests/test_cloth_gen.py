"""The cloth data generator: real Blender cloth, small grids (11 x 11) except where the asset is the point."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from backend.formats.pc2 import read_pc2

pytestmark = pytest.mark.blender
G = pytest.importorskip("training.mesh.cloth_gen")
ROOT = Path(__file__).resolve().parents[1]
RES = 11


def _cli(*args):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "training.mesh.cloth_gen", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def _index_of(kind, seed=0):
    return next(i for i in range(100) if G.sample_scenario(seed, i).kind == kind)


def test_asset_has_5041_vertices_in_grid_order():
    obj = G.build_asset()
    assert len(obj.data.vertices) == 71 * 71 == 5041
    assert tuple(obj.location) == (0, 0, 0) and tuple(obj.rotation_euler) == (0, 0, 0)
    co = np.empty(5041 * 3, np.float32)
    obj.data.vertices.foreach_get("co", co)
    expected = G.rest_positions(G.sample_scenario(0, _index_of("drape")), 71)[:, :2]
    np.testing.assert_allclose(co.reshape(-1, 3)[:, :2], expected, atol=1e-6)


def test_flag_moves_and_its_pole_stays():
    n, frames = 15, 24
    obj = G.build_asset(n)
    G.setup_scenario(obj, G.default_flag(), frames)
    out = G.simulate(obj, frames)
    assert out.shape == (frames, n * n, 3) and G.explosion(out, frames) is None
    grid = out.reshape(frames, n, n, 3)
    pole, free = grid[:, :, 0], grid[:, :, -1]
    assert np.abs(pole - pole[0]).max() < 1e-4
    assert np.linalg.norm(free - free[0], axis=-1).max() > 0.05  # several cm, in fact metres
    np.testing.assert_allclose(out[0], G.rest_positions(G.default_flag(), n), atol=1e-6)


def test_same_seed_and_index_give_identical_bytes(tmp_path):
    cfg = dict(count=3, frames=8, resolution=RES)
    for sub in ("a", "b"):
        for i in (0, 1):
            G.generate_one(G.GenConfig(out=str(tmp_path / sub), **cfg), i)
    a, b = (tmp_path / "a" / "train"), (tmp_path / "b" / "train")
    assert (a / "cloth_0000.pc2").read_bytes() == (b / "cloth_0000.pc2").read_bytes()
    f0, f1 = read_pc2(a / "cloth_0000.pc2")[0], read_pc2(a / "cloth_0001.pc2")[0]
    assert np.abs(f0[1:] - f1[1:]).max() > 0.01  # a different index is a different motion


def test_scenarios_are_reproducible_and_varied():
    assert asdict(G.sample_scenario(3, 7)) == asdict(G.sample_scenario(3, 7))
    many = [G.sample_scenario(0, i) for i in range(200)]
    assert {s.kind for s in many} == {"flag", "drape"}
    assert {s.obstacle for s in many if s.kind == "drape"} == {"sphere", "cube", "cylinder", "none"}
    assert {s.pin for s in many if s.kind == "drape"} == {"none", "corner", "two_corners"}
    assert len({round(s.tension, 6) for s in many}) == 200
    for s in many:
        assert len(G.pinned_vertices(s, RES)) == {"edge": RES, "none": 0, "corner": 1, "two_corners": 2}[s.pin]


def test_explosion_is_detected():
    ok = np.zeros((4, 3, 3), np.float32)
    assert G.explosion(ok, 4) is None
    far = ok.copy()
    far[2, 1] = (0, 0, 12.0)
    assert "12.0 m" in G.explosion(far, 4)
    assert "frame 3" in G.explosion(ok[:3], 4)


def test_cli_writes_splits_manifest_and_resumes(tmp_path):
    out = tmp_path / "data"
    res = _cli("--out", out, "--count", 10, "--frames", 6, "--resolution", RES, "--jobs", 2)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "seq/min" in res.stdout and "ETA" in res.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["asset"]["vertices"] == RES * RES
    by_index = {e["index"]: e for e in manifest["sequences"]}
    assert sorted(by_index) == list(range(10))
    assert by_index[8]["split"] == "val" and by_index[9]["split"] == "test" and by_index[0]["split"] == "train"
    for i, e in by_index.items():
        frames, start, rate = read_pc2(out / e["file"])
        assert frames.shape == (6, RES * RES, 3) and (start, rate) == (1.0, 1.0)
        assert e["scenario"] == asdict(G.sample_scenario(0, i)) and e["seconds"] > 0
    assert (out / "val" / "cloth_0008.pc2").exists() and (out / "test" / "cloth_0009.pc2").exists()
    (out / "train" / "cloth_0003.pc2").unlink()
    again = _cli("--out", out, "--count", 10, "--frames", 6, "--resolution", RES)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "9 of 10 sequences already there; 1 to simulate" in again.stdout
    assert (out / "train" / "cloth_0003.pc2").exists()
    other = _cli("--out", out, "--count", 10, "--frames", 7, "--resolution", RES)
    assert other.returncode == 2 and "same options" in other.stderr


@pytest.mark.parametrize("args, says", [(["--count", 0], "--count 0"), (["--frames", 1], "--frames 1"),
                                        (["--jobs", 0], "--jobs 0"), ([], None)])
def test_cli_refuses_bad_input(tmp_path, args, says):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    out = tmp_path / "d" if says else blocker / "sub"
    res = _cli("--out", out, "--resolution", RES, *args)
    assert res.returncode == 2
    assert (says or "is a file, not a folder") in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "d").exists()


def test_help_documents_the_options():
    res = _cli("--help")
    assert res.returncode == 0
    for opt in ("--out", "--count", "--frames", "--seed", "--resolution", "--jobs", "--asset-blend", "resum"):
        assert opt in res.stdout


def test_asset_blend_is_small_and_plays(tmp_path):
    import bpy
    res = _cli("--asset-blend", tmp_path / "cloth_flag.blend")
    assert res.returncode == 0, res.stderr[-3000:]
    path = tmp_path / "cloth_flag.blend"
    assert path.stat().st_size < 1_000_000
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    assert (scene.frame_start, scene.frame_end, scene.render.fps) == (1, 60, 30)
    cloth = bpy.data.objects["cloth"]
    assert len(cloth.data.vertices) == 5041 and cloth.modifiers["Cloth"].settings.vertex_group_mass == "pin"
    assert {o.name for o in scene.objects} == {"cloth", "wind"}
    bpy.ops.wm.read_factory_settings(use_empty=True)
