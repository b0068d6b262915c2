"""Latent controls of any kind, through one table of adapters: no type switches elsewhere.

An adapter (``armature``: F-curves; ``mesh``: a PC2 cache file) provides ``sync(obj, context,
force)``, ``bake(obj)``, ``remove(obj)`` and ``resample(obj, settings, frames)``; the operators,
the handlers and the batch call these functions, which pick the adapter by the object's type.
"""
from __future__ import annotations

from ..core import latent_math as LM
from ..core.errors import Refusal
from . import armature, mesh
from . import core as latent

ADAPTERS = {"ARMATURE": armature, "MESH": mesh}


def adapter(obj):
    try:
        return ADAPTERS[obj.type]
    except KeyError:
        raise Refusal(f"{obj.name} is a {obj.type.lower()}; latent controls are for armatures and meshes") from None


def sync(obj, context=None, force: bool = False) -> bool:
    """Re-decode and write the segments whose keys (a mesh: its cache file) do not show their
    inputs; True if any was."""
    if not obj.splinetween_latent.active:
        return False
    return adapter(obj).sync(obj, context, force)


def bake(obj) -> str:
    return adapter(obj).bake(obj)


def remove(obj) -> str:
    return adapter(obj).remove(obj)


def resample(obj, settings, frames: int) -> str:
    """Decode the range into ``frames`` frames (2x, 4x, or any length): the range stretches or
    compresses from its start, later keys move with its end, and the sliders keep working."""
    return adapter(obj).resample(obj, settings, frames)


def reset(obj, segment: int | None = None) -> str:
    """Sliders back to neutral (one segment, or all) and the raw points back to the encoded ones: the
    segment shows its original again, bit for bit."""
    st = latent.controls_of(obj)
    which = range(len(st.segments)) if segment is None else [segment]
    if segment is not None and not 0 <= segment < len(st.segments):
        raise Refusal(f"there is no segment {segment + 1}")
    points = latent.encoded_points(st)
    with latent.suspended():
        for s in which:
            seg = st.segments[s]
            seg.amplify, seg.timing, seg.principal = 1.0, 0.0, (0.0,) * len(seg.principal)
            for c in range(LM.POINTS):
                obj[LM.raw_name(s, c)][:] = points[s, c]
    sync(obj)
    return f"Reset {'all segments' if segment is None else f'segment {segment + 1}'}"


def sync_quietly(obj, context=None) -> None:
    """``sync`` from a callback or handler: a refusal becomes the panel's status line."""
    try:
        sync(obj, context)
    except Exception as e:  # a handler must never raise into Blender: the panel says what went wrong
        message = str(e) if isinstance(e, Refusal) else f"the latent controls failed ({type(e).__name__}: {e})"
        st = obj.splinetween_latent
        if st.status != message:
            with latent.suspended():
                st.status = message
            print(f"Splinetween: {obj.name}: {message}")
            if not isinstance(e, Refusal):
                import traceback
                traceback.print_exc()


def on_slider(obj, context=None) -> None:
    if not latent.busy():
        sync_quietly(obj, context)
