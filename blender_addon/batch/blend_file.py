"""A .blend file in a worker (real bpy): opened safely (scripts disabled, a newer Blender's file refused),
saved as a copy, and the saved copy read back with Blender's own reader before it is published.

Files are opened with ``use_scripts=False`` (and auto-execution off, see ``worker.secure``): the
file's text blocks and Python drivers are neither run nor removed; the report says they exist.
"""
from __future__ import annotations

from pathlib import Path

import bpy

from .errors import JobError

_ID_COLLECTIONS = ("objects", "meshes", "armatures", "materials", "scenes", "shape_keys", "node_groups", "cameras",
                   "lights", "worlds", "curves", "lattices", "textures", "particles", "grease_pencils")


def _version(v) -> str:
    return f"{v[0]}.{v[1]}"


def newer_file() -> str:
    """Blender's own warning when the open file was saved by a newer Blender, else ""."""
    saved, here = tuple(bpy.data.version[:2]), tuple(bpy.app.version[:2])
    if saved <= here:
        return ""
    return (f"the file was saved by Blender {_version(saved)}, newer than this Blender {_version(here)} (Blender "
            f"warns: File written by newer Blender binary ({_version(saved)}), expect loss of data!)")


def open_blend(path: str, entry: dict, writes: bool = True) -> None:
    """Open ``path`` with scripts disabled; a file of a newer Blender is refused when the command saves
    it (``writes``), else named in the warnings."""
    bpy.context.preferences.filepaths.use_scripts_auto_execute = False
    try:
        result = bpy.ops.wm.open_mainfile(filepath=path, load_ui=False, use_scripts=False)
    except RuntimeError as e:
        raise JobError(f"cannot open the .blend file: {str(e).strip().splitlines()[-1]}") from None
    if result != {"FINISHED"} or Path(bpy.data.filepath).resolve() != Path(path).resolve():
        raise JobError("cannot open the .blend file")
    newer = newer_file()
    if newer and writes:
        raise JobError(newer + "; saving it in this version would lose what the newer one added, so it was not "
                       f"processed: run the batch with Blender {_version(bpy.data.version)}'s Python module, or "
                       "open and save the file in this Blender first if the loss is acceptable")
    if newer:
        entry["warnings"].append(newer)
    found = script_inventory()
    entry["scripts"] = found
    if found["text_blocks"] or found["python_drivers"]:
        entry["warnings"].append(
            f"the file holds {found['text_blocks']} text block(s) ({len(found['registered'])} registered to run "
            f"on load) and {found['python_drivers']} Python driver(s); scripts are disabled: none was run "
            "(they are kept unchanged in the output)")


def script_inventory() -> dict:
    """Code a .blend file carries: text blocks (registered ones would run on load when trusted) and
    drivers whose expression needs Python (simple expressions are evaluated without Python)."""
    drivers = 0
    for name in _ID_COLLECTIONS:
        for idb in getattr(bpy.data, name, ()):
            ad = getattr(idb, "animation_data", None)
            for fc in (ad.drivers if ad is not None else ()):
                d = fc.driver
                drivers += d.type == "SCRIPTED" and not d.is_simple_expression
    return {"text_blocks": len(bpy.data.texts), "registered": [t.name for t in bpy.data.texts if t.use_module],
            "python_drivers": drivers}


def _compressed(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(4)
    return head[:2] == b"\x1f\x8b" or head == b"\x28\xb5\x2f\xfd"  # gzip (old) or zstd


def blend_writer(source: str):
    compress = _compressed(source)

    def write(tmp: Path) -> None:
        try:
            result = bpy.ops.wm.save_as_mainfile(filepath=str(tmp), copy=True, compress=compress,
                                                 relative_remap=True, check_existing=False)
        except RuntimeError as e:  # (a compressed save reports a failed write; a plain one may not: verify_blend)
            why = str(e).strip().splitlines()[0].removeprefix("Error: ") if str(e).strip() else "no reason given"
            raise JobError(f"Blender could not save the file ({why}); no output was written (is the disk "
                           "full?)") from None
        if result != {"FINISHED"}:
            raise JobError("Blender could not save the file")
        verify_blend(tmp)
    return write


_CHECKED = ("objects", "actions", "armatures", "meshes", "scenes")


def _kept(collection) -> list[str]:
    """The local IDs a save writes (those with users, or a fake user)."""
    return sorted(i.name for i in collection if i.library is None and (i.users > 0 or i.use_fake_user))


def verify_blend(path: Path) -> None:
    """Read the saved file back with Blender's own reader and compare what it holds with what was saved
    (a full disk can leave a file Blender's save called done but cannot open: *Missing DNA block*)."""
    expect = {name: _kept(getattr(bpy.data, name)) for name in _CHECKED}
    size = Path(path).stat().st_size
    try:
        with bpy.data.libraries.load(str(path)) as (found, _):
            got = {name: sorted(getattr(found, name)) for name in _CHECKED}
    except (OSError, ValueError) as e:
        why = str(e).strip().splitlines()[0].rsplit(": ", 1)[-1] if str(e).strip() else type(e).__name__
        raise JobError(f"the saved file ({size:,} bytes) cannot be read back by Blender ({why}); it was not kept "
                       "and no output was written (is the disk full?)") from None
    missing = {name: sorted(set(expect[name]) - set(got[name]))[:3] for name in _CHECKED}
    missing = {k: v for k, v in missing.items() if v}
    if missing:
        raise JobError(f"the saved file ({size:,} bytes) lacks what was saved ({missing}); it was not kept and no "
                       "output was written (is the disk full?)")


