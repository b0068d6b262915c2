"""The bone map on the armature (``Armature.splinetween_bone_map``) and the rig as the math needs it.

Inbetween, Encode and the batch call :func:`resolve`: the map given to them (``--bone-map``), else the
one stored on the armature (the Bone Map panel), else auto-detection; then the check that refuses a
map with too little.  The stored map is plain data (joint and bone names), JSON-serialisable.
"""
from __future__ import annotations

import bpy
import numpy as np

from .. import bridge
from ..core.errors import Refusal
from ..humanoid import bone_map, hinges, retarget
from . import keys as keys_io
from . import scene as scene_io

_RIG = bridge.numpy_module("humanoid.bvh_rig")


class SplinetweenBoneMapEntry(bpy.types.PropertyGroup):
    joint: bpy.props.StringProperty(name="Joint", description="The model's joint")
    bone: bpy.props.StringProperty(name="Bone", description="The armature's bone that carries this joint "
                                   "(empty: the model fills it neutrally and nothing is written)")
    why: bpy.props.StringProperty(name="Found by", description="How the bone was found: preset (its name in a "
                                  "known tool's naming), name and position, structure (its place in the "
                                  "hierarchy), side by geometry (no side in the names), given (set by hand)")


class SplinetweenBoneMap(bpy.types.PropertyGroup):
    entries: bpy.props.CollectionProperty(type=SplinetweenBoneMapEntry)
    preset: bpy.props.StringProperty(name="Detected", default="", description="The preset the map was detected as")


def register_props() -> None:
    bpy.types.Armature.splinetween_bone_map = bpy.props.PointerProperty(type=SplinetweenBoneMap)


def unregister_props() -> None:
    del bpy.types.Armature.splinetween_bone_map


classes = (SplinetweenBoneMapEntry, SplinetweenBoneMap)


# -- the rig ------------------------------------------------------------------------------------
def _rest(bones, prop: str, width: int) -> np.ndarray:
    """One rest-pose property of every bone, ``[n, width]`` (one foreach_get: the same float32 values)."""
    buf = np.empty(len(bones) * width, dtype=np.float32)
    bones.foreach_get(prop, buf)
    return buf.reshape(len(bones), width)


def geometry(obj) -> dict:
    """``{bone: (parent, head, tail)}`` in armature space (rest), for detection."""
    data = obj.data.bones
    heads, tails = _rest(data, "head_local", 3).tolist(), _rest(data, "tail_local", 3).tolist()
    return {b.name: (p.name if (p := b.parent) else None, tuple(h), tuple(t)) for b, h, t in zip(data, heads, tails, strict=True)}


def posed(obj) -> dict:
    """``{bone: head [1, 3]}`` at the current frame (armature space): where detection reads left and right
    when neither the names nor the rest pose tell them."""
    bones = obj.pose.bones
    buf = np.empty(len(bones) * 3, dtype=np.float32)
    bones.foreach_get("head", buf)
    return {b.name: h[None].astype(np.float64) for b, h in zip(bones, buf.reshape(-1, 3), strict=True)}


def rest_of(obj) -> tuple:
    """(names, parents, rest matrices ``[n, 4, 4]`` float64 of the float32 ``matrix_local``, use_local_location
    ``[n]``) of every bone: two ``foreach_get`` reads and one pass for the parents."""
    data = obj.data.bones
    mats = _rest(data, "matrix_local", 16).reshape(-1, 4, 4).transpose(0, 2, 1)  # (stored column by column)
    local = np.empty(len(data), dtype=bool)
    data.foreach_get("use_local_location", local)
    return tuple(data.keys()), tuple(p.name if (p := b.parent) else None for b in data), \
        mats.astype(np.float64), local


def rig_bones(rest: tuple, mapped=None) -> dict:
    """``{bone: RigBone}``: what the conversion reads of the rest pose (``rest_of``) of every bone, or
    (``mapped``: bone names) of those bones and every bone above them (a Rigify rig has 700 bones; a map
    needs ~40)."""
    names, parents, mats, local = rest
    at = {n: i for i, n in enumerate(names)}
    if mapped is None:
        chosen = list(range(len(names)))
    else:
        chosen, seen = [], set()
        for name in mapped:
            i = at[name]
            while i is not None and i not in seen:
                seen.add(i)
                chosen.append(i)
                i = at[parents[i]] if parents[i] is not None else None
    return {names[i]: retarget.RigBone(parents[i], mats[i], bool(local[i])) for i in chosen}


# -- stored map -----------------------------------------------------------------------------------
def stored(obj) -> bone_map.BoneMap | None:
    """The map saved on the armature, or None when it has none."""
    st = getattr(obj.data, "splinetween_bone_map", None)
    if st is None or not len(st.entries):
        return None
    if len(st.preset) > bone_map.MAX_NAME or len(st.preset.encode("utf-8")) > bone_map.MAX_NAME:
        # (a script can set any string, kept in the .blend: refused here, whoever set it; the length is
        # checked before the bytes are made, so a huge one costs nothing)
        raise Refusal(f"the bone map of {obj.name} has a preset name of {len(st.preset):,} characters (at most "
                      f"{bone_map.MAX_NAME} bytes: a script set it?); set its preset to a short name, or Clear "
                      "Bone Map (Bone Map panel) and detect again; nothing was changed")
    return bone_map.BoneMap({e.joint: (e.bone or None) for e in st.entries}, st.preset or "Custom",
                      reasons={e.joint: e.why or "given" for e in st.entries if e.bone})


def store(obj, bm: bone_map.BoneMap, joint_names) -> None:
    """Save ``bm`` on the armature, one entry per model joint (in the model's order)."""
    st = obj.data.splinetween_bone_map
    st.entries.clear()
    for j in joint_names:
        e = st.entries.add()
        e.joint, e.bone = j, bm.bones.get(j) or ""
        e.why = bm.reasons.get(j, "given") if e.bone else ""
    st.preset = shorten(bm.preset)


def shorten(name: str) -> str:
    """A detected preset's name within ``bone_map.MAX_NAME`` bytes (many namespaces make it long), as
    ``stored`` reads it back: cut on a character, with an ellipsis."""
    if len(name.encode("utf-8")) <= bone_map.MAX_NAME:
        return name
    while len((name + "…").encode("utf-8")) > bone_map.MAX_NAME:
        name = name[:-1]
    return name + "…"


_found: dict = {}  # (joints, the rig's bones) -> detected BoneMap: detection runs once per rig


def _detected(obj, joint_names, joint_parents, geo) -> bone_map.BoneMap:
    key = (tuple(joint_names), tuple(joint_parents), tuple((n, g[0], g[1], g[2]) for n, g in geo.items()))
    if key not in _found:
        if len(_found) > 32:
            _found.clear()
        _found[key] = bone_map.detect(joint_names, joint_parents, geo, posed(obj))
    bm = _found[key]
    return bone_map.BoneMap(dict(bm.bones), bm.preset, bm.score, dict(bm.reasons))


_checked: dict = {}  # (joints, map, the rig's hierarchy) -> the bone of each joint: a map that passed is checked once


def _check(joint_names, joint_parents, bone_parents: dict, bones: dict) -> list:
    key = (tuple(joint_names), tuple(joint_parents), tuple(bones.items()), tuple(bone_parents.items()))
    if key not in _checked:
        found = bone_map.check(joint_names, joint_parents, bone_parents, bones)  # (a refusal is raised, not kept)
        if len(_checked) > 32:
            _checked.clear()
        _checked[key] = found
    return list(_checked[key])


def resolve(obj, joint_names, joint_parents, given: dict | None = None) -> tuple[bone_map.BoneMap, list]:
    """(the map, the bone of each joint or None): ``given`` (joint -> bone; joints it leaves out keep
    their detected bone), else the armature's stored map, else detection.  A map that cannot drive the
    model is a Refusal naming what is missing and how to map it."""
    bm = None if given else stored(obj)
    if bm is None:
        geo = geometry(obj)
        bone_parents = {n: g[0] for n, g in geo.items()}
        bm = _detected(obj, joint_names, joint_parents, geo)
        if given:
            bm = bone_map.BoneMap({**bm.bones, **given}, "Custom", bm.score,
                            reasons={**bm.reasons, **{j: "given" for j, b in given.items() if b}})
    else:
        bone_parents = scene_io.bone_parents(obj)
    try:
        bones = _check(joint_names, joint_parents, bone_parents, bm.bones)
    except bone_map.BoneMapError as e:
        how = "the armature's bone map" if not given and stored(obj) is not None else \
            ("the given bone map" if given else f"detected as {bm.preset}")
        raise Refusal(f"{obj.name} cannot drive the model ({how}): {e}") from None
    return bm, bones


def unmapped_note(joint_names, bones) -> str:
    """The report's note on joints filled neutrally (empty when every joint has a bone)."""
    left = [j for j, b in zip(joint_names, bones, strict=True) if not b]
    return f"; not mapped (filled neutrally, not written): {', '.join(left)}" if left else ""


_built: dict = {}  # (model, map, the rig's rest, action) -> (Retarget, its rest's up axis, {turn: upright Retarget})


def conversion(obj, info, joint_bones) -> retarget.Retarget:
    """The rig <-> model conversion for a checked map, or a Refusal when the rest pose cannot be trusted.
    Built once per rig, map and action: kept until the model, the map, the action or any bone's rest
    (matrix, parent, name, location frame) changes; knees and elbows are turned onto the model's axes as
    the action's keyed poses show them (``Retarget.hinged``, as the batch does from a file's frames); only
    a rig whose rest is not Y up reads its pose (``up_turn``) each time."""
    rest = rest_of(obj)
    bag = scene_io.channelbag(obj)
    key = (str(info.path), tuple(info.names), np.asarray(info.offsets).tobytes(), tuple(joint_bones), rest[0],
           rest[1], rest[2].tobytes(), rest[3].tobytes(), obj.animation_data.action.name if bag is not None else "")
    got = _built.get(key)
    ends = [b for j, b in zip(info.names, joint_bones, strict=True) if b and j in ("Head", "Foot_L", "Foot_R")]  # (all up_turn reads)
    if got is None:
        rig = rig_bones(rest, [b for b in joint_bones if b])
        rt = retarget.build(info.names, info.parents, info.offsets, joint_bones, rig, info.position_joints)
        rt = _hinged(obj, bag, rt, info.names)
        if len(_built) > 32:
            _built.clear()
        got = _built[key] = (rt, _RIG.rest_axis(info.names, joint_bones, {b: rig[b].matrix[:3, 3] for b in ends}), {})
    rt, axis, turned = got
    if axis is None:
        return rt
    turn = _RIG.motion_turn(info.names, joint_bones, axis,
                            {b: np.array(obj.pose.bones[b].head, dtype=np.float64)[None] for b in ends})
    if turn is None:
        return rt
    if turn.tobytes() not in turned:  # a capture lying in the scene (a Z-up file imported as Y up): stood up, as the batch
        turned[turn.tobytes()] = rt.upright(turn)
    return turned[turn.tobytes()]


def _hinged(obj, bag, rt: retarget.Retarget, names) -> retarget.Retarget:
    """``rt`` with the rig's knees and elbows turned onto the model's axes, read from the action's keyed
    poses (``hinges.pick`` of its keyed frames); ``rt`` without an action or a rest pose
    like the data set's."""
    if bag is None or rt.rest_diff is None:
        return rt
    frames = np.unique(keys_io.read_co(list(bag.fcurves))[1][0::2])
    frames = frames[hinges.pick(len(frames))]
    if len(frames) < hinges.MIN_FRAMES:
        return rt
    basis, loc = scene_io.read_pose(obj, bag, rt.bones, frames)
    return rt.hinged(names, basis, loc)


def inner_pose(obj, bag, rt: retarget.Retarget, frames) -> tuple:
    """``(basis [F, B, 4], loc [F, B, 3])`` with the channels of the bones in between read at ``frames``
    (the identity elsewhere: not used), or ``(None, None)`` when no chain has bones in between."""
    inner = rt.inner_bones()
    if not inner:
        return None, None
    n = len(frames)
    basis, loc = np.zeros((n, len(rt.bones), 4)), np.zeros((n, len(rt.bones), 3))
    basis[..., 0] = 1.0
    basis[:, inner], loc[:, inner] = scene_io.read_pose(obj, bag, [rt.bones[b] for b in inner], frames)
    return basis, loc
