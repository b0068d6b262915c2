"""BVH reading and writing, with the hierarchy and channel layout kept for round trips.

The MOTION block is parsed in one vectorised call (``np.fromstring``), which is what
makes the 485 MB training set load in seconds rather than minutes.
"""
from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from ..maths import quat_np
from ..motion.skeleton import Clip, Skeleton
from .atomic import write_text

_CHANNELS = {"Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation"}


class BVHError(ValueError):
    """A BVH file that cannot be read; the message names the file and the problem."""

    def __init__(self, path, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path, self.problem = str(path), problem


def _parse_hierarchy(lines, path):
    names, parents, offsets, channels, end_sites = [], [], [], [], []
    stack, i, pending_end = [], 0, False
    while i < len(lines):
        tok = lines[i].split()
        i += 1
        if not tok:
            continue
        head = tok[0]
        if head == "HIERARCHY" or head == "{":
            continue
        if head in ("ROOT", "JOINT"):
            if len(tok) < 2:
                raise BVHError(path, f"line {i}: {head} without a name")
            names.append(" ".join(tok[1:]))
            parents.append(stack[-1] if stack else -1)
            offsets.append(None)
            channels.append(())
            end_sites.append(None)
            stack.append(len(names) - 1)
        elif head in ("End", "OFFSET", "CHANNELS") and not stack:
            raise BVHError(path, f"line {i}: {head} outside a ROOT or JOINT")
        elif head == "End":
            pending_end = True
        elif head == "OFFSET":
            try:
                vals = tuple(float(v) for v in tok[1:4])
            except ValueError:
                raise BVHError(path, f"line {i}: OFFSET is not numeric: {' '.join(tok[1:])}") from None
            if len(vals) != 3:
                raise BVHError(path, f"line {i}: OFFSET needs 3 numbers")
            if not np.isfinite(vals).all():
                raise BVHError(path, f"line {i}: OFFSET {' '.join(tok[1:4])} is not finite (write 3 finite numbers)")
            if pending_end:
                end_sites[stack[-1]] = vals
            else:
                offsets[stack[-1]] = vals
        elif head == "CHANNELS":
            try:
                n = int(tok[1])
            except (IndexError, ValueError):
                raise BVHError(path, f"line {i}: bad CHANNELS declaration {' '.join(tok)}") from None
            ch = tuple(tok[2:2 + n])
            if len(ch) != n or any(c not in _CHANNELS for c in ch):
                raise BVHError(path, f"line {i}: bad CHANNELS declaration {' '.join(tok)}")
            rot = [c[0] for c in ch if c.endswith("rotation")]
            if len(set(ch)) != len(ch) or len(rot) not in (0, 3):
                raise BVHError(path, f"line {i}: joint {names[stack[-1]]} declares {' '.join(ch) or 'no channels'}; "
                                     "each channel may appear once and a joint rotates about all three axes "
                                     "or none")
            channels[stack[-1]] = ch
        elif head == "}":
            if pending_end:
                pending_end = False
            elif stack:
                stack.pop()
            else:
                raise BVHError(path, f"line {i}: unbalanced '}}'")
        elif head == "MOTION":
            if stack:
                raise BVHError(path, "hierarchy ends before all joints are closed")
            return names, parents, offsets, channels, end_sites, i
        else:
            raise BVHError(path, f"line {i}: unexpected '{head}' in HIERARCHY")
    raise BVHError(path, "no MOTION section (the file is truncated or not a BVH)")


def _read_header_value(line, key, path):
    if not line.strip().startswith(key):
        raise BVHError(path, f"expected '{key}' after MOTION, found {line.strip()[:40]!r}")
    try:
        return float(line.split(":", 1)[1].split()[0])
    except (IndexError, ValueError):
        raise BVHError(path, f"'{key}' has no number") from None


def _read_frames(line, path) -> int:
    v = _read_header_value(line, "Frames", path)
    if not np.isfinite(v) or v != int(v) or v < 0:
        raise BVHError(path, f"'Frames: {line.split(':', 1)[1].strip()[:40]}' is not a whole number of frames "
                             "(write the number of motion lines)")
    return int(v)


def _read_frame_time(line, path) -> float:
    v = _read_header_value(line, "Frame Time", path)
    if not np.isfinite(v) or v <= 0:
        raise BVHError(path, f"'Frame Time: {line.split(':', 1)[1].strip()[:40]}' must be a positive number of "
                             "seconds (for example 0.0333333 at 30 fps)")
    return v


def parse_bvh(text: str, path="<string>", name: str | None = None, keep_source: bool = True,
              finite: bool = True) -> Clip:
    """Parse BVH text into a :class:`Clip` (rotations as quaternions, positions local).

    ``keep_source`` keeps the raw channel values in ``clip.meta["source_channels"]``; the
    writer uses them to pick the same Euler solutions, so an unchanged clip round-trips.
    ``finite=False`` lets NaN and infinite motion values through (in-betweening never reads the
    frames that are not keys; its caller checks the keys).
    """
    text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark, as some Windows tools write
    head, sep, motion = text.partition("MOTION")
    if not sep:
        raise BVHError(path, "no MOTION section (the file is truncated or not a BVH)")
    names, parents, offsets, channels, end_sites, _ = _parse_hierarchy(head.splitlines() + ["MOTION"], path)
    if not names:
        raise BVHError(path, "no ROOT joint in HIERARCHY")
    if any(o is None for o in offsets):
        raise BVHError(path, "a joint has no OFFSET")
    mlines = motion.split("\n", 3)
    if len(mlines) < 3:
        raise BVHError(path, "MOTION section is truncated before 'Frame Time'")
    frames = _read_frames(mlines[1], path)
    frame_time = _read_frame_time(mlines[2], path)
    body = mlines[3] if len(mlines) > 3 else ""
    width = sum(len(c) for c in channels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fromstring warns (and stops) at a non-numeric token
        data = np.fromstring(body, dtype=np.float64, sep=" ")
    if data.size != frames * width:
        bad = re.search(r"[^\s0-9eE+\-.]+", body)
        if bad and data.size < frames * width:
            line = body[: bad.start()].count("\n") + 1
            raise BVHError(path, f"non-numeric value {bad.group()!r} in motion line {line}")
        rows = body.strip().count("\n") + 1 if body.strip() else 0
        if rows and rows != frames and data.size == rows * width:  # whole lines, each of the declared channels
            raise BVHError(path, f"the header says 'Frames: {frames}' ({frames} frames) but the file has {rows} lines of motion "
                                 f"(each of the {width} channels the hierarchy declares); write 'Frames: {rows}' "
                                 "(the number of motion lines), or remove the lines after the last frame")
        raise BVHError(path, f"expected {frames} frames x {width} channels = {frames * width} values, "
                             f"found {data.size} in {rows} lines (truncated file or wrong channel count)")
    if frames < 1:
        raise BVHError(path, "the file has no frames")
    if finite and not np.isfinite(data).all():
        flat = int(np.flatnonzero(~np.isfinite(data))[0])
        raise BVHError(path, f"NaN or infinite value in frame {flat // width} (channel {flat % width})")
    data = data.reshape(frames, width)
    skel = Skeleton(tuple(names), np.asarray(parents, dtype=np.int64), np.asarray(offsets, dtype=np.float64),
                    tuple(channels), tuple(end_sites))
    clip = _channels_to_clip(skel, data, frame_time, name or Path(str(path)).stem)
    if keep_source:
        clip.meta["source_channels"] = data
    return clip


def _channels_to_clip(skel: Skeleton, data: np.ndarray, frame_time: float, name: str) -> Clip:
    f, j = data.shape[0], skel.num_joints
    pos = np.broadcast_to(skel.offsets, (f, j, 3)).copy()
    rot = np.zeros((f, j, 4))
    rot[..., 0] = 1.0
    col = 0
    for k, ch in enumerate(skel.channels):
        rot_cols = []
        for c in ch:
            if c.endswith("position"):
                pos[:, k, "XYZ".index(c[0])] = data[:, col]
            else:
                rot_cols.append(col)
            col += 1
        if rot_cols:
            order = skel.euler_order(k)
            rot[:, k] = quat_np.from_euler(np.radians(data[:, rot_cols]), order)
    return Clip(skel, rot, pos, frame_time, name)


def read_bvh(path, name: str | None = None, keep_source: bool = True, finite: bool = True) -> Clip:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError as e:
        raise BVHError(path, f"cannot read the file ({e.strerror})") from None
    return parse_bvh(text, path, name, keep_source, finite)


def euler_alternative(e):
    """The other Euler triple [..., 3] of the same rotations (first and last angle a half turn on, the middle
    one mirrored about a quarter turn)."""
    alt = np.empty_like(e)
    alt[..., 0], alt[..., 1], alt[..., 2] = e[..., 0] + np.pi, np.pi - e[..., 1], e[..., 2] + np.pi
    return alt


def nearest_equivalent(e, ref, alt=None):
    """Of the two Euler triples for one rotation, each shifted by whole turns, the one nearest ``ref``
    (``alt``: ``euler_alternative(e)``, when the caller has made it)."""
    alt = euler_alternative(e) if alt is None else alt
    near = e + 2 * np.pi * np.round((ref - e) / (2 * np.pi))
    other = alt + 2 * np.pi * np.round((ref - alt) / (2 * np.pi))
    far = np.abs(near - ref).sum(-1, keepdims=True) > np.abs(other - ref).sum(-1, keepdims=True)
    return np.where(far, other, near)


def unwrap_euler(e, reference=None):
    """Per frame, the Euler triple nearest the reference row (vectorised), or, where the
    reference is missing or NaN, nearest the previous frame: no 360-degree jumps."""
    out = e.copy()
    if reference is not None:
        known = np.isfinite(reference).all(-1)
        out[known] = nearest_equivalent(e[known], reference[known])
    else:
        known = np.zeros(e.shape[0], dtype=bool)
    for t in np.flatnonzero(~known):
        if t:
            out[t] = nearest_equivalent(e[t], out[t - 1])
    return out


def clip_to_channels(clip: Clip, reference: np.ndarray | None = None) -> np.ndarray:
    """The clip as a ``[F, channels]`` array in the skeleton's channel layout (degrees).

    ``reference`` (an array of the same shape, e.g. the source file's values) picks the
    Euler solution nearest to it; otherwise consecutive frames are kept continuous.
    """
    skel = clip.skeleton
    cols = []
    col = 0
    for k, ch in enumerate(skel.channels):
        rot_cols = [i for i, c in enumerate(ch) if c.endswith("rotation")]
        euler = None
        if rot_cols:
            e = quat_np.to_euler(clip.rotations[:, k], skel.euler_order(k))
            ref = None if reference is None else np.radians(reference[:, [col + i for i in rot_cols]])
            euler = np.degrees(unwrap_euler(e, ref))
        r = 0
        for c in ch:
            if c.endswith("position"):
                cols.append(clip.positions[:, k, "XYZ".index(c[0])])
            else:
                cols.append(euler[:, r])
                r += 1
        col += len(ch)
    return np.stack(cols, axis=1) if cols else np.zeros((clip.num_frames, 0))


def format_bvh(clip: Clip, precision: int = 6, reference: np.ndarray | None = None) -> str:
    skel = clip.skeleton
    out = ["HIERARCHY"]
    children = {j: [c for c in range(skel.num_joints) if skel.parents[c] == j] for j in range(skel.num_joints)}

    def emit(j, depth):
        ind = "\t" * depth
        out.append(f"{ind}{'ROOT' if skel.parents[j] < 0 else 'JOINT'} {skel.names[j]}")
        out.append(f"{ind}{{")
        out.append(f"{ind}\tOFFSET {' '.join(_num(v) for v in skel.offsets[j])}")
        ch = skel.channels[j] if skel.channels else ()
        out.append(f"{ind}\tCHANNELS {len(ch)} {' '.join(ch)}")
        for c in children[j]:
            emit(c, depth + 1)
        end = skel.end_sites[j] if skel.end_sites else None
        if end is not None:
            out.extend([f"{ind}\tEnd Site", f"{ind}\t{{", f"{ind}\t\tOFFSET {' '.join(_num(v) for v in end)}", f"{ind}\t}}"])
        out.append(f"{ind}}}")

    for root in (j for j in range(skel.num_joints) if skel.parents[j] < 0):
        emit(root, 0)
    if reference is None:
        src = clip.meta.get("source_channels")
        reference = src if src is not None and src.shape[0] == clip.num_frames else None
    data = clip_to_channels(clip, reference)
    out += ["MOTION", f"Frames:\t{clip.num_frames}", f"Frame Time:\t{clip.frame_time:.7g}"]
    body = "\n".join(" ".join(row) for row in np.char.mod(f"%.{precision}f", data))
    return "\n".join(out) + "\n" + body + "\n"


def _num(v: float) -> str:
    return repr(float(v))  # shortest text that reads back to the same double


def write_bvh(path, clip: Clip, precision: int = 6, reference: np.ndarray | None = None) -> None:
    """Write atomically (backend.formats.atomic): no half-written BVH is ever left."""
    write_text(path, format_bvh(clip, precision, reference))
