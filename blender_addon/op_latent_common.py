"""What the operators on an existing latent range share: the poll."""
from __future__ import annotations


def poll_latent(cls, context) -> bool:
    obj = context.active_object
    if obj is None or obj.type != "ARMATURE":
        cls.poll_message_set("Make an armature the active object")
        return False
    if not obj.splinetween_latent.active:
        cls.poll_message_set("The armature has no latent controls: Encode a range first")
        return False
    return True
