"""Fuzz the BVH reader: any text or bytes give a named BVHError or a valid clip, never another
exception, and never more than a few MB of memory (bounded in time: about 10 s in all)."""
from __future__ import annotations

import tracemalloc

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.formats.bvh import BVHError, parse_bvh, read_bvh

SMALL = """HIERARCHY
ROOT Hips
{
\tOFFSET 0 0 0
\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
\tJOINT Spine
\t{
\t\tOFFSET 0 10 0
\t\tCHANNELS 3 Zrotation Xrotation Yrotation
\t\tEnd Site
\t\t{
\t\t\tOFFSET 0 5 0
\t\t}
\t}
}
MOTION
Frames: 3
Frame Time: 0.0333333
0 90 0 0 0 0 10 20 30
1 90 0 5 0 0 11 21 31
2 90 0 10 0 0 12 22 32
"""
TOKENS = ["HIERARCHY", "ROOT", "JOINT", "End Site", "OFFSET", "CHANNELS", "MOTION", "Frames:", "Frame Time:",
          "{", "}", "\n", "\t", " ", "0", "1", "-1", "3", "6", "1e308", "-1e308", "1e999", "nan", "inf", "-inf",
          "0.0333", "Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation", "\ufeff",
          "\x00", "é", "99999999999999999999", "0x10", ".", "e", "-"]
LIMIT_MB = 32
FUZZ = settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck), database=None)


def _check(text: str):
    """Parse under tracemalloc: a BVHError or a clip whose arrays agree with each other."""
    tracemalloc.start()
    try:
        try:
            clip = parse_bvh(text, "fuzz.bvh")
        except BVHError as e:
            assert str(e).startswith("fuzz.bvh: ") and e.problem
            return
        finally:
            peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < LIMIT_MB * 2 ** 20, f"{peak / 2 ** 20:.1f} MB for a {len(text)}-character file"
    f, j = clip.num_frames, clip.skeleton.num_joints
    assert f >= 1 and j >= 1
    assert clip.rotations.shape == (f, j, 4) and clip.positions.shape == (f, j, 3)
    assert np.isfinite(clip.rotations).all() and np.isfinite(clip.positions).all()
    assert np.isfinite(clip.frame_time) and clip.frame_time > 0


@st.composite
def mutated(draw):
    """The small file with a few token-level edits: insert, delete or replace."""
    parts = SMALL.split(" ")
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(parts) - 1))
        op = draw(st.sampled_from(["insert", "delete", "replace", "cut"]))
        tok = draw(st.sampled_from(TOKENS))
        if op == "insert":
            parts.insert(i, tok)
        elif op == "delete" and len(parts) > 1:
            parts.pop(i)
        elif op == "replace":
            parts[i] = tok
        else:
            parts = parts[:i + 1]
    return " ".join(parts)


@FUZZ
@given(mutated())
def test_mutated_files(text):
    _check(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=60).map(" ".join))
def test_token_soup(text):
    _check(text)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.text(max_size=400))
def test_any_text(text):
    _check(text)
    _check(SMALL[:len(SMALL) // 2] + text)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.binary(max_size=300))
def test_any_bytes_from_a_file(tmp_path_factory, data):
    p = tmp_path_factory.mktemp("fuzz") / "x.bvh"
    p.write_bytes(SMALL.encode()[:200] + data)
    try:
        clip = read_bvh(p)
    except BVHError as e:
        assert str(e).startswith(f"{p}: ")
    else:
        assert np.isfinite(clip.rotations).all()


def test_the_seed_file_is_valid():
    clip = parse_bvh(SMALL, "small.bvh")
    assert clip.num_frames == 3 and clip.skeleton.names == ("Hips", "Spine")


def test_big_frame_count_is_refused_without_allocating():
    text = SMALL.replace("Frames: 3", "Frames: 1000000000000")
    tracemalloc.start()
    try:
        try:
            parse_bvh(text, "big.bvh")
        except BVHError as e:
            assert "1000000000000 frames" in str(e)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 ** 20
