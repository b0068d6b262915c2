"""A bone map preset file read from disk, for the Bone Map panel's Import and the batch's
``--bone-map`` (no bpy: the batch's coordinator reads it before any worker starts)."""
from __future__ import annotations

from .. import bridge
from ..humanoid import bone_map


def read_file(path, joint_names=None) -> bone_map.BoneMap:
    """A bone map preset file (UTF-8, -16 or -32; its size and nesting limited before it is parsed);
    an OSError when it cannot be read at all, a BoneMapError naming what is wrong with it."""
    limits = bridge.numpy_module("formats.json_limits")
    try:
        doc = limits.read(path, "the file", max_bytes=bone_map.MAX_FILE, max_depth=8)
    except limits.JsonLimitError as e:
        raise bone_map.BoneMapError(f"not a bone map file ({e.problem})") from None
    return bone_map.from_doc(doc, joint_names)
