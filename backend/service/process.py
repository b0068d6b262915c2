"""The backend process: read a request, answer it, keep serving; a failure is an answer too."""
from __future__ import annotations

import os
import sys

from .handlers import handle
from .protocol import ArraySpecError, ProtocolError, read_message, write_message


def _error(e: BaseException, prefix: str = "") -> dict:
    return {"ok": False, "error": f"{prefix}{e}", "type": type(e).__name__}


def serve(stdin, stdout) -> int:
    while True:
        try:
            header, arrays = read_message(stdin)
        except EOFError:
            return 0
        except ArraySpecError as e:  # the header was read whole: refuse it and read the next one
            write_message(stdout, dict(_error(e, "bad request: "), type="ProtocolError"))
            continue
        except ProtocolError as e:  # out of step with the stream: say so and stop
            write_message(stdout, dict(_error(e, "bad request: "), type="ProtocolError"))
            return 2
        try:
            reply, out = handle(header, arrays)
        except Exception as e:  # answered, and the process keeps serving
            reply, out = _error(e), {}
        try:
            write_message(stdout, reply, out)
        except (ProtocolError, TypeError, ValueError) as e:  # an answer that cannot be framed
            write_message(stdout, _error(e, "unanswerable result: "))
        if header.get("op") == "shutdown":
            return 0


def main() -> int:
    # Keep the protocol stream to ourselves: anything printed (by us or a library) goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return serve(sys.stdin.buffer, out)  # (each request's math threads: engines.request_threads)
