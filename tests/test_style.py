"""Style edits on control points (backend.motion.style): neutral strength bit for bit, names checked, the
shipped checkpoint's directions, the CLI."""
from pathlib import Path

import numpy as np
import pytest

from backend.motion import style
from backend.runtime.checkpoint import StyleSet

CLIP = Path(__file__).parent / "fixtures" / "dataset-2_walk_normal_005.bvh"
SHIPPED = Path(__file__).parents[1] / "backend" / "checkpoints" / "motion_autoencoder.json"


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


def test_the_shipped_autoencoder_knows_dataset_twos_styles_each_described():
    from backend.runtime import checkpoint
    s = checkpoint.load(SHIPPED, arrays=True).styles()
    assert s.names == ("active", "elderly", "exhausted", "feminine", "masculine", "youthful")
    assert all(len(t) > 20 and "\n" not in t for t in s.descriptions)
    assert s.directions.shape[0] == 6 and np.isfinite(s.directions).all()
    assert (np.linalg.norm(s.directions.reshape(6, -1), axis=1) > 1.0).all()  # they move the points


def _styleless(tmp_path) -> Path:
    """The shipped autoencoder without its style directions (a model trained before training.style ran)."""
    from backend.runtime import checkpoint
    ck = checkpoint.load(SHIPPED)
    del ck.extra["style.directions"]
    for k in ("style_names", "style_descriptions", "style_source"):
        ck.info.pop(k)
    return checkpoint.save(tmp_path / "plain.json", ck)


def test_cli_style_on_a_checkpoint_without_styles_is_refused(tmp_path, capsys):
    from backend.cli.main import main
    ck = _styleless(tmp_path)
    assert main(["edit", str(CLIP), "--checkpoint", str(ck), "--style", "elderly",
                 "--out-dir", str(tmp_path / "out")]) == 2
    assert "has no style directions" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_cli_unknown_style_lists_the_names_and_writes_nothing(tmp_path, capsys):
    from backend.cli.main import main
    assert main(["edit", str(CLIP), "--style", "proud", "--out-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "unknown style 'proud'" in err and "elderly, exhausted, feminine" in err
    assert not (tmp_path / "out").exists()


def test_cli_style_strength_zero_writes_the_plain_edit_and_one_changes_the_motion_not_the_path(tmp_path):
    from backend.cli.main import main
    from backend.formats.bvh import read_bvh
    outs = {}
    for label, extra in (("plain", []), ("zero", ["--style", "elderly", "--style-strength", "0"]),
                         ("old", ["--style", "elderly"])):
        assert main(["edit", str(CLIP), "--device", "cpu", "--out-dir", str(tmp_path / label)] + extra) == 0
        outs[label] = read_bvh(tmp_path / label / CLIP.name)
    assert (tmp_path / "zero" / CLIP.name).read_bytes() == (tmp_path / "plain" / CLIP.name).read_bytes()
    plain, old = outs["plain"], outs["old"]
    pr, orr = plain.root_positions, old.root_positions
    assert np.allclose(pr[:, [0, 2]], orr[:, [0, 2]], atol=1e-3)  # the ground path kept (root pinned)
    assert quat_angle(old.rotations, plain.rotations).max() > 5.0  # degrees: elderly visibly turns some joint


def quat_angle(a, b):
    from backend.maths import quat_np
    d = quat_np.mul(quat_np.inv(quat_np.normalize(a)), quat_np.normalize(b))
    return np.degrees(2 * np.arccos(np.clip(np.abs(d[..., 0]), 0, 1)))


def test_service_decode_adds_the_style_per_segment_and_strength_zero_is_the_plain_decode():
    """The latent layer's decode request with a style: 0 the plain decode bit for bit, 1 a changed
    segment whose root keeps the ground path; only the segment asked changes; unknown names refused."""
    from backend import service
    from backend.formats.bvh import read_bvh
    clip = read_bvh(CLIP)
    reply, out = service.handle({"op": "encode", "checkpoint": str(SHIPPED), "device": "cpu",
                                 "frame_time": clip.frame_time},
                                {"offsets": clip.skeleton.offsets, "rotations": clip.rotations[:91],
                                 "positions": clip.positions[:91]})
    segs = reply["segments"]

    def decode(style=None):
        header = {"op": "decode", "checkpoint": str(SHIPPED), "device": "cpu", "task": "autoencoder",
                  "segments": segs, "lengths": [b - a + 1 for a, b in segs], "amplify": [1.0] * len(segs),
                  "timing": [0.0] * len(segs), "principal": [[]] * len(segs), "keys": None}
        if style is not None:
            header["style"] = style
        return service.handle(header, {k: out[k] for k in ("points", "origins", "template")})

    _, plain = decode()
    _, zero = decode([{"elderly": 0.0}] * len(segs))
    assert zero["rotations"].tobytes() == plain["rotations"].tobytes()
    assert zero["positions"].tobytes() == plain["positions"].tobytes()
    _, old = decode([{}] + [{"elderly": 1.0}] * (len(segs) - 1))
    first = segs[0][1] - segs[0][0] + 1
    assert old["rotations"][:first].tobytes() == plain["rotations"][:first].tobytes()  # segment 1 not asked
    assert quat_angle(old["rotations"][first:], plain["rotations"][first:]).max() > 5.0
    np.testing.assert_array_equal(old["positions"][:, 1, [0, 2]], plain["positions"][:, 1, [0, 2]])  # root path
    with pytest.raises(ValueError, match="unknown style 'proud'.*knows: active, elderly"):
        decode([{"proud": 1.0}] * len(segs))
