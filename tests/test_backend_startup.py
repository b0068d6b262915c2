"""The backend process's start has its own allowance, apart from the request timeout: a backend that
hangs before its handshake is stopped when the allowance ends (not after five minutes), the message
says what the interpreter printed, and a waiting start can be cancelled (Esc in the UI), its whole
process group stopped."""
from __future__ import annotations

import os
import stat
import sys

import pytest

from blender_addon import bridge

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX shell wrappers")


@pytest.fixture(autouse=True)
def logs_in_tmp(tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    yield
    bridge.shutdown()


def slow_wrapper(tmp_path, seconds: int) -> tuple[str, object]:
    """An interpreter that is a wrapper script: it says so on stderr, writes its own pid, then sleeps in a
    child before it would start Python (a network drive, an environment manager resolving packages)."""
    pid_file = tmp_path / "wrapper.pid"
    path = tmp_path / "python-wrapper"
    path.write_text(f'#!/bin/sh\necho $$ > "{pid_file}"\necho "resolving the environment..." >&2\n'
                    f'sleep {seconds}\nexec "{sys.executable}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), pid_file


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def settings(interpreter: str, startup: float, timeout: float = 120.0) -> bridge.BackendSettings:
    return bridge.BackendSettings(mode="SUBPROCESS", interpreter=interpreter, timeout=timeout, startup=startup)


def test_a_hanging_start_ends_at_the_allowance_with_what_it_printed(tmp_path):
    """Start-up allowance 2 s, request timeout 120 s: the start is stopped at the allowance, and the
    message names the allowance, its preference and the interpreter's own words."""
    wrapper, pid_file = slow_wrapper(tmp_path, 600)
    with pytest.raises(bridge.BridgeError) as err:
        bridge.start(settings(wrapper, startup=2.0))
    msg = str(err.value)
    assert "did not start within 2 s" in msg and "Start-up Allowance" in msg
    assert "it printed: resolving the environment..." in msg
    assert not alive(int(pid_file.read_text())), "the hanging wrapper outlived its allowance"
    assert bridge.backend_process() is None  # nothing half-started is kept


def test_a_waiting_start_can_be_cancelled(tmp_path):
    """The UI's clock is called while the process starts; raising StartCancelled (Esc) stops the start
    and the wrapper with it, long before the allowance."""
    wrapper, pid_file = slow_wrapper(tmp_path, 600)
    seen: list[float] = []

    def waiting(elapsed: float) -> None:
        seen.append(elapsed)
        if len(seen) == 5:
            raise bridge.StartCancelled(f"the start was cancelled after {elapsed:.1f} s")

    with pytest.raises(bridge.StartCancelled, match="cancelled after .* the backend process .* was stopped"):
        bridge.start(settings(wrapper, startup=bridge.MAX_STARTUP_SECONDS), waiting)
    assert len(seen) == 5 and seen == sorted(seen), "the clock runs forward, once per slice"
    assert not alive(int(pid_file.read_text()))


def test_a_start_within_the_allowance_answers_and_the_request_timeout_is_its_own(tmp_path):
    """A wrapper that sleeps 1 s, then runs the backend: within a 120 s allowance it starts, the clock
    was called meanwhile, and the warm process answers requests; no second start is needed after it."""
    wrapper, _ = slow_wrapper(tmp_path, 1)
    seen: list[float] = []
    s = settings(wrapper, startup=120.0, timeout=30.0)
    proc = bridge.start(s, seen.append)
    assert proc.alive() and proc.hello.get("protocol") == bridge._service().PROTOCOL
    assert seen and seen[-1] >= 1.0, "the clock was called while the wrapper slept"
    assert not bridge.needs_start(s)
    reply, _ = bridge.request(s, {"op": "hello"}, {})
    assert reply["pid"] == proc.hello["pid"]
    assert bridge.backend_process() is proc


def test_needs_start_only_for_the_backend_process(tmp_path):
    """Built-in and in-process requests never wait for a process start; a changed interpreter does."""
    assert not bridge.needs_start(bridge.BackendSettings(mode="BUILTIN"))
    assert not bridge.needs_start(bridge.BackendSettings(mode="IN_PROCESS"))
    assert bridge.needs_start(settings(sys.executable, startup=60.0))
