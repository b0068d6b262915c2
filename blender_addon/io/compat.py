"""The few bpy calls that differ between Blender 4.5 LTS and 5.x, chosen by feature detection.

Both have slotted actions (since 4.4); 5.0 added helpers that 4.5 lacks and removed the legacy
``Action.fcurves`` and ``Bone.select``.  Everything else in the add-on is the same API in both.
"""
from __future__ import annotations

from bpy_extras import anim_utils

_ASSIGNED = getattr(anim_utils, "animdata_get_channelbag_for_assigned_slot", None)  # 5.0+


def assigned_channelbag(anim_data):
    """The channelbag of ``anim_data``'s assigned action slot, or None (no data, action or slot)."""
    if _ASSIGNED is not None:
        return _ASSIGNED(anim_data)
    if not anim_data or not anim_data.action or not anim_data.action_slot:  # 4.5: the same steps
        return None
    return anim_utils.action_get_channelbag_for_slot(anim_data.action, anim_data.action_slot)


def _new_takes_group() -> bool:  # 5.0+: ActionChannelbagFCurves.new(data_path, index, group_name)
    import bpy
    return "group_name" in bpy.types.ActionChannelbagFCurves.bl_rna.functions["new"].parameters


def new_fcurve(bag, data_path: str, index: int = 0, group_name: str = ""):
    """A new F-curve in ``bag`` on ``data_path[index]``, in the channel group ``group_name`` (made if
    missing; none when empty): ``bag.fcurves.new(..., group_name=...)`` where it exists, else the same
    in two steps (4.5)."""
    if group_name and _new_takes_group():
        return bag.fcurves.new(data_path, index=index, group_name=group_name)
    fc = bag.fcurves.new(data_path, index=index)
    if group_name:
        fc.group = bag.groups.get(group_name) or bag.groups.new(group_name)
    return fc


def slot_channelbag(action, slot_identifier: str):
    """The channelbag of ``action``'s slot named ``slot_identifier`` (its first slot when empty), or None."""
    slot = next((s for s in action.slots if s.identifier == slot_identifier), None) if slot_identifier else \
        (action.slots[0] if len(action.slots) else None)
    if slot is None:
        return None
    return anim_utils.action_get_channelbag_for_slot(action, slot)


def new_action_channelbag(obj, name: str):
    """A new action named ``name`` assigned to ``obj`` (animation data made when missing), with a slot for it,
    and that slot's channelbag (the same steps in 4.5 and 5.x)."""
    import bpy
    ad = obj.animation_data or obj.animation_data_create()
    action = bpy.data.actions.new(name)
    slot = action.slots.new(id_type="OBJECT", name=obj.name)
    ad.action = action
    ad.action_slot = slot
    ensure = getattr(anim_utils, "action_ensure_channelbag_for_slot", None)  # 5.0+
    if ensure is not None:
        return ensure(action, slot)
    return action.layers.new("Layer").strips.new(type="KEYFRAME").channelbag(slot, ensure=True)  # 4.5: its steps
