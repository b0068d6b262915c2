"""File > Import > Acclaim: an ASF skeleton as an armature, an AMC take on it as the armature's action.

The files are read by the backend's reader (``backend.formats.asf`` through the bridge: the one ASF/AMC
reader, the batch's and training's too), every check before the first write: a file that is not an ASF or
an AMC is refused with the reader's message (the file, the line, the fix) and the scene is left as it was.
The maths is ``core/acclaim_math.py``; this module makes the Blender data, as Blender's own Import BVH does:
the axis conversion and the scale baked into the bones (the object's matrix stays identity), the take's
frame ``i`` keyed on scene frame ``start + i``, LINEAR keys on every frame.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

from .. import bridge
from ..core import acclaim_math, quat, rig_math
from ..core.errors import Refusal
from . import keys as keys_io
from .compat import new_action_channelbag

AMC_FPS = 120.0  # backend.formats.asf.AMC_FPS: CMU's and HDM05's rate (an AMC does not say its own)
NAME_BYTES = 63  # Blender's longest bone name
ROTATE_MODES = ("QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


@dataclass(frozen=True)
class ImportOptions:
    scale: float = 1.0  # Blender units per file unit (times the ASF's metres per unit with ``metres``)
    metres: bool = False  # one Blender unit = one metre, from the ASF's ``:units length``
    axis: tuple = ((1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (0.0, 1.0, 0.0))  # file -> Blender (Y up, -Z forward)
    frame_start: int = 1
    fps: float = AMC_FPS
    use_fps_scale: bool = False  # key the take at the scene's rate (fractional frames), as Import BVH's Scale FPS
    update_scene_fps: bool = False
    update_scene_duration: bool = False
    rotate_mode: str = "QUATERNION"


@dataclass(frozen=True)
class Take:
    """What was read: the skeleton, the clip (no frames for an ``.asf`` alone) and the files."""
    asf: object  # backend.formats.asf.Asf
    clip: object  # backend.motion.skeleton.Clip
    name: str
    asf_path: Path
    amc_path: Path | None


def _formats():
    return bridge.numpy_module("formats.asf")


def _for_the_addon(message: str) -> str:
    """The reader's advice as the batch words it (``--asf FILE``), in the operator's words."""
    return (message.replace("give --asf FILE", "name it in the import's Skeleton option")
            .replace("(--asf names the skeleton .asf of the takes)", "(the Skeleton option names the take's .asf)"))


def read_take(path, skeleton: str = "", fps: float = AMC_FPS) -> Take:
    """Read ``path`` (an ``.amc`` take, its ``.asf`` the ``skeleton`` given or the one found beside it; or an
    ``.asf`` alone): every check, nothing written.  Raises ``Refusal`` naming the file, the line and the fix."""
    fmt = _formats()
    if not str(path):
        raise Refusal("no file picked: pick a skeleton .asf or a take's .amc")
    path = Path(bpy.path.abspath(str(path)))
    suffix = path.suffix.lower()
    if suffix not in (".asf", ".amc"):
        raise Refusal(f"{path.name} is not an Acclaim file: pick a skeleton .asf or a take's .amc "
                      "(File > Import > Motion Capture (.bvh) reads a .bvh); nothing was imported")
    if not path.is_file():
        raise Refusal(f"{path}: no such file; nothing was imported")
    if not (np.isfinite(fps) and fps > 0):
        raise Refusal(f"frame rate {fps} must be a positive number of frames per second (CMU and HDM05: 120)")
    try:
        if suffix == ".asf":
            asf = fmt.read_asf(path)
            empty = fmt.Motion(np.zeros(0, dtype=np.int64), {n: np.zeros((0, len(asf.dof_of(n))))
                                                            for n in asf.joints() if asf.dof_of(n)})
            _check_names(asf, path)
            return Take(asf, fmt.to_clip(asf, empty, 1.0 / fps, path.stem), asf.name or path.stem, path, None)
        asf_path = Path(fmt.skeleton_for(path, bpy.path.abspath(skeleton) if skeleton else None))
        asf = fmt.read_asf(asf_path)
        clip = fmt.read_asf_amc(asf, path, fps, path.stem)
    except fmt.ASFError as e:  # (AMCError too)
        raise Refusal(f"{_for_the_addon(str(e))}; nothing was imported") from None
    if clip.num_frames == 0:
        raise Refusal(f"{path}: the take has no frames; nothing was imported")
    _check_names(asf, asf_path)
    return Take(asf, clip, path.stem, asf_path, path)


def _check_names(asf, path) -> None:
    """Blender cuts a bone's name at 63 bytes: a longer ASF name would not be found again."""
    long = [n for n in asf.joints() if len(n.encode("utf-8")) > NAME_BYTES]
    if long:
        raise Refusal(f"{path}: bone {long[0][:40]!r}... has a name of {len(long[0].encode('utf-8'))} bytes, longer "
                      f"than Blender's {NAME_BYTES}; shorten it in the .asf and its takes' .amc files; nothing was "
                      "imported")


def _bones(take: Take, opts: ImportOptions):
    """Heads, tails and the roll vectors of every bone (Blender axes, scaled), and the scale."""
    asf, skel = take.asf, take.clip.skeleton
    scale = opts.scale * (asf.unit_m if opts.metres else 1.0)
    a = np.asarray(opts.axis, dtype=np.float64)
    vectors = np.array([np.zeros(3) if n == "root" else np.asarray(asf.bones[n].direction) * asf.bones[n].length
                        for n in skel.names])
    heads = acclaim_math.rest_heads(skel.offsets, skel.parents)
    tails = acclaim_math.rest_tails(heads, vectors)
    rolls = []
    for n, v in zip(skel.names, tails - heads, strict=True):
        axis, order = ((asf.root_orientation, asf.root_axis) if n == "root"
                       else (asf.bones[n].axis, asf.bones[n].axis_order))
        # ``axis a b c XYZ``: the X turn first, as Blender's Euler XYZ; its columns are the ASF's local axes
        c = quat.to_matrix(rig_math.euler_to_quat(np.radians(np.asarray(axis, dtype=np.float64)), order))
        # the bone's Z towards the ASF axis most across the bone, Z before X before Y (HDM05's femur lies
        # along its -Y, so its Z stays the ASF's Z); the roll only names the axes, the pose is exact anyway
        cand = c[:, [2, 0, 1]].T
        across = np.round(np.abs(cand @ (v / np.linalg.norm(v))), 6)
        rolls.append(a @ cand[int(np.argmin(across))])
    return scale * heads @ a.T, scale * tails @ a.T, np.array(rolls), scale


def build(context, take: Take, opts: ImportOptions):
    """The armature (and, for a take, its action) in the active collection, selected and active."""
    heads, tails, rolls, scale = _bones(take, opts)
    active = context.view_layer.objects.active
    selected = [o for o in context.view_layer.objects if o.select_get()]
    if active is not None and active.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    arm = bpy.data.armatures.new(take.name)
    obj = bpy.data.objects.new(take.name, arm)
    try:
        _make(context, obj, take, opts, heads, tails, rolls, scale)
    except BaseException:  # (a failure no check foresaw: no half-made armature or action is left behind)
        _remove(obj)
        for o in selected:
            o.select_set(True)
        context.view_layer.objects.active = active
        raise
    return obj


def _make(context, obj, take: Take, opts: ImportOptions, heads, tails, rolls, scale) -> None:
    names, parents, arm = take.clip.skeleton.names, take.clip.skeleton.parents, obj.data
    moves = {n for n in names if any(d.startswith("t") for d in take.asf.dof_of(n))}
    turns = {n for n in names if any(d.startswith("r") for d in take.asf.dof_of(n))}
    context.collection.objects.link(obj)
    for o in context.view_layer.objects:
        o.select_set(False)
    obj.select_set(True)
    context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit = [arm.edit_bones.new(n) for n in names]
    for j, eb in enumerate(edit):
        eb.head, eb.tail = heads[j], tails[j]
        eb.align_roll(rolls[j])
    for j, eb in enumerate(edit):
        p = int(parents[j])
        if p >= 0:
            eb.parent = edit[p]
            eb.use_connect = (names[p] != "root" and names[j] not in moves
                              and float(np.linalg.norm(tails[p] - heads[j])) < 1e-6 * max(scale, 1e-9))
    bpy.ops.object.mode_set(mode="OBJECT")
    for pb in obj.pose.bones:
        pb.rotation_mode = opts.rotate_mode
    if take.clip.num_frames:
        _animate(context, obj, take, opts, scale, moves, turns)


def _remove(obj) -> None:
    """The object, its armature and its action, gone again."""
    if obj.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    ad = obj.animation_data
    action = ad.action if ad is not None else None
    arm = obj.data
    bpy.data.objects.remove(obj)
    bpy.data.armatures.remove(arm)
    if action is not None:
        bpy.data.actions.remove(action)


def _animate(context, obj, take: Take, opts: ImportOptions, scale: float, moves: set, turns: set) -> None:
    clip, names = take.clip, take.clip.skeleton.names
    rest = quat.from_matrix(np.array([np.array(obj.data.bones[n].matrix_local)[:3, :3] for n in names]))
    a = acclaim_math.axis_quat(opts.axis)
    rotations = acclaim_math.pose_rotations(clip.rotations, a, rest)
    locations = acclaim_math.pose_locations(clip.positions, clip.skeleton.offsets, a, rest, scale)
    scene = context.scene
    if opts.update_scene_fps:
        scene.render.fps = max(1, int(round(opts.fps)))
        scene.render.fps_base = scene.render.fps / opts.fps
    step = (scene.render.fps / scene.render.fps_base) / opts.fps if opts.use_fps_scale and not opts.update_scene_fps \
        else 1.0
    time = opts.frame_start + step * np.arange(clip.num_frames, dtype=np.float64)
    curves, values = [], []
    prop = "rotation_quaternion" if opts.rotate_mode == "QUATERNION" else "rotation_euler"
    for j, n in enumerate(names):
        path = f'pose.bones["{bpy.utils.escape_identifier(n)}"]'
        if n in moves:
            curves += [(f"{path}.location", i, n) for i in range(3)]
            values.append(locations[:, j])
        if n in turns:
            ch = acclaim_math.channels(rotations[:, j], opts.rotate_mode)
            curves += [(f"{path}.{prop}", i, n) for i in range(ch.shape[1])]
            values.append(ch)
    bag = new_action_channelbag(obj, take.name)
    keys_io.key_sampled(bag, curves, time, np.concatenate(values, axis=1))
    if opts.update_scene_duration:
        scene.frame_end = max(scene.frame_end, int(np.ceil(time[-1])))


def summary(take: Take, obj, opts: ImportOptions) -> str:
    """What the import made, for the status bar."""
    scale = opts.scale * (take.asf.unit_m if opts.metres else 1.0)
    unit = f"1 file unit = {scale:g} Blender units ({take.asf.unit_m:.4g} m per unit, :units length " \
           f"{take.asf.length_unit:g})"
    bones = f"{obj.name}: {len(obj.data.bones)} bones from {take.asf_path.name}"
    if take.amc_path is None:
        return f"{bones} (a skeleton, no motion); {unit}"
    n = take.clip.num_frames
    return f"{bones}, {n} frames of {take.amc_path.name} at {opts.fps:g} fps from frame {opts.frame_start}; {unit}"
