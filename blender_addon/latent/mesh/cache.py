"""A mesh range's cache file and its modifier: where a new file goes, the one this .blend owns (a file
saved elsewhere gets its own copy, so no .blend writes or deletes another's), and two objects on one file.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import bpy

from ...core.errors import Refusal
from ...io import cache as mesh_cache
from .. import core as latent_core


def new_path(context, obj, what: str) -> Path:
    """A new cache file for ``obj`` in this .blend's cache folder (made and proved writable), or a Refusal."""
    try:
        path = mesh_cache.choose_path(obj, what, context)
        mesh_cache.prepare_folder(path)
    except mesh_cache.CacheRefusal as e:
        raise Refusal(str(e)) from None
    return path


def modifier(obj, st):
    """The range's MeshCache modifier, or a Refusal naming what to do."""
    mod = mesh_cache.find(obj, st.cache_uid)
    if mod is None:
        raise Refusal(f"{obj.name} lost its {mesh_cache.MODIFIER} MeshCache modifier; Remove the latent controls "
                      "and encode again")
    return mod


def sharing(obj, path: Path) -> str | None:
    """Another mesh with latent controls whose cache file is this one (a duplicated object), or None."""
    for other in bpy.data.objects:
        if other is obj or other.type != "MESH" or not other.splinetween_latent.active:
            continue
        mod = mesh_cache.find(other, other.splinetween_latent.cache_uid)
        if mod is not None and mesh_cache.file_of(other, mod) == path:
            return other.name
    return None


def owned_cache(obj, st, mod, context=None) -> Path:
    """The cache file of this .blend: a file saved elsewhere since the cache was made (*Save As*, a copy)
    gets its own, a copy of the old one, which is never written or deleted from here again."""
    path = mesh_cache.file_of(obj, mod)
    if st.cache_blend == bpy.data.filepath:
        return path
    own = new_path(context, obj, "encoded" if st.task == "AUTOENCODER" else "inbetween")
    if path.exists():
        try:
            own.parent.mkdir(parents=True, exist_ok=True)  # (``new_path`` only proves it can be made)
            shutil.copyfile(path, own)
        except OSError as e:
            raise Refusal(f"cannot copy the mesh cache {path} to {own} for this .blend ({e.strerror or e}); "
                          "nothing was changed") from None
    with latent_core.suspended():
        mesh_cache.point(mod, own)
        st.cache_blend = bpy.data.filepath
    return own
