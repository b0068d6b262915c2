"""Match Style (backend.motion.style_match, edit --match-style): a real reference's style read as a mix of
the shipped checkpoint's style directions and applied to another clip."""
from pathlib import Path

import numpy as np
import pytest

from backend.motion import style_match

ROOT = Path(__file__).parents[1]
CLIP = ROOT / "tests" / "fixtures" / "dataset-2_walk_normal_005.bvh"
ELDERLY = ROOT / "tests" / "fixtures" / "dataset-2_walk_elderly_005.bvh"  # 120 frames of a test-split take
NORMAL = ROOT / "examples" / "bvh" / "dataset-2_walk_normal_001.bvh"  # another take of a normal walk


def test_nnls_recovers_a_non_negative_mix_and_clips_a_negative_one():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(40, 4))
    assert np.allclose(style_match.nnls(a, a @ np.array([0.7, 0.0, 0.2, 0.0])), [0.7, 0.0, 0.2, 0.0], atol=1e-9)
    x = style_match.nnls(a, a @ np.array([0.5, -0.8, 0.0, 0.0]))
    assert (x >= 0).all() and x[1] == 0.0


@pytest.fixture(scope="module")
def engine():
    from backend.motion.engine import Engine
    return Engine(None, "cpu", runtime="onnx")


def _points(engine, path):
    from backend.formats.bvh import read_bvh
    from backend.maths import timebase
    return engine.encode(timebase.to_model_rate(read_bvh(path), engine.frame_time)).points


def test_a_real_elderly_walk_reads_mostly_elderly_and_a_normal_one_near_nothing(engine):
    src = _points(engine, CLIP)
    old = style_match.read_style(engine.styles(), _points(engine, ELDERLY), src)
    assert max(old, key=old.get) == "elderly"
    assert old["elderly"] > 0.5 * sum(old.values()) and old["elderly"] > 0.4
    plain = style_match.read_style(engine.styles(), _points(engine, NORMAL), src)
    assert sum(plain.values()) < 0.25 * sum(old.values())  # another take of the same content: (nearly) no style
    assert style_match.describe({"elderly": 0.0}) == "none (reads as normal)"


def test_cli_match_style_prints_the_mix_strength_zero_is_the_plain_edit_and_one_moves_the_joints(tmp_path, capsys):
    from backend.cli.main import main
    from backend.formats.bvh import read_bvh
    outs = {}
    for label, extra in (("plain", []), ("zero", ["--match-style", str(ELDERLY), "--style-strength", "0"]),
                         ("match", ["--match-style", str(ELDERLY)]), ("named", ["--style", "elderly"])):
        assert main(["edit", str(CLIP), "--device", "cpu", "--out-dir", str(tmp_path / label)] + extra) == 0
        outs[label] = read_bvh(tmp_path / label / CLIP.name)
    out = capsys.readouterr().out
    assert f"{ELDERLY.name} reads as elderly" in out
    assert (tmp_path / "zero" / CLIP.name).read_bytes() == (tmp_path / "plain" / CLIP.name).read_bytes()
    plain, match, named = outs["plain"], outs["match"], outs["named"]
    assert np.allclose(plain.root_positions[:, [0, 2]], match.root_positions[:, [0, 2]], atol=1e-3)  # path kept
    moved = _angle(match.rotations, plain.rotations).mean()
    assert moved > 1.0  # degrees, mean over frames and joints
    # the matched edit is nearer the named elderly edit than the plain decode is
    assert _angle(match.rotations, named.rotations).mean() < moved


def test_cli_match_style_reads_a_reference_of_another_skeleton(tmp_path, capsys):
    from backend.cli.main import main
    cmu = ROOT / "tests" / "fixtures" / "skeletons" / "cmu_07_01.bvh"  # CMU's skeleton, converted by backend.humanoid
    assert main(["edit", str(CLIP), "--device", "cpu", "--match-style", str(cmu), "--out-dir", str(tmp_path / "o")]) == 0
    assert f"{cmu.name} reads as" in capsys.readouterr().out
    assert (tmp_path / "o" / CLIP.name).exists()


def test_cli_match_style_with_an_unreadable_reference_is_refused_and_writes_nothing(tmp_path, capsys):
    from backend.cli.main import main
    bad = tmp_path / "ref.bvh"
    bad.write_text("not a bvh")
    assert main(["edit", str(CLIP), "--match-style", str(bad), "--out-dir", str(tmp_path / "out")]) == 2
    assert "--match-style" in capsys.readouterr().err and not (tmp_path / "out").exists()


def _angle(a, b):
    from backend.maths import quat_np
    d = quat_np.mul(quat_np.inv(quat_np.normalize(a)), quat_np.normalize(b))
    return np.degrees(2 * np.arccos(np.clip(np.abs(d[..., 0]), 0, 1)))


@pytest.mark.torch
def test_batch_match_style_on_a_bvh_is_the_backend_clis_edit(tmp_path):
    import shutil

    import batch_helpers
    from backend.cli.main import main
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy2(CLIP, src / CLIP.name)
    r = batch_helpers.run_batch("edit", src, "--match-style", ELDERLY, "--out-dir", tmp_path / "batch", "--jobs", 1,
                                "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert main(["edit", str(CLIP), "--match-style", str(ELDERLY), "--device", "cpu",
                 "--out-dir", str(tmp_path / "cli")]) == 0
    assert (tmp_path / "batch" / CLIP.name).read_text() == (tmp_path / "cli" / CLIP.name).read_text()
    missing = batch_helpers.run_batch("edit", src, "--match-style", tmp_path / "nope.bvh", "--out-dir", tmp_path / "x")
    assert missing.returncode != 0 and "--match-style" in missing.stderr and not (tmp_path / "x").exists()
