"""The README's cloth job: Blender simulates the example cloth, the shipped cloth models fill and rebuild it."""
from __future__ import annotations

import numpy as np

from backend.formats.pc2 import read_pc2
from training.mesh import demo as mesh_demo


def test_cloth_demo_inbetweens_better_than_linear_and_writes_its_files(tmp_path, capsys):
    assert mesh_demo.main(["--out", str(tmp_path), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    frames, start, _ = read_pc2(tmp_path / "cloth_inbetween.pc2")
    assert frames.shape == (60, 5041, 3) and start == 1.0  # frame f of the .blend is sample f - 1
    rec, _, _ = read_pc2(tmp_path / "cloth_reconstruction.pc2")
    assert rec.shape == frames.shape and np.isfinite(rec).all()
    assert (tmp_path / "cloth.png").stat().st_size > 10_000
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    linear = float(lines["linear"].split()[1])
    model = float(lines["Splinetween"].split()[1])
    assert model < 0.7 * linear, out  # keys every 5 on a simulated flag
