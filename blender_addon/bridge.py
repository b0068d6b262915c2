"""The one door to the backend: in-process, or through a backend process.

This is the only module of the add-on that imports ``backend``, and it does so lazily: the
bundled copy (``<add-on>/backend``, put there by build.py) when present, else the top-level
``backend`` of a source checkout.  Torch is only imported by the backend, and only when a
model is first needed.

* ``IN_PROCESS``: the engine runs inside Blender's Python (needs torch importable there).
* ``SUBPROCESS``: ``<interpreter> -m backend.service`` runs beside Blender and answers framed
  requests on its stdin/stdout (see backend/service/); the model stays loaded between calls,
  a call that takes longer than the timeout stops the process, and a dead process is started
  again on the next call.
* ``AUTO``: in-process when torch can be imported here, else the backend process.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MODES = ("AUTO", "IN_PROCESS", "SUBPROCESS")


class BridgeError(RuntimeError):
    """Anything that kept the backend from answering; the message says what to do."""


@dataclass(frozen=True)
class BackendSettings:
    mode: str = "AUTO"
    checkpoint: str = ""  # "" -> the shipped in-betweening checkpoint
    device: str = "auto"
    interpreter: str = ""  # "" -> default_interpreter()
    timeout: float = 120.0


@dataclass(frozen=True)
class ModelInfo:
    """What the add-on needs to know about a checkpoint, read from its JSON (no torch)."""
    path: Path
    names: tuple[str, ...]
    parents: tuple[int, ...]
    offsets: np.ndarray  # [J, 3] the training skeleton's rest offsets (cm, BVH axes)
    position_joints: tuple[int, ...]
    rotation_joints: tuple[int, ...]
    window: int
    frame_time: float = 1.0 / 30.0  # the rate the model was trained at (seconds per frame)

    @property
    def max_gap(self) -> int:
        """The longest gap in the model's own frames (2 s at 30 fps)."""
        return self.window - 1

    def scene_max_gap(self, fps: float) -> int:
        """The longest gap in frames of a scene at ``fps`` (``backend.timebase``: keys are resampled to the model's rate)."""
        return numpy_module("timebase").max_scene_gap(self.max_gap, 1.0 / fps, self.frame_time)

    def same_rate(self, fps: float) -> bool:
        return numpy_module("timebase").same_rate(1.0 / fps, self.frame_time)


_backend_package = None


def backend_package():
    """The bundled ``backend`` subpackage inside the extension, else the source tree's (found once: a
    slider change asks for it twice, and a search of the import path costs 0.03 ms)."""
    global _backend_package
    if _backend_package is None:
        if importlib.util.find_spec(f"{__package__}.backend") is not None:
            _backend_package = importlib.import_module(f"{__package__}.backend")
        else:
            _backend_package = importlib.import_module("backend")
    return _backend_package


def backend_root() -> Path:
    """The folder that holds ``backend/``: the PYTHONPATH of the backend process."""
    return Path(backend_package().__file__).resolve().parent.parent


def default_checkpoint() -> Path:
    return Path(backend_package().__file__).resolve().parent / "checkpoints" / "inbetween.json"


def default_autoencoder() -> Path:
    """The shipped motion autoencoder (latent editing: Encode and its sliders)."""
    return Path(backend_package().__file__).resolve().parent / "checkpoints" / "motion_autoencoder.json"


def default_mesh_checkpoint(task: str) -> Path:
    """The shipped mesh-sequence checkpoint for ``task`` ("autoencoder" or "inbetween"): the cloth asset's."""
    name = "cloth_inbetween.json" if task == "inbetween" else "cloth_autoencoder.json"
    return Path(backend_package().__file__).resolve().parent / "checkpoints" / name


def numpy_module(name: str):
    """A numpy-only backend module (``pc2``, ``mesh``, ``quat_np``, ``atomic``, ``timebase``, the
    ``humanoid`` package's: skeleton finding and conversion): safe to use in Blender without torch."""
    if name not in ("pc2", "mesh", "quat_np", "atomic", "timebase") and not name.startswith("humanoid."):
        raise ValueError(f"backend.{name} is not a numpy-only module")
    return importlib.import_module(f"{backend_package().__name__}.{name}")


def default_interpreter() -> str:
    """$SPLINETWEEN_PYTHON, else a source checkout's .venv, else this Python."""
    if os.environ.get("SPLINETWEEN_PYTHON"):
        return os.environ["SPLINETWEEN_PYTHON"]
    venv = backend_root() / ".venv"
    for cand in (venv / "bin" / "python", venv / "Scripts" / "python.exe"):
        if cand.exists():
            return str(cand)
    return sys.executable


_info_cache: dict = {}


def describe(settings: BackendSettings) -> ModelInfo:
    path = Path(settings.checkpoint).expanduser() if settings.checkpoint else default_checkpoint()
    path = path if path.suffix == ".json" else path.with_suffix(".json")
    try:
        key = (str(path), path.stat().st_mtime_ns)
        if key not in _info_cache:
            doc = json.loads(path.read_text(encoding="utf-8"))
            sk, feat = doc["skeleton"], doc["features"]
            _info_cache[key] = ModelInfo(path, tuple(sk["names"]), tuple(int(p) for p in sk["parents"]),
                                         np.asarray(sk["offsets"], dtype=np.float64).reshape(-1, 3),
                                         tuple(feat["position_joints"]), tuple(feat["rotation_joints"]),
                                         int(doc.get("window", 61)),
                                         numpy_module("timebase").model_frame_time(doc.get("info")))
    except OSError as e:
        raise BridgeError(f"cannot read the checkpoint {path} ({e.strerror}); check Preferences > "
                          "Add-ons > Splinetween > Checkpoint") from None
    except (ValueError, KeyError, TypeError) as e:
        raise BridgeError(f"{path} is not a Splinetween checkpoint ({e})") from None
    return _info_cache[key]


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def resolve_mode(settings: BackendSettings) -> str:
    if settings.mode not in MODES:
        raise BridgeError(f"unknown backend mode {settings.mode!r} (one of {', '.join(MODES)})")
    if settings.mode == "AUTO":
        return "IN_PROCESS" if torch_available() else "SUBPROCESS"
    return settings.mode


def backend_module(name: str):
    """Any backend module (imports torch for most): for the batch workers that run the engine directly."""
    return importlib.import_module(f"{backend_package().__name__}.{name}")


def _service():
    return backend_module("service")


def inbetween(settings: BackendSettings, offsets: np.ndarray, keys, key_rotations: np.ndarray,
              key_positions: np.ndarray, frame_time: float = 1.0 / 30.0) -> tuple[np.ndarray, np.ndarray]:
    """Key poses in the checkpoint's convention (keys 0-based from 0) -> every frame."""
    info = describe(settings)
    arrays = {"offsets": np.asarray(offsets, dtype=np.float64),
              "key_rotations": np.asarray(key_rotations, dtype=np.float64),
              "key_positions": np.asarray(key_positions, dtype=np.float64)}
    keys = [int(k) for k in keys]
    if resolve_mode(settings) == "IN_PROCESS":
        if not torch_available():
            raise BridgeError("PyTorch cannot be imported in this Python; choose the backend process "
                              "(Preferences > Add-ons > Splinetween > Backend) and an interpreter that has it")
        svc = _service()
        try:
            with svc.request_threads():  # (as the service's every request: backend.service.engines)
                engine = svc.get_engine(str(info.path), settings.device)
                return svc.inbetween_keys(engine, arrays["offsets"], keys, arrays["key_rotations"],
                                          arrays["key_positions"], frame_time)
        except ValueError as e:
            raise BridgeError(str(e)) from None
    header = {"op": "inbetween", "checkpoint": str(info.path), "device": settings.device, "keys": keys,
              "frame_time": frame_time}
    _, out = _process(settings).call(header, arrays, settings.timeout)
    return out["rotations"], out["positions"]


def request(settings: BackendSettings, header: dict, arrays: dict) -> tuple[dict, dict]:
    """Any request of backend/service/ (``header["op"]`` and its arrays) -> (reply, arrays).

    In-process the service's own dispatcher answers it, so both modes run the same code and
    give the same numbers; failures come back as :class:`BridgeError` either way."""
    header = dict(header, device=settings.device)
    if resolve_mode(settings) == "IN_PROCESS":
        if not torch_available():
            raise BridgeError("PyTorch cannot be imported in this Python; choose the backend process "
                              "(Preferences > Add-ons > Splinetween > Backend) and an interpreter that has it")
        try:
            return _service().handle(header, arrays)
        except Exception as e:  # what the backend process would answer as {"ok": false}
            raise BridgeError(str(e)) from None
    return _process(settings).call(header, arrays, settings.timeout)


def check(settings: BackendSettings) -> str:
    """Start (or reuse) the backend and load the model: a one-line status for the user."""
    info = describe(settings)
    if resolve_mode(settings) == "IN_PROCESS":
        engine = _service().get_engine(str(info.path), settings.device)
        return f"in-process backend, {info.path.name} on {engine.device}"
    proc = _process(settings)
    reply, _ = proc.call({"op": "load", "checkpoint": str(info.path), "device": settings.device}, {},
                         settings.timeout)
    return (f"backend process {proc.proc.pid} ({proc.interpreter}), {info.path.name} on {reply['device']}, "
            f"backend {proc.hello.get('version')}")


class BackendProcess:
    """``<interpreter> -m backend.service`` with a reader thread, so every wait can time out."""

    def __init__(self, interpreter: str, timeout: float):
        self.interpreter = interpreter
        self.keep_log = False
        self.svc = _service()
        root = backend_root()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["PYTHONPATH"] = str(root)
        self.log = tempfile.NamedTemporaryFile(prefix="splinetween-backend-", suffix=".log", delete=False)
        try:
            self.proc = subprocess.Popen([interpreter, "-m", "backend.service"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.log, cwd=str(root), env=env)
        except OSError as e:
            self.log.close()
            Path(self.log.name).unlink(missing_ok=True)
            raise BridgeError(f"cannot start the backend interpreter {interpreter!r} ({e.strerror}); set "
                              "Preferences > Add-ons > Splinetween > Python interpreter") from None
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name="splinetween-backend-reader").start()
        self.hello, _ = self.call({"op": "hello"}, {}, timeout)
        if self.hello.get("protocol") != self.svc.PROTOCOL:
            self.stop()
            raise BridgeError(f"the backend at {interpreter} speaks protocol {self.hello.get('protocol')}, "
                              f"this add-on {self.svc.PROTOCOL}")

    def _read(self):
        while True:
            try:
                self.replies.put(self.svc.read_message(self.proc.stdout))
            except BaseException as e:  # EOF (the process ended) or garbage: tell the waiting call
                self.replies.put(e)
                return

    def alive(self) -> bool:
        return self.proc.poll() is None

    def call(self, header: dict, arrays: dict, timeout: float) -> tuple[dict, dict]:
        try:
            self.svc.write_message(self.proc.stdin, header, arrays)
            item = self.replies.get(timeout=timeout)
        except (BrokenPipeError, OSError, ValueError):
            item = EOFError("the backend process closed its input")
        except queue.Empty:
            self.stop(keep_log=True)
            raise BridgeError(f"the backend did not answer within {timeout:g} s; it was stopped and will be "
                              "started again on the next call (raise the timeout in the preferences for long "
                              "clips or a slow device)") from None
        if isinstance(item, BaseException):
            self.stop(keep_log=True)
            raise BridgeError(self._died(item)) from None
        reply, out = item
        if not reply.get("ok"):
            raise BridgeError(reply.get("error", "the backend failed without a message"))
        return reply, out

    def _died(self, err: BaseException) -> str:
        code = self.proc.returncode
        tail = ""
        try:
            tail = Path(self.log.name).read_text(errors="replace").strip().splitlines()[-1:]
            tail = tail[0] if tail else ""
        except OSError:
            pass
        hint = ""
        if "No module named" in tail:
            hint = " - the interpreter lacks a package the backend needs (torch, numpy, safetensors)"
        if code is None:
            what = f"stopped answering ({err})"
        else:
            what = f"exited with code {code}" + (f" (killed by signal {-code})" if code < 0 else "")
        return (f"the backend process ({self.interpreter}) {what}{': ' + tail if tail else ''}{hint}; "
                f"it will be started again on the next call (log: {self.log.name})")

    def stop(self, keep_log: bool = False):
        """Kill the process if it still runs; its log is kept when it says why it failed."""
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.keep_log = self.keep_log or keep_log
        release(self.proc, self.log, Path(self.log.name), self.keep_log)


def release(proc: subprocess.Popen, log, log_path: Path, keep_log: bool) -> None:
    """Close an ended child's pipes and its log file, deleting the log unless ``keep_log``
    (the backend process and the batch workers end the same way)."""
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()
        except OSError:
            pass
    log.close()
    if not keep_log:
        log_path.unlink(missing_ok=True)


_proc: BackendProcess | None = None
_lock = threading.Lock()


def _process(settings: BackendSettings) -> BackendProcess:
    """The warm backend process for these settings; (re)started when missing, dead or re-configured."""
    global _proc
    interpreter = settings.interpreter or default_interpreter()
    with _lock:
        if _proc is not None and (not _proc.alive() or _proc.interpreter != interpreter):
            _proc.stop()
            _proc = None
        if _proc is None:
            _proc = BackendProcess(interpreter, settings.timeout)
        return _proc


def backend_process() -> BackendProcess | None:
    """The running backend process, if any (tests and the status line use it)."""
    return _proc


def shutdown():
    """Stop the backend process (add-on unregister, Blender exit)."""
    global _proc
    with _lock:
        if _proc is not None:
            try:
                if _proc.alive():
                    _proc.call({"op": "shutdown"}, {}, 5.0)
            except BridgeError:
                pass
            _proc.stop()
            _proc = None
