"""Object.splinetween_latent: the bookkeeping of an encoded range, the sliders, and the handlers.

The raw control points are ID properties on the object itself (``obj["splinetween_s00_c1"]``,
see ``latent_math.raw_name``), so they show under Custom Properties and can be keyed or driven.
This group holds the rest: checkpoint, frame range, segments and their sliders, and (as ID
properties inside the group) origins, template, key poses and the snapshot of the original keys.

The F-curves (a mesh: its PC2 cache file) always follow the raw points and sliders: each segment's ``signature`` names what
its frames show, and ``slider.sync`` re-decodes the segments whose inputs no longer match.  It
runs from the sliders' update callbacks, and from handlers for what fires no callback: raw
properties typed in the UI (depsgraph update), keyed or driven ones (frame change), undo/redo.
"""
from __future__ import annotations

import bpy
from bpy.app.handlers import persistent

from .core import MAX_PRINCIPAL

TASKS = [  # the model task a range was made with (numbered as stored: 0, 1)
    ("AUTOENCODER", "Encoded", "Encoded from existing motion with the motion autoencoder"),
    ("INBETWEEN", "In-betweened", "Made by Inbetween; its keys are never changed"),
]
OLD_TASK = "kind"  # the stored name of ``task`` in files saved before the rename (the same numbers)


def _get_task(self) -> int:
    """The stored task; in a file saved before the rename, the old property's (a linked or appended range
    too: nothing to migrate on load)."""
    value = self.get("task")
    return value if value is not None else self.get(OLD_TASK, 0)


def _set_task(self, value: int) -> None:
    self["task"] = value
    if OLD_TASK in self:
        del self[OLD_TASK]


_STYLE_ITEMS: dict = {}  # checkpoint path -> the menu's items (Blender needs the strings kept alive)
NO_STYLE = ("NONE", "None", "No style: the motion as it is", 0)


def style_items(self, context):
    """The Style menu: None, then the styles the range's checkpoint knows (``info.style_names``), each with
    its one line as the tooltip; numbered by their place in the checkpoint (a saved choice reads back)."""
    from . import core
    path = self.id_data.splinetween_latent.checkpoint if self.id_data else ""
    if path not in _STYLE_ITEMS:
        names, lines = core.style_names(path)
        _STYLE_ITEMS[path] = [NO_STYLE] + [(n, n.capitalize(), t or n, k + 1)
                                           for k, (n, t) in enumerate(zip(names, lines, strict=True))]
    return _STYLE_ITEMS[path]


def _slider_changed(self, context) -> None:
    from . import slider
    slider.on_slider(self.id_data, context)


class SplinetweenLatentSegment(bpy.types.PropertyGroup):
    start: bpy.props.IntProperty(name="Start", description="First frame of the segment (0 = the range's start)")
    end: bpy.props.IntProperty(name="End", description="Last frame of the segment (shared with the next)")
    amplify: bpy.props.FloatProperty(
        name="Amplify", default=1.0, min=0.0, max=3.0, subtype="FACTOR", update=_slider_changed,
        description="Moves the inner control points away from (> 1, exaggerate) or towards (< 1, tone down) "
                    "the straight line between the segment's end poses")
    timing: bpy.props.FloatProperty(
        name="Timing", default=0.0, min=-1.0, max=1.0, update=_slider_changed,
        description="Where along the segment the motion happens: > 0 earlier, < 0 later; end frames stay")
    principal: bpy.props.FloatVectorProperty(
        name="Principal Directions", size=MAX_PRINCIPAL, default=(0.0,) * MAX_PRINCIPAL, min=-3.0, max=3.0,
        update=_slider_changed,
        description="Offsets along the checkpoint's principal directions of control points, in standard "
                    "deviations seen in the training motion")
    style: bpy.props.EnumProperty(
        name="Style", items=style_items, update=_slider_changed,
        description="A style the checkpoint learned from labelled clips (Bandai dataset 2), added at Strength; "
                    "the root's path and the planted feet stay")
    style_strength: bpy.props.FloatProperty(
        name="Strength", default=0.0, min=-3.0, max=3.0, soft_min=-1.0, soft_max=2.0, update=_slider_changed,
        description="0 = the motion as it is, 1 = the style as performed in the data, > 1 exaggerates, "
                    "negative moves away")
    signature: bpy.props.StringProperty(options={"HIDDEN"}, description="What the segment's keys show now")


class SplinetweenLatent(bpy.types.PropertyGroup):
    active: bpy.props.BoolProperty(name="Latent Controls", default=False)
    task: bpy.props.EnumProperty(name="Made By", items=TASKS, default="AUTOENCODER", get=_get_task, set=_set_task)
    checkpoint: bpy.props.StringProperty(name="Checkpoint", subtype="FILE_PATH",
                                         description="The checkpoint that encoded this range")
    checkpoint_hash: bpy.props.StringProperty(name="Checkpoint Hash")
    token: bpy.props.StringProperty(options={"HIDDEN"})
    frame_start: bpy.props.IntProperty(name="Start", description="Scene frame where the range starts")
    source_frames: bpy.props.IntProperty(name="Encoded Frames", description="Frames the range had when encoded")
    frames: bpy.props.IntProperty(name="Frames", description="Frames the range has now (after Resample)")
    latent_size: bpy.props.IntProperty(name="Latent Size", description="Values per control point")
    principal_names: bpy.props.StringProperty(options={"HIDDEN"})
    principal_descriptions: bpy.props.StringProperty(options={"HIDDEN"},
                                                     description="One sentence per principal direction")
    base_version: bpy.props.StringProperty(options={"HIDDEN"}, description="Names the layer's original now")
    cm_per_unit: bpy.props.FloatProperty(default=1.0, options={"HIDDEN"})
    snapshot_all: bpy.props.BoolProperty(default=False, options={"HIDDEN"})
    status: bpy.props.StringProperty(name="Status", description="Why the last change was not applied")
    # mesh sequences: the decode lives in a PC2 file read by a MeshCache modifier (see mesh.adapter)
    cache_uid: bpy.props.IntProperty(options={"HIDDEN"}, description="persistent_uid of the MeshCache modifier")
    cache_fingerprint: bpy.props.StringProperty(options={"HIDDEN"}, description="What the cache file shows")
    cache_blend: bpy.props.StringProperty(options={"HIDDEN"}, subtype="FILE_PATH",
                                          description="The .blend the cache file belongs to (Save As elsewhere: a new one)")
    made_animation_data: bpy.props.BoolProperty(default=False, options={"HIDDEN"})
    num_vertices: bpy.props.IntProperty(name="Vertices", description="Vertices of the encoded mesh")
    segments: bpy.props.CollectionProperty(type=SplinetweenLatentSegment)
    # the take the range is made on (``take``) and what the layer last wrote (``carry``)
    action: bpy.props.PointerProperty(type=bpy.types.Action, name="Take",
                                      description="The action the latent controls were made on")
    action_slot: bpy.props.StringProperty(options={"HIDDEN"}, description="Its slot's identifier")
    shown_id: bpy.props.StringProperty(options={"HIDDEN"}, description="Names the layer's last write")
    base_edited: bpy.props.BoolProperty(default=False, options={"HIDDEN"},
                                        description="Keys changed since Encode were carried into the original")

    @property
    def frame_end(self) -> int:
        return self.frame_start + self.frames - 1


def _sync_objects(objects) -> None:
    from . import slider
    for obj in objects:
        if obj.type in slider.ADAPTERS and obj.splinetween_latent.active:
            slider.sync_quietly(obj)


@persistent
def on_depsgraph_update(scene, depsgraph) -> None:
    """Raw control points typed in the UI tag the object; re-decode what they changed."""
    from . import core as latent_core
    if latent_core.busy():
        return
    seen = []
    for update in depsgraph.updates:
        obj = update.id
        if isinstance(obj, bpy.types.Object):
            obj = obj.original
            if obj not in seen:
                seen.append(obj)
    _sync_objects(seen)


@persistent
def on_frame_change(scene, depsgraph=None) -> None:
    """Keyed or driven raw points and sliders change with the frame."""
    from . import core as latent_core
    if not latent_core.busy():
        _sync_objects(scene.objects)


@persistent
def on_undo(scene, *args) -> None:
    from . import core as latent_core
    if not latent_core.busy():
        _sync_objects(scene.objects)


_HANDLERS = (("depsgraph_update_post", on_depsgraph_update), ("frame_change_post", on_frame_change),
             ("undo_post", on_undo), ("redo_post", on_undo))


def register_props() -> None:
    bpy.types.Object.splinetween_latent = bpy.props.PointerProperty(type=SplinetweenLatent)
    for name, fn in _HANDLERS:
        getattr(bpy.app.handlers, name).append(fn)


def unregister_props() -> None:
    for name, fn in _HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        while fn in handlers:
            handlers.remove(fn)
    del bpy.types.Object.splinetween_latent


classes = (SplinetweenLatentSegment, SplinetweenLatent)
