"""Worker processes for the coordinator: start, feed one file at a time, survive their crashes.

Each worker is a separate Blender -- ``<python> -c ...`` importing the ``bpy`` module, or, when the
batch itself runs inside a Blender binary (``blender -b --python ...``), ``blender -b
--factory-startup --disable-autoexec --python-expr ...`` -- started fresh (never forked), which
imports bpy and loads the model once and then works through files.  Subprocesses rather than
``multiprocessing`` because (1) inside Blender ``sys.executable`` is not a Blender, (2) a file that
crashes Blender kills one worker, not the batch: the file is reported failed and a new worker takes
the next file, (3) a hung file can be stopped (``--timeout``), and (4) messages are JSON lines,
never pickles.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..bridge import release
from .worker import TAG

ADDON_DIR = Path(__file__).resolve().parents[1]  # blender_addon/ (or the installed extension's folder)


class WorkerDied(RuntimeError):
    pass


def _blender_binary() -> str:
    bpy = sys.modules.get("bpy")
    return getattr(getattr(bpy, "app", None), "binary_path", "") or ""


def worker_command() -> list[str]:
    code = (f"import sys; sys.path.insert(0, {str(ADDON_DIR.parent)!r}); "
            f"import {ADDON_DIR.name}.batch.worker as w; sys.exit(w.main())")
    binary = _blender_binary()
    if binary:
        return [binary, "-b", "--factory-startup", "--disable-autoexec", "--python-expr", code]
    return [sys.executable, "-c", code]


class Worker:
    def __init__(self, index: int, settings: dict, log_dir: Path, threads: int, preload: str | None = None):
        self.index = index
        self.log_path = log_dir / f"worker-{index}-{time.monotonic_ns()}.log"
        self.log = open(self.log_path, "wb")
        env = dict(os.environ)
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "SPLINETWEEN_THREADS"):
            env.setdefault(var, str(threads))
        self.started_at = time.perf_counter()
        try:
            self.proc = subprocess.Popen(worker_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.log, env=env, cwd=str(ADDON_DIR.parent),
                                         start_new_session=True)  # Ctrl+C reaches the coordinator only
        except OSError as e:
            self.log.close()
            raise WorkerDied(f"cannot start {worker_command()[0]} ({e.strerror})") from None
        self.model: dict = {}  # the worker's "model" event: status line and seconds, once loaded
        self.events: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name=f"batch-worker-{index}").start()
        self._send({"op": "init", "settings": settings, "preload": preload})
        try:
            self.hello = self._wait("ready", None, timeout=600.0)
            self.ready_at = time.perf_counter()
        except WorkerDied:
            self.kill()
            self.close(keep_log=True)
            raise

    def _read(self) -> None:
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace")
            if line.startswith(TAG):
                try:
                    self.events.put(json.loads(line[len(TAG):]))
                except ValueError:
                    pass
        self.events.put(None)  # end of stream: the process ended

    def _send(self, msg: dict) -> None:
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # the reader sees the end of the stream and says why

    def _wait(self, event: str, job_id, timeout: float | None, on_progress=None) -> dict:
        deadline = None if not timeout else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                msg = self.events.get(timeout=left)
            except queue.Empty:
                self.kill()
                raise WorkerDied(f"stopped after {timeout:g} s without an answer (--timeout)") from None
            if msg is None:
                raise WorkerDied(self._why())
            if msg.get("event") == "model":
                self.model = msg
            elif msg.get("event") == "progress" and on_progress is not None and msg.get("id") == job_id:
                on_progress(msg.get("frames", 0))
            elif msg.get("event") == event and (job_id is None or msg.get("id") == job_id):
                return msg

    def _why(self) -> str:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        self.log.flush()
        tail = ""
        try:
            lines = [ln for ln in self.log_path.read_text(errors="replace").splitlines() if ln.strip()]
            tail = lines[-1] if lines else ""
        except OSError:
            pass
        what = ("closed its output but did not exit" if code is None else
                f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}")
        return f"the worker process {what}{': ' + tail if tail else ''} (log: {self.log_path})"

    def run(self, job: dict, timeout: float | None, on_progress=None) -> dict:
        self._send({"op": "job", "job": job})
        return self._wait("result", job["id"], timeout, on_progress)["result"]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()

    def close(self, keep_log: bool = False) -> None:
        if self.proc.poll() is None:
            self._send({"op": "exit"})
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
                self.proc.wait()
        self._drain()
        release(self.proc, self.log, self.log_path, keep_log)

    def _drain(self) -> None:
        """Read what the worker said after its last result (its model event, when the load ended late)."""
        while True:
            try:
                msg = self.events.get(timeout=2.0)
            except queue.Empty:
                return
            if msg is None:
                return
            if msg.get("event") == "model":
                self.model = msg


class Pool:
    """``jobs`` workers take files from one queue; ``on_result(job, entry)`` and
    ``on_progress(job, frames)`` are called from the feeding threads (under one lock)."""

    def __init__(self, jobs: int, settings: dict, timeout: float | None, threads: int, preload: str | None = None,
                 log_dir: Path | None = None):
        """``log_dir``: where the workers' logs go (kept only for a worker that died or hung; the
        folder is removed when empty); default a new temporary folder."""
        self.jobs, self.settings, self.timeout, self.threads = jobs, settings, timeout, threads
        self.preload = preload
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir = log_dir or Path(tempfile.mkdtemp(prefix="splinetween-batch-"))
        self.lock = threading.Lock()
        self.workers: list[Worker] = []
        self.stopping = False
        self.kept_logs: list[str] = []

    def run(self, jobs: list[dict], on_result, on_progress, tick=None, admit=None) -> None:
        """``admit(job)`` (under the lock) before a worker gets a file: None to go on, "busy" to try the
        file again after the others, or the file's finished entry (no worker needed)."""
        todo: queue.Queue = queue.Queue()
        for job in jobs:
            todo.put(job)
        threads = [threading.Thread(target=self._feed, args=(i, todo, on_result, on_progress, admit),
                                    daemon=True, name=f"batch-feed-{i}") for i in range(min(self.jobs, len(jobs)))]
        for t in threads:
            t.start()
        try:
            while any(t.is_alive() for t in threads):
                for t in threads:
                    t.join(timeout=0.25)
                if tick is not None:
                    tick()
        except KeyboardInterrupt:
            self.stopping = True
            with self.lock:
                for w in self.workers:
                    w.kill()
            raise
        finally:
            self._cleanup_logs()

    def _feed(self, index: int, todo: queue.Queue, on_result, on_progress, admit=None) -> None:
        worker, startup_error, startup_failures = None, None, 0
        while not self.stopping:
            try:
                job = todo.get_nowait()
            except queue.Empty:
                break
            if admit is not None:
                with self.lock:
                    verdict = admit(job)
                if verdict == "busy":  # another run writes its output: the other files first, then again
                    todo.put(job)
                    time.sleep(0.2)
                    continue
                if verdict is not None:
                    with self.lock:
                        on_result(job, verdict)
                    continue
            entry = None
            try:
                if startup_error is not None:
                    raise WorkerDied(startup_error)
                if worker is None:
                    try:
                        worker = Worker(index, self.settings, self.log_dir, self.threads, self.preload)
                    except WorkerDied as e:
                        startup_failures += 1
                        if startup_failures >= 2:  # twice in a row: it will not work for later files either
                            startup_error = f"a worker could not start: {e}"
                        raise WorkerDied(f"a worker could not start: {e}") from None
                    startup_failures = 0
                    with self.lock:
                        self.workers.append(worker)

                def progress(frames, _job=job):
                    with self.lock:
                        on_progress(_job, frames)

                entry = worker.run(job, self.timeout, progress)
            except WorkerDied as e:
                entry = {"input": job["source"], "output": None, "file_type": job["file_type"], "status": "failed",
                         "objects": [], "gaps": 0, "frames_written": 0, "seconds": 0.0, "warnings": [],
                         "errors": [str(e)]}
                if worker is not None:
                    worker.kill()
                    worker.close(keep_log=True)
                    self.kept_logs.append(str(worker.log_path))
                    worker = None
            if self.stopping:
                break
            with self.lock:
                on_result(job, entry)
        if worker is not None:
            worker.close()

    def _cleanup_logs(self) -> None:
        try:
            if not any(self.log_dir.iterdir()):
                self.log_dir.rmdir()
        except OSError:
            pass
