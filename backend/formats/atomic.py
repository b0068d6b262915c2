"""The one atomic write: a temporary file in the destination's folder (same file system), flushed
to disk, then renamed over the destination, so a reader sees the old file or the new one, never
half of one (``creating``: the same, but never over an existing file).  And the one claim on a
destination (``claim``): an exclusive lock, so that two runs never write one file at the same time.
Standard library only: the add-on reaches it through ``bridge.numpy_module``."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

# POSIX: flock; Windows: msvcrt.locking.  Either lock goes with the process: a killed run leaves none
# (``sys.platform`` tests, which the type checker reads: it checks the branch of the platform it runs on)
if sys.platform == "win32":  # pragma: no cover - Windows
    import msvcrt
else:
    import fcntl

LOCK_TAG = ".splinetween-lock"
_WIN_LOCK_BYTE = 1 << 30  # Windows locks are mandatory: lock a byte past the owner's text, which stays readable


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


@contextlib.contextmanager
def creating(dest, temp=None):
    """As ``replacing``, but ``dest`` must not exist: it is published with a hard link (FileExistsError
    when another file took the name meanwhile; nothing is ever written over), or, where the file
    system has no hard links, by reserving the name with O_EXCL and renaming over that empty file."""
    dest = Path(dest)
    tmp = Path(temp) if temp is not None else temp_name(dest)
    try:
        yield tmp
        fsync_file(tmp)
        try:
            os.link(tmp, dest)
        except FileExistsError:
            raise
        except OSError:  # no hard links here (FAT, some network shares)
            os.close(os.open(dest, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            os.replace(tmp, dest)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


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


# -- one writer per destination ---------------------------------------------------------------
def lock_path(dest) -> Path:
    dest = Path(dest)
    return dest.with_name(f".{dest.name}{LOCK_TAG}")


def owner(tool: str, **extra) -> dict:
    """What a claim tells a second run about the first: process, machine, command, start time."""
    return {"pid": os.getpid(), "host": socket.gethostname(), "tool": tool,
            "started": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"), **extra}


def holder(who: dict) -> str:
    """``another run (process 1234, python -m backend inbetween, started 2026-12-07 18:14:02 UTC)``."""
    if not who:
        return "another run (it has not written its name yet)"
    host = f" on {who['host']}" if who.get("host") not in (None, socket.gethostname()) else ""
    parts = [f"process {who.get('pid', '?')}{host}", who.get("tool", ""), f"started {who.get('started', '?')}"]
    if who.get("report"):
        parts.append(f"report {who['report']}")
    return "another run (" + ", ".join(p for p in parts if p) + ")"


class Busy(OSError):
    """Another live process holds the claim on ``dest``; ``owner`` is what it wrote in the lock file."""

    def __init__(self, dest: Path, who: dict):
        super().__init__(errno.EBUSY, f"{holder(who)} is writing it", str(dest))
        self.dest, self.owner = Path(dest), who


class Claim:
    """An exclusive lock on ``dest``'s lock file, held until ``release`` (or the process ends)."""

    def __init__(self, dest: Path, path: Path, fd: int):
        self.dest, self.path, self.fd = dest, path, fd

    def release(self) -> None:
        if self.fd < 0:
            return
        if sys.platform != "win32":  # removed while still locked: a run that opened it meanwhile sees a stale name
            with contextlib.suppress(OSError):
                self.path.unlink()
            os.close(self.fd)
        else:  # pragma: no cover - Windows: an open file cannot be removed; a run holding it keeps it
            os.close(self.fd)
            with contextlib.suppress(OSError):
                self.path.unlink()
        self.fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover - Windows
        os.lseek(fd, _WIN_LOCK_BYTE, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        finally:
            os.lseek(fd, 0, os.SEEK_SET)
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _read_owner(fd: int) -> dict:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        doc = json.loads(os.read(fd, 1 << 16).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def claim(dest, who: dict) -> Claim:
    """Lock ``dest`` for this process (its folder is made when missing) -> Claim; Busy when another
    live process holds it.  A lock file left by a killed run holds no lock and is simply taken."""
    dest = Path(dest)
    path = lock_path(dest)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _try_lock(fd):
                raise Busy(dest, _read_owner(fd))
            try:  # the holder before us may have removed the name after we opened it: lock the file at the name
                current = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                current = False
        except BaseException:
            os.close(fd)
            raise
        if current:
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, json.dumps(who).encode("utf-8"))
    return Claim(dest, path, fd)

