"""Decoded mesh sequences on disk and in the modifier stack: a PC2 file read by a MeshCache modifier.

The file goes to the *Mesh Cache Folder* preference, else to ``//splinetween/`` next to the
.blend (``<blend>_<object>_<what>.pc2``).  The modifier (named "Splinetween", added last) has
``frame_start`` = the scene frame of the first sample, so scene frame f shows the sample decoded
for frame f (MeshCache shows sample ``f - frame_start``; the PC2 header's start frame is written
too but Blender ignores it).  A driver on its factor, ``start <= frame <= end``, keeps the
original animation outside the range.  The mesh data and the other modifiers are never touched.
"""
from __future__ import annotations

import os
import re
import zlib
from pathlib import Path

import bpy
import numpy as np

from .. import bridge
from ..core.errors import Refusal

MODIFIER = "Splinetween"
_HEADER = 32  # PC2 header bytes
_known: dict = {}  # absolute path -> (stat key, fingerprint) of the files this session wrote or read


class CacheRefusal(Refusal, ValueError):
    """The cache cannot be placed or written; the message names the folder and the fix."""


def _safe(name: str) -> str:
    return re.sub(r'[\\/:*?"<>|\x00-\x1f]', "_", name).strip(" .") or "mesh"


def default_folder(context=None) -> Path:
    """The preference folder, else ``splinetween`` next to the saved .blend (refused when unsaved)."""
    from .. import preferences
    chosen = preferences.mesh_cache_folder(context)
    if chosen:
        return Path(chosen)
    if not bpy.data.filepath:
        raise CacheRefusal("the .blend has not been saved, so there is no folder next to it for the mesh cache: "
                           "save the file first, or set Preferences > Add-ons > Splinetween > Mesh Cache Folder")
    return Path(bpy.path.abspath("//splinetween"))


def _used_paths(skip=None) -> set[str]:
    """Absolute paths read by any MeshCache modifier of this file."""
    used = set()
    for obj in bpy.data.objects:
        for mod in getattr(obj, "modifiers", ()):
            if mod.type == "MESH_CACHE" and mod is not skip and mod.filepath:
                used.add(os.path.normpath(bpy.path.abspath(mod.filepath, library=obj.library)))
    return used


def choose_path(obj, what: str, context=None) -> Path:
    """A new cache file for ``obj`` that no modifier in this file reads yet."""
    folder = default_folder(context)
    blend = Path(bpy.data.filepath).stem if bpy.data.filepath else "untitled"
    stem = f"{_safe(blend)}_{_safe(obj.name)}_{what}"
    used = _used_paths()
    for i in range(1, 10000):
        path = folder / (f"{stem}.pc2" if i == 1 else f"{stem}_{i}.pc2")
        if os.path.normpath(str(path)) not in used:
            return path
    raise CacheRefusal(f"no free cache file name for {obj.name} in {folder}")


def prepare_folder(path: Path) -> None:
    """Prove the cache file's folder can be made and written, before anything else changes; it is made by
    ``write`` (so a refusal after this check leaves no empty folder beside the .blend)."""
    problem = bridge.numpy_module("formats.atomic").folder_problem(path.parent)
    if problem:
        what = "the mesh cache folder {} is not writable" if problem.startswith("cannot write") else \
            "cannot create the mesh cache folder {}"
        raise CacheRefusal(f"{what.format(path.parent)} ({problem}): choose a writable folder in Preferences > "
                           "Add-ons > Splinetween > Mesh Cache Folder (or save the .blend somewhere writable); "
                           "nothing was changed")


def _stat_key(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _fingerprint(size: int, data) -> str:
    return f"{size}:{zlib.crc32(data):08x}"


def fingerprint(path) -> str | None:
    """What the cache file holds now (size and checksum of its samples), None when it is missing."""
    path = os.path.normpath(str(path))
    key = _stat_key(path)
    if key is None:
        return None
    known = _known.get(path)
    if known and known[0] == key:
        return known[1]
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    fp = _fingerprint(len(data), memoryview(data)[_HEADER:])
    _known[path] = (key, fp)
    return fp


def write(path, frames: np.ndarray, start: int) -> str:
    """Write the sequence (atomically, making its folder when missing) and return its fingerprint."""
    pc2 = bridge.numpy_module("formats.pc2")
    frames = np.ascontiguousarray(frames, dtype="<f4")
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # write_pc2 names the folder and the problem
    try:
        pc2.write_pc2(path, frames, start=float(start), rate=1.0)
    except pc2.CacheError as e:
        raise CacheRefusal(f"{e}; the mesh was left as it was") from None
    norm = os.path.normpath(str(path))
    fp = _fingerprint(_HEADER + frames.nbytes, memoryview(frames).cast("B"))
    _known[norm] = (_stat_key(norm), fp)
    return fp


def read(path) -> np.ndarray:
    return bridge.numpy_module("formats.pc2").read_pc2(path)[0]


def _blend_path(path: Path) -> str:
    """Relative to the .blend (``//...``) when it is saved and the path allows it, else absolute."""
    if bpy.data.filepath:
        try:
            return bpy.path.relpath(str(path))
        except ValueError:  # another drive (Windows)
            pass
    return str(path)


def point(mod, path: Path) -> None:
    """Make the modifier read ``path`` (relative to the .blend where it can be)."""
    mod.filepath = _blend_path(path)


def find(obj, uid: int):
    """The add-on's MeshCache modifier of ``obj`` (by its persistent id), or None."""
    for mod in obj.modifiers:
        if mod.type == "MESH_CACHE" and mod.persistent_uid == uid:
            return mod
    return None


def file_of(obj, mod) -> Path:
    return Path(os.path.normpath(bpy.path.abspath(mod.filepath, library=obj.library)))


def _driver_path(mod) -> str:
    return f'modifiers["{bpy.utils.escape_identifier(mod.name)}"].factor'


def set_range(obj, mod, start: int, end: int) -> None:
    """Scene frame ``start`` shows sample 0; outside ``start..end`` the modifier has no effect."""
    if mod.frame_start != start:
        mod.frame_start = start
    ad = obj.animation_data
    fc = ad.drivers.find(_driver_path(mod)) if ad else None
    if fc is None:
        fc = mod.driver_add("factor")
        fc.driver.type = "SCRIPTED"
    expression = f"{start} <= frame <= {end}"
    if fc.driver.expression != expression:
        fc.driver.expression = expression


def attach(obj, path: Path, start: int, end: int) -> tuple[int, bool]:
    """Add the MeshCache modifier (last in the stack) reading ``path``; -> (its persistent id,
    whether the object's animation data was made for its driver)."""
    made = obj.animation_data is None
    mod = obj.modifiers.new(MODIFIER, "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = _blend_path(path)
    mod.time_mode, mod.play_mode, mod.frame_scale = "FRAME", "SCENE", 1.0
    mod.deform_mode, mod.interpolation = "OVERWRITE", "LINEAR"
    set_range(obj, mod, start, end)
    return mod.persistent_uid, made


def detach(obj, mod, delete_file: bool, made_animation_data: bool) -> str:
    """Remove the modifier, its driver and (when no other modifier reads it) the file; -> a note."""
    note = ""
    if mod is not None:
        path = file_of(obj, mod)
        ad = obj.animation_data
        fc = ad.drivers.find(_driver_path(mod)) if ad else None
        if fc is not None:
            ad.drivers.remove(fc)
        obj.modifiers.remove(mod)
        if delete_file and os.path.normpath(str(path)) not in _used_paths():
            try:
                path.unlink(missing_ok=True)
            except OSError as e:
                note = f" (the cache file {path} could not be deleted: {e.strerror or e})"
            _known.pop(os.path.normpath(str(path)), None)
    ad = obj.animation_data
    if made_animation_data and ad is not None and ad.action is None and not len(ad.drivers) \
            and not len(ad.nla_tracks):
        obj.animation_data_clear()
    obj.update_tag()
    return note


def refresh(obj) -> None:
    """Make Blender evaluate the modifier again (it reads the file on every evaluation)."""
    obj.update_tag()
