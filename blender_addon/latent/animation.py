"""The F-curves and drivers on a range's own properties (its raw control points and sliders), which end
with the range: Bake, Remove (and Inbetween's Replace Latent Controls) delete them, and a new Encode or
Inbetween (Editable) deletes any left from before, so a slider keyed on one range never drives another.

They are looked for in every action the object plays or the range was made on: the active one, the
range's take, and the actions of its NLA strips (a pushed-down take carries its slider keys along).
"""
from __future__ import annotations

from ..core import latent_math
from ..io.compat import assigned_channelbag, slot_channelbag

SLIDER_PREFIX = "splinetween_latent."  # the sliders' paths: splinetween_latent.segments[1].amplify, ...


def is_range_path(data_path: str) -> bool:
    """An F-curve or driver path on a range's own properties (raw control points or sliders)."""
    return latent_math.is_raw_path(data_path) or data_path.startswith(SLIDER_PREFIX)


def _channelbags(obj) -> list:
    """The channelbags of the object's active action, its range's take and its NLA strips' actions
    (each once; none of an action linked from a library, whose curves cannot be removed)."""
    ad, st = obj.animation_data, obj.splinetween_latent
    found = []
    if ad is not None:
        found.append(assigned_channelbag(ad))
        for track in ad.nla_tracks:
            for strip in track.strips:
                if strip.action is not None and strip.action.library is None:
                    slot = getattr(strip, "action_slot", None)
                    found.append(slot_channelbag(strip.action, slot.identifier if slot is not None else ""))
    if st.action is not None and st.action.library is None:
        found.append(slot_channelbag(st.action, st.action_slot))
    out = []
    for bag in found:
        if bag is not None and bag.id_data.library is None and all(bag != b for b in out):
            out.append(bag)
    return out


def drop(obj) -> int:
    """Delete the F-curves (in every channelbag above) and drivers on the range's properties; -> how many."""
    gone = 0
    for bag in _channelbags(obj):
        for fc in [fc for fc in bag.fcurves if is_range_path(fc.data_path)]:
            bag.fcurves.remove(fc)
            gone += 1
    ad = obj.animation_data
    if ad is not None:
        for fc in [fc for fc in ad.drivers if is_range_path(fc.data_path)]:
            ad.drivers.remove(fc)
            gone += 1
    return gone
