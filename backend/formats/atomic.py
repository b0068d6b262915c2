"""The one atomic write: a temporary file in the destination's folder (same file system), flushed
to disk, then renamed over the destination, so a reader sees the old file or the new one, never
half of one.  Standard library only: the add-on reaches it through ``bridge.numpy_module``."""
from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path


def temp_name(dest: Path) -> Path:
    """The default temporary name: hidden, next to ``dest``, unique per process."""
    return dest.with_name(f".{dest.name}.tmp{os.getpid()}")


def fsync_file(path: Path) -> None:
    """Flush ``path`` to disk (best effort: some file systems refuse fsync on a read-only handle)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def replacing(dest, temp=None):
    """``with replacing(out) as tmp: write tmp`` -> ``out`` appears complete, or not at all; the
    temporary file (``temp``, default ``temp_name(out)``) is removed when the block fails."""
    dest = Path(dest)
    tmp = Path(temp) if temp is not None else temp_name(dest)
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def write_bytes(dest, data: bytes, temp=None) -> Path:
    with replacing(dest, temp) as tmp:
        Path(tmp).write_bytes(data)
    return Path(dest)


def write_text(dest, text: str, temp=None) -> Path:
    return write_bytes(dest, text.encode("utf-8"), temp)


def folder_problem(folder) -> str:
    """Why files cannot be written into ``folder`` (made when missing), or "": proved with a probe file
    in the folder, or in its nearest existing parent when it is missing, so the check creates nothing
    that stays (a refused operation leaves the disk as it was)."""
    folder = Path(folder).expanduser()
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        where = "is a file" if probe == folder else f"cannot be created: {probe} is a file"
        return f"{where}, not a folder"
    try:
        fd, name = tempfile.mkstemp(prefix=".splinetween-write-test-", dir=probe)
    except OSError as e:
        why = "the file system is read-only" if e.errno == errno.EROFS else (e.strerror or str(e)).lower()
        return f"cannot write {'there' if probe == folder else f'in {probe} to create it'} ({why})"
    os.close(fd)
    os.unlink(name)
    return ""
