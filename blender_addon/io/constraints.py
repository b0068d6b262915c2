"""bpy -> ``core.constraints``: the pose bones' constraints of an armature, described as plain data."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..core import constraints
from . import keys as keys_io
from . import scene as scene_io


def _target(con) -> str:
    obj = getattr(con, "target", None)
    if obj is None:
        return ""
    sub = getattr(con, "subtarget", "") or ""
    return f"{obj.name}.{sub}" if sub else obj.name


def describe(obj) -> dict[str, list[constraints.Constraint]]:
    """bone -> its constraints (only bones that have any)."""
    out = {}
    for pb in obj.pose.bones:
        if not len(pb.constraints):
            continue
        out[pb.name] = [constraints.Constraint(type=con.type, name=con.name, enabled=not con.mute,
                                     valid=bool(getattr(con, "is_valid", True)), influence=float(con.influence),
                                     chain_count=int(getattr(con, "chain_count", 0) or 0), target=_target(con))
                        for con in pb.constraints]
    return out


_DRIVEN_PROPS = {"rotation_quaternion": constraints.ROTATION, "rotation_euler": constraints.ROTATION,
                 "rotation_axis_angle": constraints.ROTATION, "location": constraints.LOCATION}


def drivers(obj) -> dict[str, dict[str, str]]:
    """bone -> {channel: the driven property} for the object's working drivers on pose bones' rotation and
    location (a driver replaces the F-curve's value: keys under it change nothing)."""
    ad = obj.animation_data
    out: dict[str, dict[str, str]] = {}
    for fc in (ad.drivers if ad is not None else ()):
        path = fc.data_path
        if fc.mute or not fc.is_valid or not path.startswith('pose.bones["') or not fc.driver.is_valid:
            continue
        bone, _, prop = path[len('pose.bones["'):].rpartition('"].')
        channel = _DRIVEN_PROPS.get(prop)
        if channel and bone:
            out.setdefault(re.sub(r"\\(.)", r"\1", bone), {})[channel] = prop  # (escape_identifier undone)
    return out


def driven_bones(obj, written: dict) -> dict[str, constraints.Driven]:
    """The bones among ``written`` (bone -> channels written) whose written channels a constraint or a
    driver overrides."""
    described, driving = describe(obj), drivers(obj)
    if not described and not driving:
        return {}
    parents = {b.name: (b.parent.name if b.parent else None) for b in obj.data.bones}
    return constraints.driven_bones(described, parents, written, driving)


@dataclass
class IKTarget:
    """An IK constraint's target that Inbetween can move: its ``location`` curves and the constant matrix ``A``
    (world = A @ location); or, with ``why``, the reason it cannot."""
    owner: str
    label: str
    use_tail: bool = True
    curves: list = field(default_factory=list)
    matrix: np.ndarray | None = None
    why: str = ""


def _location_curves(bag, path: str) -> list:
    curves = [bag.fcurves.find(path, index=i) for i in range(3)] if bag is not None else [None] * 3
    return curves if all(keys_io.count(fc) for fc in curves) else []


def _static(bag, names) -> bool:
    """No F-curve and no active constraint on any of these pose bones."""
    prefixes = tuple(f'pose.bones["{n}"]' for n in names)
    return not any(fc.data_path.startswith(prefixes) for fc in (bag.fcurves if bag is not None else ()))


def ik_targets(obj, left, mapped) -> list[IKTarget]:
    """The targets of the active IK constraints on ``left`` bones (their chains were left unwritten)."""
    from mathutils import Matrix
    bag = scene_io.channelbag(obj)
    described = describe(obj)
    out = []
    for owner in sorted(left):
        for con in obj.pose.bones[owner].constraints:
            if con.type != "IK" or con.mute or not con.is_valid or con.influence <= 0 or con.target is None:
                continue
            t = IKTarget(owner, _target(con), bool(con.use_tail))
            out.append(t)
            if con.target == obj and con.subtarget:
                bone = obj.data.bones.get(con.subtarget)
                up = [b.name for b in bone.parent_recursive] if bone is not None else []
                if bone is None or con.subtarget in mapped or con.subtarget in left:
                    t.why = "it is a bone the model drives"
                elif any(c.active for c in described.get(con.subtarget, ())) or any(described.get(n) for n in up):
                    t.why = "it or a parent has constraints of its own"
                elif not bone.use_local_location or not _static(bag, up):
                    t.why = "a parent of it is animated" if bone.use_local_location else "its location is not local"
                elif not (curves := _location_curves(bag, f'pose.bones["{con.subtarget}"].location')):
                    t.why = "its location is not keyed"
                elif any(fc.lock for fc in curves):
                    t.why = "its location curves are locked"
                else:
                    parent = obj.pose.bones[con.subtarget].parent
                    rel = parent.matrix @ bone.parent.matrix_local.inverted() if parent is not None else Matrix()
                    t.curves, t.matrix = curves, np.array(obj.matrix_world @ rel @ bone.matrix_local)
            else:
                target = con.target
                ad = target.animation_data
                tbag = scene_io.channelbag(target) if ad is not None else None
                if target.parent is not None or len(target.constraints):
                    t.why = "it has a parent or constraints of its own"
                elif not (curves := _location_curves(tbag, "location")):
                    t.why = "its location is not keyed"
                elif any(fc.lock for fc in curves):
                    t.why = "its location curves are locked"
                elif ad.action.library is not None or ad.action.override_library is not None:
                    t.why = "its action is linked"
                else:
                    a = np.eye(4)
                    a[:3, 3] = np.array(target.delta_location)
                    t.curves, t.matrix = curves, a
    return out


def chain_to_root(obj, bone: str) -> list[str]:
    """The bone's ancestors from the armature's root bone down to it."""
    b = obj.data.bones[bone]
    return [p.name for p in reversed(b.parent_recursive)] + [bone]


def static_basis(obj, bone: str) -> tuple[np.ndarray, np.ndarray]:
    """A pose bone's rotation quaternion and location as they stand (bones the fill does not write)."""
    m = obj.pose.bones[bone].matrix_basis
    return np.array(m.to_quaternion()), np.array(m.translation)
