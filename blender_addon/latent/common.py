"""The polls the operators share: an animated armature, an object with latent controls."""
from __future__ import annotations

from .slider import ADAPTERS


def poll_animated_armature(cls, context, no_action_hint: str) -> bool:
    """An active armature with an action; otherwise say why the button is greyed out."""
    obj = context.active_object
    if obj is None or obj.type != "ARMATURE":
        cls.poll_message_set("Make an armature the active object")
        return False
    if obj.animation_data is None or obj.animation_data.action is None:
        cls.poll_message_set(f"The armature has no action: {no_action_hint}")
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

