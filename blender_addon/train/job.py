"""Training a mesh model from Blender, as a background job (no torch here, and no bpy at import).

1. *Export*: the mesh object's evaluated vertex positions over a frame range, read in bulk per
   frame, become two PC2 caches in the run's ``data/``: the first frames to train on, the last to
   validate on (``<object>_0.pc2`` and ``<object>_8.pc2``: training never validates on its own
   frames); or a folder of PC2/MDD caches is used as it is.
2. *Start*: ``<interpreter> -m training.train mesh --data=... --out=<run> ...`` runs in its own
   process group with PYTHONPATH = the folder holding ``backend/`` and ``training/``; its stdout
   and stderr go to ``<run>/train.log``.  The job folder is one per .blend, object and task
   (``//splinetween/train_<blend>_<object>_<task>/``, or the temp folder for an unsaved file), and
   the run folder one per data and settings (``run-<digest>``), so no two runs share a folder.
3. *Poll* (from a ``bpy.app.timers`` callback, never blocking): read what the CLI's JSON-lines
   events (``--events=<job>/events.jsonl``, see ``training/progress.py``) gained since the last poll:
   steps, loss, ETA, validation, done, error; the log only for a crash's last line.
4. *Cancel*: SIGTERM to the process group (SIGKILL after a grace period), then reap it.  The
   CLI saves ``<run>/last`` atomically, so starting again with the same data and settings resumes
   from there; other data or settings train in a run folder of their own.  Nothing is moved or
   renamed, so an object's checkpoint property keeps loading the weights it was given.

Longer than 300 lines: the job's whole life (export, process, events, cancel, resume) around one process handle.
"""
from __future__ import annotations

import atexit
import codecs
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np

from .. import bridge
from .data import WINDOWS, FrameSplit, TrainJobError, folder_problem, safe_name, split_frames
from .events import EventReader, TrainProgress, last_line

# Settings that may change between a cancelled run and its resumption; any other difference
# (data, model shape, task, learning rate ...) starts a fresh run.
RESUMABLE_CHANGES = {"steps", "threads", "val_every", "ckpt_every", "val_windows", "device"}

RUNNING, DONE, FAILED, CANCELLED = "RUNNING", "DONE", "FAILED", "CANCELLED"


def _digest_frames(frames: np.ndarray, split: FrameSplit) -> str:
    h = hashlib.sha1(f"{frames.shape}\0{split.train}\0{split.val}\n".encode())
    h.update(np.ascontiguousarray(frames, dtype="<f4").data)
    return h.hexdigest()


def _digest_caches(files: list[Path]) -> str:
    h = hashlib.sha1()
    for p in files:
        st = p.stat()
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _options_dict(args: list[str]) -> dict:
    out = {}
    for a in args:
        k, v = a[2:].split("=", 1)
        out[k.replace("-", "_")] = v
    return out


# --- progress ---------------------------------------------------------------------------------

def saved_step(run: Path) -> int | None:
    """The step of ``run/last`` (what a restart resumes from), or None.

    Read from the state document inside ``last.safetensors`` (in its header's metadata), which
    is what a restart loads: ``last.json`` is written after it, so a cancel between the two
    writes would name an older step."""
    doc = _safetensors_state(run / "last.safetensors")
    try:
        if doc is None:
            doc = bridge.numpy_module("formats.json_limits").read(run / "last.json")
        return int(dict((k, v) for k, v in doc["$d"] if isinstance(k, str))["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _safetensors_state(path: Path) -> dict | None:
    """The ``state`` JSON document in a safetensors file's header (8-byte length, then JSON), or None."""
    try:
        with open(path, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            if not 0 < size < 1 << 26:
                return None
            limits = bridge.numpy_module("formats.json_limits")
            header = limits.loads(f.read(size))
        return limits.loads(header["__metadata__"]["state"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --- the job ---------------------------------------------------------------------------------

_live: set = set()


def _stop_all():  # Blender quits: no training process outlives it
    for job in list(_live):
        job.cancel(timeout=2.0)


atexit.register(_stop_all)


class TrainJob:
    """One ``python -m training.train mesh`` process and what the add-on knows about it."""

    def __init__(self, folder: Path, run: Path, data: Path, args: list[str], interpreter: str, root: Path,
                 object_name: str = "", blend_file: str = "", temp_folder: bool = False, note: str = "",
                 task: str = "autoencoder"):
        self.folder, self.run, self.data, self.args = folder, run, data, args
        self.interpreter, self.root, self.task = interpreter, root, task
        self.object_name, self.blend_file, self.temp_folder = object_name, blend_file, temp_folder
        self.log_path = run / "train.log"
        self.events_path = run / "events.jsonl"
        self.reader = EventReader()
        self._decode = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a read may split a character
        self._decode_log = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._events_offset = 0
        self._log_tail = ""
        self.state = RUNNING
        self.message = note
        self.returncode: int | None = None
        self.finished = False  # the add-on has taken the result (property set, report shown)
        self.file_changed = False  # another .blend was opened while it ran
        self._offset = 0
        self._t0 = time.monotonic()
        self.elapsed = 0.0
        self.proc: subprocess.Popen | None = None
        self.export_s = 0.0  # seconds the add-on spent exporting and starting (set by the operator)

    @property
    def progress(self) -> TrainProgress:
        return self.reader.progress

    @property
    def checkpoint(self) -> Path:
        return self.run / "best.json"

    def trained_task(self) -> str:
        """The task the checkpoint was trained for (its JSON's info), "" when unreadable."""
        try:
            return bridge.read_model(self.checkpoint).task
        except bridge.BridgeError:
            return ""

    # -- starting --

    @classmethod
    def start(cls, folder: Path, *, frames: np.ndarray | None = None, split: FrameSplit | None = None,
              cache_folder=None, cache_files=(), longest: int = 0, steps: int = 2000, task: str = "autoencoder",
              components: int = 64, options: list[str] = (), interpreter: str, root: Path, object_name: str = "",
              blend_file: str = "", temp_folder: bool = False, threads: int | None = None) -> "TrainJob":
        """Write the data (``frames``, cut by ``split`` into a training and a validation cache, or use
        ``cache_folder``) and start.  Everything that can be refused is checked before the first byte is
        written, and what a failure after that had made is removed again."""
        if not (root / "training" / "train.py").is_file():
            raise TrainJobError(f"{root} has no training package: reinstall the extension (build.py bundles "
                                "training/ next to backend/)")
        if ("/" in interpreter or os.sep in interpreter) and not Path(interpreter).exists():
            raise TrainJobError(f"The Python interpreter {interpreter} does not exist: set Preferences > Add-ons > "
                                "Splinetween > Python Interpreter to a Python with torch, numpy and safetensors")
        if task not in ("autoencoder", "inbetween"):
            raise TrainJobError(f"task {task!r}: use autoencoder or inbetween")
        if steps < 1 or components < 1:
            raise TrainJobError("Steps and Components must be at least 1")
        if frames is not None:
            split = split or split_frames(len(frames), task, "The frames")
            window, digest = split.window, _digest_frames(frames, split)
        else:
            window, digest = min(WINDOWS[task], longest), _digest_caches(list(cache_files))
        args = [f"--steps={int(steps)}", f"--task={task}", f"--components={int(components)}"]
        if window < WINDOWS[task]:  # a short clip: windows as long as it allows
            args += [f"--window={window}", f"--min_window={min((WINDOWS[task] + 1) // 2, window)}"]
        if threads is None:  # leave a core to Blender's interface
            threads = max(1, (os.cpu_count() or 2) - 1)
        args.append(f"--threads={threads}")
        args += list(options)
        folder_problem(folder)
        run, job_doc = cls._run_folder(folder, digest, args)
        made = [p for p in (*reversed(run.parents), run) if not p.exists()]  # removed again on a failure
        try:
            note = cls._prepare_run(run, job_doc)
            if frames is not None:
                data = run / "data"
                cls._write_frames(data, safe_name(object_name), frames, split)
                note = "; ".join(n for n in (note, split.note) if n)
            else:
                data = Path(cache_folder).expanduser().resolve()
            job = cls(folder, run, data, args, interpreter, root, object_name, blend_file, temp_folder, note, task)
            job._launch()
        except BaseException:
            for p in reversed(made):
                shutil.rmtree(p, ignore_errors=True)
            raise
        return job

    @staticmethod
    def _write_frames(data: Path, name: str, frames: np.ndarray, split: FrameSplit) -> None:
        """The first ``split.train`` frames as ``<name>_0.pc2`` (train), the last ``split.val`` as ``<name>_8.pc2``
        (validation: the training CLI's split rule, a number ending in 8)."""
        pc2 = bridge.numpy_module("formats.pc2")
        try:
            data.mkdir(exist_ok=True)
            pc2.write_pc2(data / f"{name}_0.pc2", frames[:split.train])
            pc2.write_pc2(data / f"{name}_8.pc2", frames[len(frames) - split.val:])
        except (ValueError, OSError) as e:  # CacheError names the file and the problem
            raise TrainJobError(f"Cannot write the training data: {e}") from None

    @staticmethod
    def _run_folder(folder: Path, digest: str, args: list[str]) -> tuple[Path, dict]:
        """The run folder of this data and these settings: ``run-<digest>`` (the same one again resumes)."""
        opts = _options_dict(args)
        job_doc = {"data_digest": digest, "settings": {k: v for k, v in opts.items() if k not in RESUMABLE_CHANGES}}
        key = hashlib.sha1(json.dumps(job_doc, sort_keys=True).encode()).hexdigest()[:10]
        return folder / f"run-{key}", job_doc

    @staticmethod
    def _prepare_run(run: Path, job_doc: dict) -> str:
        """Make the run folder and record what it trains on; a note when an earlier run is resumed."""
        try:
            old = bridge.numpy_module("formats.json_limits").read(run / "job.json")
        except (OSError, ValueError):
            old = None
        try:
            run.mkdir(parents=True, exist_ok=True)
            (run / "job.json").write_text(json.dumps(job_doc, indent=1), encoding="utf-8")
        except OSError as e:
            raise TrainJobError(f"Cannot write {run} ({e.strerror}); choose a writable place") from None
        step = saved_step(run) if old == job_doc else None
        return f"resuming the earlier run {run.name} (same data and settings) from step {step}" if step else ""

    def command(self) -> list[str]:
        return [self.interpreter, "-m", "training.train", "mesh", f"--data={self.data}", f"--out={self.run}",
                f"--events={self.events_path}", *self.args]

    def _launch(self) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["PYTHONPATH"] = str(self.root)
        env["PYTHONUNBUFFERED"] = "1"
        kw = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if os.name == "nt" else {"start_new_session": True}
        self.events_path.write_bytes(b"")  # this process's events only (the CLI appends)
        with open(self.log_path, "ab") as log:  # a resumed run's log keeps what its earlier starts wrote
            log.write((" ".join(self.command()) + "\n").encode())
            log.flush()
            self._offset = log.tell()
            try:
                self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, cwd=str(self.root), env=env, **kw)
            except OSError as e:
                raise TrainJobError(f"Cannot start the Python interpreter {self.interpreter!r} ({e.strerror}): set "
                                    "Preferences > Add-ons > Splinetween > Python Interpreter") from None
        if hasattr(os, "setpriority"):  # training yields the CPU to Blender's interface
            try:
                os.setpriority(os.PRIO_PROCESS, self.proc.pid, 10)
            except OSError:
                pass
        self._t0 = time.monotonic()
        _live.add(self)

    # -- polling --

    def _read_log(self) -> None:
        """What the events and the log gained since the last poll."""
        events = self._read_from(self.events_path, self._events_offset)
        self._events_offset += len(events)
        if events:
            self.reader.feed(self._decode.decode(events))
        log = self._read_from(self.log_path, self._offset)
        self._offset += len(log)
        if log:
            self._log_tail = (self._log_tail + self._decode_log.decode(log))[-8192:]
            p = self.progress
            p.last_line = last_line(self._log_tail, p.last_line)

    @staticmethod
    def _read_from(path: Path, offset: int) -> bytes:
        try:
            with open(path, "rb") as f:
                f.seek(offset)
                return f.read()
        except OSError:
            return b""

    def poll(self) -> str:
        """Non-blocking: take what the log gained, notice the end of the process; the state."""
        if self.state != RUNNING:
            return self.state
        self._read_log()
        self.elapsed = time.monotonic() - self._t0
        code = self.proc.poll()
        if code is None:
            return RUNNING
        self._read_log()
        self.returncode = code
        _live.discard(self)
        p = self.progress
        if code == 0 and p.done_path and self.checkpoint.is_file() and self.checkpoint.with_suffix(".safetensors").is_file():
            self.state = DONE
            val = f"{p.val_error:.3g} %" if p.val_error is not None else "an unknown"
            resumed = f", resumed from step {p.resumed_from}" if p.resumed_from else ""
            self.message = (f"Trained mesh model: {val} val vertex error in {self.elapsed:.0f} s "
                            f"({p.total or p.step} steps{resumed}): {self.checkpoint}")
        else:
            self.state = FAILED
            self.message = "Mesh training failed: " + self._why(code)
        return self.state

    def _why(self, code: int) -> str:
        p = self.progress
        if p.error:
            return p.error
        tail = p.last_line
        hint = ""
        if "No module named" in tail:
            hint = (f" - the interpreter {self.interpreter} lacks a package training needs (torch, numpy, "
                    "safetensors); set Preferences > Add-ons > Splinetween > Python Interpreter")
        what = f"exited with code {code}" + (f" (killed by signal {-code})" if code < 0 else "")
        return f"the training process {what}{': ' + tail if tail else ''}{hint} (log: {self.log_path})"

    # -- cancelling --

    def cancel(self, timeout: float = 5.0) -> None:
        """Stop the process group (SIGTERM, then SIGKILL after ``timeout``) and reap it."""
        if self.proc is None or self.poll() != RUNNING:  # it ended by itself: keep that result
            return
        if self.proc.poll() is None:
            try:
                if os.name == "nt":
                    self.proc.terminate()
                else:
                    os.killpg(self.proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                try:
                    if os.name == "nt":
                        self.proc.kill()
                    else:
                        os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self.proc.wait(timeout=timeout)
        self._read_log()
        self.returncode = self.proc.returncode
        self.elapsed = time.monotonic() - self._t0
        _live.discard(self)
        self.state = CANCELLED
        step = saved_step(self.run)
        resume = (f"start it again with the same settings to resume from step {step}" if step
                  else "nothing was saved yet, so a new start begins at step 0")
        self.message = f"Mesh training cancelled at step {self.progress.step}; {resume}"
