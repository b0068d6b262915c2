"""The engine cache: one engine per (kind, checkpoint file, device), kept warm between requests
and loaded again when the file is replaced (e.g. by a newer training checkpoint)."""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager

_engines: dict = {}
DEFAULT_THREADS = 1


@contextmanager
def request_threads(torch_threads: bool = True):
    """PyTorch's math threads for one request, put back afterwards (in-process, Blender's Python and
    whatever else runs torch there keep theirs): ``SPLINETWEEN_THREADS`` when set (0: torch's own
    default, every core), else one.  A request of the add-on is a few segments: spreading its small
    products over threads costs more than it wins (a slider change and Encode in Blender, one thread against
    two: docs/results.md, *Speed*, *Blender: Inbetween, sliders, Encode*).  Not for a request on
    ONNX Runtime (``torch_threads`` False: its sessions run on one thread, ``backend.runtime.onnx_runner``), which must
    not import torch at all."""
    if not torch_threads:
        yield
        return
    try:
        want = int(os.environ.get("SPLINETWEEN_THREADS", "") or DEFAULT_THREADS)
    except ValueError:
        want = DEFAULT_THREADS
    try:
        import torch
    except ImportError:  # (a mesh request in a Python without torch fails by itself, naming it)
        yield
        return
    before = torch.get_num_threads()
    if want > 0 and want != before:
        torch.set_num_threads(want)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
_loading = threading.Lock()  # one load at a time: a second caller waits for the engine, never loads it twice

_NEEDS = {(False, True): "Inbetween needs an in-betweening one",
          (False, False): "latent editing (Encode) needs a motion autoencoder one",
          (True, True): "Inbetween Mesh needs a mesh in-betweening one",
          (True, False): "Encode Mesh needs a mesh autoencoder one"}


def get_engine(checkpoint: str | None, device: str = "auto", task: str = "inbetween", mesh: bool = False,
               runtime: str = "torch"):
    """The engine for a checkpoint (None or "" -> the shipped one for ``task``; ``mesh``: a mesh
    engine; ``runtime``: "torch" or "onnx", ``backend.runtime.onnx_runner``), loaded once per (kind, file, device,
    runtime) and again when the file is replaced."""
    if mesh:
        from ..mesh.engine import DEFAULT_MESH as autoencoder
        from ..mesh.engine import DEFAULT_MESH_INBETWEEN as inbetween
        from ..mesh.engine import MeshEngine as factory
    else:
        from ..motion.engine import DEFAULT_CHECKPOINT as autoencoder
        from ..motion.engine import DEFAULT_INBETWEEN as inbetween
        from ..motion.engine import Engine as factory
    path = os.path.abspath(checkpoint) if checkpoint else str(inbetween if task == "inbetween" else autoencoder)
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        stamp = None  # the engine's loader names the missing file
    key = (factory.__name__, path, device, runtime, stamp)
    with _loading:
        if key not in _engines:
            for old in [k for k in _engines if k[:4] == key[:4]]:
                del _engines[old]
            _engines[key] = factory(path, device, runtime)
        engine = _engines[key]
    if engine.task != task:
        need = _NEEDS[mesh, task == "inbetween"]
        raise ValueError(f"{path}: this is {'a mesh' if mesh else 'an'} {engine.task} checkpoint; {need}")
    return engine


def check_reply_size(frames: int, bytes_per_frame: int, what: str) -> None:
    """Refuse, before decoding, an answer larger than one reply array may be (a resample asked
    for absurdly many frames would otherwise allocate them)."""
    from .protocol import MAX_ARRAY
    size = max(0, frames) * bytes_per_frame
    if size > MAX_ARRAY:
        raise ValueError(f"{what}: {frames} output frames are {size} bytes, more than one reply carries "
                         f"({MAX_ARRAY}); ask for fewer frames")


def principal_amounts(engine, pca, row) -> list[float]:
    """A segment's principal-slider amounts, checked against the checkpoint's directions."""
    amounts = [float(x) for x in row]
    if any(amounts) and pca is None:
        raise ValueError(f"{engine.path.name} has no principal directions; set the principal sliders to 0")
    if pca is not None and len(amounts) > len(pca[1]):
        raise ValueError(f"{len(amounts)} principal amounts; {engine.path.name} has {len(pca[1])} directions")
    return amounts


def check_gaps(keys: list[int], max_gap: int, label: str, error=ValueError, frame_time: float | None = None,
               model_frame_time: float | None = None) -> None:
    """Refuse keys (sorted, from 0) with a gap above the model's window (``max_gap`` model frames; keys at
    ``frame_time`` are checked in their own frames) before anything is allocated for their frames, in the
    words and error type the engine itself would use."""
    from ..maths.timebase import MODEL_FRAME_TIME
    from ..motion.inbetween.fill import checked_keys
    mft = model_frame_time or MODEL_FRAME_TIME
    try:
        if not keys:
            raise ValueError("0 keys given; in-betweening needs at least two keys")
        checked_keys(keys, int(keys[-1]) + 1, mft if frame_time is None else frame_time, max_gap, mft)
    except ValueError as e:
        raise error(f"{label}: {e}") from None
