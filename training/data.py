"""Mocap data for training: BVH folders or the .tar.xz archive, the fixed split, windows.

Clips are concatenated into flat arrays (rotations [T, J, 4], positions [T, J, 3]) with
per-clip offsets; a window is then a gather of indices, which keeps batches cheap.

Longer than 300 lines: the archives, the split rules of both studios and the conversion of another
skeleton are one loading path (``load_split``), read together.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from backend.formats.asf import ASFError
from backend.formats.atomic import replacing
from backend.formats.bvh import BVHError, parse_bvh
from backend.maths.timebase import MODEL_FRAME_TIME, same_rate
from backend.motion.calibration import leading_calibration_frames
from backend.motion.skeleton import Skeleton

SPLITS = ("train", "val", "test")
# Both archives of the data README, read together by default (paths from the repository root).
DEFAULT_DATA = "../shared/data/bandai-namco-2.tar.xz,../shared/data/bandai-namco-1-part.tar.xz"
# The data README's generalisation protocol: kinds left out entirely from training, measured apart.
LEAVE_OUT = ("run", "wave-both-hands", "raise-up-left-hand", "guide", "dash")
DATASET1_VAL_STYLES = ("happy", "tired")
# Another studio (the data README's cmu-mocap-part, names SS_TT.bvh): these subjects are validation.
CMU_DATA = "../shared/data/cmu-mocap-part.tar.xz"
CMU_VAL_SUBJECTS = ("05", "09")
_CMU_NAME = re.compile(r"^(\d\d)_(\d\d)$")
# The other setups of the data README (2026-12-07): HDM05 (ASF/AMC; performer tr is validation), ReActIdle
# (idle, 24 fps; performers 012-015 are validation) and more CMU subjects in a DAZ-style conversion (train).
HDM05_DATA = "../shared/data/hdm05-part.tar.xz"
REACTIDLE_DATA = "../shared/data/reactidle.tar.xz"
CMU_DAZ_DATA = "../shared/data/cmu-mocap-daz.tar.xz"
HDM05_VAL_PERFORMERS = ("tr",)
REACTIDLE_VAL = range(12, 16)
_HDM05_NAME = re.compile(r"^HDM_([a-z]{2})_")
_REACTIDLE_NAME = re.compile(r"^(\d{3})_(acted|genuine)$")
# The studios whose validation sets make the *other studio* column (their mean is the figure designs are
# chosen on), in the order the reports give them.
OTHER_STUDIOS = {"CMU": CMU_DATA, "HDM05": HDM05_DATA, "ReActIdle": REACTIDLE_DATA}


class DataError(ValueError):
    pass


def _name_fields(name: str) -> list[str]:
    """``dataset-N_{content}_{style}_{id}`` -> its four fields (contents and styles use hyphens)."""
    return Path(name).name.removesuffix(".bvh").split("_")


def clip_kind(name: str) -> str:
    """The clip's kind of motion (``content``), "" for a name outside the archives' pattern."""
    f = _name_fields(name)
    return f[1] if len(f) == 4 and f[0].startswith("dataset-") else ""


def split_of(name: str) -> str:
    """The data README's splits.  Dataset-1: style happy or tired is validation, the rest train
    (no test split).  CMU (``SS_TT``): subjects 05 and 09 are validation, the rest train (no test
    split).  HDM05 (``HDM_{performer}_…``): performer tr is validation.  ReActIdle (``NNN_acted``,
    ``NNN_genuine``): performers 012-015 are validation.  Dataset-2 (and any other name): id % 10 == 5
    test, == 8 validation, else train."""
    f = _name_fields(name)
    if len(f) == 4 and f[0] == "dataset-1":
        return "val" if f[2] in DATASET1_VAL_STYLES else "train"
    stem = Path(name).name.removesuffix(".bvh").removesuffix(".amc")
    cmu = _CMU_NAME.match(stem)
    if cmu:
        return "val" if cmu.group(1) in CMU_VAL_SUBJECTS else "train"
    hdm = _HDM05_NAME.match(stem)
    if hdm:
        return "val" if hdm.group(1) in HDM05_VAL_PERFORMERS else "train"
    idle = _REACTIDLE_NAME.match(stem)
    if idle:
        return "val" if int(idle.group(1)) in REACTIDLE_VAL else "train"
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
    # per clip: read from another skeleton and converted (another studio's capture); None = none was
    converted: np.ndarray | None = None

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    def clip(self, i: int):
        s, e = self.starts[i], self.starts[i + 1]
        return self.rotations[s:e], self.positions[s:e]

    def clip_weights(self, converted_weight: float = 1.0) -> np.ndarray:
        """[C] how often each clip is drawn relative to its length: ``converted_weight`` for another
        studio's converted clips, 1 for the others."""
        w = np.ones(len(self.names))
        if self.converted is not None:
            w[self.converted] = converted_weight
        return w


def data_paths(data) -> list[Path]:
    """``data`` as one path, a comma-separated list or a list of paths (BVH folders, .bvh, archives)."""
    items = data.split(",") if isinstance(data, str) else [str(d) for d in data]
    paths = [Path(i.strip()) for i in items if i.strip()]
    if not paths:
        raise DataError("no data path given (pass a BVH folder, a .bvh file or a .tar.xz archive)")
    for p in paths:
        if not p.exists():
            raise DataError(f"{p}: data path does not exist (pass --data with BVH folders or .tar.xz archives, "
                            "comma-separated)")
    return paths


@dataclass(frozen=True)
class Selection:
    """Which clips of the archives to read: splits, and kinds kept or left out (the generalisation protocol)."""
    splits: tuple[str, ...] = ("train",)
    kinds: tuple[str, ...] = ()  # only these kinds ("" = every kind)
    exclude: tuple[str, ...] = ()  # never these kinds

    def __post_init__(self):
        bad = [s for s in self.splits if s not in SPLITS]
        if bad or not self.splits:
            raise DataError(f"unknown split {bad or self.splits!r}; use {', '.join(SPLITS)}")

    def wants(self, name: str) -> bool:
        kind = clip_kind(name)
        return (split_of(name) in self.splits and (not self.kinds or kind in self.kinds)
                and kind not in self.exclude)

    def key(self) -> str:
        return f"{'+'.join(self.splits)}|{','.join(self.kinds)}|-{','.join(self.exclude)}"


def _iter_sources(data: Path):
    """(name, where, load) for each take in a folder, a .bvh or a .tar/.tar.xz archive: BVH files, and AMC takes
    with the ``.asf`` of the same tree that their name begins with (``backend.formats.asf.skeletons_named``);
    ``load()`` gives the take's ``Clip``."""
    if data.is_dir():
        asfs = {f.stem: _skeleton(lambda f=f: f.read_text(encoding="utf-8", errors="replace"), f)
                for f in sorted(data.rglob("*.asf"))}
        for f in sorted([*data.rglob("*.bvh"), *data.rglob("*.amc")]):
            if f.suffix == ".bvh":
                yield f.name, f, (lambda f=f: _bvh(f.read_text(encoding="utf-8", errors="replace"), f))
            else:
                yield f.name, f, (lambda f=f: _amc(f.read_text(encoding="utf-8", errors="replace"), f, asfs))
    elif data.suffix in (".xz", ".gz", ".tar", ".bz2") or data.name.endswith(".tar.xz"):
        asfs: dict = {}
        takes = []  # AMC takes wait for the end: an archive streams once, its .asf files may come after them
        with tarfile.open(data) as tar:
            for m in tar:
                if not m.isfile() or not m.name.endswith((".bvh", ".amc", ".asf")):
                    continue
                text = tar.extractfile(m).read().decode("utf-8", errors="replace")
                where = f"{data}:{m.name}"
                if m.name.endswith(".asf"):
                    asfs[Path(m.name).stem] = _skeleton(lambda t=text: t, where)
                elif m.name.endswith(".bvh"):
                    yield Path(m.name).name, where, (lambda t=text, w=where: _bvh(t, w))
                else:
                    takes.append((Path(m.name).name, where, text))
        for name, where, text in takes:
            yield name, where, (lambda t=text, w=where: _amc(t, w, asfs))
    elif data.suffix == ".bvh":
        yield data.name, data, (lambda: _bvh(data.read_text(encoding="utf-8", errors="replace"), data))
    else:
        raise DataError(f"{data}: not a folder, a .bvh file or a .tar.xz archive of BVH or ASF/AMC files")


def _bvh(text: str, where):
    return parse_bvh(text, where, name=Path(str(where)).stem, keep_source=False)


def _skeleton(read, where):
    """A reader of the ``.asf`` at ``where`` (``read()``: its text) that parses it once, whatever the takes on it."""
    from backend.formats.asf import parse_asf
    return functools.cache(lambda: parse_asf(read(), where))


def _amc(text: str, where, asfs: dict):
    """The AMC take ``text`` on the skeleton among ``asfs`` (``{stem: Asf reader}``, :func:`_skeleton`) its name
    begins with."""
    from backend.formats.asf import AMC_FPS, parse_amc, skeletons_named, to_clip
    stem = Path(str(where)).stem
    named = skeletons_named(stem, list(asfs))
    if len(named) != 1:
        raise DataError(f"{where}: {'no' if not named else 'more than one'} .asf in the data names this take "
                        "(its name must begin with its skeleton's, like HDM_tr.asf for HDM_tr_kick_120.amc)")
    asf = asfs[named[0]]()
    return to_clip(asf, parse_amc(text, asf, where), 1.0 / AMC_FPS, stem)


def load_split(data, split, cache_dir=None, verbose=True, skeleton: Skeleton | None = None,
               kinds=(), exclude=()) -> MotionSet:
    """Every clip of one split (or a Selection of splits and kinds) that shares one skeleton; the
    others are skipped with a warning.  ``data``: one path or several (comma-separated or a list).

    The reference skeleton is ``skeleton`` when given (the validation split is read against the
    training skeleton), else the hierarchy most clips of the split share (ties: the first one),
    so a single odd clip cannot make every other clip "different".
    """
    paths = data_paths(data)
    if isinstance(split, Selection):
        sel = split
    elif split == "all":
        sel = Selection(SPLITS, tuple(kinds), tuple(exclude))
    else:
        sel = Selection((split,) if isinstance(split, str) else tuple(split), tuple(kinds), tuple(exclude))
    split = "+".join(sel.splits)
    cache = _cache_path(paths, sel, cache_dir, skeleton)
    if cache and cache.exists():
        return _load_cache(cache)
    clips, skipped = [], []  # (where, skeleton, float32 rotations, float32 positions, name, frame time)
    seen_any = False
    for name, where, read in (src for p in paths for src in _iter_sources(p)):
        seen_any = True
        try:
            if not sel.wants(name):
                continue
            clip = read()
        except (BVHError, ASFError, DataError) as e:
            skipped.append(f"{e}")
            continue
        lead = leading_calibration_frames(clip.rotations, clip.frame_time)  # CMU's T-pose frame
        rot, pos = fold_root_translation(clip.rotations[lead:], clip.positions[lead:], clip.skeleton.parents)
        clips.append((where, clip.skeleton, rot.astype(np.float32), pos.astype(np.float32), clip.name, clip.frame_time))
        del clip
    if not seen_any:
        raise DataError(f"{data}: no BVH or AMC files found")
    data = ",".join(map(str, paths))
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
    rots, poss, names, converted, frame_time = [], [], [], [], None
    for where, clip_skel, rot, pos, name, ft in clips:
        other = not skel.same_hierarchy(clip_skel)  # another studio's skeleton: converted, flagged
        if other or (frame_time is not None and not same_rate(ft, frame_time)):
            try:  # another studio's skeleton or frame rate: the motion on the reference skeleton and rate
                rot, pos, ft = _converted(clip_skel, rot, pos, name, ft, skel, frame_time or MODEL_FRAME_TIME)
            except ValueError as e:
                skipped.append(f"{where}: different skeleton, not converted ({e})")
                continue
        if frame_time is None:
            frame_time = ft
        rots.append(rot)
        poss.append(pos)
        names.append(name)
        converted.append(other)
    del clips
    if not names:
        why = (f" ({skipped[0]})" if skipped else
               " (a clip's split is the number at the end of its file name: id % 10 == 8 is val, 5 test, else train)")
        raise DataError(f"{data}: no readable clips in split {split!r}" + why)
    if verbose and skipped:
        print(f"warning: skipped {len(skipped)} {split} clip(s): " + "; ".join(skipped[:5]), file=sys.stderr)
    lengths = [len(r) for r in rots]
    ms = MotionSet(skel, np.concatenate(rots), np.concatenate(poss), np.concatenate([[0], np.cumsum(lengths)]),
                   names, float(frame_time), skipped, np.array(converted, dtype=bool))
    if cache:
        _save_cache(cache, ms)
    return ms


def _converted(clip_skel, rot, pos, name, ft, skel, frame_time):
    """A clip of another skeleton or rate on ``skel`` at ``frame_time`` (``backend.humanoid.bvh_rig.to_model``,
    the conversion the add-on and the batch use; ``backend.maths.timebase``): float32 (rot, pos, frame time)."""
    from backend.humanoid.bvh_rig import to_model
    from backend.maths.timebase import to_model_rate
    from backend.motion.skeleton import Clip
    clip = Clip(clip_skel, rot.astype(np.float64), pos.astype(np.float64), ft, name)
    if not skel.same_hierarchy(clip_skel):
        clip = to_model(clip, skel)
    clip = to_model_rate(clip, frame_time)
    return clip.rotations.astype(np.float32), clip.positions.astype(np.float32), frame_time


def fold_root_translation(rot: np.ndarray, pos: np.ndarray, parents) -> tuple[np.ndarray, np.ndarray]:
    """Move a root joint's translation into its children when the root never rotates.

    A few dataset-1 clips (dash, run and walk by the ``normal`` performer) carry the root motion on
    ``joint_Root``, whose channels are zero everywhere else; with the rotation the identity, adding
    the root's position to its children's gives the same global motion, and every clip then moves
    through the same joint (one feature layout, one re-centring).
    """
    root = int(np.flatnonzero(np.asarray(parents) < 0)[0])
    if not np.any(pos[:, root]) or np.abs(rot[:, root, 1:]).max() > 1e-9:
        return rot, pos
    pos = pos.copy()
    for c in np.flatnonzero(np.asarray(parents) == root):
        pos[:, c] += pos[:, root]
    pos[:, root] = 0.0
    return rot, pos


def _cache_path(paths: list[Path], sel: Selection, cache_dir, skeleton: Skeleton | None = None):
    if cache_dir is None:
        return None
    ids = "|".join(f"{p.resolve()}|{p.stat().st_size}|{p.stat().st_mtime_ns}" for p in paths)
    ref = "" if skeleton is None else "|" + json.dumps([list(skeleton.names), [int(p) for p in skeleton.parents]])
    key = hashlib.sha1(f"{ids}|{sel.key()}|v7{ref}".encode()).hexdigest()[:16]
    return Path(cache_dir) / f"motion-{'+'.join(sel.splits)}-{key}.npz"


def _save_cache(path: Path, ms: MotionSet):
    import json
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path, path.with_name(f".{path.stem}.tmp{os.getpid()}.npz")) as tmp:  # np.savez adds .npz
        np.savez(tmp, rotations=ms.rotations, positions=ms.positions, starts=ms.starts,
                 names=np.array(ms.names), frame_time=ms.frame_time,
                 skeleton=np.array(json.dumps(ms.skeleton.to_json())), skipped=np.array(ms.skipped, dtype=str),
                 converted=np.zeros(len(ms.names), bool) if ms.converted is None else ms.converted)


def _load_cache(path: Path) -> MotionSet:
    import json
    z = np.load(path, allow_pickle=False)
    return MotionSet(Skeleton.from_json(json.loads(str(z["skeleton"]))), z["rotations"], z["positions"],
                     z["starts"], list(z["names"]), float(z["frame_time"]), list(z["skipped"]), z["converted"])


def protocol_windows(ms: MotionSet, length: int = 61, stride: int = 61) -> np.ndarray:
    """Back-to-back windows of every clip (the evaluation protocol): frame indices [W, length]."""
    out = []
    for c in range(len(ms.names)):
        s, e = ms.starts[c], ms.starts[c + 1]
        for a in range(s, e - length + 1, stride):
            out.append(np.arange(a, a + length))
    return np.array(out, dtype=np.int64).reshape(-1, length)


class WindowSampler:
    """Random windows, clips weighted by how many windows they hold (times ``weights`` [C] when given);
    deterministic per seed."""

    def __init__(self, ms: MotionSet, min_len: int, max_len: int, seed: int, weights: np.ndarray | None = None):
        self.ms, self.min_len, self.max_len = ms, min_len, max_len
        lengths = ms.lengths
        self.valid = np.flatnonzero(lengths >= max_len)
        if len(self.valid) == 0:
            raise DataError(f"no clip is at least {max_len} frames long (lower the window length)")
        self.short = len(lengths) - len(self.valid)
        w = (lengths[self.valid] - max_len + 1).astype(np.float64)
        self.weights = np.ones(len(lengths)) if weights is None else np.asarray(weights, np.float64)
        w *= self.weights[self.valid]
        self.p = w / w.sum()
        self.rng = np.random.default_rng(seed)

    def draw_length(self) -> int:
        return int(self.rng.integers(self.min_len, self.max_len + 1))

    def sample(self, batch: int, length: int | None = None) -> np.ndarray:
        """[batch, n] frame indices of windows of n frames (n = ``length``, or drawn from the range)."""
        if length is None:
            n = self.draw_length()
            clips = self.valid[self.rng.choice(len(self.valid), size=batch, p=self.p)]
        else:  # any length (a time-warped batch reads more or fewer source frames)
            n = int(length)
            room = self.ms.lengths - n + 1
            ok = np.flatnonzero(room > 0)
            if len(ok) == 0:
                raise DataError(f"no clip is at least {n} frames long")
            w = room[ok] * self.weights[ok]
            clips = ok[self.rng.choice(len(ok), size=batch, p=w / w.sum())]
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
        # (in float64: float32's rounding of a long clip's mean reads a still joint 39 cm out as 1.5e-3 cm of motion)
        out = np.maximum(out, p.astype(np.float64).std(0).max(-1))
    return out
