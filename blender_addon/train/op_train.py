"""Train Mesh Model: the operators, the timer that follows the job, and the sidebar section.

The job itself (export, process, events, cancel) is ``train.job``; this module holds the
one job a Blender session runs at a time, polls it from ``bpy.app.timers`` every half second
(never blocking the interface), shows its progress in the 3D Viewport's Splinetween tab and,
on success, points the object at the trained checkpoint.  (Not the window manager's progress:
``WindowManager.progress_update`` turns the mouse cursor into a counter, which suits a blocking
operator, not minutes of training while the user keeps working.)

Longer than 300 lines: the operators, the timer and the panel share the job's state on the object.
"""
from __future__ import annotations

import time
from pathlib import Path

import bpy

from .. import bridge, preferences
from ..core.errors import run_reported
from ..io import mesh_checkpoints
from .data import check_mesh, check_range, export_sequence, job_folder, parse_options, scan_caches
from .job import RUNNING, TrainJob

INTERVAL = 0.5  # seconds between polls of the training process
_job: TrainJob | None = None
_last_message: tuple[str, str] = ("", "")  # (level, text) of the last finished job, for the panel
_tick_cost: list[float] = []  # seconds per timer tick (kept short; read by the tests and benchmarks)


def current_job() -> TrainJob | None:
    return _job


def running() -> bool:
    return _job is not None and _job.state == RUNNING


def _redraw() -> None:
    wm = bpy.context.window_manager
    for win in wm.windows if wm else ():
        for area in win.screen.areas:
            if area.type == "VIEW_3D":
                area.tag_redraw()


def _report(level: str, text: str) -> None:
    """Into Blender's reports (status bar, Info editor, console) through a tiny operator, as the
    timer has no operator of its own to report with."""
    try:
        bpy.ops.object.splinetween_train_mesh_report(level=level, message=text)
    except RuntimeError:  # an ERROR report raises here once it has been recorded
        pass
    except AttributeError:  # the operator is gone (add-on being disabled)
        print(f"Splinetween: {text}")


def _checkpoint_path(path: Path, temp: bool) -> str:
    """Blend-relative (``//...``) when it lies next to the saved file, so the project can move; else absolute."""
    if bpy.data.filepath and not temp:
        try:
            return bpy.path.relpath(str(path))
        except ValueError:  # another drive (Windows)
            pass
    return str(path)


def _finish(job: TrainJob, report: bool = True) -> None:
    """Take a finished job's result once: the checkpoint property, the report."""
    global _last_message
    if job.finished:
        return
    job.finished = True
    text, level = job.message, "INFO"
    if job.state == "DONE":
        obj = bpy.data.objects.get(job.object_name)
        if job.file_changed or obj is None:
            text += f" (another file is open now, or {job.object_name} is gone: set its checkpoint by hand)"
            level = "WARNING"
        else:
            task = job.trained_task() or job.task
            try:
                mesh_checkpoints.remember(obj, task, _checkpoint_path(job.checkpoint, job.temp_folder))
                text += (f"; {obj.name}'s {mesh_checkpoints.TITLES[task]} from now on "
                         f"({obj.name}['{mesh_checkpoints.PROPS[task]}'])")
            except (TypeError, AttributeError, RuntimeError) as e:  # linked (library) data is read-only
                text += f" ({obj.name} cannot hold it: {e})"
                level = "WARNING"
            if job.temp_folder:
                text += " - in a temp folder: save the .blend before training to keep it next to the file"
                level = "WARNING"
    elif job.state == "FAILED":
        level = "ERROR"
    _last_message = (level, text)
    if report:
        _report(level, text)
    _redraw()


def tick() -> float | None:
    """The ``bpy.app.timers`` callback: poll the job without waiting; the next delay, or None when done."""
    t0 = time.perf_counter()
    job = _job
    if job is None or job.finished:
        return None
    state = job.poll()
    if state == RUNNING:
        _redraw()
        _tick_cost.append(time.perf_counter() - t0)
        del _tick_cost[:-100]
        return INTERVAL
    _finish(job)
    return None


@bpy.app.handlers.persistent
def _on_load(*_args) -> None:
    """Another file was opened while training: the result is not for an object of this one."""
    if _job is not None:
        _job.file_changed = True


def _start_timer() -> None:
    if not bpy.app.timers.is_registered(tick):
        # persistent: opening another file must not orphan a running job (_on_load marks it)
        bpy.app.timers.register(tick, first_interval=INTERVAL, persistent=True)
    if _on_load not in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.append(_on_load)


def shutdown() -> None:
    """Add-on unregister: stop the job and the timer."""
    global _job
    if _job is not None and _job.state == RUNNING:
        _job.cancel(timeout=2.0)
    if bpy.app.timers.is_registered(tick):
        bpy.app.timers.unregister(tick)
    if _on_load in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(_on_load)
    _job = None


SOURCES = [
    ("FRAMES", "Frame Range", "The active mesh's evaluated vertices over a frame range of this scene"),
    ("CACHES", "Cache Folder", "A folder of PC2/MDD caches of this mesh (train/val/test subfolders, or names "
                               "ending in a number: 8 validation, 9 test, others train)"),
]
TASKS = [
    ("autoencoder", "Autoencoder", "Encode and edit this mesh's motion with latent sliders"),
    ("inbetween", "In-between", "Fill the frames between key poses of this mesh"),
]


class OBJECT_OT_splinetween_train_mesh(bpy.types.Operator):
    """Train a mesh-sequence model for the active mesh in the background (progress in the sidebar)"""
    bl_idname = "object.splinetween_train_mesh"
    bl_label = "Train Mesh Model"
    bl_options = {"REGISTER"}

    source: bpy.props.EnumProperty(name="Data", items=SOURCES, default="FRAMES")
    frame_start: bpy.props.IntProperty(name="Start", default=1, description="First frame of the training clip")
    frame_end: bpy.props.IntProperty(name="End", default=250, description="Last frame of the training clip")
    cache_folder: bpy.props.StringProperty(name="Cache Folder", subtype="DIR_PATH",
                                           description="A folder of PC2/MDD caches of this mesh")
    steps: bpy.props.IntProperty(name="Steps", default=2000, min=1, soft_max=50000,
                                 description="Training steps (a run cancelled part-way resumes from its last save)")
    task: bpy.props.EnumProperty(name="Task", items=TASKS, default="autoencoder")
    components: bpy.props.IntProperty(name="Components", default=64, min=1, max=1024,
                                      description="Basis vectors per frame (the mesh's motion is compressed to "
                                                  "these before the transformer)")
    options: bpy.props.StringProperty(name="More Options",
                                      description="Further --key=value options of python -m training.train mesh "
                                                  "(e.g. --width=64 --layers=2 --lr=1e-3)")

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if running():
            p = _job.progress
            cls.poll_message_set(f"A mesh model is training (step {p.step}/{p.total or '?'}): wait for it or "
                                 "Cancel it")
            return False
        obj = context.active_object
        if obj is None or obj.type != "MESH":
            cls.poll_message_set("Make the animated mesh the active object")
            return False
        return True

    def _scene_range_unless_set(self, context: bpy.types.Context) -> None:
        if not self.properties.is_property_set("frame_start"):
            self.frame_start = context.scene.frame_start
        if not self.properties.is_property_set("frame_end"):
            self.frame_end = context.scene.frame_end

    def invoke(self, context: bpy.types.Context, event) -> set[str]:
        self._scene_range_unless_set(context)
        return context.window_manager.invoke_props_dialog(self, width=380, confirm_text="Train")

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        layout.prop(self, "source", expand=True)
        if self.source == "FRAMES":
            col = layout.column(align=True)
            col.prop(self, "frame_start", text="Frame Start")
            col.prop(self, "frame_end", text="End")
        else:
            layout.prop(self, "cache_folder")
        layout.prop(self, "task")
        layout.prop(self, "steps")
        layout.prop(self, "components")
        layout.prop(self, "options")
        folder, temp = job_folder(bpy.data.filepath, context.active_object.name, self.task)
        layout.label(text=("Unsaved file: the model goes to a temp folder" if temp
                           else f"Saves to //splinetween/{folder.name}"), icon="INFO")

    def execute(self, context: bpy.types.Context) -> set[str]:
        return run_reported(self, lambda: self._start(context))

    def _start(self, context: bpy.types.Context) -> str:
        """Export and start the job; the report's message (a refusal raises before anything starts)."""
        global _job, _last_message
        obj = context.active_object
        check_mesh(obj, context)
        options = parse_options(self.options)
        folder, temp = job_folder(bpy.data.filepath, obj.name, self.task)
        settings = preferences.settings(context)
        common = dict(steps=self.steps, task=self.task, components=self.components, options=options,
                      interpreter=settings.interpreter or bridge.default_interpreter(),
                      root=bridge.backend_root(), object_name=obj.name, blend_file=bpy.data.filepath,
                      temp_folder=temp)
        t0 = time.perf_counter()
        if self.source == "FRAMES":
            self._scene_range_unless_set(context)
            split = check_range(self.frame_start, self.frame_end, self.task)
            frames = export_sequence(context, obj, self.frame_start, self.frame_end)
            what = (f"frames {self.frame_start}-{self.frame_end - split.val} ({frames.shape[1]} vertices), validated "
                    f"on frames {self.frame_end - split.val + 1}-{self.frame_end}")
            _job = TrainJob.start(folder, frames=frames, split=split, **common)
        else:
            evaluated = len(obj.evaluated_get(context.evaluated_depsgraph_get()).data.vertices)
            files, longest = scan_caches(bpy.path.abspath(self.cache_folder), {len(obj.data.vertices), evaluated})
            what = f"{len(files)} cache(s) in {bpy.path.abspath(self.cache_folder)}"
            _job = TrainJob.start(folder, cache_folder=bpy.path.abspath(self.cache_folder), cache_files=files,
                                  longest=longest, **common)
        _job.export_s = time.perf_counter() - t0
        _last_message = ("", "")
        _start_timer()
        _redraw()
        where = f"temp folder {folder}" if temp else f"//splinetween/{folder.name}"
        note = f"; {_job.message}" if _job.message else ""
        return f"Training a mesh model for {obj.name} on {what} in the background, in {where}{note}"


class OBJECT_OT_splinetween_train_mesh_cancel(bpy.types.Operator):
    """Stop the mesh training; starting it again with the same settings resumes from its last save"""
    bl_idname = "object.splinetween_train_mesh_cancel"
    bl_label = "Cancel Training"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not running():
            cls.poll_message_set("No mesh model is training")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[str]:
        job = _job
        job.cancel()
        _finish(job, report=False)  # reported below, by this operator
        if bpy.app.timers.is_registered(tick):
            bpy.app.timers.unregister(tick)
        self.report({"ERROR" if job.state == "FAILED" else "INFO"}, job.message)
        return {"FINISHED"}


class OBJECT_OT_splinetween_train_mesh_report(bpy.types.Operator):
    """Puts a finished training's message into Blender's reports"""
    bl_idname = "object.splinetween_train_mesh_report"
    bl_label = "Mesh Training Report"
    bl_options = {"INTERNAL"}

    level: bpy.props.StringProperty(default="INFO", options={"SKIP_SAVE"})
    message: bpy.props.StringProperty(options={"SKIP_SAVE"})

    def execute(self, context: bpy.types.Context) -> set[str]:
        self.report({self.level if self.level in ("INFO", "WARNING", "ERROR") else "INFO"}, self.message)
        return {"FINISHED"}


def draw_train_section(layout: bpy.types.UILayout, context: bpy.types.Context) -> None:
    """Progress, loss, validation error and Cancel while a job runs; else the Train button and the
    last result.  (Any Splinetween panel can call this.)"""
    job = _job
    if running():
        p = job.progress
        layout.progress(factor=p.factor, type="BAR", text=p.text())
        col = layout.column(align=True)
        if p.loss is not None:
            col.label(text=f"Loss {p.loss:.4g}")
        if p.val_error is not None:
            col.label(text=f"Val error {p.val_error:.3g} % (step {p.val_step})")
        if p.resumed_from:
            col.label(text=f"Resumed from step {p.resumed_from}")
        col.label(text=f"{job.object_name}, {job.elapsed:.0f} s", icon="MESH_DATA")
        layout.operator(OBJECT_OT_splinetween_train_mesh_cancel.bl_idname, icon="CANCEL")
        return
    layout.operator_context = "INVOKE_DEFAULT"
    layout.operator(OBJECT_OT_splinetween_train_mesh.bl_idname, icon="MOD_MESHDEFORM")
    obj = context.active_object
    for task, title in mesh_checkpoints.TITLES.items():
        ckpt = mesh_checkpoints.own(obj, task)
        if ckpt:
            layout.label(text=f"{title.capitalize()}: " + "/".join(Path(bpy.path.abspath(ckpt)).parts[-3:]),
                         icon="CHECKMARK")
    level, text = _last_message
    if text:
        icon = {"ERROR": "ERROR", "WARNING": "ERROR"}.get(level, "INFO")
        col = layout.column(align=True)
        for i, chunk in enumerate(_wrap(text, 48)):
            col.label(text=chunk, icon=icon if i == 0 else "BLANK1")


def _wrap(text: str, width: int) -> list[str]:
    import textwrap
    return textwrap.wrap(text, width) or [""]


class VIEW3D_PT_splinetween_train_mesh(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Splinetween"
    bl_label = "Train Mesh Model"

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        obj = context.active_object
        return _job is not None or (obj is not None and obj.type == "MESH")

    def draw(self, context: bpy.types.Context) -> None:
        draw_train_section(self.layout, context)


classes = (OBJECT_OT_splinetween_train_mesh, OBJECT_OT_splinetween_train_mesh_cancel,
           OBJECT_OT_splinetween_train_mesh_report, VIEW3D_PT_splinetween_train_mesh)
