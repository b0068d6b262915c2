"""Writes that never leave a half-written file, ``.blend1``-style backups and done markers.

No bpy here: the coordinator uses it to decide what to skip, the workers to publish results.

* Every output is written to ``.<name>.splinetween-tmp-<pid><suffix>`` in the destination folder
  (same file system), flushed to disk and renamed over the destination with ``os.replace`` (atomic
  on POSIX and Windows).  An interrupted run leaves at most such a temporary file, which the next
  run removes (:func:`remove_stale_temps`).
* ``--in-place`` first copies the current file to ``<name>1`` (as Blender keeps ``scene.blend1``),
  also through a temporary file, so at every moment both names hold a complete file.
* A done marker ``<output>.done`` (JSON) is written after the output; a file is skipped on a
  re-run only when its marker matches the command, the options, the input's size and
  modification time, and the output's size and modification time (:func:`is_done`).
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
from pathlib import Path

from .. import bridge

TEMP_TAG = ".splinetween-tmp-"
MARKER_SUFFIX = ".done"
BACKUP_SUFFIX = "1"
MAX_MARKER = 16 << 20  # a marker holds one file's report entry  # scene.blend -> scene.blend1, walk.bvh -> walk.bvh1


def temp_path(dest: Path) -> Path:
    """A hidden temporary name next to ``dest``; it ends in ``.blend`` for a .blend (Blender saves
    only to that suffix) and in ``.tmp`` otherwise, so that no watcher of ``*.done`` or ``*.bvh``
    mistakes it for a finished file."""
    dest = Path(dest)
    return dest.with_name(f".{dest.name}{TEMP_TAG}{os.getpid()}{'.blend' if dest.suffix == '.blend' else '.tmp'}")


@contextlib.contextmanager
def atomic_target(dest: Path):
    """``with atomic_target(out) as tmp: write tmp`` -> ``out`` appears complete, or not at all
    (the backend's ``atomic.replacing``, with the batch's temporary names)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(dest)
    try:
        with bridge.numpy_module("formats.atomic").replacing(dest, tmp):
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


def backup_path(path: Path) -> Path:
    return Path(path).with_name(Path(path).name + BACKUP_SUFFIX)


def make_backup(path: Path) -> Path:
    """Copy ``path`` to ``<path>1`` (replacing an older backup) before it is overwritten in place; the copy's
    size is checked against the original's before it takes the backup's name."""
    dest = backup_path(path)
    with atomic_target(dest) as tmp:
        shutil.copy2(path, tmp)
        want, got = os.stat(path).st_size, os.stat(tmp).st_size
        if got != want:
            raise OSError(errno.EIO, f"the backup copy holds {got:,} of {want:,} bytes (is the disk full?)", str(dest))
    return dest


def remove_stale_temps(dest: Path) -> list[Path]:
    """Delete temporary files an interrupted run left for ``dest`` (and its backup and marker)."""
    dest = Path(dest)
    gone = []
    if not dest.parent.is_dir():
        return gone
    for name in (dest.name, backup_path(dest).name, marker_path(dest).name):
        for p in dest.parent.glob(f".{_glob_escape(name)}{TEMP_TAG}*"):
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
        pid = p.name.rsplit(TEMP_TAG, 1)[1].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
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
