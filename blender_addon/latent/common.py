"""The polls the operators share: an animated armature, an object with latent controls."""
from __future__ import annotations

from ..io import nla
from .slider import ADAPTERS

POLL_MESSAGE_MAX = 200  # characters of a poll message that reach the tooltip and Python (Blender cuts the rest)
NLA_ONLY = ("The armature's motion is in NLA strips, not an active action: Tab on a strip in the NLA editor to "
            "edit its keys, or make its action the active one")


def poll_animated_armature(cls, context, no_action_hint: str) -> bool:
    """An active armature with an action; otherwise say why the button is greyed out."""
    obj = context.active_object
    if obj is None or obj.type != "ARMATURE":
        cls.poll_message_set("Make an armature the active object")
        return False
    if obj.animation_data is None or obj.animation_data.action is None:
        cls.poll_message_set(NLA_ONLY if nla.strips(obj) else f"The armature has no action: {no_action_hint}")
        return False
    return True


def poll_latent(cls, context) -> bool:
    """An armature or a mesh with latent controls (the same sliders and buttons serve both)."""
    obj = context.active_object
    if obj is None or obj.type not in ADAPTERS:
        cls.poll_message_set("Make an armature or a mesh the active object")
        return False
    if not obj.splinetween_latent.active:
        cls.poll_message_set(f"The {obj.type.lower()} has no latent controls: Encode a range first")
        return False
    return True

