"""python -m backend as a user runs it: outputs, exit codes, messages."""
import subprocess
import sys

import numpy as np
import pytest

from backend.formats.bvh import read_bvh
from tests.conftest import EXAMPLES, ROOT, TEST_CLIP


def run(*args):
    return subprocess.run([sys.executable, "-m", "backend", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})


def header(path):
    """The hierarchy as parsed: names, parents, offsets, channels, End Sites."""
    sk = read_bvh(path).skeleton
    return (sk.names, sk.parents.tolist(), sk.offsets.tolist(), sk.channels, sk.end_sites)


@pytest.mark.parametrize("cmd", ["reconstruct", "inbetween", "info"])
def test_help(cmd):
    r = run(cmd, "--help")
    assert r.returncode == 0 and "usage: python -m backend " + cmd in r.stdout


def test_inbetween_one_bad_file_fails_alone(tiny_inbetween, tmp_path):
    bad = tmp_path / "broken.bvh"
    bad.write_text(TEST_CLIP.read_text()[:5000])
    short = tmp_path / "short.bvh"
    text = TEST_CLIP.read_text()
    head, motion = text.split("MOTION")
    lines = motion.strip().splitlines()
    short.write_text(head + "MOTION\nFrames:\t1\n" + lines[1] + "\n" + lines[2] + "\n")
    out = tmp_path / "out"
    r = run("inbetween", EXAMPLES[1], bad, short, TEST_CLIP, "--every", "10", "--out-dir", out,
            "--checkpoint", tiny_inbetween, "--device", "cpu")
    assert r.returncode == 1
    assert f"{bad}: " in r.stderr and "truncated" in r.stderr
    assert f"{short}: " in r.stderr and "1 frame" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted([EXAMPLES[1].name, TEST_CLIP.name])
    for src in (EXAMPLES[1], TEST_CLIP):
        res = out / src.name
        assert header(res) == header(src)  # same hierarchy and channel layout
        a, b = read_bvh(src), read_bvh(res)
        assert b.num_frames == a.num_frames and b.frame_time == pytest.approx(a.frame_time, rel=1e-6)
        keys = list(range(0, a.num_frames, 10)) + [a.num_frames - 1]
        assert np.abs(b.meta["source_channels"][keys] - a.meta["source_channels"][keys]).max() <= 1e-4


def test_inbetween_keys_list_and_errors(tiny_inbetween, tmp_path):
    out = tmp_path / "o"
    ok = run("inbetween", EXAMPLES[1], "--keys", "0,10,20,30,40,50,60,69", "--out-dir", out,
             "--checkpoint", tiny_inbetween)
    assert ok.returncode == 0, ok.stderr
    a, b = read_bvh(EXAMPLES[1]), read_bvh(out / EXAMPLES[1].name)
    kept = [0, 10, 20, 30, 40, 50, 60] + list(range(69, a.num_frames))  # the keys, and the tail as it was
    assert a.num_frames > 75 and np.abs(b.meta["source_channels"][kept] - a.meta["source_channels"][kept]).max() <= 1e-4
    for keys, msg in [("0,20,10,69", "increasing order"), ("0", "at least two keys"),
                      ("0,10,x", "expected comma-separated frame numbers")]:
        r = run("inbetween", EXAMPLES[1], "--keys", keys, "--out-dir", tmp_path / "p",
                "--checkpoint", tiny_inbetween)
        assert r.returncode != 0 and msg in r.stderr
    assert not (tmp_path / "p" / EXAMPLES[1].name).exists()


def test_inbetween_refuses_foreign_skeleton(tiny_inbetween, tmp_path):
    odd = tmp_path / "odd_rig.bvh"
    odd.write_text(TEST_CLIP.read_text().replace("Head", "Skull"))
    r = run("inbetween", odd, "--every", "10", "--out-dir", tmp_path / "o", "--checkpoint", tiny_inbetween)
    assert r.returncode == 1 and "missing joints: Head" in r.stderr and "extra joints: Skull" in r.stderr


def test_reconstruct_keeps_layout(tiny_checkpoint, tmp_path):
    r = run("reconstruct", *EXAMPLES[:2], "--out-dir", tmp_path, "--checkpoint", tiny_checkpoint)
    assert r.returncode == 0, r.stderr
    for src in EXAMPLES[:2]:
        assert header(tmp_path / src.name) == header(src)
        assert read_bvh(tmp_path / src.name).num_frames == read_bvh(src).num_frames


def test_info_and_bad_checkpoint(tiny_checkpoint, tmp_path):
    r = run("info", tiny_checkpoint)
    assert r.returncode == 0 and "22 joints" in r.stdout and "d=8" in r.stdout
    fake = tmp_path / "fake.json"
    fake.write_text(tiny_checkpoint.read_text().replace("tiny_autoencoder.safetensors", "fake.safetensors"))
    (tmp_path / "fake.safetensors").write_bytes(b"\x80\x04junk")
    r = run("reconstruct", EXAMPLES[0], "--out-dir", tmp_path, "--checkpoint", fake)
    assert r.returncode == 2 and "pickle" in r.stderr and "Traceback" not in r.stderr
