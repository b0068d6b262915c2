"""Mocap data for training: BVH folders or the .tar.xz archive, the fixed split, windows.

Clips are concatenated into flat arrays (rotations [T, J, 4], positions [T, J, 3]) with
per-clip offsets; a window is then a gather of indices, which keeps batches cheap.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from backend.bvh import BVHError, parse_bvh
from backend.skeleton import Skeleton

SPLITS = ("train", "val", "test")


class DataError(ValueError):
    pass


def split_of(name: str) -> str:
    """The data README's split: id % 10 == 5 is test, == 8 is validation, else train."""
    m = re.search(r"(\d+)(?:\.bvh)?$", Path(name).name)
    if not m:
        raise DataError(f"{name}: no numeric clip id at the end of the name, cannot assign a split")
    r = int(m.group(1)) % 10
    return "test" if r == 5 else "val" if r == 8 else "train"


@dataclass
class MotionSet:
    skeleton: Skeleton
    rotations: np.ndarray  # [T, J, 4] float32
    positions: np.ndarray  # [T, J, 3] float32
    starts: np.ndarray  # [C+1] clip boundaries into T
    names: list[str]
    frame_time: float
    skipped: list[str]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    def clip(self, i: int):
        s, e = self.starts[i], self.starts[i + 1]
        return self.rotations[s:e], self.positions[s:e]


def _iter_sources(data: Path):
    """(name, text-reader) for each BVH in a folder or inside a .tar/.tar.xz archive."""
    if data.is_dir():
        files = sorted(data.rglob("*.bvh"))
        for f in files:
            yield f.name, f, (lambda f=f: f.read_text(encoding="utf-8", errors="replace"))
    elif data.suffix in (".xz", ".gz", ".tar", ".bz2") or data.name.endswith(".tar.xz"):
        with tarfile.open(data) as tar:
            for m in tar:
                if m.isfile() and m.name.endswith(".bvh"):
                    text = tar.extractfile(m).read().decode("utf-8", errors="replace")
                    yield Path(m.name).name, f"{data}:{m.name}", (lambda t=text: t)
    elif data.suffix == ".bvh":
        yield data.name, data, (lambda: data.read_text(encoding="utf-8", errors="replace"))
    else:
        raise DataError(f"{data}: not a folder, a .bvh file or a .tar.xz archive of BVH files")


def load_split(data, split: str, cache_dir=None, verbose=True, skeleton: Skeleton | None = None) -> MotionSet:
    """Every clip of one split that shares one skeleton; the others are skipped with a warning.

    The reference skeleton is ``skeleton`` when given (the validation split is read against the
    training skeleton), else the hierarchy most clips of the split share (ties: the first one),
    so a single odd clip cannot make every other clip "different".
    """
    data = Path(data)
    if not data.exists():
        raise DataError(f"{data}: data path does not exist (pass --data with a BVH folder or the .tar.xz)")
    if split not in SPLITS and split != "all":
        raise DataError(f"unknown split {split!r}; use one of {', '.join(SPLITS)} or all")
    cache = _cache_path(data, split, cache_dir, skeleton)
    if cache and cache.exists():
        return _load_cache(cache)
    clips, skipped = [], []  # (where, skeleton, float32 rotations, float32 positions, name, frame time)
    seen_any = False
    for name, where, read in _iter_sources(data):
        seen_any = True
        try:
            if split != "all" and split_of(name) != split:
                continue
            clip = parse_bvh(read(), where, name=Path(name).stem, keep_source=False)
        except (BVHError, DataError) as e:
            skipped.append(f"{e}")
            continue
        clips.append((where, clip.skeleton, clip.rotations.astype(np.float32), clip.positions.astype(np.float32),
                      clip.name, clip.frame_time))
        del clip
    if not seen_any:
        raise DataError(f"{data}: no BVH files found")
    skel = skeleton
    if skel is None and clips:
        groups = []  # [skeleton, count] in order of first appearance
        for c in clips:
            for g in groups:
                if g[0].same_hierarchy(c[1]):
                    g[1] += 1
                    break
            else:
                groups.append([c[1], 1])
        skel = max(groups, key=lambda g: g[1])[0]  # max keeps the first of equal counts
    rots, poss, names, frame_time = [], [], [], None
    for where, clip_skel, rot, pos, name, ft in clips:
        if not skel.same_hierarchy(clip_skel):
            skipped.append(f"{where}: different skeleton ({skel.describe_mismatch(clip_skel)})")
            continue
        if frame_time is None:
            frame_time = ft
        rots.append(rot)
        poss.append(pos)
        names.append(name)
    del clips
    if not names:
        why = (f" ({skipped[0]})" if skipped else
               " (a clip's split is the number at the end of its file name: id % 10 == 8 is val, 5 test, else train)")
        raise DataError(f"{data}: no readable clips in split {split!r}" + why)
    if verbose and skipped:
        print(f"warning: skipped {len(skipped)} {split} clip(s): " + "; ".join(skipped[:5]), file=sys.stderr)
    lengths = [len(r) for r in rots]
    ms = MotionSet(skel, np.concatenate(rots), np.concatenate(poss), np.concatenate([[0], np.cumsum(lengths)]),
                   names, float(frame_time), skipped)
    if cache:
        _save_cache(cache, ms)
    return ms


def _cache_path(data: Path, split: str, cache_dir, skeleton: Skeleton | None = None):
    if cache_dir is None:
        return None
    st = data.stat()
    ref = "" if skeleton is None else "|" + json.dumps([list(skeleton.names), [int(p) for p in skeleton.parents]])
    key = hashlib.sha1(f"{data.resolve()}|{st.st_size}|{st.st_mtime_ns}|{split}|v1{ref}".encode()).hexdigest()[:16]
    return Path(cache_dir) / f"motion-{split}-{key}.npz"


def _save_cache(path: Path, ms: MotionSet):
    import json
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez(tmp, rotations=ms.rotations, positions=ms.positions, starts=ms.starts,
             names=np.array(ms.names), frame_time=ms.frame_time,
             skeleton=np.array(json.dumps(ms.skeleton.to_json())), skipped=np.array(ms.skipped, dtype=str))
    tmp.replace(path)


def _load_cache(path: Path) -> MotionSet:
    import json
    z = np.load(path, allow_pickle=False)
    return MotionSet(Skeleton.from_json(json.loads(str(z["skeleton"]))), z["rotations"], z["positions"],
                     z["starts"], list(z["names"]), float(z["frame_time"]), list(z["skipped"]))


def protocol_windows(ms: MotionSet, length: int = 61, stride: int = 61) -> np.ndarray:
    """Back-to-back windows of every clip (the evaluation protocol): frame indices [W, length]."""
    out = []
    for c in range(len(ms.names)):
        s, e = ms.starts[c], ms.starts[c + 1]
        for a in range(s, e - length + 1, stride):
            out.append(np.arange(a, a + length))
    return np.array(out, dtype=np.int64).reshape(-1, length)


class WindowSampler:
    """Random windows, clips weighted by how many windows they hold; deterministic per seed."""

    def __init__(self, ms: MotionSet, min_len: int, max_len: int, seed: int):
        self.ms, self.min_len, self.max_len = ms, min_len, max_len
        lengths = ms.lengths
        self.valid = np.flatnonzero(lengths >= max_len)
        if len(self.valid) == 0:
            raise DataError(f"no clip is at least {max_len} frames long (lower the window length)")
        self.short = len(lengths) - len(self.valid)
        w = (lengths[self.valid] - max_len + 1).astype(np.float64)
        self.p = w / w.sum()
        self.rng = np.random.default_rng(seed)

    def sample(self, batch: int) -> np.ndarray:
        n = int(self.rng.integers(self.min_len, self.max_len + 1))
        clips = self.valid[self.rng.choice(len(self.valid), size=batch, p=self.p)]
        room = self.ms.lengths[clips] - n + 1
        first = self.ms.starts[clips] + (self.rng.random(batch) * room).astype(np.int64)
        return first[:, None] + np.arange(n)

    def state(self) -> dict:
        return self.rng.bit_generator.state

    def set_state(self, s: dict):
        self.rng.bit_generator.state = s


def within_clip_position_std(ms: MotionSet) -> np.ndarray:
    """Largest per-clip standard deviation of each joint's local position: [J]."""
    out = np.zeros(ms.positions.shape[1])
    for c in range(len(ms.names)):
        r, p = ms.clip(c)
        out = np.maximum(out, p.std(0).max(-1))
    return out
