"""IMPORT_ANIM_OT_splinetween_acclaim: File > Import > Acclaim (.asf/.amc), with Import BVH's options.

Pick a take's ``.amc`` (its skeleton: the ``.asf`` named in Skeleton, else the one the take's name begins
with in its folder, else the only one there) or an ``.asf`` alone (the armature, no motion).  The work is
``io/acclaim.py``: everything read and checked before anything is made, so a refusal leaves the scene as
it was; Undo takes the import back.
"""
from __future__ import annotations

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty
from bpy_extras.io_utils import ImportHelper, axis_conversion, orientation_helper

from ..core.errors import run_reported
from ..io import acclaim

_MODES = [("QUATERNION", "Quaternion", "Rotations as quaternions (exact for any ASF axis)")] + [
    (m, f"Euler ({m})", f"Rotations as Euler {m}, each frame nearest the one before") for m in acclaim.ROTATE_MODES[1:]]


@orientation_helper(axis_forward="-Z", axis_up="Y")  # the file's axes, as Import BVH's defaults: Y up
class IMPORT_ANIM_OT_splinetween_acclaim(bpy.types.Operator, ImportHelper):
    """Load an Acclaim skeleton (.asf) and motion (.amc), as CMU's and HDM05's captures come"""

    bl_idname = "import_anim.splinetween_acclaim"
    bl_label = "Import Acclaim"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".amc"
    filter_glob: StringProperty(default="*.amc;*.asf", options={"HIDDEN"})
    skeleton: StringProperty(
        name="Skeleton", subtype="FILE_PATH", default="",
        description="The take's .asf (empty: the .asf the take's name begins with in its folder, else the only "
                    "one there)")
    global_scale: FloatProperty(
        name="Scale", description="Blender units per file unit (with Metres: per metre)",
        min=0.0001, max=1000000.0, soft_min=0.001, soft_max=100.0, default=1.0)
    use_metres: BoolProperty(
        name="Metres", default=False,
        description="Convert the file's units to metres by the ASF's ':units length' (file units are "
                    "1/length inches: CMU's 0.45 gives 5.64 cm), then apply Scale")
    frame_start: IntProperty(name="Start Frame", description="The scene frame of the take's first frame",
                             default=1)
    fps: FloatProperty(name="Frame Rate", description="The take's frames per second (an AMC does not say "
                       "its own; CMU and HDM05 capture at 120)", min=0.01, max=10000.0, default=acclaim.AMC_FPS)
    use_fps_scale: BoolProperty(
        name="Scale FPS", default=False,
        description="Key the take at the scene's frame rate (fractional frames), otherwise each take frame is "
                    "one scene frame")
    update_scene_fps: BoolProperty(name="Update Scene FPS", default=False,
                                   description="Set the scene's frame rate to Frame Rate (Scale FPS then does "
                                               "nothing: the take plays 1:1)")
    update_scene_duration: BoolProperty(name="Update Scene Duration", default=False,
                                        description="Extend the scene's end to the take's (never shortens it)")
    rotate_mode: EnumProperty(name="Rotation", items=_MODES, default="QUATERNION",
                              description="The bones' rotation mode")

    def import_options(self) -> acclaim.ImportOptions:
        m = axis_conversion(from_forward=self.axis_forward, from_up=self.axis_up)
        return acclaim.ImportOptions(
            scale=self.global_scale, metres=self.use_metres, axis=tuple(tuple(r) for r in m),
            frame_start=self.frame_start, fps=self.fps, use_fps_scale=self.use_fps_scale,
            update_scene_fps=self.update_scene_fps, update_scene_duration=self.update_scene_duration,
            rotate_mode=self.rotate_mode)

    def execute(self, context: bpy.types.Context) -> set[str]:
        def work():
            opts = self.import_options()
            take = acclaim.read_take(self.filepath, self.skeleton, opts.fps)  # every check; nothing made yet
            frame = context.scene.frame_current
            obj = acclaim.build(context, take, opts)
            context.scene.frame_set(frame)
            return acclaim.summary(take, obj, opts)
        return run_reported(self, work)

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        layout.prop(self, "skeleton")
        box = layout.box()
        box.label(text="Transform")
        for name in ("global_scale", "use_metres", "rotate_mode", "axis_forward", "axis_up"):
            box.prop(self, name)
        box = layout.box()
        box.label(text="Animation")
        for name in ("frame_start", "fps", "use_fps_scale", "update_scene_fps", "update_scene_duration"):
            box.prop(self, name)


def menu_import(self, context: bpy.types.Context) -> None:
    self.layout.operator(IMPORT_ANIM_OT_splinetween_acclaim.bl_idname, text="Acclaim (.asf/.amc)")


classes = (IMPORT_ANIM_OT_splinetween_acclaim,)


def register_menu() -> None:
    bpy.types.TOPBAR_MT_file_import.append(menu_import)


def unregister_menu() -> None:
    bpy.types.TOPBAR_MT_file_import.remove(menu_import)
