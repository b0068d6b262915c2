"""One writer per output: the coordinator claims each file's output (``backend.formats.atomic.claim``,
an exclusive lock beside it) before a worker gets the file, and lets it go when the file is finished.

A second run that meets a claimed output does its other files first and comes back to it; once
free, the file is skipped when the other run finished it with the same options (its done marker),
done otherwise.  A file still claimed after the run's ``--timeout`` of waiting (no limit: 0) fails
with a sentence naming the other run.  So two runs on the same inputs or ``--out-dir`` never write
one file at the same time, and together do each file once.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from .. import bridge
from . import safe_io
from .jobs import new_entry

BUSY = "busy"  # admit(): another run holds the output; try the file again later


class Claims:
    def __init__(self, who: dict, digest: str, in_place: bool, force: bool, wait_s: float | None, quiet: bool):
        self.atomic = bridge.numpy_module("formats.atomic")
        self.who, self.digest, self.in_place, self.force = who, digest, in_place, force
        self.wait_s, self.quiet = wait_s, quiet
        self.held: dict = {}  # job id -> Claim
        self.waiting: dict = {}  # job id -> (monotonic time first found claimed, the holder's sentence)

    def admit(self, job: dict):
        """None: claimed, hand the file to a worker; BUSY: claimed by another run, try again later;
        a dict: the file's finished entry fields (``status`` and more), no worker needed."""
        if not job.get("output"):
            return None
        try:
            claim = self.atomic.claim(Path(job["output"]), self.who)
        except self.atomic.Busy as e:
            other = self.atomic.holder(e.owner)
            if job["id"] not in self.waiting and not self.quiet:
                print(f"waiting: {job['output']} is being written by {other}; this run does its other files first",
                      file=sys.stderr)
            since, _ = self.waiting.setdefault(job["id"], (time.monotonic(), other))
            if self.wait_s is not None and time.monotonic() - since > self.wait_s:
                self.waiting.pop(job["id"])
                return _entry(job, status="failed", output=None, errors=[
                    f"{job['source']}: {job['output']} is being written by {other} (still after {self.wait_s:g} s "
                    "of waiting); nothing was done to it here: run again when that run has finished (the files "
                    "it finished are then skipped), or give another --out-dir"])
            return BUSY
        except OSError as e:
            return _entry(job, status="failed", output=None, errors=[
                f"{job['source']}: cannot lock its output {job['output']} ({e.strerror or e}); nothing was written "
                "for it"])
        self.held[job["id"]] = claim
        waited = self.waiting.pop(job["id"], None)
        if not self.force:  # the other run may have finished this very file since the run began
            previous = safe_io.is_done(Path(job["source"]), Path(job["output"]), self.digest, self.in_place)
            if previous is not None:
                self.release(job)
                by = f" by {waited[1]}" if waited else " by another run"
                return _entry(job, status="skipped", warnings=[f"done meanwhile{by}, with the same options"],
                              previous={k: previous.get(k) for k in ("frames_written", "gaps", "seconds")})
        if waited:
            job["waited"] = f"waited {time.monotonic() - waited[0]:.0f} s for {waited[1]} to finish writing it"
        return None

    def release(self, job: dict | None) -> None:
        claim = self.held.pop(job["id"], None) if job else None
        if claim is not None:
            claim.release()

    def release_all(self) -> None:
        for claim in self.held.values():
            claim.release()
        self.held.clear()


def _entry(job: dict, **fields) -> dict:
    entry = new_entry(job)
    entry.update(fields)
    return entry
