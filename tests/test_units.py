"""A file's unit is not its motion: the same walk in centimetres, metres, millimetres or inches gets the same fill.

Through the engine (``python -m backend``'s path, and the batch's for the model's own skeleton) and through
``python -m blender_addon.batch``: world joint positions agree within 0.1 mm once scaled back to centimetres.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from backend.formats import bvh
from backend.maths import quat_np
from backend.motion import units
from backend.motion.engine import DEFAULT_INBETWEEN, Engine

ROOT = Path(__file__).resolve().parents[1]
WALK = ROOT / "examples" / "bvh" / "dataset-2_walk_normal_001.bvh"
UNITS = {"m": 0.01, "mm": 10.0, "in": 1 / 2.54}


def world_cm(clip, cm_per_unit: float) -> np.ndarray:
    _, x = quat_np.fk(clip.rotations, clip.positions * cm_per_unit, clip.skeleton.parents)
    return x


@pytest.fixture(scope="module")
def walk():
    return bvh.read_bvh(WALK, keep_source=False)


def test_the_unit_is_read_from_the_offsets(walk):
    off = np.asarray(walk.skeleton.offsets)
    assert units.cm_per_unit(off, off) == 1.0
    assert units.cm_per_unit(off * 0.01, off) == 100.0
    assert units.cm_per_unit(off * 10, off) == 0.1
    assert units.cm_per_unit(off / 2.54, off) == 2.54
    assert units.cm_per_unit(off * 0.8, off) == 1.0  # a smaller body in centimetres keeps its size
    assert units.cm_per_unit(off * 1.3, off) == 1.0


@pytest.mark.torch
def test_the_engine_fills_the_same_motion_in_any_unit(walk):
    engine = Engine(DEFAULT_INBETWEEN)
    keys = list(range(0, 121, 15))
    short = type(walk)(walk.skeleton, walk.rotations[:121], walk.positions[:121], walk.frame_time, "walk")
    ref, _ = engine.inbetween(short, keys)
    want = world_cm(ref, 1.0)
    for name, factor in UNITS.items():
        out, _ = engine.inbetween(units.scaled(short, factor), keys)
        got = world_cm(out, 1.0 / factor)
        assert np.abs(got - want).max() < 0.01, name  # 0.1 mm
        assert np.array_equal(out.rotations[keys], short.rotations[keys]), name  # keys exactly


@pytest.mark.torch
def test_the_batch_fills_a_file_in_metres_as_in_centimetres(walk, tmp_path):
    short = type(walk)(walk.skeleton, walk.rotations[:91], walk.positions[:91], walk.frame_time, "walk")
    (tmp_path / "in").mkdir()
    bvh.write_bvh(tmp_path / "in" / "walk_cm.bvh", short)
    bvh.write_bvh(tmp_path / "in" / "walk_m.bvh", units.scaled(short, 0.01))
    subprocess.run([sys.executable, "-m", "blender_addon.batch", "inbetween", str(tmp_path / "in"), "--every", "15",
                    "--out-dir", str(tmp_path / "out")], cwd=ROOT, check=True, capture_output=True)
    cm = bvh.read_bvh(tmp_path / "out" / "walk_cm.bvh")
    m = bvh.read_bvh(tmp_path / "out" / "walk_m.bvh")
    # (the files hold 6 significant digits: 1e-4 cm of rounding in metres)
    assert np.abs(world_cm(m, 100.0) - world_cm(cm, 1.0)).max() < 0.01
