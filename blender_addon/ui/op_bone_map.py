"""The Bone Map operators: Detect, Import and Export a JSON preset, Clear (back to detection each time)."""
from __future__ import annotations

from pathlib import Path

import bpy
from bpy_extras.io_utils import ExportHelper, ImportHelper

from .. import bridge, preferences
from ..core.errors import Refusal, run_reported
from ..humanoid import bone_map
from ..io import bone_map as bone_map_io
from ..io import bone_map_file


def _poll(cls, context) -> bool:
    obj = context.active_object
    if obj is None or obj.type != "ARMATURE":
        cls.poll_message_set("make an armature active")
        return False
    if obj.data.library is not None:
        cls.poll_message_set("the armature is linked from a library; make it local first")
        return False
    return True


def _joints(context) -> tuple[list[str], list[int]]:
    try:
        info = bridge.describe(preferences.settings(context))
    except bridge.BridgeError as e:
        raise Refusal(str(e)) from None
    return list(info.names), list(info.parents)


def summary(bm: bone_map.BoneMap, names) -> str:
    left = [j for j in names if not bm.bones.get(j)]
    n = len(names) - len(left)
    return f"{n} of {len(names)} joints mapped" + (f"; not mapped: {', '.join(left)}" if left else "")


class ANIM_OT_splinetween_bone_map_detect(bpy.types.Operator):
    """Detect which bone carries each of the model's joints (presets: Mixamo, Rigify, Unreal, Auto-Rig Pro, BVH, the
    data set's names; else by name and position, else by the skeleton's structure) and save the map on the armature"""

    bl_idname = "anim.splinetween_bone_map_detect"
    bl_label = "Detect Bone Map"
    bl_options = {"REGISTER", "UNDO"}
    poll = classmethod(_poll)

    def execute(self, context: bpy.types.Context) -> set[str]:
        def work() -> str:
            obj = context.active_object
            names, parents = _joints(context)
            bm = bone_map.detect(names, parents, bone_map_io.geometry(obj), bone_map_io.posed(obj))
            bone_map_io.store(obj, bm, names)
            return f"Bone map of {obj.name}: {bm.preset}, {summary(bm, names)}; {'; '.join(bm.found())}"
        return run_reported(self, work)


class ANIM_OT_splinetween_bone_map_clear(bpy.types.Operator):
    """Forget the armature's saved bone map: Inbetween and Encode detect it each time"""

    bl_idname = "anim.splinetween_bone_map_clear"
    bl_label = "Clear Bone Map"
    bl_options = {"REGISTER", "UNDO"}
    poll = classmethod(_poll)

    def execute(self, context: bpy.types.Context) -> set[str]:
        st = context.active_object.data.splinetween_bone_map
        st.entries.clear()
        st.preset = ""
        self.report({"INFO"}, "Bone map cleared: it is detected each time")
        return {"FINISHED"}


class ANIM_OT_splinetween_bone_map_export(bpy.types.Operator, ExportHelper):
    """Save the armature's bone map (or the detected one) as a JSON preset, to use on other rigs or in the batch
    (--bone-map)"""

    bl_idname = "anim.splinetween_bone_map_export"
    bl_label = "Export Bone Map"
    bl_options = {"REGISTER"}
    filename_ext = ".json"
    filter_glob: bpy.props.StringProperty(default="*.json", options={"HIDDEN"})
    poll = classmethod(_poll)

    def execute(self, context: bpy.types.Context) -> set[str]:
        def work() -> str:
            obj = context.active_object
            bm = bone_map_io.stored(obj)
            if bm is None:
                names, parents = _joints(context)
                bm = bone_map.detect(names, parents, bone_map_io.geometry(obj), bone_map_io.posed(obj))
            path = Path(bpy.path.abspath(self.filepath))
            try:
                # all or nothing: a failed write never leaves half a preset over an earlier one
                bridge.numpy_module("formats.atomic").write_text(path, bm.to_json() + "\n")
            except OSError as e:
                raise Refusal(f"cannot write {path}: {e.strerror or e}") from None
            return f"Bone map of {obj.name} saved to {path}"
        return run_reported(self, work)


class ANIM_OT_splinetween_bone_map_import(bpy.types.Operator, ImportHelper):
    """Load a bone map preset (JSON, exported from this panel) onto the armature"""

    bl_idname = "anim.splinetween_bone_map_import"
    bl_label = "Import Bone Map"
    bl_options = {"REGISTER", "UNDO"}
    filename_ext = ".json"
    filter_glob: bpy.props.StringProperty(default="*.json", options={"HIDDEN"})
    poll = classmethod(_poll)

    def execute(self, context: bpy.types.Context) -> set[str]:
        def work() -> str:
            obj = context.active_object
            path = Path(bpy.path.abspath(self.filepath))
            names, _ = _joints(context)
            try:
                bm = bone_map_file.read_file(path, names)
            except OSError as e:
                raise Refusal(f"cannot read {path}: {e.strerror or e}; nothing was changed") from None
            except bone_map.BoneMapError as e:
                raise Refusal(f"{path.name}: {e}; nothing was changed") from None
            absent = sorted({b for b in bm.bones.values() if b and b not in obj.data.bones})
            if absent:
                raise Refusal(f"{path.name} names bones {obj.name} does not have: {', '.join(absent[:8])}; nothing "
                              "was changed (rename the bones, or edit the file)")
            bone_map_io.store(obj, bm, names)
            return f"Bone map of {obj.name} loaded from {path.name}: {summary(bm, names)}"
        return run_reported(self, work)


classes = (ANIM_OT_splinetween_bone_map_detect, ANIM_OT_splinetween_bone_map_clear, ANIM_OT_splinetween_bone_map_export,
           ANIM_OT_splinetween_bone_map_import)
