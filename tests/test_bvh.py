"""BVH reading and writing: unchanged clips round-trip to the printed digit, bad files say why."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the repo root, for plain `pytest`

from backend.formats.bvh import BVHError, format_bvh, parse_bvh, read_bvh, write_bvh  # noqa: E402
from backend.maths import quat_np  # noqa: E402

FIXTURES = sorted(ROOT.glob("examples/bvh/*.bvh")) + sorted(ROOT.glob("tests/fixtures/*.bvh"))
PRINTED = 0.5e-6 + 1e-9  # half a unit in the 6th decimal, plus float noise


def motion(text):
    """(frames, frame_time, [F, C] values) straight from the text, one row per line."""
    lines = text.split("MOTION", 1)[1].strip().splitlines()
    frames = int(lines[0].split(":")[1])
    frame_time = float(lines[1].split(":")[1])
    rows = [np.array(line.split(), dtype=np.float64) for line in lines[2:] if line.strip()]
    assert len({r.size for r in rows}) == 1, "ragged motion lines"
    return frames, frame_time, np.stack(rows)


def hierarchy(text):
    """[(depth, kind, name, offset, channels)] for every ROOT, JOINT and End Site, in file order."""
    out, depth, pending = [], 0, None
    for line in text.split("MOTION", 1)[0].splitlines():
        tok = line.split()
        if not tok:
            continue
        if tok[0] in ("ROOT", "JOINT", "End"):
            pending = [depth, tok[0], " ".join(tok[1:]), None, ()]
            out.append(pending)
        elif tok[0] == "{":
            depth += 1
        elif tok[0] == "}":
            depth -= 1
        elif tok[0] == "OFFSET":
            pending[3] = tuple(float(v) for v in tok[1:])
        elif tok[0] == "CHANNELS":
            assert int(tok[1]) == len(tok) - 2
            pending[4] = tuple(tok[2:])
    assert depth == 0
    return out


def assert_same_hierarchy(a, b):
    ha, hb = hierarchy(a), hierarchy(b)
    assert [h[:3] for h in ha] == [h[:3] for h in hb]  # names, nesting, End Sites
    assert [h[4] for h in ha] == [h[4] for h in hb]  # channel names and order
    np.testing.assert_allclose([h[3] for h in ha], [h[3] for h in hb], atol=1e-9)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_fixture_round_trips_to_the_printed_digit(path):
    text = path.read_text()
    out = format_bvh(read_bvh(path))
    assert_same_hierarchy(text, out)
    f0, ft0, v0 = motion(text)
    f1, ft1, v1 = motion(out)
    assert (f0, v0.shape[0]) == (f1, v1.shape[0])
    assert abs(ft0 - ft1) < 1e-9
    assert v0.shape == v1.shape
    assert np.abs(v0 - v1).max() <= PRINTED


@pytest.mark.parametrize("path", FIXTURES[:2], ids=lambda p: p.name)
def test_without_the_source_values_the_pose_still_round_trips(path):
    clip = read_bvh(path)
    clip.meta.pop("source_channels")  # as for a generated clip: Euler solutions are chosen afresh
    again = parse_bvh(format_bvh(clip))
    assert quat_np.angle_between(clip.rotations, again.rotations).max() < 1e-6
    assert np.abs(clip.positions - again.positions).max() <= PRINTED


SYNTHETIC_HIERARCHY = """HIERARCHY
ROOT Pelvis
{
\tOFFSET 1.5 -2.25 0
\tCHANNELS 6 Xposition Yposition Zposition Xrotation Yrotation Zrotation
\tJOINT Spine
\t{
\t\tOFFSET 0 10 0.5
\t\tCHANNELS 3 Yrotation Xrotation Zrotation
\t\tJOINT Arm
\t\t{
\t\t\tOFFSET 12 0 -1
\t\t\tCHANNELS 6 Zposition Xposition Yposition Zrotation Yrotation Xrotation
\t\t\tEnd Site
\t\t\t{
\t\t\t\tOFFSET 20 0 0
\t\t\t}
\t\t}
\t}
\tJOINT Leg
\t{
\t\tOFFSET -8 -3 0
\t\tCHANNELS 3 Xrotation Zrotation Yrotation
\t\tEnd Site
\t\t{
\t\t\tOFFSET 0 -40 0
\t\t}
\t}
}
MOTION
"""


def synthetic_text(frames=30, spin=False):
    rng = np.random.default_rng(0)
    v = rng.uniform(-170, 170, size=(frames, 18)).round(6)
    v[:, [4, 7, 13, 16]] = rng.uniform(-85, 85, size=(frames, 4)).round(6)  # middle Euler angles
    if spin:  # the pelvis turns one and a half times about X, smoothly
        v[:, 3] = np.linspace(0, 540, frames)
        v[:, 4:] = np.linspace(0, 30, frames)[:, None]
    body = "\n".join(" ".join(f"{x:.6f}" for x in row) for row in v)
    return SYNTHETIC_HIERARCHY + f"Frames: {frames}\nFrame Time: 0.0416667\n" + body + "\n", v


def test_synthetic_channel_layout_round_trips():
    text, values = synthetic_text()
    clip = parse_bvh(text, "synthetic.bvh")
    skel = clip.skeleton
    assert skel.names == ("Pelvis", "Spine", "Arm", "Leg")
    assert list(skel.parents) == [-1, 0, 1, 0]
    assert [skel.euler_order(j) for j in range(4)] == ["XYZ", "YXZ", "ZYX", "XZY"]
    assert skel.position_joints() == (0, 2)
    # position channels, in their declared order, replace the offsets; the rest keep them
    np.testing.assert_allclose(clip.positions[:, 0], values[:, 0:3])
    np.testing.assert_allclose(clip.positions[:, 2], values[:, [10, 11, 9]])
    np.testing.assert_allclose(clip.positions[:, 1], np.broadcast_to([0, 10, 0.5], (30, 3)))
    q = quat_np.from_euler(np.radians(values[:, [12, 13, 14]]), "ZYX")
    assert quat_np.angle_between(clip.rotations[:, 2], q).max() < 1e-7
    out = format_bvh(clip)
    assert_same_hierarchy(text, out)
    _, ft, v = motion(out)
    assert abs(ft - 0.0416667) < 1e-9
    assert np.abs(v - values).max() <= PRINTED


def test_a_spinning_root_is_written_without_360_degree_jumps():
    text, values = synthetic_text(spin=True)
    clip = parse_bvh(text)
    clip.meta.pop("source_channels")
    _, _, v = motion(format_bvh(clip))
    assert np.abs(np.diff(v[:, 3])).max() < 25  # 540 deg over 29 steps: ~18.6 deg a frame
    assert v[-1, 3] - v[0, 3] == pytest.approx(540, abs=1e-4)


def test_write_bvh_is_atomic(tmp_path):
    clip = read_bvh(FIXTURES[0])
    target = tmp_path / "out.bvh"
    write_bvh(target, clip)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bvh"]
    assert np.abs(motion(target.read_text())[2] - motion(FIXTURES[0].read_text())[2]).max() <= PRINTED
    before = target.read_bytes()
    with pytest.raises(IndexError):  # a reference of the wrong shape fails while formatting
        write_bvh(target, clip, reference=np.zeros((3, 7)))
    assert target.read_bytes() == before  # the old file is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bvh"]  # and no temporary file is left
    write_bvh(target, clip.slice(0, 5))  # overwriting in place works
    assert motion(target.read_text())[0] == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bvh"]


# ---------------------------------------------------------------- bad input


def _motion_line(text, k):
    head, body = text.split("Frame Time:", 1)
    lines = body.split("\n")
    return head + "Frame Time:", lines, k + 1


def _edit_line(text, k, fn):
    head, lines, i = _motion_line(text, k)
    lines[i] = fn(lines[i].split())
    return head + "\n".join(lines)


BAD = {
    "truncated": (lambda t: t[: t.index("Frame Time:") + (len(t) - t.index("Frame Time:")) // 2],
                  ("truncated",)),
    "truncated_header": (lambda t: t[: t.index("MOTION") + 12], ("truncated", "Frame")),
    "number_missing": (lambda t: _edit_line(t, 5, lambda w: " ".join(w[:-1])), ("channel",)),
    "number_extra": (lambda t: _edit_line(t, 5, lambda w: " ".join(w + ["1.0"])), ("channel",)),
    "channels_fewer": (lambda t: t.replace("CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation",
                                           "CHANNELS 3 Zrotation Xrotation Yrotation", 1), ("channel",)),
    "channels_count_word": (lambda t: t.replace("CHANNELS 6", "CHANNELS six", 1), ("CHANNELS",)),
    "channels_no_count": (lambda t: t.replace("CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation"
                                              " Yrotation", "CHANNELS", 1), ("CHANNELS",)),
    "non_numeric": (lambda t: _edit_line(t, 7, lambda w: " ".join(w[:4] + ["abc"] + w[5:])), ("non-numeric", "abc")),
    "nan": (lambda t: _edit_line(t, 3, lambda w: " ".join(w[:9] + ["nan"] + w[10:])), ("NaN", "frame 3")),
    "inf": (lambda t: _edit_line(t, 3, lambda w: " ".join(w[:9] + ["-inf"] + w[10:])), ("infinite",)),
    "no_motion": (lambda t: t.split("MOTION")[0], ("MOTION",)),
    "empty": (lambda t: "", ("MOTION",)),
    "offset_short": (lambda t: t.replace("OFFSET 0.0 0.0 0.0", "OFFSET 0.0 0.0", 1), ("OFFSET",)),
    "offset_outside_joint": (lambda t: t.replace("ROOT joint_Root\n{", "OFFSET 0 0 0\nROOT joint_Root\n{", 1),
                             ("OFFSET",)),
    "frames_word": (lambda t: t.replace("Frames:", "Frames: many", 1), ("Frames",)),
    "no_frames": (lambda t: t[: t.index("MOTION")] + "MOTION\nFrames: 0\nFrame Time: 0.0333333\n", ("no frames",)),
    "unclosed_joint": (lambda t: t.replace("}\nMOTION", "MOTION", 1), ("closed",)),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_file_raises_bvh_error_naming_file_and_problem(case, tmp_path):
    mutate, words = BAD[case]
    source = FIXTURES[0].read_text()
    bad = mutate(source)
    assert bad != source, "the mutation did not change the file"
    path = tmp_path / f"{case}.bvh"
    path.write_text(bad)
    with pytest.raises(BVHError) as info:  # BVHError, never a bare IndexError/ValueError
        read_bvh(path)
    msg = str(info.value)
    assert msg.startswith(str(path))
    for word in words:
        assert word.lower() in msg.lower(), msg


def test_missing_file_raises_bvh_error(tmp_path):
    with pytest.raises(BVHError, match="cannot read"):
        read_bvh(tmp_path / "nowhere.bvh")


def test_a_frames_header_shorter_than_its_motion_lines_names_both_counts(tmp_path):
    """'Frames: 30' over 61 whole lines of motion: the header is the mistake, and the message says how many
    lines there are and what to write (not 'truncated file or wrong channel count')."""
    text = Path(__file__).with_name("fixtures").joinpath("walk_short.bvh")
    src = next(p for p in (text, *sorted(Path(__file__).parent.glob("fixtures/**/*.bvh"))) if p.is_file())
    head, motion = src.read_text().split("MOTION", 1)
    lines = [ln for ln in motion.strip().splitlines()[2:] if ln.strip()]
    if len(lines) < 61:
        lines = (lines * (61 // len(lines) + 1))[:61]
    bad = tmp_path / "header.bvh"
    bad.write_text(head + "MOTION\nFrames: 30\nFrame Time: 0.0333333\n" + "\n".join(lines[:61]) + "\n")
    with pytest.raises(BVHError) as err:
        read_bvh(bad)
    msg = str(err.value)
    assert "'Frames: 30'" in msg and "61 lines of motion" in msg and "write 'Frames: 61'" in msg
    assert "truncated" not in msg
    assert bad.read_text().count("\n") > 61, "the file is left as it was"
