"""When two runs meet (issue 45): two real processes on one input or one --out-dir.  The second run
starts once the first holds its claim (the lock file beside the output appears), so they always
overlap; each output is written by one run only, nothing of the other's is removed, every report
is kept, and a backup is never written over."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import slow_batch
from addon_helpers import ROOT
from batch_helpers import EXAMPLES, by_name, copy_inputs, run_batch, sha256, shared_blends, temp_leftovers

LOCK = ".splinetween-lock"


def start(*args, delay: float = 0.0) -> subprocess.Popen:
    """A batch run; with ``delay`` each of its files takes at least that long (tests/slow_batch.py)."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = slow_batch.command(delay, *args) if delay else [sys.executable, "-m", "blender_addon.batch", *map(str, args)]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_lock(proc: subprocess.Popen, folder: Path, timeout: float = 120.0) -> None:
    """The barrier: until ``proc`` holds a claim in ``folder``."""
    t = time.monotonic()
    while not list(folder.glob(f".*{LOCK}")):
        if proc.poll() is not None or time.monotonic() - t > timeout:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the first run ended before it claimed anything (code {proc.returncode}):\n{out}\n{err}")
        time.sleep(0.01)


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out, err


def reports(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("splinetween-inbetween-*.json"))]


def holder_process(dest: Path) -> subprocess.Popen:
    """Another process that claims ``dest`` (as a run does) and holds it until its stdin closes."""
    code = ("import sys; from backend.formats import atomic\n"
            f"c = atomic.claim({str(dest)!r}, atomic.owner('python -m backend inbetween'))\n"
            "print('held', flush=True); sys.stdin.read(); c.release()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.mark.blender
def test_two_in_place_runs_on_one_blend_write_it_once_and_keep_the_original(tmp_path):
    (path,) = copy_inputs(shared_blends(), ["walk"], tmp_path)
    original = path.read_bytes()
    args = ("inbetween", path, "--in-place", "--jobs", 1, "--device", "cpu")
    first = start(*args, delay=3.0)  # it holds walk.blend while its worker starts and 3 s longer
    wait_for_lock(first, tmp_path)
    second = start(*args)
    (rc1, out1, err1), (rc2, out2, err2) = finish(first), finish(second)
    assert rc1 == 0 and "1 ok, 0 failed" in out1, out1 + err1
    assert rc2 == 0 and "0 ok, 1 skipped (already done), 0 failed" in out2, out2 + err2
    assert f"waiting: {path} is being written by another run (process {first.pid}" in err2

    done, skipped = sorted(reports(tmp_path), key=lambda r: r["summary"]["skipped"])
    assert done["pid"] == first.pid and skipped["pid"] == second.pid and done["run"] != skipped["run"]
    (entry,) = done["files"]
    assert entry["backup"] == str(tmp_path / "walk.blend1")  # the message names where the original is
    assert (tmp_path / "walk.blend1").read_bytes() == original  # byte for byte
    assert not (tmp_path / "walk.blend2").exists()  # the second run made no backup of the processed file
    (other,) = skipped["files"]
    assert other["status"] == "skipped" and f"done meanwhile by another run (process {first.pid}" in other["warnings"][0]

    assert path.read_bytes() != original and entry["frames_written"] > 0
    r = run_batch("info", path, "--json")  # the output opens in Blender, its rig keyed on the filled frames
    assert r.returncode == 0, r.stderr
    (rig,) = json.loads(r.stdout)["files"][0]["objects"]
    assert rig["fits_model"] and rig["keys"] > entry["objects"][0]["frames_written"]
    assert not temp_leftovers(tmp_path) and not list(tmp_path.glob(f".*{LOCK}"))


@pytest.mark.blender
def test_a_forced_second_in_place_run_never_writes_over_the_first_backup(tmp_path):
    (path,) = copy_inputs(shared_blends(), ["run"], tmp_path)
    original = path.read_bytes()
    args = ("inbetween", path, "--in-place", "--jobs", 1, "--device", "cpu", "--force", "--quiet", "--no-editable")
    assert run_batch(*args).returncode == 0
    once = path.read_bytes()
    r = run_batch(*args, "--report", tmp_path / "second.json")
    assert r.returncode == 0, r.stdout + r.stderr
    (entry,) = json.loads((tmp_path / "second.json").read_text())["files"]
    assert (tmp_path / "run.blend1").read_bytes() == original  # still the file as it was before any run
    assert (tmp_path / "run.blend2").read_bytes() == once
    assert entry["backup"] == str(tmp_path / "run.blend2")
    assert f"{tmp_path / 'run.blend1'} already held another version of the file (kept as it is)" in entry["warnings"][0]


@pytest.mark.blender
def test_two_runs_into_one_out_dir_share_the_files_and_keep_both_reports(tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    inputs = [Path(shutil.copy2(p, src / f"c{i}.bvh")) for i, p in enumerate(EXAMPLES)]
    args = ("inbetween", *inputs, "--every", 15, "--out-dir", out, "--jobs", 2, "--device", "cpu")
    first = start(*args, delay=1.5)
    wait_for_lock(first, out)
    second = start(*args, delay=1.5)
    (rc1, out1, err1), (rc2, out2, err2) = finish(first), finish(second)
    assert rc1 == 0 and rc2 == 0, out1 + err1 + out2 + err2
    assert "splinetween-tmp" not in err1 + err2 and "nothing was written" not in err1 + err2

    runs = reports(out)
    assert len(runs) == 2 and {r["pid"] for r in runs} == {first.pid, second.pid}  # both reports exist
    assert all(r["state"] == "finished" and r["summary"]["failed"] == 0 for r in runs)
    ok = [name for r in runs for name, f in by_name(r).items() if f["status"] == "ok"]
    assert sorted(ok) == [p.name for p in inputs]  # each file written once, by one run or the other
    assert "waiting:" in err2 and f"(process {first.pid}" in err2

    from backend.formats.bvh import read_bvh
    for p in inputs:
        assert read_bvh(out / p.name).num_frames == read_bvh(p).num_frames
        assert (out / (p.name + ".done")).exists()
    assert not temp_leftovers(out) and not list(out.glob(f".*{LOCK}"))


def test_an_out_dir_that_is_the_inputs_folder_says_so(tmp_path):
    walk = tmp_path / "walk.bvh"
    shutil.copy2(EXAMPLES[2], walk)
    before = sha256(walk)
    r = run_batch("inbetween", walk, "--every", 15, "--out-dir", tmp_path)
    assert r.returncode == 2
    assert (f"{walk}: it lies inside --out-dir {tmp_path}, where this run writes its outputs, so it is not read as "
            f"an input (an output would replace it); give an --out-dir outside the inputs' folders, such as "
            f"--out-dir {tmp_path / 'out'}, or --in-place (which keeps a backup)") in r.stderr, r.stderr
    assert "no input matched" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.bvh"] and sha256(walk) == before


def test_a_report_name_another_run_writes_is_refused_naming_it(tmp_path):
    report = tmp_path / "shared.json"
    holder = holder_process(report)
    try:
        r = run_batch("inbetween", EXAMPLES[2], "--every", 15, "--out-dir", tmp_path / "out", "--report", report)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert r.returncode == 2
    assert (f"--report {report}: another run (process {holder.pid}, python -m backend inbetween, started ") in r.stderr
    assert "is writing that report; give another --report, or leave --report out" in r.stderr
    assert not (tmp_path / "out").exists() and not report.exists()


def test_the_backend_cli_refuses_an_output_another_run_holds(tiny_inbetween, tmp_path):
    out = tmp_path / "out"
    a, b = EXAMPLES[1], EXAMPLES[2]
    holder = holder_process(out / a.name)
    try:
        r = subprocess.run([sys.executable, "-m", "backend", "inbetween", a, b, "--every", "15", "--out-dir", out,
                            "--checkpoint", tiny_inbetween], cwd=ROOT, capture_output=True, text=True,
                           env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
        assert r.returncode == 1
        assert (f"{a}: the output {out / a.name} is being written by another run (process {holder.pid}, "
                "python -m backend inbetween, started ") in r.stderr
        assert "nothing was written for it (run it again when that run has finished, or give another --out-dir)" \
            in r.stderr
        assert "1 in-betweened, 1 failed" in r.stderr
        assert sorted(p.name for p in out.iterdir()) == [f".{a.name}{LOCK}", b.name]  # the other run's lock kept
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert sorted(p.name for p in out.iterdir()) == [b.name]


def test_a_live_runs_temporary_file_is_never_removed(tmp_path):
    """Another process's temporary file for the same output stays while it lives; a dead one's is removed."""
    from blender_addon.batch import safe_io
    dest = tmp_path / "c0.bvh"
    live = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        theirs = tmp_path / f".c0.bvh.splinetween-tmp-{live.pid}-abcdef.tmp"
        stale = tmp_path / f".c0.bvh.splinetween-tmp-{dead.pid}-abcdef.tmp"
        stale_marker = tmp_path / f".c0.bvh.done.splinetween-tmp-{dead.pid}-abcdef.tmp"
        other_output = tmp_path / f".c0.bvh.controls.json.splinetween-tmp-{dead.pid}-abcdef.tmp"
        for p in (theirs, stale, stale_marker, other_output):
            p.write_text("half")
        gone = safe_io.remove_stale_temps(dest)
        assert sorted(gone) == sorted([stale, stale_marker])
        assert theirs.exists() and other_output.exists()
    finally:
        live.stdin.close()
        live.wait()
