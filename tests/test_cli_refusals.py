"""python -m backend with bad inputs (issue 17): inputs never written over, same names kept apart,
write failures and NaN per file, bounded super-sampling, Ctrl+C, BVH header defects."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from backend.formats.bvh import BVHError, read_bvh
from tests.conftest import EXAMPLES, ROOT, shipped_checkpoint
from tests.test_cli import run

CLIP = EXAMPLES[1]
N = read_bvh(CLIP).num_frames


def _files(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def _with_line(src, tmp_path, name, edit):
    """A copy of ``src`` whose motion lines go through ``edit(lines) -> lines``."""
    head, motion = src.read_text().split("MOTION\n")
    lines = motion.splitlines()
    out = tmp_path / name
    out.write_text(head + "MOTION\n" + "\n".join(edit(lines)) + "\n")
    return out


def test_never_writes_over_an_input(tiny_inbetween, tmp_path):
    x = tmp_path / "x.bvh"
    x.write_bytes(CLIP.read_bytes())
    r = run("inbetween", x, "--every", "15", "--out-dir", tmp_path, "--checkpoint", tiny_inbetween)
    assert r.returncode == 1
    assert f"{x}: the output {x} is this input file; nothing was written over it (give another --out-dir)" in r.stderr
    assert x.read_bytes() == CLIP.read_bytes() and _files(tmp_path) == ["x.bvh"]


def test_same_name_inputs_from_two_folders_are_refused_both_named(tiny_checkpoint, tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    a, b, y = tmp_path / "a" / "x.bvh", tmp_path / "b" / "x.bvh", tmp_path / "y.bvh"
    for p in (a, b, y):
        p.write_bytes(CLIP.read_bytes())
    out = tmp_path / "O"
    r = run("reconstruct", a, b, y, "--out-dir", out, "--checkpoint", tiny_checkpoint)
    assert r.returncode == 1, r.stderr
    assert f"{a}: {a} and {b} would both be written to {out / 'x.bvh'}" in r.stderr
    assert f"{b}: {b} and {a} would both be written to {out / 'x.bvh'}" in r.stderr
    assert "1 reconstructed, 2 failed" in r.stderr
    assert _files(out) == ["y.bvh"]


def test_an_output_path_that_is_a_folder_fails_that_file_alone(tiny_checkpoint, tmp_path):
    out = tmp_path / "O"
    (out / CLIP.name).mkdir(parents=True)
    r = run("reconstruct", CLIP, EXAMPLES[2], "--out-dir", out, "--checkpoint", tiny_checkpoint)
    assert r.returncode == 1
    assert f"{CLIP}: cannot write {out / CLIP.name} (it is a folder)" in r.stderr
    assert "1 reconstructed, 1 failed" in r.stderr and "Traceback" not in r.stderr
    assert read_bvh(out / EXAMPLES[2].name).num_frames == read_bvh(EXAMPLES[2]).num_frames
    assert not [p for p in out.iterdir() if ".tmp" in p.name]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_fails_each_file_with_its_name(tiny_checkpoint, tmp_path):
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        r = run("reconstruct", CLIP, EXAMPLES[2], "--out-dir", out, "--checkpoint", tiny_checkpoint)
    finally:
        out.chmod(0o755)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    for src in (CLIP, EXAMPLES[2]):
        assert f"{src}: cannot write {out / src.name}" in r.stderr


needs_shipped = pytest.mark.skipif(shipped_checkpoint() is None, reason="needs the shipped autoencoder")


@needs_shipped
@pytest.mark.parametrize("args, message", [
    (["--amplify", "nan"], "--amplify nan: give a finite factor"),
    (["--amplify", "inf"], "--amplify inf: give a finite factor"),
    (["--pc", "1=nan"], "--pc '1=nan': S must be a finite number"),
])
def test_edit_refuses_non_finite_amounts(tmp_path, args, message):
    r = run("edit", CLIP, *args, "--out-dir", tmp_path / "O")
    assert r.returncode == 2 and message in r.stderr
    assert _files(tmp_path / "O") == []


@needs_shipped
def test_edit_whose_result_overflows_writes_nothing(tmp_path):
    r = run("edit", CLIP, EXAMPLES[2], "--amplify", "1e300", "--out-dir", tmp_path / "O")
    assert r.returncode == 1
    assert f"{CLIP}: the result has NaN or infinite values" in r.stderr
    assert _files(tmp_path / "O") == []


def test_supersample_is_bounded_before_allocating(tiny_checkpoint, tmp_path):
    r = run("edit", CLIP, "--supersample", "2000", "--out-dir", tmp_path / "O", "--checkpoint", tiny_checkpoint)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert (f"{CLIP}: --supersample 2000: a 16-frame segment would decode to 30001 frames; the limit is 2048 "
            "frames per segment (use --supersample 136 or less)") in r.stderr
    assert _files(tmp_path / "O") == []
    ok = run("edit", CLIP, "--supersample", "3", "--out-dir", tmp_path / "P", "--checkpoint", tiny_checkpoint)
    assert ok.returncode == 0, ok.stderr
    assert read_bvh(tmp_path / "P" / CLIP.name).num_frames == (N - 1) * 3 + 1


def test_empty_keys_is_a_clear_error(tiny_inbetween, tmp_path):
    r = run("inbetween", CLIP, "--keys", "", "--out-dir", tmp_path / "O", "--checkpoint", tiny_inbetween)
    assert r.returncode == 2 and "TypeError" not in r.stderr
    assert "--keys '': no frames given; list at least two 0-based key frames" in r.stderr


def _nan_frame(lines, frame):
    lines = list(lines)
    vals = lines[2 + frame].split()
    vals[4] = "nan"
    lines[2 + frame] = " ".join(vals)
    return lines


def test_nan_on_a_frame_that_is_not_a_key_is_never_read(tiny_inbetween, tmp_path):
    src = _with_line(CLIP, tmp_path, "holes.bvh", lambda ls: _nan_frame(_nan_frame(ls, 3), 25))
    out = tmp_path / "O"
    r = run("inbetween", src, "--every", "10", "--out-dir", out, "--checkpoint", tiny_inbetween)
    assert r.returncode == 0, r.stderr
    res, ref = read_bvh(out / "holes.bvh"), read_bvh(CLIP)
    assert np.isfinite(res.rotations).all() and res.num_frames == ref.num_frames
    keys = list(range(0, N, 10)) + [N - 1]
    assert np.abs(res.meta["source_channels"][keys] - ref.meta["source_channels"][keys]).max() <= 1e-4
    # a key that is NaN, and a NaN frame outside the keys (copied as it is) are refused, named
    r = run("inbetween", src, "--keys", "0,10,20,25,35", "--out-dir", tmp_path / "P", "--checkpoint", tiny_inbetween)
    assert r.returncode == 1 and "NaN or infinite values in frame(s) [25] (key poses)" in r.stderr
    r = run("inbetween", src, "--keys", "10,20,30", "--out-dir", tmp_path / "P", "--checkpoint", tiny_inbetween)
    assert r.returncode == 1 and "frame(s) [3], outside the keys 10..30" in r.stderr
    assert _files(tmp_path / "P") == []
    with pytest.raises(BVHError, match=r"holes.bvh: NaN or infinite value in frame 3"):
        read_bvh(src)  # everything else still refuses NaN


@pytest.mark.parametrize("value", ["nan", "0", "-1", "inf"])
def test_frame_time_must_be_positive(tmp_path, tiny_checkpoint, value):
    src = tmp_path / "ft.bvh"
    src.write_text(_frame_time(CLIP.read_text(), value))
    with pytest.raises(BVHError, match=rf"ft.bvh: 'Frame Time: {value}' must be a positive number of seconds"):
        read_bvh(src)
    r = run("reconstruct", src, "--out-dir", tmp_path / "O", "--checkpoint", tiny_checkpoint)
    assert r.returncode == 1 and "must be a positive number of seconds" in r.stderr
    assert _files(tmp_path / "O") == []


def _frame_time(text, value):
    lines = text.split("\n")
    i = next(k for k, line in enumerate(lines) if line.startswith("Frame Time"))
    lines[i] = f"Frame Time: {value}"
    return "\n".join(lines)


def test_a_byte_order_mark_is_read(tmp_path):
    src = tmp_path / "bom.bvh"
    src.write_bytes(b"\xef\xbb\xbf" + CLIP.read_bytes())
    a, b = read_bvh(src), read_bvh(CLIP)
    assert a.skeleton.names == b.skeleton.names and np.array_equal(a.rotations, b.rotations)


def test_ctrl_c_stops_promptly_with_130_and_no_half_written_file(tmp_path):
    if shipped_checkpoint() is None:
        pytest.skip("needs the shipped autoencoder")
    inputs = []
    for i in range(12):
        p = tmp_path / f"f{i:02d}.bvh"
        p.write_bytes(CLIP.read_bytes())
        inputs.append(p)
    out = tmp_path / "O"
    proc = subprocess.Popen([sys.executable, "-m", "backend", "edit", *inputs, "--supersample", "30",
                             "--out-dir", out], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "PYTHONUNBUFFERED": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as in a terminal
    first = proc.stdout.readline()  # the first file is written: the run is in the middle of its work
    assert first.startswith("wrote "), proc.stderr.read()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "interrupted (Ctrl+C): stopped" in err and "Traceback" not in err
    names = _files(out)
    assert 1 <= len(names) < 12 and not [n for n in names if n.startswith(".")]
    for n in names:  # every file there is complete
        assert read_bvh(out / n).num_frames == (N - 1) * 30 + 1


def test_ctrl_c_during_a_long_native_call_exits_130_and_removes_temporaries(tmp_path):
    """The main thread stuck in a call that does not return to Python (here a sleep) while numpy's and
    torch's threads exist: the watcher removes this process's temporary files and exits with 130
    after its grace second (a signal delivered to a worker thread used to wait for the main thread)."""
    code = ("import os, sys, time, pathlib\n"
            "from backend.cli import interrupts\n"
            "interrupts.install()\n"  # as python -m backend does, before numpy and torch start threads
            "import numpy, torch\n"
            "d = pathlib.Path(sys.argv[1]); interrupts.watch(d)\n"
            "(d / f'.x.bvh.tmp{os.getpid()}').write_text('half')\n"
            # 'ready' comes from a timer thread once the main thread is inside the sleep: a signal
            # that arrived while it still ran Python would be an ordinary KeyboardInterrupt
            "import threading; threading.Timer(0.5, print, ('ready',), {'flush': True}).start()\n"
            "time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    assert len(list(tmp_path.glob(".x.bvh.tmp*"))) == 1
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)  # long before the sleep's end: it did not wait for the main thread
    assert proc.returncode == 130
    assert "interrupted: stopped" in err and not list(tmp_path.iterdir())


def test_another_skeleton_is_refused_with_the_command_that_maps_it(tiny_inbetween, tmp_path):
    other = tmp_path / "mannequin.bvh"
    other.write_text(CLIP.read_text().replace("Hips", "pelvis"))
    r = run("inbetween", other, "--every", "15", "--out-dir", tmp_path / "out", "--checkpoint", tiny_inbetween)
    assert r.returncode == 1
    assert "missing joints: Hips" in r.stderr and "extra joints: pelvis" in r.stderr
    assert f"python -m blender_addon.batch inbetween {other} --out-dir DIR" in r.stderr and "--bone-map" in r.stderr
    assert _files(tmp_path / "out") == []
