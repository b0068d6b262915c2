"""Mesh-sequence data for training: PC2/MDD caches or .blend files of one mesh asset.

A data set is a folder of caches, either in ``train/``, ``val/`` and ``test/`` subfolders (as
``training.mesh.cloth_gen`` writes them) or flat, where the split follows the number at the end of
the file name (id % 10 == 8 is val, == 9 is test, else train: the generator's rule); or .blend
files, read through Blender (each file is one sequence: the mesh object over the scene range).
Sequences are concatenated into one [T, V, 3] array with offsets, like ``MotionSet``.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from backend.formats.pc2 import CacheError, read_cache

from .. import progress
from ..data import SPLITS, DataError

CACHE_SUFFIXES = (".pc2", ".mdd")


@dataclass
class MeshSet:
    frames: np.ndarray  # [T, V, 3] float32
    starts: np.ndarray  # [S+1] sequence boundaries into T
    names: list[str]
    skipped: list[str] = field(default_factory=list)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    @property
    def num_vertices(self) -> int:
        return self.frames.shape[1]

    def sequence(self, i: int) -> np.ndarray:
        return self.frames[self.starts[i]:self.starts[i + 1]]


def mesh_split_of(path: Path) -> str:
    """The split of one cache: its folder's name if that is a split, else id % 10 (8 val, 9 test)."""
    if path.parent.name in SPLITS:
        return path.parent.name
    m = re.search(r"(\d+)$", path.stem)
    if not m:
        raise DataError(f"{path}: no numeric id at the end of the name and not in a train/val/test folder; "
                        "cannot assign a split")
    r = int(m.group(1)) % 10
    return "val" if r == 8 else "test" if r == 9 else "train"


def find_sources(data) -> list[Path]:
    """Cache and .blend files named by ``data``: a folder (searched recursively), one file, or
    several separated by commas."""
    out = []
    for part in str(data).split(","):
        p = Path(part).expanduser()
        if p.is_dir():
            out += sorted(f for f in p.rglob("*") if f.suffix.lower() in CACHE_SUFFIXES + (".blend",))
        elif p.is_file():
            out.append(p)
        else:
            raise DataError(f"{p}: data path does not exist (pass --data with a folder of PC2/MDD caches, cache "
                            "files or .blend files)")
    if not out:
        raise DataError(f"{data}: no PC2, MDD or .blend files found")
    return out


def load_mesh_split(data, split: str, object_name: str = "", num_vertices: int | None = None,
                    verbose: bool = True) -> MeshSet:
    """Every sequence of one split; a sequence whose vertex count differs from the rest (or from
    ``num_vertices``) is skipped with a warning, as is an unreadable file."""
    if split not in SPLITS and split != "all":
        raise DataError(f"unknown split {split!r}; use one of {', '.join(SPLITS)} or all")
    sources = find_sources(data)
    seqs, names, skipped = [], [], []
    for path in sources:
        try:
            if split != "all" and len(sources) > 1 and mesh_split_of(path) != split:
                continue
            if path.suffix.lower() == ".blend":
                from .blend import read_blend_sequence
                frames = read_blend_sequence(path, object_name)
            else:
                frames = read_cache(path)
        except (CacheError, DataError) as e:
            skipped.append(str(e))
            continue
        if not np.isfinite(frames).all():
            skipped.append(f"{path}: NaN or infinite vertex positions")
            continue
        seqs.append(frames)
        names.append(str(path))
    counts = [s.shape[1] for s in seqs]
    want = num_vertices if num_vertices is not None else (max(set(counts), key=counts.count) if counts else None)
    keep = []
    for s, n in zip(seqs, names, strict=True):
        if s.shape[1] != want:
            skipped.append(f"{n}: {s.shape[1]} vertices, the others have {want} (a mesh model is per asset: "
                           "same vertex count and order)")
        else:
            keep.append((s, n))
    if not keep:
        why = f" ({skipped[0]})" if skipped else ""
        raise DataError(f"{data}: no readable mesh sequences in split {split!r}" + why)
    if verbose and skipped:
        print(f"warning: skipped {len(skipped)} {split} sequence(s): " + "; ".join(skipped[:5]), file=sys.stderr)
        progress.emit("warning", message=f"skipped {len(skipped)} {split} sequence(s): " + "; ".join(skipped[:5]))
    lengths = [len(s) for s, _ in keep]
    return MeshSet(np.concatenate([s for s, _ in keep]).astype(np.float32, copy=False),
                   np.concatenate([[0], np.cumsum(lengths)]), [n for _, n in keep], skipped)
