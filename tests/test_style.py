"""Style edits on control points (backend.motion.style): neutral strength bit for bit, names checked."""
import numpy as np
import pytest

from backend.motion import style
from backend.runtime.checkpoint import StyleSet


def _set():
    rng = np.random.default_rng(0)
    return StyleSet(("elderly", "exhausted"), ("old", "tired"), rng.normal(size=(2, 4, 8)))


def test_strength_zero_is_the_points_bit_for_bit():
    pts = np.random.default_rng(1).normal(size=(3, 4, 8)).astype(np.float32)
    out = style.style_points(pts, _set(), {"elderly": 0.0})
    assert out.tobytes() == pts.tobytes() and out is not pts


def test_styles_mix_linearly():
    s, pts = _set(), np.zeros((2, 4, 8))
    out = style.style_points(pts, s, {"elderly": 1.0, "exhausted": 0.5})
    assert np.allclose(out[1], s.directions[0] + 0.5 * s.directions[1])


def test_unknown_style_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown style 'proud'.*elderly, exhausted"):
        style.checked_strengths(_set(), {"proud": 1.0}, "m.json")


def test_checkpoint_without_styles_says_so():
    with pytest.raises(ValueError, match="m.json has no style directions.*training.style"):
        style.checked_strengths(None, {"elderly": 1.0}, "m.json")


def test_root_path_pinned_keeps_the_sources_ground_path():
    rng = np.random.default_rng(2)
    src, styled = rng.normal(size=(10, 3, 3)), rng.normal(size=(10, 3, 3))
    out = style.pin_root(styled, src, 1, 1)
    assert np.array_equal(out[:, 1, [0, 2]], src[:, 1, [0, 2]]) and np.array_equal(out[:, 1, 1], styled[:, 1, 1])


def test_cli_style_on_a_checkpoint_without_styles_is_refused(tmp_path, capsys):
    from pathlib import Path
    from backend.cli.main import main
    clip = Path(__file__).parent / "fixtures" / "dataset-2_walk_normal_005.bvh"
    assert main(["edit", str(clip), "--style", "elderly", "--out-dir", str(tmp_path / "out")]) == 2
    assert "has no style directions" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
