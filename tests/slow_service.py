"""A slow backend, for the tests of what the add-on does when the backend takes too long or dies mid-call
(tests/test_bridge.py, tests/test_bridge_process.py, tests/test_addon_refusals.py).

``interpreter(folder, seconds)`` writes a backend interpreter (a shell script) that runs this file:
``python tests/slow_service.py DELAY_FILE <the bridge's arguments>``.  Started as the bridge starts a
backend (``-m backend.service``), it serves the real service (``backend.service.process.main``), each
``inbetween`` request first sleeping the seconds DELAY_FILE holds, read per request (a test writes it again
to make the same interpreter fast; no file or an empty one: no sleep).  Any other arguments (the
bridge's version probe, ``-c ...``) run this Python as they are.  The product has no test hook: the
sleep is here.
"""
from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve()


def command(delay_file: Path, python: str = sys.executable) -> str:
    """The shell words that run ``python`` as the slow backend interpreter (``"$@"``: the bridge's
    arguments), for a wrapper script of a test's own."""
    return f'"{python}" "{SCRIPT}" "{delay_file}" "$@"'


def delay_file(folder: Path, seconds: float) -> Path:
    """The file in ``folder`` that says how long each ``inbetween`` request sleeps: ``seconds`` now."""
    delay = folder / "service-delay"
    delay.write_text(str(seconds))
    return delay


def interpreter(folder: Path, seconds: float, python: str = sys.executable) -> tuple[str, Path]:
    """(A backend interpreter in ``folder``, ``python`` serving, whose ``inbetween`` requests sleep first,
    the file that holds how long: ``seconds`` now; write another number to change it)."""
    delay = delay_file(folder, seconds)
    path = folder / "slow-python"
    path.write_text("#!/bin/sh\nexec " + command(delay, python) + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), delay


def _delay(delay_file: Path) -> float:
    try:
        text = delay_file.read_text().strip()
    except FileNotFoundError:
        return 0.0
    return float(text) if text else 0.0


def main(argv: list[str]) -> int:
    delay_file, args = Path(argv[0]), argv[1:]
    if args[:2] != ["-m", "backend.service"]:  # (the version probe): this Python, as asked
        os.execv(sys.executable, [sys.executable, *args])
    sys.path[0] = os.getcwd()  # as ``-m`` has it: the backend's folder (the bridge's cwd), not tests/
    from backend.service import handlers
    from backend.service.process import main as serve
    inbetween = handlers.HANDLERS["inbetween"]

    def slow_inbetween(header: dict, arrays: dict) -> tuple[dict, dict]:
        time.sleep(_delay(delay_file))
        return inbetween(header, arrays)

    handlers.HANDLERS["inbetween"] = slow_inbetween
    return serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
