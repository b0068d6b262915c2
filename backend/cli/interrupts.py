"""Ctrl+C and SIGTERM for ``python -m backend``: stop at once, leave no half-written file.

Signals go to whichever thread does not block them; numpy's and PyTorch's worker threads do not
run Python, so a Ctrl+C delivered to one of them only sets a flag the main thread sees when it
next runs Python (which, during a long native call, could be much later: "Ctrl+C is ignored").
``install()`` therefore blocks SIGINT and SIGTERM *before any other thread exists* (call it
before importing numpy or torch; every thread started later inherits the mask) and hands them
to a watcher thread.  The watcher interrupts the main thread (KeyboardInterrupt: the command
stops, says so and exits with 130) and, if the main thread is still busy after ``GRACE_S``,
removes this process's temporary files in the watched folders and exits with 130 itself.

A signal the parent set to be ignored (a background job of a non-interactive shell ignores
SIGINT) stays ignored.  Standard library only; POSIX only (elsewhere nothing changes).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

GRACE_S = 1.0  # after the signal, how long the main thread may take to stop by itself
_folders: list[Path] = []


def watch(folder) -> None:
    """Remove this process's temporary files (``.NAME.tmpPID``) from ``folder`` on a forced exit."""
    _folders.append(Path(folder))


def _remove_temps() -> None:
    for folder in _folders:
        for tmp in folder.glob(f".*.tmp{os.getpid()}"):
            try:
                tmp.unlink()
            except OSError:
                pass


def install() -> bool:
    """Take SIGINT and SIGTERM into a watcher thread; -> whether anything was taken."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        return False
    taken = {s for s, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL))
             if signal.getsignal(s) is default}
    if not taken:
        return False

    def watcher():
        signal.sigwait(taken)
        import _thread
        _thread.interrupt_main()
        time.sleep(GRACE_S)
        _remove_temps()
        print("interrupted: stopped; files written before are complete, none is half-written",
              file=sys.stderr, flush=True)
        os._exit(130)

    signal.pthread_sigmask(signal.SIG_BLOCK, taken)  # this thread and every thread started from now on
    threading.Thread(target=watcher, name="splinetween-signals", daemon=True).start()
    return True
