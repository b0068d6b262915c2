"""Animation that lives only in NLA strips: Inbetween and Encode read and write the active action's
keys, so an armature animated through its NLA tracks alone is explained, not called "no action"."""
from __future__ import annotations


def strips(obj) -> list[str]:
    """"track: strip" for every strip with an action on the object's NLA tracks."""
    ad = getattr(obj, "animation_data", None)
    if ad is None:
        return []
    return [f"{t.name}: {s.name}" for t in ad.nla_tracks for s in t.strips if s.action is not None]


def only_in_nla(obj) -> str:
    """Why an object with no active action but NLA strips has nothing to in-between, with the fix; ""
    when it has an active action (or no NLA strips either)."""
    ad = getattr(obj, "animation_data", None)
    if ad is None or ad.action is not None:
        return ""
    found = strips(obj)
    if not found:
        return ""
    more = f", and {len(found) - 3} more" if len(found) > 3 else ""
    return (f"the animation of {obj.name} is in NLA strips ({', '.join(found[:3])}{more}), not in an active "
            "action: enter tweak mode on a strip (Tab in the NLA editor) to work on its keys, or make its action "
            "the active one (Action Editor)")
