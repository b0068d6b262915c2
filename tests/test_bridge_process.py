"""The backend process as a user's machine runs it: a start-up that takes longer than the request
timeout, an interpreter that is a wrapper script (its child stopped with it), one that is too old,
one that floods its output and one that prints and exits.  Each ends in a message that says what
happened, and nothing waits on a child that is gone."""
from __future__ import annotations

import os
import stat
import sys
import threading
import time

import pytest

import slow_service
from addon_helpers import TEST_CLIP
from blender_addon import bridge

KEYS = [0, 15, 30]


@pytest.fixture(autouse=True)
def logs_in_tmp(tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    yield
    bridge.shutdown()


@pytest.fixture(scope="module")
def key_poses():
    from backend.formats.bvh import read_bvh
    clip = read_bvh(TEST_CLIP)
    return clip.skeleton.offsets, clip.rotations[KEYS], clip.positions[KEYS]


def script(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def call(interpreter: str, key_poses, timeout: float = 120.0):
    settings = bridge.BackendSettings(mode="SUBPROCESS", interpreter=interpreter, timeout=timeout)
    return bridge.inbetween(settings, *key_poses[:1], KEYS, *key_poses[1:])


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell wrapper (tests/slow_service.py)")
def test_the_handshake_has_its_own_allowance(tmp_path, key_poses):
    """A request timeout shorter than the backend's start: the start is not cut short (the hello has
    its own allowance), the slow request is, and the next call starts a fresh process that answers."""
    slow, delay = slow_service.interpreter(tmp_path, 30)
    with pytest.raises(bridge.BridgeError, match="did not answer within 0.01 s; it was stopped"):
        call(slow, key_poses, timeout=0.01)
    first = bridge.backend_process()
    assert first is not None and first.hello.get("protocol") == bridge._service().PROTOCOL  # it had started
    assert not first.alive()
    delay.write_text("0")  # the same interpreter, fast now
    rot, _ = call(slow, key_poses)
    assert rot.shape == (KEYS[-1] + 1, 22, 4)
    assert bridge.backend_process() is not first and bridge.backend_process().alive()


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell wrapper")
def test_a_wrapper_scripts_child_is_stopped_with_it(tmp_path, key_poses):
    """The interpreter is a shell script that runs Python as its child (not exec): on a timeout the
    whole group stops, and the call returns although the child would have slept for ten minutes."""
    delay = slow_service.delay_file(tmp_path, 600)  # (its child: a backend whose requests sleep)
    wrapper = script(tmp_path, "python-wrapper", f'{slow_service.command(delay)}\necho "wrapper ends"')
    done, errors = threading.Event(), []

    def run():
        try:
            call(wrapper, key_poses, timeout=1.0)
        except bridge.BridgeError as e:
            errors.append(str(e))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(300), "the call is still waiting on the wrapper's child"
    assert errors and "did not answer within 1 s; it was stopped" in errors[0]
    child = bridge.backend_process().hello["pid"]  # the Python the wrapper started
    assert child != bridge.backend_process().proc.pid
    for _ in range(600):
        if gone(child):
            break
        time.sleep(0.1)
    assert gone(child), "the wrapper's child outlived the timeout"


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell script")
def test_an_old_python_is_named(tmp_path, key_poses):
    """What Python 2.7 does with the backend (the version probe answers 2.7.18; the service fails on its
    first line): the message names the version needed and what the interpreter printed."""
    old = script(tmp_path, "python2.7", 'case "$1" in -c) printf "2.7.18"; exit 0;; esac\n'
                 'echo "  File \\"backend/service/__main__.py\\", line 1" >&2\n'
                 'echo "SyntaxError: future feature annotations is not defined" >&2\nexit 1')
    with pytest.raises(bridge.BridgeError) as e:
        call(old, key_poses)
    msg = str(e.value)
    assert "is Python 2.7.18; Python 3.11 or newer is needed" in msg
    assert "it printed: SyntaxError: future feature annotations is not defined" in msg


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell script")
def test_a_flood_on_the_output_is_named_not_our_kill(tmp_path, key_poses):
    flood = script(tmp_path, "flooding-python", "while :; do echo 'debug: starting up'; done")
    with pytest.raises(bridge.BridgeError) as e:
        call(flood, key_poses)
    msg = str(e.value)
    assert "wrote something that is not a Splinetween reply on its output" in msg and "b'debu'" in msg
    assert "signal" not in msg and "exited with code" not in msg


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell script")
def test_printing_and_exiting_is_named(tmp_path, key_poses):
    quits = script(tmp_path, "quitting-python", "echo 'this is not the backend' >&2\nexit 0")
    with pytest.raises(bridge.BridgeError, match=r"ended without answering \(exit code 0\): this is not the backend"):
        call(quits, key_poses)


def test_a_too_old_version_string_is_refused_and_a_new_one_is_not():
    assert "Python 3.11 or newer is needed" in bridge._too_old("3.6.15")
    assert bridge._too_old("3.11.9") == "" and bridge._too_old("3.13.0") == "" and bridge._too_old("") == ""
    assert bridge._probe_version(sys.executable) == "%d.%d.%d" % sys.version_info[:3]
