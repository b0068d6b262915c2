"""``python -m blender_addon.batch edit --style NAME``: real batch runs on the fixtures.  A .bvh comes out
as ``python -m backend edit --style`` writes it (the model's skeleton), or in the file's own skeleton (a
CMU walk); an unknown name is refused naming the known ones before anything is read."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import batch_helpers

FIXTURES = Path(__file__).parent / "fixtures"
WALK = FIXTURES / "dataset-2_walk_normal_005.bvh"
CMU = FIXTURES / "skeletons" / "cmu_07_01.bvh"  # another studio's skeleton (31 joints, CMU's terms)

pytestmark = pytest.mark.torch


def _ground_path(clip) -> np.ndarray:
    """The root's path over the ground (BVH: Y up), from the global positions."""
    from backend.maths import quat_np
    g = quat_np.fk(quat_np.normalize(clip.rotations), clip.positions, clip.skeleton.parents)[1]
    return g[:, 0, [0, 2]]


def _angles(a, b) -> np.ndarray:
    from backend.maths import quat_np
    d = quat_np.mul(quat_np.inv(quat_np.normalize(a)), quat_np.normalize(b))
    return np.degrees(2 * np.arccos(np.clip(np.abs(d[..., 0]), 0, 1)))


def test_style_on_a_bvh_is_the_backend_clis_edit_and_keeps_path_and_steps(tmp_path):
    from backend.cli.main import main as backend_main
    from backend.formats.bvh import read_bvh
    from training.studies.style_eval import contact_cells, iou
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy2(WALK, src / WALK.name)
    outs = {}
    for label, extra in (("plain", []), ("zero", ["--style", "elderly", "--style-strength", 0]),
                         ("old", ["--style", "elderly"])):
        r = batch_helpers.run_batch("edit", src, *extra, "--out-dir", tmp_path / label, "--jobs", 1, "--device", "cpu")
        assert r.returncode == 0, r.stderr
        outs[label] = tmp_path / label / WALK.name
    assert outs["zero"].read_bytes() == outs["plain"].read_bytes()  # strength 0: the plain edit, bit for bit
    assert backend_main(["edit", str(WALK), "--style", "elderly", "--device", "cpu",
                         "--out-dir", str(tmp_path / "cli")]) == 0
    assert outs["old"].read_text() == (tmp_path / "cli" / WALK.name).read_text()  # the backend CLI's file
    plain, old, real = read_bvh(outs["plain"]), read_bvh(outs["old"]), read_bvh(WALK)
    assert _angles(old.rotations, plain.rotations).max() > 5.0  # degrees: the style shows
    np.testing.assert_allclose(_ground_path(old), _ground_path(plain), atol=0.05)  # cm: the path kept
    assert iou(contact_cells(old), contact_cells(real)) >= 0.7  # the steps land where the source's do
    report = batch_helpers.by_name(batch_helpers.load_report(tmp_path / "old", "edit"))[WALK.name]
    assert report["status"] == "ok" and report["frames_written"] == real.num_frames


def test_style_on_another_skeletons_bvh_is_written_in_its_own_skeleton(tmp_path):
    from backend.formats.bvh import read_bvh
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy2(CMU, src / CMU.name)
    for label, extra in (("plain", []), ("tired", ["--style", "exhausted", "--style-strength", 1.5])):
        r = batch_helpers.run_batch("edit", src, *extra, "--out-dir", tmp_path / label, "--jobs", 1, "--device", "cpu")
        assert r.returncode == 0, r.stderr
    given, plain, tired = read_bvh(CMU), read_bvh(tmp_path / "plain" / CMU.name), read_bvh(tmp_path / "tired" / CMU.name)
    assert tired.skeleton.names == given.skeleton.names and tired.num_frames == given.num_frames
    assert _angles(tired.rotations, plain.rotations).max() > 5.0
    np.testing.assert_allclose(_ground_path(tired), _ground_path(plain), atol=0.5)


def test_unknown_style_lists_the_names_and_reads_nothing(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy2(WALK, src / WALK.name)
    r = batch_helpers.run_batch("edit", src, "--style", "proud", "--out-dir", tmp_path / "out", "--jobs", 1)
    assert r.returncode == 2
    assert "--style proud: unknown style" in r.stderr
    assert "active, elderly, exhausted, feminine, masculine, youthful" in r.stderr
    assert not (tmp_path / "out").exists()
    r = batch_helpers.run_batch("edit", src, "--style", "elderly", "--style-strength", "nan", "--out-dir",
                                tmp_path / "out", "--jobs", 1)
    assert r.returncode == 2 and "--style-strength nan: give a finite number" in r.stderr
    assert not (tmp_path / "out").exists()
