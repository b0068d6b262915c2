"""Writes that never leave a half-written file, ``.blend1``-style backups and done markers.

No bpy here: the coordinator uses it to decide what to skip, the workers to publish results.

* Every output is written to ``.<name>.splinetween-tmp-<pid>-<token><suffix>`` in the destination
  folder (same file system; the writing process's id and a token drawn once per process, so no
  other process, here or on another machine, takes the name), flushed to disk and renamed over the
  destination with ``os.replace`` (atomic on POSIX and Windows).  An interrupted run leaves at most
  such a temporary file; a later writer of that destination removes it, and only when the process
  named in it is gone (:func:`remove_stale_temps`): another run's file being written is never touched.
* ``--in-place`` first copies the current file to ``<name>1`` (as Blender keeps ``scene.blend1``),
  also through a temporary file, so at every moment both names hold a complete file.  A backup is
  never written over: when ``<name>1`` already holds another version, the copy goes to the first
  free ``<name>2``, ``<name>3``, ...; when it already holds this very file, it is kept as it is.
* A done marker ``<output>.done`` (JSON) is written after the output; a file is skipped on a
  re-run only when its marker matches the command, the options, the input's size and
  modification time, and the output's size and modification time (:func:`is_done`).
"""
from __future__ import annotations

import contextlib
import errno
import filecmp
import hashlib
import json
import os
import re
import secrets
import shutil
from pathlib import Path

from .. import bridge

TEMP_TAG = ".splinetween-tmp-"
MARKER_SUFFIX = ".done"
BACKUP_SUFFIX = "1"
MAX_MARKER = 16 << 20  # a marker holds one file's report entry
BACKUP_NAME = re.compile(r"\.(blend|bvh)\d+$", re.IGNORECASE)  # scene.blend1, scene.blend2, walk.bvh1
_TOKEN = secrets.token_hex(3)  # this process's part of its temporary names


def temp_path(dest: Path) -> Path:
    """A hidden temporary name next to ``dest``; it ends in ``.blend`` for a .blend (Blender saves
    only to that suffix) and in ``.tmp`` otherwise, so that no watcher of ``*.done`` or ``*.bvh``
    mistakes it for a finished file."""
    dest = Path(dest)
    suffix = ".blend" if dest.suffix == ".blend" else ".tmp"
    return dest.with_name(f".{dest.name}{TEMP_TAG}{os.getpid()}-{_TOKEN}{suffix}")


def temp_owner(name: str) -> int | None:
    """The process id in a temporary name (``….splinetween-tmp-<pid>-<token>…``; older runs: ``-<pid>.``)."""
    m = re.match(r"(\d+)", name.rsplit(TEMP_TAG, 1)[-1]) if TEMP_TAG in name else None
    return int(m.group(1)) if m else None


@contextlib.contextmanager
def atomic_target(dest: Path, new: bool = False):
    """``with atomic_target(out) as tmp: write tmp`` -> ``out`` appears complete, or not at all
    (the backend's ``atomic.replacing``, with the batch's temporary names); ``new``: never over an
    existing file (``atomic.creating``: FileExistsError)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(dest)
    atomic = bridge.numpy_module("formats.atomic")
    try:
        with (atomic.creating if new else atomic.replacing)(dest, tmp):
            yield tmp
            if not tmp.exists():
                raise OSError(f"{dest}: nothing was written")
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "@")):  # Blender saves through "<path>@"
            with contextlib.suppress(OSError):
                leftover.unlink()


def write_checked(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` and read it back: a write the disk cut short without saying so (a full
    disk, a quota) is an OSError here, before the file is published."""
    path = Path(path)
    path.write_bytes(data)
    back = path.read_bytes()
    if back != data:
        raise OSError(errno.EIO, f"the file read back holds {len(back):,} of the {len(data):,} bytes written "
                                 "(is the disk full?)", str(path))


def write_bytes(dest: Path, data: bytes) -> None:
    with atomic_target(dest) as tmp:
        write_checked(tmp, data)


def write_text(dest: Path, text: str) -> None:
    write_bytes(dest, text.encode("utf-8"))


def write_json(dest: Path, doc) -> None:
    write_text(dest, json.dumps(doc, indent=1, sort_keys=False) + "\n")


def backup_path(path: Path, n: int = 1) -> Path:
    return Path(path).with_name(Path(path).name + (BACKUP_SUFFIX if n == 1 else str(n)))


def make_backup(path: Path) -> tuple[Path, bool]:
    """Copy ``path`` to ``<path>1`` before it is overwritten in place -> (the backup, whether it was made now).

    Never over an existing backup: one that holds these very bytes is the backup (a run stopped between
    the copy and the write made it); one that holds another version is kept, and the copy goes to the
    first free ``<path>2``, ``<path>3``, ...  The copy's size is checked before it takes its name."""
    n = 1
    while True:
        dest = backup_path(path, n)
        if dest.exists():
            if dest.is_file() and filecmp.cmp(dest, path, shallow=False):
                return dest, False
            n += 1
            continue
        try:
            with atomic_target(dest, new=True) as tmp:
                shutil.copy2(path, tmp)
                want, got = os.stat(path).st_size, os.stat(tmp).st_size
                if got != want:
                    raise OSError(errno.EIO, f"the backup copy holds {got:,} of {want:,} bytes (is the disk full?)",
                                  str(dest))
        except FileExistsError:  # another program took the name meanwhile: look at it again
            continue
        return dest, True


def remove_stale_temps(dest: Path) -> list[Path]:
    """Delete temporary files that interrupted runs left for ``dest`` (and its backups and marker): only
    this process's own and those whose process is gone; a live run's temporary file is never touched."""
    dest = Path(dest)
    gone = []
    if not dest.parent.is_dir():
        return gone
    for p in dest.parent.glob(f".{_glob_escape(dest.name)}*{TEMP_TAG}*"):
        rest = p.name[1 + len(dest.name):].rsplit(TEMP_TAG, 1)[0]  # "", ".done", or a backup's number
        if rest not in ("", MARKER_SUFFIX) and not rest.isdigit():
            continue  # another output's (walk.bvh vs walk.bvh.controls.json)
        pid = temp_owner(p.name)
        if pid is None or (pid != os.getpid() and _alive(pid)):
            continue
        with contextlib.suppress(OSError):
            p.unlink()
            gone.append(p)
    return gone


def remove_dead_report_temps(folder: Path) -> list[Path]:
    """Delete the half-written reports of earlier runs that were killed (SIGKILL, power loss):
    a report's name carries its run's time, so no later run writes it again to clear its temp.
    Only temps whose writing process is gone are touched."""
    gone = []
    for p in Path(folder).glob(f".splinetween-*.json{TEMP_TAG}*"):
        pid = temp_owner(p.name)
        if pid is not None and not _alive(pid):
            with contextlib.suppress(OSError):
                p.unlink()
                gone.append(p)
    return gone


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]" else c for c in name)


# -- done markers -----------------------------------------------------------------------------
def marker_path(output: Path) -> Path:
    return Path(output).with_name(Path(output).name + MARKER_SUFFIX)


def options_digest(command: str, options: dict) -> str:
    """What makes two runs produce the same output: the command and its result-changing options."""
    text = json.dumps({"command": command, "options": options}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def stamp(path: Path) -> dict:
    st = Path(path).stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def write_marker(output: Path, input_stamp: dict | None, digest: str, result: dict) -> None:
    """After the output is in place: what was made, from what, with what options."""
    write_json(marker_path(output), {"tool": "splinetween-batch", "digest": digest, "input": input_stamp,
                                     "output": stamp(output), "result": result})


def read_marker(output: Path) -> dict | None:
    try:
        doc = bridge.numpy_module("formats.json_limits").read(marker_path(output), max_bytes=MAX_MARKER)
    except (OSError, ValueError):  # (JsonLimitError is a ValueError): no usable marker, the file is redone
        return None
    return doc if isinstance(doc, dict) and doc.get("tool") == "splinetween-batch" else None


def is_done(source: Path, output: Path, digest: str, in_place: bool = False) -> dict | None:
    """The marker's recorded result when ``output`` is complete and current for ``source``, else None.

    In place, the file must still be the one the batch wrote (its size and time); otherwise the
    input must be unchanged since (size and time) and the output still the one written."""
    doc = read_marker(output)
    if doc is None or doc.get("digest") != digest:
        return None
    try:
        if stamp(output) != doc.get("output"):
            return None
        if not in_place and stamp(source) != doc.get("input"):
            return None
    except OSError:
        return None
    return doc.get("result") or {}
