"""The run's JSON report (rewritten after every file, so a killed run still tells what it did),
the progress bar on stderr and the one-line summary."""
from __future__ import annotations

import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from . import safe_io


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def default_path(folder: Path, command: str, run_id: str) -> Path:
    """``FOLDER/splinetween-COMMAND-YYYYmmdd-HHMMSS-RUNID.json``, its name taken now (O_EXCL: created
    here, never one another run holds; the report is then written over it atomically)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    folder.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        path = folder / f"splinetween-{command}-{stamp}-{run_id}{'' if n == 1 else f'-{n}'}.json"
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            n += 1
            continue
        return path


class Report:
    def __init__(self, path: Path | None, command: str, argv: list[str], options: dict, settings: dict, jobs: int,
                 run_id: str = ""):
        self.path = path
        self.t0 = time.perf_counter()
        self._saved = -1e9
        self.doc = {"tool": "splinetween-batch", "command": command, "run": run_id, "pid": os.getpid(),
                    "argv": argv, "started": _now(),
                    "finished": None, "state": "running", "jobs": jobs, "settings": settings, "options": options,
                    "files": [], "summary": {}}

    def add(self, entry: dict) -> None:
        """Record a finished file; the report on disk is refreshed at most every 2 s (and at the end)."""
        self.doc["files"].append(entry)
        if time.monotonic() - self._saved >= 2.0:
            self.save()

    def counts(self) -> dict:
        files = self.doc["files"]
        c = {s: sum(f["status"] == s for f in files) for s in ("ok", "skipped", "failed")}
        c["frames_written"] = sum(f.get("frames_written", 0) for f in files)
        c["gaps"] = sum(f.get("gaps", 0) for f in files)
        c["warnings"] = sum(len(f.get("warnings", ())) for f in files)
        c["seconds"] = round(time.perf_counter() - self.t0, 2)
        return c

    def save(self, state: str | None = None) -> None:
        if state:
            self.doc["state"] = state
            self.doc["finished"] = _now()
        self.doc["summary"] = self.counts()
        self._saved = time.monotonic()
        if self.path is not None:
            try:
                safe_io.write_json(self.path, self.doc)
            except OSError as e:
                print(f"warning: cannot write the report {self.path} ({e.strerror})", file=sys.stderr)

    def summary_line(self) -> str:
        c = self.counts()
        cmd = self.doc["command"]
        skipped = f", {c['skipped']} skipped (already done)" if c["skipped"] else ""
        frames = f"; {c['frames_written']} frames written" if cmd != "info" else ""
        text = f"splinetween {cmd}: {c['ok']} ok{skipped}, {c['failed']} failed{frames} in {c['seconds']:.1f} s"
        if c["warnings"]:
            text += f"; {c['warnings']} warning(s)"
        return text + (f"; report: {self.path}" if self.path else "")


class Progress:
    """``[#####-----] 5/10 files, 1 failed | 1234 frames | 0:42`` on stderr: redrawn in place on a
    terminal, one line per finished file otherwise (logs of overnight runs)."""

    def __init__(self, total: int, enabled: bool = True, stream=None):
        self.total, self.done, self.failed, self.frames = total, 0, 0, 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.perf_counter()
        self.running: dict = {}

    def _bar(self) -> str:
        width = 24
        fill = int(width * self.done / self.total) if self.total else width
        el = int(time.perf_counter() - self.t0)
        failed = f", {self.failed} failed" if self.failed else ""
        return (f"[{'#' * fill}{'-' * (width - fill)}] {self.done}/{self.total} files{failed} | "
                f"{self.frames} frames | {el // 60}:{el % 60:02d}")

    def draw(self) -> None:
        if self.tty:
            self.stream.write("\r" + self._bar() + " ")
            self.stream.flush()

    def frames_done(self, frames: int) -> None:
        self.frames += frames
        self.draw()

    def file_done(self, entry: dict, counted_frames: bool = True) -> None:
        self.done += 1
        self.failed += entry["status"] == "failed"
        if not counted_frames:
            self.frames += entry.get("frames_written", 0)
        if not self.enabled:
            return
        if self.tty:
            if entry["status"] == "failed":
                self.stream.write("\r\x1b[K" + f"failed: {entry['input']}: {'; '.join(entry['errors'])}\n")
            self.draw()
            return
        detail = "; ".join(entry["errors"]) if entry["status"] == "failed" else (
            f"{entry.get('gaps', 0)} gaps, {entry.get('frames_written', 0)} frames, {entry.get('seconds', 0):.2f} s")
        self.stream.write(f"[{self.done}/{self.total}] {entry['status']:7s} {entry['input']}: {detail}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r" + self._bar() + "\n")
            self.stream.flush()
