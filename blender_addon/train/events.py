"""Following a training run through the CLI's JSON-lines events (``training/progress.py``):
what the sidebar shows and what the job reports when the run ends.  No bpy, no torch."""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass
class TrainProgress:
    step: int = 0
    total: int = 0
    loss: float | None = None
    eta: str = ""  # "m:ss", as the human progress bar writes it
    val_error: float | None = None  # % of the bounding-box diagonal
    val_step: int = 0
    resumed_from: int | None = None
    done_path: str = ""
    error: str = ""  # the CLI's refusal (its ``error:`` line)
    last_line: str = ""  # the log's last line that is not the progress bar (a traceback's on a crash)
    warnings: list[str] = field(default_factory=list)
    phase: str = ""  # the work before the first step ("fitting the linear path"), "" once the steps start
    phase_done: int = 0
    phase_total: int = 0  # 0: the phase has no count

    @property
    def factor(self) -> float:
        done, total = (self.step, self.total) if self.total else (self.phase_done, self.phase_total)
        return max(0.0, min(1.0, done / total)) if total > 0 else 0.0

    def text(self) -> str:
        """The progress bar's words: the step and ETA, else the phase (and its count), else "Starting..."."""
        if self.total:
            return f"Step {self.step}/{self.total}" + (f"  ETA {self.eta}" if self.eta else "")
        if self.phase:
            count = f" {self.phase_done}/{self.phase_total}" if self.phase_total else ""
            return f"{self.phase[:1].upper()}{self.phase[1:]}{count}..."
        return "Starting..."


def clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


class EventReader:
    """Feeds on the event file as it grows; a line is taken once its newline is written."""

    def __init__(self):
        self.progress = TrainProgress()
        self._tail = ""

    def feed(self, text: str) -> TrainProgress:
        lines = (self._tail + text).split("\n")
        self._tail = lines.pop()
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # not ours (an empty line): skip it
            if isinstance(event, dict):
                try:
                    self._event(event)
                except (KeyError, TypeError, ValueError):
                    continue  # a malformed event changes nothing
        return self.progress

    def _event(self, e: dict) -> None:
        p, event = self.progress, e.get("event")
        if event == "start":
            p.total, p.phase = int(e["total"]), ""
        elif event == "phase":
            p.phase, p.phase_done, p.phase_total = str(e["name"])[:80], int(e["done"]), int(e["total"])
        elif event == "step":
            p.step, p.total = max(p.step, int(e["step"])), int(e["total"])
            p.loss, p.eta = float(e["loss"]), clock(float(e["eta_s"]))
        elif event == "resume":
            p.resumed_from = int(e["step"])
            p.step = max(p.step, p.resumed_from)
        elif event == "validation":
            p.val_step = int(e["step"])
            p.step, p.val_error = max(p.step, p.val_step), float(e["value"])
        elif event == "done":
            p.done_path = str(e["checkpoint"])
            p.step = max(p.step, p.total)
            p.val_error = float(e["value"])
        elif event == "error":
            p.error = str(e["message"])
        elif event == "warning":
            p.warnings.append(str(e["message"]))


def last_line(text: str, before: str = "") -> str:
    """The last line of log ``text`` that is not the progress bar (which redraws itself after ``\\r``
    and starts with ``[``); ``before`` when there is none."""
    for line in reversed(text.replace("\r", "\n").split("\n")):
        line = line.strip()
        if line and not line.startswith("["):
            return line
    return before
