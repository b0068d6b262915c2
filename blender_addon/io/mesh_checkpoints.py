"""Each mesh object's own checkpoints: Train Mesh Model writes the checkpoint it trained into the
object's property for its task, and Encode Mesh, Inbetween Mesh and the batch read that property;
the preference (Preferences > Mesh Autoencoder / Mesh Inbetween) is the default for meshes without
one.  A property holds one run's own path (``train_<blend>_<object>_<task>/run-<digest>/best.json``),
which no later run reuses, so nothing a later training does changes which weights it loads."""
from __future__ import annotations

from pathlib import Path

import bpy

from .. import preferences
from ..core.errors import Refusal

PROPS = {"autoencoder": "splinetween_mesh_autoencoder", "inbetween": "splinetween_mesh_inbetween"}
TITLES = {"autoencoder": "mesh autoencoder", "inbetween": "mesh in-betweener"}


def own(obj, task: str) -> str:
    """The object's own checkpoint for ``task`` as stored ("" when it has none)."""
    value = obj.get(PROPS[task]) if obj is not None else None
    return value if isinstance(value, str) else ""


def for_object(obj, task: str, context=None) -> Path:
    """The checkpoint an operation on ``obj`` uses for ``task``: the object's own (refused when its file is
    gone: another model would silently take its place), else the preference's, else the shipped one."""
    stored = own(obj, task)
    if not stored:
        return preferences.mesh_checkpoint_path(task, context)
    lib = obj.library.filepath if obj.library is not None else None
    path = Path(bpy.path.abspath(stored, library=obj.library) if lib else bpy.path.abspath(stored)).expanduser()
    path = path if path.suffix == ".json" else path.with_suffix(".json")
    if not path.is_file():
        raise Refusal(f"{obj.name}'s own {TITLES[task]} {stored} is gone (Object Properties > Custom Properties > "
                      f"{PROPS[task]}): train it again, restore the file, or delete the property to use the "
                      "preference's checkpoint")
    return path


def remember(obj, task: str, stored: str) -> None:
    """Make ``stored`` (a path, blend-relative when it can be) the object's own checkpoint for ``task``."""
    obj[PROPS[task]] = stored
