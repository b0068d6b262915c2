"""A batch worker: one Blender (the ``bpy`` module, or ``blender -b``) that loads the model once
and works through the files the coordinator sends it, one at a time.

Protocol: JSON, one message per line.  The coordinator writes to the worker's stdin
(``{"op": "init", ...}`` first, then ``{"op": "job", "job": {...}}`` and finally
``{"op": "exit"}``); the worker answers on its stdout with lines that start with :data:`TAG`
(``ready``, ``progress``, ``result``).  Anything else on stdout (Blender's banner, prints) is
ignored by the coordinator; everything the worker and Blender print goes to stderr, which the
coordinator sends to a log file.

Security: scripts in the files (registered text blocks, Python drivers) never run: auto-execution
is switched off in the preferences before any file is opened, every file is opened with
``use_scripts=False`` (and ``blender -b`` workers get ``--disable-autoexec``), and the worker
never evaluates the dependency graph or runs a text block.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import traceback

TAG = "@@splinetween-batch@@ "


class _Channel:
    def __init__(self, stream):
        self.stream = stream
        self.lock = threading.Lock()  # the model loader's thread sends too

    def send(self, event: str, **fields) -> None:
        line = TAG + json.dumps(dict(fields, event=event)) + "\n"
        with self.lock:
            self.stream.write(line)
            self.stream.flush()


def _die_with_parent() -> None:
    """Linux: be killed when the coordinator dies (SIGKILL included); elsewhere the closed stdin
    ends the worker after its current file."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent is already gone
        os._exit(1)


def secure(bpy) -> None:
    """No script from a file may run in this process, and nothing the batch sets in the
    preferences (this, the add-on's settings) is ever saved into the user's own."""
    bpy.context.preferences.use_preferences_save = False
    bpy.context.preferences.filepaths.use_scripts_auto_execute = False


def _load_model(state, which: str | None, channel: _Channel) -> None:
    """Load the model the command needs, once, and say so (a ``model`` event).  In-process it loads
    on a thread while the first file is opened and read (Blender releases the GIL while it evaluates
    a frame, and the engine cache makes the file's first request wait for this load rather than
    repeat it): importing PyTorch and loading the checkpoint were most of a worker's start-up.
    A backend process is started before the first file, as its pipe serves one request at a time."""
    from . import jobs

    def load() -> None:
        t = time.perf_counter()
        try:
            status = jobs.preload(state, which)
        except Exception as e:  # reported only: each file then fails with its own message
            status = f"not loaded: {type(e).__name__}: {e}"
        channel.send("model", model=status, seconds=round(time.perf_counter() - t, 3))

    if which and jobs.in_process(state):
        threading.Thread(target=load, daemon=True, name="splinetween-model").start()
    else:
        load()


def main() -> int:
    # The protocol stream is a private copy of stdout; fd 1 (Blender's prints) becomes stderr.
    channel = _Channel(os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1))
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator decides when we stop
    _die_with_parent()
    phases, t = {}, time.perf_counter()
    import bpy  # (in `blender -b` it is already there)
    secure(bpy)
    from . import jobs
    phases["bpy"], t = time.perf_counter() - t, time.perf_counter()
    state = None
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        op = msg.get("op")
        if op == "exit":  # every output is already written and renamed into place:
            channel.stream.flush()
            sys.stderr.flush()
            os._exit(0)  # skip Blender's teardown (slow, and nothing is left to save)
        if op == "init":
            t = time.perf_counter()
            state = jobs.State(msg["settings"])
            phases["addon"] = time.perf_counter() - t
            _load_model(state, msg.get("preload"), channel)
            import bpy as _bpy
            channel.send("ready", pid=os.getpid(), blender=_bpy.app.version_string,
                         binary=bool(_bpy.app.binary_path), startup={k: round(v, 3) for k, v in phases.items()})
        elif op == "job" and state is not None:
            job = msg["job"]

            def progress(frames: int, _id=job["id"]) -> None:
                channel.send("progress", id=_id, frames=int(frames))

            delay = float(os.environ.get("SPLINETWEEN_BATCH_TEST_DELAY", "0") or 0)  # tests: a slow file
            if delay:
                time.sleep(delay)
            try:
                result = jobs.run(job, state, progress)
            except BaseException as e:  # never leave the coordinator waiting without an answer
                traceback.print_exc()
                result = jobs.failed_entry(job, f"internal error: {type(e).__name__}: {e}")
            channel.send("result", id=job["id"], result=result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
