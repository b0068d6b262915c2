"""An interrupted batch resumes where it stopped; --in-place keeps a backup; a crashed worker
fails one file only."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from addon_helpers import ROOT
from batch_helpers import by_name, copy_inputs, load_report, run_batch, shared_blends, temp_leftovers

pytestmark = pytest.mark.blender
NAMES = ["run", "turn", "wave", "walk"]


@pytest.fixture(scope="module")
def blends():
    return shared_blends()


def start(*args, delay: float) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1", SPLINETWEEN_BATCH_TEST_DELAY=str(delay))
    return subprocess.Popen([sys.executable, "-m", "blender_addon.batch", *map(str, args)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(proc: subprocess.Popen, cond, timeout: float = 120.0):
    """Until ``cond()``; fails with the batch's output when it ends first or takes too long."""
    t = time.monotonic()
    while not cond():
        if proc.poll() is not None or time.monotonic() - t > timeout:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the batch ended or hung (code {proc.returncode}):\n{out}\n{err}")
        time.sleep(0.02)


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def test_killed_run_finishes_the_remainder_only(blends, tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    copy_inputs(blends, NAMES, src)
    args = ("inbetween", src, "--out-dir", out, "--jobs", 1, "--device", "cpu")
    proc = start(*args, delay=0.8)  # every file takes at least 0.8 s
    wait_for(proc, lambda: len(list(out.glob("*.done"))) >= 1)
    proc.send_signal(signal.SIGKILL)  # no clean-up of any kind
    proc.communicate(timeout=60)
    done = sorted(p.name for p in out.glob("*.done"))
    assert len(done) == 1
    first = out / done[0][: -len(".done")]
    first_stat = first.stat()
    time.sleep(1.0)  # the worker died with the batch: nothing more appears
    assert sorted(p.name for p in out.glob("*.done")) == done
    assert sorted(p.name for p in out.glob("*.blend")) == [first.name]

    r = run_batch(*args)
    assert r.returncode == 0, r.stderr
    files = by_name(load_report(out))
    assert [n for n, f in files.items() if f["status"] == "skipped"] == [first.name]
    assert sum(f["status"] == "ok" for f in files.values()) == len(NAMES) - 1
    assert first.stat().st_mtime_ns == first_stat.st_mtime_ns  # not written again
    assert sorted(p.name for p in out.glob("*.blend")) == sorted(f"{n}.blend" for n in NAMES)
    assert not temp_leftovers(out)

    again = run_batch(*args)  # all done: no worker is even started
    assert again.returncode == 0 and f"0 ok, {len(NAMES)} skipped" in again.stdout


def test_in_place_keeps_a_blend1_backup(blends, tmp_path):
    (path,) = copy_inputs(blends, ["run"], tmp_path)
    original = path.read_bytes()
    r = run_batch("inbetween", path, "--in-place", "--jobs", 1, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "run.blend1").read_bytes() == original
    assert path.read_bytes() != original and (tmp_path / "run.blend.done").exists()
    report = load_report(tmp_path)  # in place: next to the inputs
    (entry,) = report["files"]
    assert entry["backup"] == str(tmp_path / "run.blend1") and entry["frames_written"] > 0
    assert not temp_leftovers(tmp_path)
    r = run_batch("inbetween", path, "--in-place", "--jobs", 1)
    assert r.returncode == 0 and "0 ok, 1 skipped" in r.stdout


def test_a_crashed_worker_fails_its_file_only(blends, tmp_path):
    src, out = tmp_path / "in", tmp_path / "out"
    copy_inputs(blends, NAMES[:3], src)
    proc = start("inbetween", src, "--out-dir", out, "--jobs", 1, "--device", "cpu", delay=1.5)
    wait_for(proc, lambda: len(list(out.glob("*.done"))) >= 1)
    time.sleep(0.3)  # the worker has reported the first file and sleeps at the start of the second
    (victim,) = children(proc.pid)
    os.kill(victim, signal.SIGKILL)  # as if Blender crashed on that file
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    report = load_report(out)
    files = report["files"]
    (log,) = report["worker_logs"]  # the dead worker's log is kept beside the report
    assert Path(log).parent.parent == out and Path(log).exists()
    failed = [f for f in files if f["status"] == "failed"]
    assert len(failed) == 1 and "killed by signal 9" in failed[0]["errors"][0], failed
    assert sum(f["status"] == "ok" for f in files) == 2  # a new worker took the third file
    assert len({f["worker"] for f in files if f["status"] == "ok"}) == 2
    assert not (out / Path(failed[0]["input"]).name).exists()


def test_a_killed_runs_half_written_report_is_swept_by_the_next_run(tmp_path):
    import subprocess
    import sys as _sys

    from blender_addon.batch import safe_io
    dead = subprocess.run([_sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    left = tmp_path / f".splinetween-inbetween-20260101-000000.json{safe_io.TEMP_TAG}{dead}.tmp"
    mine = tmp_path / f".splinetween-inbetween-20260101-000001.json{safe_io.TEMP_TAG}{os.getpid()}.tmp"
    other = tmp_path / f".shot.blend{safe_io.TEMP_TAG}{dead}.blend"  # an output's temp: not a report's
    for p in (left, mine, other):
        p.write_text("{")
    assert safe_io.remove_dead_report_temps(tmp_path) == [left]
    assert not left.exists() and mine.exists() and other.exists()
