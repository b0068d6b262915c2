"""Where ``python -m backend`` writes.

- One output per input, ``OUT_DIR/<input name>``; an input is never written over (that file is
  refused, naming both paths) and two different inputs with the same name are never written
  onto one output (both are refused, naming each other).
- A write that fails (read-only folder, an output path that is a folder, a full disk) fails
  that file alone; a result with NaN or infinite values is refused, not written.
- Outputs are written to a temporary file and renamed, so none is left half-written (Ctrl+C:
  see ``backend.cli.interrupts``).
- One writer per output: each output is claimed (``atomic.claim``, an exclusive lock) when the
  command plans it and let go once written; an output another run has claimed is refused, naming
  that run, and that run's files are never touched.
"""
from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path

import numpy as np

from ..formats import atomic
from ..formats.bvh import write_bvh

_claims: dict[Path, atomic.Claim] = {}  # output -> this process's claim on it, until written (or the exit)


def _key(p: Path) -> str:
    return os.path.normcase(os.path.realpath(p))


def _same_file(a: Path, b: Path) -> bool:
    if _key(a) == _key(b):
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def plan(inputs: list[Path], out_dir: Path) -> tuple[list[Path], dict[Path, Path], list[str]]:
    """-> (inputs to do, output of each, errors for the refused ones).  The same file given twice
    is done once; names are compared case-blind (they would collide on macOS and Windows)."""
    todo, seen = [], set()
    for p in inputs:
        if _key(p) not in seen:
            seen.add(_key(p))
            todo.append(p)
    by_name: dict[str, list[Path]] = {}
    for p in todo:
        by_name.setdefault(p.name.casefold(), []).append(p)
    targets, errors, refused = {}, [], set()
    for p in todo:
        out = out_dir / p.name
        clash = [q for q in by_name[p.name.casefold()] if q is not p]
        over = next((q for q in todo if _same_file(out, q)), None)
        if over is not None:
            what = "this input file" if over is p else f"the input file {over}"
            errors.append(f"{p}: the output {out} is {what}; nothing was written over it (give another --out-dir)")
        elif clash:
            others = ", ".join(str(q) for q in clash)
            errors.append(f"{p}: {p} and {others} would both be written to {out}; nothing was written for them "
                          "(run them with different --out-dir, or rename one)")
        else:
            problem = _claim(out)
            if not problem:
                targets[p] = out
                continue
            errors.append(f"{p}: {problem}")
        refused.add(p)
    return [p for p in todo if p not in refused], targets, errors


def _claim(out: Path) -> str:
    """Claim ``out`` for this run -> "" or why not (another run's, named; a folder that cannot take the lock)."""
    try:
        _claims[out] = atomic.claim(out, atomic.owner(" ".join(["python -m backend", *sys.argv[1:2]])))
    except atomic.Busy as e:
        return (f"the output {out} is being written by {atomic.holder(e.owner)}; nothing was written for it "
                "(run it again when that run has finished, or give another --out-dir)")
    except OSError as e:
        return (f"cannot write {out} ({'it is a folder' if out.is_dir() else e.strerror or e}); nothing was written "
                "for it (choose another --out-dir, or make it writable)")
    return ""


@atexit.register
def _release_all() -> None:
    for c in _claims.values():
        c.release()
    _claims.clear()


def bad_frames(clip) -> list[int]:
    ok = np.isfinite(clip.rotations).all((-1, -2)) & np.isfinite(clip.positions).all((-1, -2))
    return np.flatnonzero(~ok).tolist()


def write(path: Path, clip, source: Path, errors: list[str], what: str) -> bool:
    """Write one output; a NaN result or a failed write is that file's error (the others go on).  The
    output's claim is let go either way."""
    try:
        return _write(path, clip, source, errors, what)
    finally:
        claim = _claims.pop(path, None)
        if claim is not None:
            claim.release()


def _write(path: Path, clip, source: Path, errors: list[str], what: str) -> bool:
    bad = bad_frames(clip)
    if bad or not np.isfinite(clip.frame_time) or clip.frame_time <= 0:
        errors.append(f"{source}: the result has NaN or infinite values (frames {bad[:5]}); nothing was written "
                      "(use smaller edits)")
        return False
    try:
        write_bvh(path, clip)
    except OSError as e:
        reason = "it is a folder" if path.is_dir() else (e.strerror or str(e))
        errors.append(f"{source}: cannot write {path} ({reason}); nothing was written for it (choose another "
                      "--out-dir, or make it writable)")
        return False
    print(f"wrote {path} ({clip.num_frames} frames{what})")
    return True
