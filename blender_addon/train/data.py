"""What Train Mesh Model trains on, checked before anything is written or started: the mesh's
evaluated frames (through Encode Mesh's reader) or a folder of PC2/MDD caches, the job folder, and
the dialog's extra options.  No torch; bpy only through the objects it is given."""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import bridge
from ..core.errors import Refusal
from ..io import mesh as mesh_io

CACHE_SUFFIXES = (".pc2", ".mdd")
MIN_FRAMES = 8  # fewer frames than this make no training windows worth the name
WINDOWS = {"autoencoder": 31, "inbetween": 61}  # training.config.MeshTrainConfig.WINDOWS


class TrainJobError(Refusal, RuntimeError):
    """A refusal before anything was written or started; the message names the problem and the fix."""


def export_sequence(context, obj, frame_start: int, frame_end: int) -> np.ndarray:
    """[F, V, 3] float32 object-space positions of ``obj`` evaluated at every frame of the range:
    Encode Mesh's reader (``io.mesh.read_mesh_sequence``: unbaked simulations stepped from their
    cache's start), so a model trains on the vertices Encode Mesh will read.

    Refuses (TrainJobError) a non-mesh, an empty or too short range, and a topology that changes
    (naming the frame); the scene's current frame is restored whatever happens."""
    check_mesh(obj, context)
    check_range(frame_start, frame_end)
    if obj.mode == "EDIT":  # the evaluated mesh would not hold the edits
        raise TrainJobError(f"{obj.name!r} is in Edit Mode: switch to Object Mode first")
    try:
        frames = mesh_io.read_mesh_sequence(context, obj, frame_start, frame_end)
    except mesh_io.NoVertices as e:
        raise TrainJobError(f"{obj.name!r} has no vertices at frame {e.frame}; nothing to train on") from None
    except mesh_io.TopologyChange as e:
        raise TrainJobError(
            f"{obj.name!r} has {e.count} vertices at frame {e.first} but {e.now} at frame {e.frame}: a mesh model "
            "needs the same vertices on every frame; shorten the range, or apply or disable the modifier that "
            "changes the topology (Build, Decimate, Remesh, Geometry Nodes ...)") from None
    except mesh_io.MeshReadError as e:
        raise TrainJobError(str(e)) from None
    bad = ~np.isfinite(frames).all(axis=(1, 2))
    if bad.any():
        raise TrainJobError(f"{obj.name!r} has NaN or infinite vertex positions at frame "
                            f"{frame_start + int(np.argmax(bad))}")
    return frames


def check_mesh(obj, context=None) -> None:
    if obj is None:
        raise TrainJobError("No active object: select the mesh to train a model for")
    if obj.type != "MESH":
        raise TrainJobError(f"{obj.name!r} is {'an' if obj.type[0] in 'AEIOU' else 'a'} {obj.type.lower()}, "
                            "not a mesh: make the animated mesh the active object")
    if context is not None and context.view_layer.objects.get(obj.name) is None:
        raise TrainJobError(f"{obj.name!r} is not in the view layer, so it cannot be evaluated; link it to "
                            "the scene first")


def check_range(frame_start: int, frame_end: int, task: str = "autoencoder") -> "FrameSplit":
    """The range's split between training and validation, or a refusal with the numbers."""
    if frame_end < frame_start:
        raise TrainJobError(f"The frame range {frame_start}-{frame_end} is empty: set End after Start")
    return split_frames(frame_end - frame_start + 1, task, f"The frame range {frame_start}-{frame_end}")


def cache_header(path: Path) -> tuple[int, int]:
    """(frames, vertices) from a PC2 or MDD header, without reading the positions (backend.formats.pc2's)."""
    return bridge.numpy_module("formats.pc2").read_header(path)


def scan_caches(folder, vertices: set[int] | None = None) -> tuple[list[Path], int]:
    """The caches a cache-folder job trains on, and the longest one's frame count.

    Refuses a missing folder, one without caches, and caches whose vertex count is none of
    the object's (``vertices``: its mesh's and its evaluated mesh's), naming a file."""
    folder = Path(folder).expanduser()
    if not str(folder).strip() or not folder.is_dir():
        raise TrainJobError(f"The cache folder {str(folder)!r} does not exist: choose a folder of PC2/MDD caches")
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in CACHE_SUFFIXES and p.is_file())
    if not files:
        raise TrainJobError(f"{folder} holds no .pc2 or .mdd files: choose a folder of point caches "
                            "(train/val/test subfolders, or names ending in a number)")
    good, longest, bad = [], 0, []
    for p in files:
        try:
            n_frames, n_verts = cache_header(p)
        except (OSError, ValueError) as e:
            bad.append(f"{p.name} ({getattr(e, 'problem', e)})")
            continue
        if vertices and n_verts not in vertices:
            bad.append(f"{p.name} has {n_verts} vertices, the object {' or '.join(map(str, sorted(vertices)))}")
            continue
        good.append(p)
        longest = max(longest, n_frames)
    if not good:
        raise TrainJobError(f"No cache in {folder} fits: {bad[0]}; a mesh model is trained per asset "
                            "(same vertex count and order as the object)")
    if len(good) == 1:
        raise TrainJobError(f"{folder} holds one cache that fits ({good[0].name}); training validates on other "
                            "frames than it trains on: add a cache for validation (a name ending in 8, like "
                            f"{good[0].stem}_8{good[0].suffix}, or a val/ subfolder), or train on a frame range")
    if longest < MIN_FRAMES:
        raise TrainJobError(f"The caches in {folder} have at most {longest} frames; training needs at least "
                            f"{MIN_FRAMES}")
    return good, longest


def safe_name(name: str, empty: str = "mesh") -> str:
    return re.sub(r"[^\w.-]+", "_", name).strip("._") or empty


def job_folder(blend_path: str, object_name: str, task: str) -> tuple[Path, bool]:
    """``<blend dir>/splinetween/train_<blend>_<object>_<task>`` (and False), or a temp folder for an unsaved
    file (True): one folder per file, object and task, so no two of them share a run."""
    blend = safe_name(Path(blend_path).stem, "untitled") if blend_path else "untitled"
    name = f"train_{blend}_{safe_name(object_name)}_{task}"
    if blend_path:
        return Path(blend_path).resolve().parent / "splinetween" / name, False
    return Path(tempfile.gettempdir()) / "splinetween" / name, True


def folder_problem(folder: Path) -> None:
    """Refuse a job folder that cannot be made or written (creating nothing: a refusal leaves the disk as it was)."""
    problem = bridge.numpy_module("formats.atomic").folder_problem(folder)
    if problem:
        raise TrainJobError(f"Cannot write the job folder {folder} ({problem}): save the .blend in a writable "
                            "folder, or remove what blocks that path")


MIN_VAL = MIN_FRAMES  # frames kept aside to validate on (never trained on)


@dataclass(frozen=True)
class FrameSplit:
    """A frame range cut in two: the first ``train`` frames to train on, the last ``val`` to validate on."""
    train: int
    val: int
    window: int  # frames per training window: the task's, or shorter for a short range
    note: str = ""  # a warning with the numbers ("" when the range is long enough)


def split_frames(n: int, task: str, what: str) -> FrameSplit:
    """How ``n`` frames (``what``: "The frame range 1-70") are shared between training and validation: the last
    ``max(min(window, n // 2), n // 10, 8)`` validate; a range too short for 8 + 8 is refused with the numbers."""
    w = WINDOWS[task]
    val = max(min(w, n // 2), n // 10, MIN_VAL)
    train = n - val
    if train < MIN_FRAMES:
        raise TrainJobError(f"{what} has {n} frames; training needs at least {MIN_FRAMES + MIN_VAL}: {MIN_FRAMES} "
                            f"to train on and {MIN_VAL} more to validate on (a model is never validated on its "
                            f"training frames); choose a longer range ({2 * w} or more is best)")
    window = min(w, train, val)
    note = "" if window == w else (
        f"a short range: {train} frames to train on, the last {val} to validate on, windows of {window} frames "
        f"(the model's are {w}); {2 * w} or more frames make a better model")
    return FrameSplit(train, val, window, note)


def parse_options(text: str) -> list[str]:
    """The dialog's *More Options* field: ``--key=value`` items for the training CLI."""
    items = text.split()
    for it in items:
        if not re.fullmatch(r"--[A-Za-z_][\w-]*=\S*", it):
            raise TrainJobError(f"More Options: {it!r} is not --key=value (e.g. --width=64 --layers=2)")
        if it[2:].split("=", 1)[0].replace("-", "_") in ("data", "out", "init", "events"):
            raise TrainJobError(f"More Options: {it.split('=')[0]} is set by the job itself; remove it")
    return items
