"""Training progress as data: JSON-lines events for programs, beside the human progress bar.

``python -m training.train [mesh] ... --events PATH`` (``--events -``: standard output) appends
one JSON object a line, flushed as it happens; every event has ``"event"`` and ``"time"``
(seconds since the epoch):

* ``{"event": "phase", "name": "fitting the linear path", "done": k, "total": K}`` for the work before the
  first step (reading the data, fitting the basis, the in-betweener's linear path; ``total`` 0 when
  it has no count): at most once a second per phase, and its first and last
* ``{"event": "start", "total": N}``, and ``{"event": "resume", "step": n}`` when a run goes on
* ``{"event": "step", "step": n, "total": N, "loss": x, "lr": x, "windows_per_s": x, "eta_s": s}``
  at most once a second, and at the last step
* ``{"event": "validation", "step": n, "metric": "val_vertex_pct" | "val_rot_deg", "value": x}``
* ``{"event": "warning", "message": "..."}`` (data skipped, ...)
* ``{"event": "done", "checkpoint": "<run>/best.json", "metric": ..., "value": best}``
* ``{"event": "error", "message": "..."}``: the CLI's refusal (the same text as its ``error:`` line)

Without ``--events`` every call here costs nothing.  The add-on's Train Mesh Model follows a run
through these events (``blender_addon/train/job.py``), and the human bar on stderr stays for people.
"""
from __future__ import annotations

import json
import sys
import time

_sink = None
_clock: dict = {}


def open_events(target: str) -> None:
    """Send events to ``target``: a file (appended to; a resumed run adds to its stream) or ``-``."""
    global _sink
    close_events()
    _sink = sys.stdout if target == "-" else open(target, "a", encoding="utf-8")
    _clock.clear()


def close_events() -> None:
    global _sink
    if _sink is not None and _sink is not sys.stdout:
        _sink.close()
    _sink = None


def enabled() -> bool:
    return _sink is not None


def emit(event: str, **fields) -> None:
    if _sink is None:
        return
    _sink.write(json.dumps({"event": event, "time": round(time.time(), 3), **fields}) + "\n")
    _sink.flush()


_phases: dict = {}


def phase(name: str, done: int = 0, total: int = 0) -> None:
    """Work before the first step, with its own count (throttled like ``step``)."""
    if _sink is None:
        return
    now = time.time()
    if 0 < done < total and now - _phases.get(name, 0.0) < 1.0:
        return
    _phases[name] = now
    emit("phase", name=name, done=done, total=total)


def step(step: int, total: int, **fields) -> None:
    """A training step: throttled to one event a second (and the last step), with the ETA measured
    from the first step this process saw, as the human bar measures it."""
    if _sink is None:
        return
    now = time.time()
    if "t0" not in _clock:
        _clock.update(t0=now, s0=step - 1, last=0.0)
    if step < total and now - _clock["last"] < 1.0:
        return
    _clock["last"] = now
    rate = (step - _clock["s0"]) / max(now - _clock["t0"], 1e-9)
    emit("step", step=step, total=total, **fields, eta_s=round((total - step) / max(rate, 1e-9), 1))
