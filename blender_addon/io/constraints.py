"""bpy -> ``core.constraints``: the pose bones' constraints of an armature, described as plain data."""
from __future__ import annotations

from ..core import constraints as C


def _target(con) -> str:
    obj = getattr(con, "target", None)
    if obj is None:
        return ""
    sub = getattr(con, "subtarget", "") or ""
    return f"{obj.name}.{sub}" if sub else obj.name


def describe(obj) -> dict[str, list[C.Constraint]]:
    """bone -> its constraints (only bones that have any)."""
    out = {}
    for pb in obj.pose.bones:
        if not len(pb.constraints):
            continue
        out[pb.name] = [C.Constraint(type=con.type, name=con.name, enabled=not con.mute,
                                     valid=bool(getattr(con, "is_valid", True)), influence=float(con.influence),
                                     chain_count=int(getattr(con, "chain_count", 0) or 0), target=_target(con))
                        for con in pb.constraints]
    return out


def driven_bones(obj, written: dict) -> dict[str, C.Driven]:
    """The bones among ``written`` (bone -> channels written) whose written channels a constraint overrides."""
    described = describe(obj)
    if not described:
        return {}
    parents = {b.name: (b.parent.name if b.parent else None) for b in obj.data.bones}
    return C.driven_bones(described, parents, written)
