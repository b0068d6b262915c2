"""The take a latent range belongs to: the action (and slot) Encode or Inbetween (Editable) read, and
the one refusal for an action that another object plays too (Encode, Inbetween (Editable), sliders)."""
from __future__ import annotations

import bpy

from ...core.errors import Refusal
from ...io.compat import slot_channelbag


def _slot(ad) -> str:
    slot = getattr(ad, "action_slot", None)
    return slot.identifier if slot is not None else ""


def remember(obj) -> None:
    """Store the take the range is made on and its bones' rotation modes (called while installing the
    controls, after the bones are stored)."""
    st, ad = obj.splinetween_latent, obj.animation_data
    st.action = ad.action if ad is not None else None
    st.action_slot = _slot(ad) if ad is not None else ""
    st["rotation_modes"] = [obj.pose.bones[b].rotation_mode for b in st["bones"]]


def modes_changed(obj, channel_count: int | None = None) -> str | None:
    """Why the sliders are off because a bone's rotation mode changed since the range was made (its
    original is in the old mode's channels, and keys in the new mode's cannot be compared with them), or
    None.  A range made before the modes were remembered: refused when the ``channel_count`` the modes
    give now is not the original's (Euler to quaternion, say)."""
    st = obj.splinetween_latent
    if "rotation_modes" not in st:
        if channel_count is None or len(st["base_values"]) == st.frames * channel_count:
            return None
        return (f"a bone's rotation mode on {obj.name} changed since the latent controls were made (a range from "
                "before Splinetween remembered the modes): sliders are off and the keys are left as they are. Set "
                "it back to go on, or Bake / Remove the controls, then Encode again")
    pose = obj.pose.bones
    moved = [(b, m) for b, m in zip(st["bones"], st["rotation_modes"], strict=True) if b in pose and pose[b].rotation_mode != m]
    if not moved:
        return None
    bone, mode = moved[0]
    more = f" (and {len(moved) - 1} more)" if len(moved) > 1 else ""
    return (f"the rotation mode of {bone}{more} on {obj.name} is {pose[bone].rotation_mode} now, but its latent controls "
            f"were made with {mode}: sliders are off and the keys are left as they are. Set {bone}'s rotation mode "
            f"back to {mode} to go on, or Bake / Remove the controls, then Encode again")


def sharing(obj) -> list[str]:
    """Other objects that play the same action slot as ``obj`` (their keys are its keys)."""
    ad = obj.animation_data
    if ad is None or ad.action is None:
        return []
    act = ad.action
    own = 1 + (obj.splinetween_latent.action == act) + act.use_fake_user  # (users that are not other objects)
    if act.users <= own:  # (a slider change asks every time: no look at every object unless someone else uses it)
        return []
    slot = _slot(ad)
    return sorted(o.name for o in bpy.data.objects if o is not obj and o.animation_data is not None
                  and o.animation_data.action == ad.action and _slot(o.animation_data) == slot)


def shared_refusal(obj, what: str) -> str | None:
    """Why ``what`` (Encode, Inbetween (Editable), the sliders) cannot go on: the action is played by
    other objects too, so the layer would move them as well; None when it is the object's own."""
    others = sharing(obj)
    if not others:
        return None
    return (f"{obj.name} shares its action with {', '.join(others[:3])}{' and others' if len(others) > 3 else ''} "
            f"('{obj.animation_data.action.name}'): {what} would change their motion too. Give "
            f"{obj.name} its own action (the number next to the action's name makes a copy)")


def changed(obj) -> str | None:
    """Why the sliders are off because another take is assigned since Encode, or None."""
    st, ad = obj.splinetween_latent, obj.animation_data
    if st.action is None:  # (a range made before the take was remembered)
        return None
    now = ad.action if ad is not None else None
    if now == st.action and _slot(ad) == st.action_slot:
        return None
    made = "Inbetween (Editable)" if st.task == "INBETWEEN" else "Encode"
    new = f"'{now.name}'" if now is not None else "no action"
    return (f"{obj.name} now plays {new}, but its latent controls are on '{st.action.name}' (from {made}): "
            f"sliders are off and '{st.action.name}' is left as it is. Assign '{st.action.name}' again to go on, "
            f"or Bake / Remove the controls (they act on '{st.action.name}'), then Encode {new}")


def check(obj) -> None:
    """The sliders' checks before anything is written: the encoded take, and no other object on it."""
    why = changed(obj) or shared_refusal(obj, "the sliders")
    if why:
        raise Refusal(why)


def channelbag(obj):
    """The channelbag of the take the range was made on (None when its action is gone)."""
    st = obj.splinetween_latent
    if st.action is None:
        from ...io import scene as scene_io
        return scene_io.channelbag(obj)
    return slot_channelbag(st.action, st.action_slot)
