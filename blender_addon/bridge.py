"""The one door to the backend: every request goes through :func:`request`, in Blender or to a backend process.

This is the only module of the add-on that imports ``backend``, and it does so lazily: the
bundled copy (``<add-on>/backend``, put there by build.py) when present, else the top-level
``backend`` of a source checkout.

* ``BUILTIN``: the service runs inside Blender's Python, its models on ONNX Runtime (the graphs
  ``python -m backend export`` writes next to each checkpoint; the extension ships ONNX Runtime as
  wheels): nothing to install.  The default.
* ``SUBPROCESS``: ``<interpreter> -m backend.service`` runs beside Blender with PyTorch (GPUs,
  checkpoints without exported graphs) and answers framed requests on its stdin/stdout (see
  backend/service/); the model stays loaded between calls, a call that takes longer than the
  timeout stops the process, and a dead process is started again on the next call.
* ``IN_PROCESS``: the service inside Blender's Python with PyTorch (a developer's Blender that has it).
* ``AUTO``: in-process PyTorch where it imports (the batch's workers, a developer's Blender), else
  built-in when the request's checkpoint has current exported graphs (and no GPU is asked for), else
  the backend process.  In Blender's own Python: Built-in unless a checkpoint has no exported model.

Longer than 300 lines: the door and the backend process behind it are one protocol (handshake, timeouts,
the process's life), read together.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .core.errors import Refusal

MODES = ("AUTO", "BUILTIN", "IN_PROCESS", "SUBPROCESS")


class BridgeError(Refusal, RuntimeError):
    """Anything that kept the backend from answering; the message says what to do.  A ``Refusal`` (the
    add-on's one refusal type), so every operator reports it as it reports its own checks."""


@dataclass(frozen=True)
class BackendSettings:
    mode: str = "AUTO"
    checkpoint: str = ""  # "" -> the shipped in-betweening checkpoint
    device: str = "auto"
    interpreter: str = ""  # "" -> default_interpreter()
    timeout: float = 120.0  # a request's allowance, once the backend process answers
    startup: float = 60.0  # the backend process's start (Python, numpy, torch's imports, its handshake)


@dataclass(frozen=True)
class ModelInfo:
    """What the add-on knows about a checkpoint, read from its JSON alone (no torch, no weights):
    :func:`read_model` is the one reader (Inbetween, the latent layer, mesh, Train Mesh Model)."""
    path: Path
    names: tuple[str, ...]  # the training skeleton (empty for a mesh checkpoint)
    parents: tuple[int, ...]
    offsets: np.ndarray  # [J, 3] the training skeleton's rest offsets (cm, BVH axes)
    position_joints: tuple[int, ...]
    rotation_joints: tuple[int, ...]
    window: int
    frame_time: float = 1.0 / 30.0  # the rate the model was trained at (seconds per frame)
    task: str = "inbetween"  # "inbetween" (a keyframe model) or "autoencoder"
    latent: int = 0  # the size of a control point
    min_frames: int = 2  # the shortest clip the model encodes
    principal_names: tuple[str, ...] = ()
    principal_descriptions: tuple[str, ...] = ()
    style_names: tuple[str, ...] = ()  # the styles it knows (training.style), each with one line
    style_descriptions: tuple[str, ...] = ()
    mesh: bool = False  # a mesh-sequence checkpoint (its asset: a vertex basis)
    vertices: int = 0  # a mesh checkpoint's vertex count
    files: tuple[Path, ...] = ()  # the config, its weights and (a mesh asset) its shared vertex basis
    graphs: tuple[Path, ...] = ()  # its exported graphs (the built-in backend's), there or not
    not_motion: str = ""  # the refusal where an armature's model is read and this is a mesh checkpoint

    @property
    def max_gap(self) -> int:
        """The longest gap in the model's own frames (2 s at 30 fps)."""
        return self.window - 1

    def scene_max_gap(self, fps: float) -> int:
        """The longest gap in frames of a scene at ``fps`` (``backend.maths.timebase``: keys are resampled to the model's rate)."""
        return numpy_module("maths.timebase").max_scene_gap(self.max_gap, 1.0 / fps, self.frame_time)

    def same_rate(self, fps: float) -> bool:
        return numpy_module("maths.timebase").same_rate(1.0 / fps, self.frame_time)


_backend_package = None


def backend_package():
    """The bundled ``backend`` subpackage inside the extension, else the source tree's (found once: a
    slider change asks for it twice, and each would search the import path)."""
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


# The shipped in-betweeners a user chooses between (the preferences' Model, the batch's --model): the file, the
# menu's label and what its data's terms allow.  The first is the default.
SHIPPED_INBETWEENERS = {
    "STUDIO": ("inbetween.json", "Studio Mix (non-commercial)",
               "Trained on Bandai-Namco's motion (CC BY-NC 4.0) and other studios': its output is for "
               "non-commercial use only. The best on familiar motion"),
    "OPEN": ("inbetween_open.json", "Open Data (commercial use)",
             "Trained only on capture whose terms allow commercial use (CMU, ReActIdle under MIT): its output may "
             "be used in a commercial production"),
}


def default_checkpoint(model: str = "STUDIO") -> Path:
    """The shipped in-betweener ``model`` (a key of :data:`SHIPPED_INBETWEENERS`)."""
    name = SHIPPED_INBETWEENERS[model][0]
    return Path(backend_package().__file__).resolve().parent / "checkpoints" / name


def default_autoencoder() -> Path:
    """The shipped motion autoencoder (latent editing: Encode and its sliders)."""
    return Path(backend_package().__file__).resolve().parent / "checkpoints" / "motion_autoencoder.json"


def default_mesh_checkpoint(task: str) -> Path:
    """The shipped mesh-sequence checkpoint for ``task`` ("autoencoder" or "inbetween"): the cloth asset's."""
    name = "cloth_inbetween.json" if task == "inbetween" else "cloth_autoencoder.json"
    return Path(backend_package().__file__).resolve().parent / "checkpoints" / name


def numpy_module(name: str):
    """A numpy-only backend module (``formats.*``: BVH, PC2, atomic writes, JSON limits; ``maths.quat_np``,
    ``maths.timebase``, ``mesh.sequences``, ``runtime.kind``, ``runtime.files`` (a checkpoint's files),
    ``runtime.onnx_runner`` (ONNX Runtime), the ``humanoid`` package's: skeleton finding and conversion;
    ``motion.calibration``, ``motion.edits``, ``motion.skeleton``, ``motion.style``): safe to use in Blender without torch."""
    if name not in ("mesh.sequences", "maths.quat_np", "maths.timebase", "runtime.kind", "runtime.files",
                    "runtime.onnx_runner",
                    "motion.calibration", "motion.edits", "motion.skeleton", "motion.style") \
            and not name.startswith(("humanoid.", "formats.")):
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


def read_model(path) -> ModelInfo:
    """The one checkpoint reader of the add-on: ``NAME.json`` (or ``NAME``, ``NAME.safetensors``) ->
    :class:`ModelInfo`, read again when the file changes; :class:`BridgeError` names a file that cannot
    be read or is not a checkpoint."""
    path = Path(path).expanduser()
    path = path if path.suffix == ".json" else path.with_suffix(".json")
    try:
        key = (str(path), path.stat().st_mtime_ns)
        if key not in _info_cache:
            if len(_info_cache) > 64:
                _info_cache.clear()
            _info_cache[key] = _model_info(path, numpy_module("formats.json_limits").read(path))
    except OSError as e:
        raise BridgeError(f"cannot read the checkpoint {path} ({e.strerror}); check Preferences > "
                          "Add-ons > Splinetween > Checkpoint") from None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError) as e:  # (fields of another
        # type, or a number no integer holds: "window": Infinity)
        raise BridgeError(f"{path} is not a Splinetween checkpoint ({type(e).__name__}: {str(e)[:200]})") from None
    return _info_cache[key]


def _model_info(path: Path, doc: dict) -> ModelInfo:
    checkpoint_kind = numpy_module("runtime.kind")
    found = checkpoint_kind.kind_of(doc)
    if found is None:
        raise BridgeError(checkpoint_kind.not_motion(path.name, doc))  # (names what a checkpoint holds)
    content, task = found  # ("motion" or "mesh", the model task)
    info, asset = doc.get("info") or {}, doc.get("asset") or {}
    mesh = content == "mesh"
    sk = {} if mesh else doc["skeleton"]
    feat = {} if mesh else doc["features"]
    found = numpy_module("runtime.files").resolve(path, doc)  # (the one resolver: a renamed set included)
    files = (found.config, found.weights) + ((found.basis,) if found.basis else ())
    return ModelInfo(path, tuple(sk.get("names", ())), tuple(int(p) for p in sk.get("parents", ())),
                     np.asarray(sk.get("offsets", ()), dtype=np.float64).reshape(-1, 3),
                     tuple(feat.get("position_joints", ())), tuple(feat.get("rotation_joints", ())),
                     int(doc.get("window", 61)), numpy_module("maths.timebase").model_frame_time(info),
                     task=task,
                     latent=int(doc["model"]["latent"]), min_frames=int((info.get("config") or {}).get("min_window", 2)),
                     principal_names=tuple(info.get("principal_names", ())),
                     principal_descriptions=tuple(info.get("principal_descriptions", ())),
                     style_names=tuple(info.get("style_names", ())),
                     style_descriptions=tuple(info.get("style_descriptions", ())),
                     mesh=mesh, vertices=int(asset.get("vertices", 0)), files=files,
                     graphs=tuple(found.graphs.values()),
                     not_motion=checkpoint_kind.not_motion(path.name, doc))


def wrong_kind(path, wanted: tuple[str, str], operator: str) -> str:
    """The refusal of checkpoint ``path`` where ``operator`` needs the kind ``wanted`` ("motion" or "mesh",
    "inbetween" or "autoencoder"): what it is, which operator uses it, which preference to set ("" when
    it is of that kind; ``backend.runtime.kind``)."""
    info = read_model(path)
    return numpy_module("runtime.kind").refusal(info.path.name, ("mesh" if info.mesh else "motion", info.task),
                                                wanted, operator)


def describe(settings: BackendSettings) -> ModelInfo:
    """The in-betweening checkpoint the settings name (the shipped one when none): :func:`read_model`,
    refused by name when it is not a motion checkpoint."""
    info = read_model(Path(settings.checkpoint).expanduser() if settings.checkpoint else default_checkpoint())
    if info.not_motion:
        raise BridgeError(info.not_motion)
    return info


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def onnxruntime_available() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


_exported: dict = {}  # (checkpoint, its files' mtimes) -> why its graphs cannot run ("" when they can)


def exported(checkpoint) -> str:
    """Why ``checkpoint``'s exported graphs cannot run built-in ("" when they can): ``backend.runtime.onnx_runner.stale``,
    asked again only when one of its files changes (a slider asks on every change)."""
    json_path = Path(checkpoint).with_suffix(".json")
    try:
        info = read_model(json_path)  # (read again only when the config changes)
        files = info.files + info.graphs
    except BridgeError:  # (stale names what is wrong with the config)
        files = (json_path,)
    key = (str(json_path),) + tuple(f.stat().st_mtime_ns if f.exists() else None for f in files)
    if key not in _exported:
        if len(_exported) > 64:
            _exported.clear()
        _exported[key] = numpy_module("runtime.onnx_runner").stale(json_path)
    return _exported[key]


def resolve_mode(settings: BackendSettings, checkpoint=None) -> str:
    """The mode a request for ``checkpoint`` (default: the settings' in-betweening one) runs in."""
    if settings.mode not in MODES:
        raise BridgeError(f"unknown backend mode {settings.mode!r} (one of {', '.join(MODES)})")
    if settings.mode != "AUTO":
        return settings.mode
    if torch_available():  # (a Python with PyTorch: the batch's workers, a developer's Blender: torch stays)
        return "IN_PROCESS"
    path = Path(checkpoint) if checkpoint else describe(settings).path
    if onnxruntime_available() and settings.device in ("auto", "cpu") and not exported(path):
        return "BUILTIN"
    return "SUBPROCESS"


def backend_module(name: str):
    """Any backend module (imports torch for most): for the batch workers that run the engine directly."""
    return importlib.import_module(f"{backend_package().__name__}.{name}")


def _service():
    return backend_module("service")


def inbetween(settings: BackendSettings, offsets: np.ndarray, keys, key_rotations: np.ndarray,
              key_positions: np.ndarray, frame_time: float = 1.0 / 30.0,
              contacts: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Key poses in the checkpoint's convention (keys 0-based from 0) -> every frame: the service's
    ``inbetween`` through :func:`request`, the one door; ``contacts``: feet the keys plant stay planted."""
    info = describe(settings)
    arrays = {"offsets": np.asarray(offsets, dtype=np.float64),
              "key_rotations": np.asarray(key_rotations, dtype=np.float64),
              "key_positions": np.asarray(key_positions, dtype=np.float64)}
    header = {"op": "inbetween", "checkpoint": str(info.path), "keys": [int(k) for k in keys],
              "frame_time": frame_time, "contacts": bool(contacts)}
    _, out = request(settings, header, arrays)
    return out["rotations"], out["positions"]


def request(settings: BackendSettings, header: dict, arrays: dict) -> tuple[dict, dict]:
    """Any request of backend/service/ (``header["op"]`` and its arrays) -> (reply, arrays): the one door.

    Built-in and in-process the service's own dispatcher answers it (on ONNX Runtime or PyTorch), so
    every mode runs the same code and gives the same numbers (tests/test_onnx.py); failures come back
    as :class:`BridgeError` in every mode."""
    header = dict(header, device=settings.device)
    mode = resolve_mode(settings, header.get("checkpoint") or None)
    if mode == "SUBPROCESS":
        return _process(settings).call(header, arrays, settings.timeout)
    if mode == "BUILTIN":
        if not onnxruntime_available():
            raise BridgeError("ONNX Runtime cannot be imported in this Python (the extension installs it with "
                              "the add-on: reinstall the add-on's zip for this platform), or choose the backend "
                              "process (Preferences > Add-ons > Splinetween > Backend)")
        header["runtime"] = "onnx"
    elif not torch_available():
        raise BridgeError("PyTorch cannot be imported in this Python; choose Built-in or the backend process "
                          "(Preferences > Add-ons > Splinetween > Backend)")
    try:
        return _service().handle(header, arrays)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # what the backend process would answer as {"ok": false}
        raise BridgeError(str(e)) from None


def check(settings: BackendSettings) -> str:
    """Start (or reuse) the backend and load the model: a one-line status for the user."""
    info = describe(settings)
    reply, _ = request(settings, {"op": "load", "checkpoint": str(info.path)}, {})
    mode = resolve_mode(settings, info.path)
    if mode == "SUBPROCESS":
        proc = _process(settings)
        return (f"backend process {proc.proc.pid} ({proc.interpreter}), {info.path.name} on {reply['device']}, "
                f"backend {proc.hello.get('version')}")
    where = "built-in backend (ONNX Runtime)" if mode == "BUILTIN" else "in-process backend (PyTorch)"
    return f"{where}, {info.path.name} on {reply['device']}"


MAX_STARTUP_SECONDS = 600.0  # the longest start-up allowance the preferences offer
WAIT_SLICE = 0.1  # seconds between a waiting start's progress calls (the status bar's clock, Esc)
MIN_PYTHON = (3, 11)
_VERSION_PROBE = "import sys; sys.stdout.write('%d.%d.%d' % tuple(sys.version_info[:3]))"


def startup_allowance(settings: BackendSettings) -> float:
    """The seconds a start may take: the preference, held within what a wait can be (one slice to
    ``MAX_STARTUP_SECONDS``); the process waits this long and the status bar shows it."""
    return min(max(settings.startup, WAIT_SLICE), MAX_STARTUP_SECONDS)


class StartCancelled(BridgeError):
    """The user stopped the backend process's start (Esc while it started)."""


class BackendProcess:
    """``<interpreter> -m backend.service`` with a reader thread, so every wait can time out.

    The process runs in its own process group (POSIX: its own session), so that stopping it also stops
    what it started (an interpreter that is a wrapper script and its child); the reader thread owns
    the output pipe and closes it when the stream ends, so no caller ever waits on a child that is gone."""

    def __init__(self, interpreter: str, startup: float, waiting=None):
        """Start ``interpreter`` and wait up to ``startup`` seconds for its handshake; ``waiting(elapsed)``
        is called every ``WAIT_SLICE`` s meanwhile (a progress display) and may raise
        :class:`StartCancelled` to stop the start."""
        self.interpreter = interpreter
        self.keep_log = False
        self.svc = _service()
        root = backend_root()
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env["PYTHONPATH"] = str(root)
        self.log = tempfile.NamedTemporaryFile(prefix="splinetween-backend-", suffix=".log", delete=False)
        group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if os.name == "nt" else \
            {"start_new_session": True}
        try:
            self.proc = subprocess.Popen([interpreter, "-m", "backend.service"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.log, cwd=str(root), env=env, **group)
        except OSError as e:
            self.log.close()
            Path(self.log.name).unlink(missing_ok=True)
            raise BridgeError(f"cannot start the backend interpreter {interpreter!r} ({e.strerror}); set "
                              "Preferences > Add-ons > Splinetween > Python interpreter") from None
        self.replies: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True, name="splinetween-backend-reader")
        self.reader.start()
        self.hello, _ = self.call({"op": "hello"}, {}, startup, starting=True, waiting=waiting)
        if self.hello.get("protocol") != self.svc.PROTOCOL:
            self.stop()
            raise BridgeError(f"the backend at {interpreter} speaks protocol {self.hello.get('protocol')}, "
                              f"this add-on {self.svc.PROTOCOL}")
        old = _too_old(str(self.hello.get("python", "")))
        if old:
            self.stop()
            raise BridgeError(old)

    def _read(self):
        stream = self.proc.stdout
        try:
            while True:
                try:
                    self.replies.put(self.svc.read_message(stream))
                except BaseException as e:  # EOF (the process ended) or garbage: tell the waiting call
                    self.replies.put(e)
                    return
        finally:  # (only here: closing a pipe another thread reads waits for that read to end)
            try:
                stream.close()
            except OSError:
                pass

    def alive(self) -> bool:
        return self.proc.poll() is None

    def call(self, header: dict, arrays: dict, timeout: float, starting: bool = False,
             waiting=None) -> tuple[dict, dict]:
        try:
            self.svc.write_message(self.proc.stdin, header, arrays)
            item = self._next_reply(timeout, waiting)
        except (BrokenPipeError, OSError, ValueError):
            item = self._why_closed()
        except StartCancelled as e:
            self.stop()
            raise StartCancelled(f"{e}; the backend process ({self.interpreter}) was stopped") from None
        except queue.Empty:
            self.stop(keep_log=True)
            if starting:
                tail = self._tail()
                raise BridgeError(f"the backend process ({self.interpreter}) did not start within {timeout:g} s "
                                  "(Preferences > Add-ons > Splinetween > Start-up Allowance)"
                                  + (f"; it printed: {tail}" if tail else "; it printed nothing")
                                  + f"; it was stopped (log: {self.log.name})") from None
            raise BridgeError(f"the backend did not answer within {timeout:g} s; it was stopped and will be "
                              "started again on the next call (raise the timeout in the preferences for long "
                              "clips or a slow device)") from None
        if isinstance(item, BaseException):
            if isinstance(item, EOFError):  # the output closed: the process is ending, let it say how
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            why = self._died(item, starting)
            self.stop(keep_log=True)
            raise BridgeError(why) from None
        reply, out = item
        if not reply.get("ok"):
            raise BridgeError(reply.get("error", "the backend failed without a message"))
        return reply, out

    def _next_reply(self, timeout: float, waiting=None):
        """The reader's next item within ``timeout`` s (``queue.Empty`` past it); with ``waiting``, in slices,
        calling ``waiting(elapsed)`` between them."""
        if waiting is None:
            return self.replies.get(timeout=timeout)
        start = time.monotonic()
        while True:
            left = timeout - (time.monotonic() - start)
            if left <= 0:
                raise queue.Empty
            try:
                return self.replies.get(timeout=min(WAIT_SLICE, left))
            except queue.Empty:
                waiting(time.monotonic() - start)

    def _why_closed(self) -> BaseException:
        """The process closed its input before the request was written: the reader has (or soon has) what
        ended its output, garbage it read or the end of the stream; that says more than the closed pipe."""
        try:
            item = self.replies.get(timeout=5)
        except queue.Empty:
            item = None
        return item if isinstance(item, BaseException) else EOFError("the backend process closed its input")

    def _tail(self) -> str:
        try:
            lines = [ln for ln in Path(self.log.name).read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            return ""
        return lines[-1].strip()[:300] if lines else ""

    def _died(self, err: BaseException, starting: bool) -> str:
        """Why the process cannot answer, in the user's words: what it printed, how it ended (never our
        own kill), and for a start that failed, whether the interpreter is too old."""
        code = self.proc.poll()
        tail = self._tail()
        if starting:
            old = _too_old(_probe_version(self.interpreter))
            if old:
                return old + (f"; it printed: {tail}" if tail else "")
        hint = ""
        if "No module named" in tail:
            hint = " - the interpreter lacks a package the backend needs (torch, numpy, safetensors)"
        if isinstance(err, self.svc.ProtocolError):
            what = (f"wrote something that is not a Splinetween reply on its output ({err}); is "
                    f"{self.interpreter} a Python that runs the backend?")
        elif code is None:
            what = f"stopped answering ({err})"
        elif code == 0:
            what = "ended without answering (exit code 0)"
        else:
            what = f"exited with code {code}" + (f" (killed by signal {-code})" if code < 0 else "")
        return (f"the backend process ({self.interpreter}) {what}{': ' + tail if tail else ''}{hint}; "
                f"it will be started again on the next call (log: {self.log.name})")

    def stop(self, keep_log: bool = False):
        """Kill the process and its group if they still run; its log is kept when it says why it failed."""
        _kill_group(self.proc)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.keep_log = self.keep_log or keep_log
        release(self.proc, self.log, Path(self.log.name), self.keep_log, reader_owns_output=True)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL to the process's whole group (its own, from ``start_new_session``); Windows: the process."""
    if os.name != "nt":
        import signal
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            return
        except (ProcessLookupError, PermissionError):
            pass  # the group is gone (or was never ours): the process itself, if it still runs
    if proc.poll() is None:
        proc.kill()


def _probe_version(interpreter: str) -> str:
    """``interpreter``'s version as "X.Y.Z" (a command every Python since 2.6 runs), "" when it does not say."""
    try:
        res = subprocess.run([interpreter, "-c", _VERSION_PROBE], capture_output=True, timeout=30,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    return res.stdout.decode("ascii", "replace").strip()[:20]


def _too_old(version: str) -> str:
    """The refusal for a Python older than ``MIN_PYTHON`` ("" when ``version`` is new enough or unknown)."""
    try:
        parts = tuple(int(v) for v in version.split(".")[:2])
    except ValueError:
        return ""
    if len(parts) < 2 or parts >= MIN_PYTHON:
        return ""
    return (f"the backend interpreter is Python {version}; Python {'.'.join(map(str, MIN_PYTHON))} or newer is "
            "needed (set Preferences > Add-ons > Splinetween > Python interpreter)")


def release(proc: subprocess.Popen, log, log_path: Path, keep_log: bool, reader_owns_output: bool = False) -> None:
    """Close an ended child's pipes and its log file, deleting the log unless ``keep_log``
    (the backend process and the batch workers end the same way); ``reader_owns_output``: the
    output pipe is left to the thread that reads it (closing it here would wait for that read)."""
    for stream in (proc.stdin,) if reader_owns_output else (proc.stdin, proc.stdout):
        try:
            stream.close()
        except OSError:
            pass
    log.close()
    if not keep_log:
        log_path.unlink(missing_ok=True)


_proc: BackendProcess | None = None
_lock = threading.Lock()


def _process(settings: BackendSettings, waiting=None) -> BackendProcess:
    """The warm backend process for these settings; (re)started when missing, dead or re-configured
    (``waiting``: see :class:`BackendProcess`)."""
    global _proc
    interpreter = settings.interpreter or default_interpreter()
    with _lock:
        if _proc is not None and not _warm(interpreter):
            _proc.stop()
            _proc = None
        if _proc is None:
            _proc = BackendProcess(interpreter, startup_allowance(settings), waiting)
        return _proc


def _warm(interpreter: str) -> bool:
    """Whether the running backend process can answer for ``interpreter`` as it is."""
    return _proc is not None and _proc.alive() and _proc.interpreter == interpreter


def needs_start(settings: BackendSettings, checkpoint=None) -> bool:
    """Whether a request with these settings would first have to start the backend process (the UI then
    starts it with a clock in the status bar and Esc to cancel: ``backend_start.py``)."""
    if resolve_mode(settings, checkpoint) != "SUBPROCESS":
        return False
    return not _warm(settings.interpreter or default_interpreter())


def start(settings: BackendSettings, waiting=None) -> BackendProcess:
    """Start the backend process now (or return the warm one): ``waiting(elapsed)`` is called while it
    starts and may raise :class:`StartCancelled`."""
    return _process(settings, waiting)


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
