"""Point caches: PC2 (Blender's and 3ds Max's per-vertex cache) and MDD (LightWave's).

PC2 is little-endian: a 32-byte header (``POINTCACHE2\\0``, int32 version 1, int32 points,
float32 start frame, float32 sampling rate, int32 samples) then float32 xyz per sample per
point.  MDD is big-endian: int32 frames, int32 points, float32 times[frames], then float32
xyz per frame per point.  numpy only: the backend reads caches without Blender.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

from .atomic import replacing

PC2_SIGNATURE = b"POINTCACHE2\0"
PC2_VERSION = 1
_PC2_HEADER = struct.Struct("<12siiffi")  # 32 bytes
_MDD_HEADER = struct.Struct(">ii")
SUPPORTED = (".pc2", ".mdd")


class CacheError(ValueError):
    """A point cache that cannot be read or written; the message names the file and the problem."""

    def __init__(self, path, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path, self.problem = str(path), problem


def _check_frames(path, frames) -> np.ndarray:
    arr = np.asarray(frames)
    if arr.ndim != 3 or arr.shape[-1] != 3:
        raise CacheError(path, f"frames must be an array [frames, vertices, 3], got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise CacheError(path, f"empty sequence (shape {arr.shape}): need at least one frame of one vertex")
    if not np.issubdtype(arr.dtype, np.number):
        raise CacheError(path, f"frames must be numeric, got dtype {arr.dtype}")
    arr = arr.astype("<f4")  # float32 overflow (|x| > 3.4e38) shows up as inf below
    bad = ~np.isfinite(arr).all(axis=(1, 2))
    if bad.any():
        raise CacheError(path, f"frame {int(np.argmax(bad))} holds NaN or infinite positions "
                               f"({int(bad.sum())} bad frames); nothing was written")
    return arr


def _write_atomic(path: Path, *payload) -> Path:
    """Write the pieces (bytes or arrays, written without copying) to a temporary file of this process's
    own name (``atomic.temp_name``: two Blenders writing one cache never share one), flush it and rename
    it (``atomic.replacing``), so a reader never sees half a cache."""
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise CacheError(path, f"folder {folder} does not exist; create it or choose another")
    if not os.access(folder, os.W_OK):
        raise CacheError(path, f"folder {folder} is not writable; choose a writable folder")
    try:
        with replacing(path) as tmp:
            with open(tmp, "wb") as f:
                for piece in payload:
                    f.write(memoryview(piece).cast("B") if isinstance(piece, np.ndarray) else piece)
            size = sum(piece.nbytes if isinstance(piece, np.ndarray) else len(piece) for piece in payload)
            if os.path.getsize(tmp) != size:  # a full disk that did not say so: never publish half a cache
                raise OSError(f"only {os.path.getsize(tmp):,} of {size:,} bytes reached the disk")
    except OSError as e:
        raise CacheError(path, f"could not write ({e.strerror or e}); choose a writable folder "
                               f"with free space instead of {folder}") from None
    return path


def write_pc2(path, frames, start: float = 0.0, rate: float = 1.0) -> Path:
    """Write ``frames`` [F, V, 3] as a PC2 cache; ``start`` is the first frame, ``rate`` the
    frames between samples.  Atomic: the file is either complete or absent."""
    path = Path(path)
    arr = _check_frames(path, frames)
    if not (np.isfinite(start) and np.isfinite(rate) and rate > 0):
        raise CacheError(path, f"start must be finite and rate positive, got start={start}, rate={rate}")
    header = _PC2_HEADER.pack(PC2_SIGNATURE, PC2_VERSION, arr.shape[1], start, rate, arr.shape[0])
    return _write_atomic(path, header, np.ascontiguousarray(arr))  # a slider rewrites the file: no copies


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CacheError(path, "no such file") from None
    except IsADirectoryError:
        raise CacheError(path, "is a folder, not a cache file") from None
    except OSError as e:
        raise CacheError(path, f"cannot read ({e.strerror or e})") from None


def read_pc2(path) -> tuple[np.ndarray, float, float]:
    """``(frames float32 [F, V, 3], start, rate)`` from a PC2 file, validated against its header."""
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < _PC2_HEADER.size:
        raise CacheError(path, f"{len(data)} bytes is shorter than the {_PC2_HEADER.size}-byte PC2 header")
    sig, version, points, start, rate, samples = _PC2_HEADER.unpack_from(data)
    if sig != PC2_SIGNATURE:
        raise CacheError(path, f"not a PC2 file: signature {sig!r}, expected {PC2_SIGNATURE!r}")
    if version != PC2_VERSION:
        raise CacheError(path, f"PC2 version {version} is not supported (only version {PC2_VERSION})")
    if points < 1 or samples < 1:
        raise CacheError(path, f"header says {samples} samples of {points} points; both must be at least 1")
    expected = _PC2_HEADER.size + samples * points * 12
    if len(data) != expected:
        raise CacheError(path, f"file is {len(data)} bytes but its header ({samples} samples x {points} "
                               f"points) needs {expected} bytes; it is truncated or corrupt")
    frames = np.frombuffer(data, "<f4", offset=_PC2_HEADER.size).reshape(samples, points, 3)
    return frames.astype(np.float32), float(start), float(rate)


def write_mdd(path, frames, fps: float = 24.0) -> Path:
    """Write ``frames`` [F, V, 3] as an MDD cache with times ``i / fps``.  Atomic."""
    path = Path(path)
    arr = _check_frames(path, frames)
    if not (np.isfinite(fps) and fps > 0):
        raise CacheError(path, f"fps must be positive, got {fps}")
    times = (np.arange(arr.shape[0]) / fps).astype(">f4")
    payload = _MDD_HEADER.pack(arr.shape[0], arr.shape[1]) + times.tobytes() + arr.astype(">f4").tobytes()
    return _write_atomic(path, payload)


def read_mdd(path) -> tuple[np.ndarray, np.ndarray]:
    """``(frames float32 [F, V, 3], times float32 [F])`` from an MDD file."""
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < _MDD_HEADER.size:
        raise CacheError(path, f"{len(data)} bytes is shorter than the {_MDD_HEADER.size}-byte MDD header")
    count, points = _MDD_HEADER.unpack_from(data)
    if count < 1 or points < 1:
        raise CacheError(path, f"header says {count} frames of {points} points; both must be at least 1 "
                               "(is this really an MDD file?)")
    expected = _MDD_HEADER.size + count * 4 + count * points * 12
    if len(data) != expected:
        raise CacheError(path, f"file is {len(data)} bytes but its header ({count} frames x {points} "
                               f"points) needs {expected} bytes; it is truncated or corrupt")
    times = np.frombuffer(data, ">f4", count, _MDD_HEADER.size).astype(np.float32)
    frames = np.frombuffer(data, ">f4", offset=_MDD_HEADER.size + count * 4).reshape(count, points, 3)
    return frames.astype(np.float32), times


def read_header(path) -> tuple[int, int]:
    """``(frames, points)`` from a .pc2 or .mdd header (suffix decides, any case), without reading
    the positions; ``CacheError`` for a file that is not one."""
    path = Path(path)
    pc2 = path.suffix.lower() == ".pc2"
    size = (_PC2_HEADER if pc2 else _MDD_HEADER).size
    try:
        with open(path, "rb") as f:
            head = f.read(size)
    except OSError as e:
        raise CacheError(path, f"cannot read ({e.strerror or e})") from None
    if len(head) < size:
        raise CacheError(path, f"not a{' PC2' if pc2 else 'n MDD'} file ({len(head)} bytes is shorter than its "
                               f"{size}-byte header)")
    if not pc2:
        return _MDD_HEADER.unpack(head)
    sig, _, points, _, _, samples = _PC2_HEADER.unpack(head)
    if sig != PC2_SIGNATURE:
        raise CacheError(path, f"not a PC2 file: signature {sig!r}, expected {PC2_SIGNATURE!r}")
    return samples, points


def read_cache(path) -> np.ndarray:
    """Frames float32 [F, V, 3] from a .pc2 or .mdd file (suffix decides, any case)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".pc2":
        return read_pc2(path)[0]
    if suffix == ".mdd":
        return read_mdd(path)[0]
    raise CacheError(path, f"unknown cache type {path.suffix!r}; supported: {', '.join(SUPPORTED)}")
