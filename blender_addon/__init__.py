"""Splinetween for Blender: select keys in the Dope Sheet, click Inbetween, get learned motion;
encode motion into latent control points and edit it with sliders; the same for mesh sequences.

Registration only; the work is in ``fill`` (Inbetween), ``latent`` / ``latent_edit`` (latent
editing), ``mesh_latent`` / ``mesh_io`` / ``mesh_cache`` (mesh sequences), ``scene_io`` /
``latent_io`` (bpy <-> numpy), ``rig_math`` / ``latent_math`` / ``mesh_math`` (numpy) and
``bridge`` (the backend, imported lazily).
"""
from __future__ import annotations

# bpy and the submodules are imported in register(): ``python -m blender_addon.batch`` then
# starts its workers without first paying for a bpy import in the coordinator.
_unregister_classes = None


def _classes():
    from . import (latent_panel, latent_props, mesh_panel, op_bake, op_check_backend, op_encode, op_inbetween,
                   op_latent_reset, op_mesh_encode, op_mesh_inbetween, op_redecode, op_remove, op_resample, panel,
                   preferences, properties)
    return (preferences.classes + properties.classes + latent_props.classes + op_inbetween.classes
            + op_check_backend.classes + op_encode.classes + op_bake.classes + op_remove.classes
            + op_latent_reset.classes + op_redecode.classes + op_resample.classes + op_mesh_encode.classes
            + op_mesh_inbetween.classes + panel.classes + latent_panel.classes + mesh_panel.classes)


def register() -> None:
    import bpy

    from . import keymaps, latent_props, op_train_mesh, panel, properties
    global _unregister_classes
    register_classes, _unregister_classes = bpy.utils.register_classes_factory(_classes() + op_train_mesh.classes)
    register_classes()
    properties.register_props()
    latent_props.register_props()
    panel.register_menus()
    keymaps.register_keymaps()


def unregister() -> None:
    from . import bridge, keymaps, latent_props, op_train_mesh, panel, properties
    op_train_mesh.shutdown()  # a running mesh training stops with the add-on
    keymaps.unregister_keymaps()
    panel.unregister_menus()
    latent_props.unregister_props()
    properties.unregister_props()
    if _unregister_classes is not None:
        _unregister_classes()
    bridge.shutdown()
