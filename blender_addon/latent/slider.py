"""Where a slider change starts: a slider's update callback, a handler (raw points typed, keyed or
driven; undo) or an operator calls ``on_slider`` / ``sync`` here, which picks the object's wing.

Latent controls of any kind go through one table of adapters, no type switches elsewhere: an adapter
(``armature.adapter``: F-curves; ``mesh.adapter``: a PC2 cache file) provides ``sync(obj, context,
force)``, ``bake(obj)`` and ``remove(obj)``; ``RESAMPLE`` names each kind's Resample.  The operators,
the handlers and the batch call these functions.
"""
from __future__ import annotations

from ..core import latent_math
from ..core.errors import Refusal
from . import core as latent_core
from .armature import adapter as armature_adapter
from .armature import resample as armature_resample
from .mesh import adapter as mesh_adapter

ADAPTERS = {"ARMATURE": armature_adapter, "MESH": mesh_adapter}
RESAMPLE = {"ARMATURE": armature_resample.resample, "MESH": mesh_adapter.resample}


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
    adapter(obj)  # (refuses other kinds)
    return RESAMPLE[obj.type](obj, settings, frames)


def reset(obj, segment: int | None = None) -> str:
    """Sliders back to neutral (one segment, or all) and the raw points back to the encoded ones: the
    segment shows its original again, bit for bit."""
    st = latent_core.controls_of(obj)
    which = range(len(st.segments)) if segment is None else [segment]
    if segment is not None and not 0 <= segment < len(st.segments):
        raise Refusal(f"there is no segment {segment + 1}")
    points = latent_core.encoded_points(st)
    with latent_core.suspended():
        for s in which:
            seg = st.segments[s]
            seg.amplify, seg.timing, seg.principal = 1.0, 0.0, (0.0,) * len(seg.principal)
            seg.style_strength = 0.0
            for c in range(latent_math.POINTS):
                obj[latent_math.raw_name(s, c)][:] = points[s, c]
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
            with latent_core.suspended():
                st.status = message
            print(f"Splinetween: {obj.name}: {message}")
            if not isinstance(e, Refusal):
                import traceback
                traceback.print_exc()


def on_slider(obj, context=None) -> None:
    if not latent_core.busy():
        sync_quietly(obj, context)
