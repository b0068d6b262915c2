"""Which files a run works on, and where each one's output goes (no bpy).

Inputs are paths, globs (``shots/**/*.blend``, expanded here too, so quoting a glob works on every
shell and avoids the command-line length limit) or folders (every .blend, .bvh and .amc below them).
Outputs mirror the inputs below their common folder: ``a/x.blend a/sub/y.blend --out-dir o`` writes
``o/x.blend`` and ``o/sub/y.blend``.
"""
from __future__ import annotations

import glob
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .. import bridge
from .safe_io import BACKUP_NAME, MARKER_SUFFIX, TEMP_TAG

FILE_TYPES = {".blend": "blend", ".bvh": "bvh", ".amc": "amc"}  # suffix -> the file type a job is dispatched by


ASF_GIVEN = ("an .asf holds a skeleton, no motion: give the takes' .amc files (each one's .asf is the one its name "
             "begins with, else the one beside it, or --asf FILE)")


class UsageError(ValueError):
    """Bad arguments: exit status 2, nothing is done."""


@dataclass
class Item:
    source: Path  # absolute
    file_type: str  # "blend", "bvh", or "" (not a supported file: reported as failed)
    rel: Path  # mirrored name below the output folder
    output: Path | None = None
    problem: str = ""  # why it cannot be processed (missing, unsupported); reported as failed


def _is_ours(p: Path) -> bool:
    """Temporary files, markers and backups (``NAME.blend1``, ``NAME.blend2``, ...) of earlier runs are never inputs."""
    n = p.name
    return TEMP_TAG in n or n.endswith(MARKER_SUFFIX) or bool(BACKUP_NAME.search(n))


_NOT_REGULAR = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_regular(p: Path) -> str:
    """"" for a regular file, else what it is: a pipe or a device would block the worker that opened it."""
    try:
        mode = p.stat().st_mode
    except OSError:
        return ""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return ""
    what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")
    return f"is {what}, not a regular file: it was not opened (give the file itself)"


def folder_problem(folder: Path) -> str:
    """Why the batch cannot write into ``folder`` (created when missing), or "": checked before anything
    is done, so a usage error leaves the disk as it was."""
    problem = bridge.numpy_module("formats.atomic").folder_problem(folder)
    if not problem:
        return ""
    if problem.startswith("cannot write"):
        return problem + "; choose a folder you can write to"
    return problem + "; choose a folder (one that does not exist yet is created)"


def _file_type(p: Path) -> str:
    return FILE_TYPES.get(p.suffix.lower(), "")


def inside_out_dir(out_dir: Path) -> str:
    """Why a file inside ``--out-dir`` is not read, with the fix."""
    return (f"it lies inside --out-dir {out_dir}, where this run writes its outputs, so it is not read as an input "
            f"(an output would replace it); give an --out-dir outside the inputs' folders, such as "
            f"--out-dir {out_dir / 'out'}, or --in-place (which keeps a backup)")


def expand(patterns: list[str], exclude: Path | None = None, file_types=None,
           left_out: list | None = None) -> list[tuple[Path, str]]:
    """-> [(absolute path, problem)] in the order given, duplicates removed.  A path that names
    no file and no match of a glob is kept with its problem (reported as a failed file).  Files
    inside ``exclude`` (the output folder) are left out, into ``left_out``; one named explicitly is
    kept with its problem."""
    out: dict[Path, str] = {}
    exclude = exclude.resolve() if exclude else None

    def add(p: Path, explicit: bool):
        p = p.resolve()
        if exclude is not None and (p == exclude or exclude in p.parents):
            if left_out is not None and _file_type(p) and not _is_ours(p):
                left_out.append(p)
            if explicit and _file_type(p):
                out.setdefault(p, inside_out_dir(exclude))
            return
        if _is_ours(p) and not explicit:
            return
        odd = not_regular(p)
        if odd and (explicit or _file_type(p)):
            out.setdefault(p, odd)
            return
        if not _file_type(p):
            if explicit:
                out.setdefault(p, ASF_GIVEN if p.suffix.lower() == ".asf" else "not a .blend, .bvh or .amc file")
            return
        if file_types is not None and _file_type(p) not in file_types and not explicit:  # found in a folder or by a glob
            return
        out.setdefault(p, "")

    for pat in patterns:
        path = Path(pat).expanduser()
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for f in sorted(files):
                    add(Path(root) / f, False)
        elif path.is_file() or not_regular(path):
            add(path, True)
        elif glob.has_magic(pat):
            for hit in sorted(glob.glob(os.path.expanduser(pat), recursive=True)):
                if Path(hit).is_file() or not_regular(Path(hit)):
                    add(Path(hit), False)
        else:
            out.setdefault(path.resolve(), "no such file")
    return list(out.items())


def plan(patterns: list[str], out_dir: Path | None, in_place: bool, output_name=None, file_types=None) -> list[Item]:
    """Inputs with their outputs; ``output_name(rel) -> rel`` renames (encode's sidecars); ``file_types``: the
    file types that folders and globs collect (default: all; a file named explicitly is always taken).

    Raises UsageError when nothing matched or an output would land on an input."""
    out_dir = out_dir.resolve() if out_dir else None
    left_out: list[Path] = []
    found = expand(patterns, exclude=out_dir if not in_place else None, file_types=file_types, left_out=left_out)
    if left_out and all(problem for _, problem in found):  # every file there is, is inside --out-dir
        names = ", ".join(str(p) for p in left_out[:3]) + (f" and {len(left_out) - 3} more" if len(left_out) > 3 else "")
        raise UsageError(f"{names}: {inside_out_dir(out_dir)}")
    if not found:
        raise UsageError("no input matched: " + " ".join(patterns))
    real = [p for p, problem in found if not problem]
    base = Path(os.path.commonpath([str(p.parent) for p in real])) if real else Path.cwd()
    items = []
    for p, problem in found:
        rel = p.relative_to(base) if not problem and base in p.parents else Path(p.name)
        item = Item(p, _file_type(p), rel, problem=problem)
        if not problem:
            if in_place:
                item.output = p if output_name is None else p.with_name(output_name(rel).name)
            elif out_dir is not None:
                item.output = out_dir / (output_name(rel) if output_name else rel)
        items.append(item)
    sources = {i.source for i in items}
    clash = [i for i in items if i.output is not None and i.output in sources and not (in_place and i.output == i.source)]
    if clash:
        raise UsageError(f"the output {clash[0].output} would overwrite an input; choose another --out-dir "
                         "(or --in-place, which keeps a backup)")
    return items


def common_base(items: list[Item]) -> Path:
    real = [i.source for i in items if not i.problem]
    return Path(os.path.commonpath([str(p.parent) for p in real])) if real else Path.cwd()
