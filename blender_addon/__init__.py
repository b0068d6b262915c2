"""Splinetween for Blender: select keys in the Dope Sheet, click Inbetween, get learned motion;
encode motion into latent control points and edit it with sliders; the same for mesh sequences.

Registration only; the work is in the feature packages (docs/architecture.md): ``inbetween``,
``latent`` (armatures and mesh sequences), ``train``, ``batch``, on top of ``io`` (bpy <-> numpy) and ``core``
(numpy), with ``ui`` for panels, menus and keymaps, and ``bridge`` (the backend, imported lazily).
"""
from __future__ import annotations

# bpy and the submodules are imported in register(): ``python -m blender_addon.batch`` then
# starts its workers without first paying for a bpy import in the coordinator.
_unregister_classes = None


def _classes():
    from . import preferences
    from .inbetween import op_inbetween
    from .io import bone_map
    from .latent import (
        op_bake,
        op_encode,
        op_mesh_encode,
        op_mesh_inbetween,
        op_redecode,
        op_remove,
        op_resample,
        op_reset,
        props,
    )
    from .ui import bone_map_panel, latent_panel, mesh_panel, op_bone_map, op_check_backend, panel, settings
    return (preferences.classes + bone_map.classes + settings.classes + props.classes + op_inbetween.classes
            + op_check_backend.classes + op_encode.classes + op_bake.classes + op_remove.classes
            + op_reset.classes + op_redecode.classes + op_resample.classes + op_mesh_encode.classes
            + op_mesh_inbetween.classes + panel.classes + bone_map_panel.classes + op_bone_map.classes + latent_panel.classes
            + mesh_panel.classes)


def register() -> None:
    import bpy

    from .latent import props
    from .train import op_train
    from .ui import keymaps, panel, settings
    global _unregister_classes
    register_classes, _unregister_classes = bpy.utils.register_classes_factory(_classes() + op_train.classes)
    register_classes()
    from .io import bone_map
    bone_map.register_props()
    settings.register_props()
    props.register_props()
    panel.register_menus()
    keymaps.register_keymaps()


def unregister() -> None:
    from . import bridge
    from .latent import props
    from .train import op_train
    from .ui import keymaps, panel, settings
    op_train.shutdown()  # a running mesh training stops with the add-on
    keymaps.unregister_keymaps()
    panel.unregister_menus()
    props.unregister_props()
    settings.unregister_props()
    from .io import bone_map
    bone_map.unregister_props()
    if _unregister_classes is not None:
        _unregister_classes()
    bridge.shutdown()
