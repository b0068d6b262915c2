"""Add-on preferences: which backend runs the model, and where."""
from __future__ import annotations

import bpy

from . import bridge

_MODES = [
    ("BUILTIN", "Built-in", "Run the models inside Blender on ONNX Runtime, which the add-on brings: nothing to "
                            "set up (the CPU; a checkpoint needs its exported model, python -m backend export)"),
    ("SUBPROCESS", "Backend Process", "Run the models in a separate Python that has PyTorch, kept warm between "
                                      "calls: for a GPU, or checkpoints without an exported model"),
    ("AUTO", "Automatic", "PyTorch in Blender's Python where it imports, else Built-in, unless a checkpoint has "
                          "no exported model (or a GPU is asked for): then the backend process"),
    ("IN_PROCESS", "PyTorch in Blender", "Run the models with PyTorch inside Blender's Python (needs PyTorch "
                                         "installed there; for developers)"),
]
_DEVICES = [
    ("auto", "Automatic", "CUDA, then Apple MPS, then the CPU"),
    ("cpu", "CPU", "Always the CPU"),
    ("cuda", "CUDA", "An NVIDIA GPU (fails when the backend's PyTorch sees none)"),
]


class SplinetweenPreferences(bpy.types.AddonPreferences):
    bl_idname = __package__

    backend_mode: bpy.props.EnumProperty(name="Backend", items=_MODES, default="BUILTIN")
    interpreter: bpy.props.StringProperty(
        name="Python Interpreter", subtype="FILE_PATH",
        description="A Python with torch, numpy and safetensors, for the backend process "
                    "(empty: $SPLINETWEEN_PYTHON, a source checkout's .venv, or Blender's own Python)")
    model: bpy.props.EnumProperty(
        name="Model", default="STUDIO",
        items=[(key, label, tip) for key, (_, label, tip) in bridge.SHIPPED_INBETWEENERS.items()],
        description="Which shipped in-betweener Inbetween uses (when no Checkpoint is named); the terms of its "
                    "training data are the terms of its output")
    checkpoint: bpy.props.StringProperty(
        name="Checkpoint", subtype="FILE_PATH",
        description="An in-betweening checkpoint (.json next to its .safetensors); empty: the shipped Model")
    autoencoder: bpy.props.StringProperty(
        name="Autoencoder", subtype="FILE_PATH",
        description="A motion autoencoder checkpoint for latent editing (Encode and its sliders); "
                    "empty: the shipped one")
    mesh_autoencoder: bpy.props.StringProperty(
        name="Mesh Autoencoder", subtype="FILE_PATH",
        description="A mesh-sequence autoencoder checkpoint (Encode Mesh and its sliders), trained on the mesh "
                    "you encode (same vertex count and order); empty: the shipped cloth one")
    mesh_inbetween: bpy.props.StringProperty(
        name="Mesh Inbetween", subtype="FILE_PATH",
        description="A mesh-sequence in-betweening checkpoint (Inbetween Mesh), trained on the mesh you fill; "
                    "empty: the shipped cloth one")
    mesh_cache_folder: bpy.props.StringProperty(
        name="Mesh Cache Folder", subtype="DIR_PATH",
        description="Where decoded mesh sequences are written as PC2 files; empty: a 'splinetween' folder next "
                    "to the .blend (the .blend must be saved first)")
    device: bpy.props.EnumProperty(name="Device", items=_DEVICES, default="auto")
    timeout: bpy.props.FloatProperty(name="Timeout", default=120.0, min=1.0, max=3600.0, unit="TIME_ABSOLUTE",
                                     description="Seconds to wait for the backend's answer to a request before "
                                                 "stopping it")
    startup: bpy.props.FloatProperty(
        name="Start-up Allowance", default=60.0, min=1.0, max=bridge.MAX_STARTUP_SECONDS, unit="TIME_ABSOLUTE",
        description="Seconds the backend process may take to start (Python and PyTorch's imports) before it is "
                    "stopped; the status bar shows the wait and Esc cancels it")

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "backend_mode")
        row = layout.row()
        row.active = self.backend_mode in ("SUBPROCESS", "AUTO")
        row.prop(self, "interpreter")
        row = layout.row()
        row.active = not self.checkpoint
        row.prop(self, "model")
        layout.prop(self, "checkpoint")
        layout.prop(self, "autoencoder")
        layout.prop(self, "mesh_autoencoder")
        layout.prop(self, "mesh_inbetween")
        layout.prop(self, "mesh_cache_folder")
        layout.prop(self, "device")
        layout.prop(self, "timeout")
        row = layout.row()
        row.active = self.backend_mode in ("SUBPROCESS", "AUTO")
        row.prop(self, "startup")
        layout.operator("anim.splinetween_check_backend", icon="PLUGIN")


def settings(context: bpy.types.Context | None = None) -> bridge.BackendSettings:
    """The preferences as backend settings; defaults when the add-on was registered by hand."""
    prefs = addon_prefs(context)
    if prefs is None:
        return bridge.BackendSettings()
    chosen = bpy.path.abspath(prefs.checkpoint) if prefs.checkpoint else (
        "" if prefs.model == "STUDIO" else str(bridge.default_checkpoint(prefs.model)))
    return bridge.BackendSettings(prefs.backend_mode, chosen,
                                  prefs.device, bpy.path.abspath(prefs.interpreter) if prefs.interpreter else "",
                                  prefs.timeout, prefs.startup)


def model_terms(context: bpy.types.Context | None = None) -> str:
    """One line for tooltips: which in-betweener fills and what its output may be used for."""
    prefs = addon_prefs(context)
    if prefs is not None and prefs.checkpoint:
        return f"Model: {bpy.path.basename(prefs.checkpoint)} (the Checkpoint preference; its own card gives its terms)"
    _, label, tip = bridge.SHIPPED_INBETWEENERS[prefs.model if prefs is not None else "STUDIO"]
    return f"Model: {label}. {tip} (Preferences > Add-ons > Splinetween > Model)"


def autoencoder_path(context: bpy.types.Context | None = None):
    """The motion autoencoder latent editing encodes with: the preference, else the shipped one."""
    from pathlib import Path
    prefs = addon_prefs(context)
    chosen = prefs.autoencoder if prefs else ""
    path = Path(bpy.path.abspath(chosen)).expanduser() if chosen else bridge.default_autoencoder()
    return path if path.suffix == ".json" else path.with_suffix(".json")


def addon_prefs(context=None):
    """The add-on's preferences, or None when it was registered by hand."""
    addon = (context or bpy.context).preferences.addons.get(__package__)
    return addon.preferences if addon else None


def mesh_checkpoint_path(task: str, context: bpy.types.Context | None = None):
    """The mesh checkpoint for ``task`` ("autoencoder" or "inbetween"): the preference, else the shipped one."""
    from pathlib import Path
    prefs = addon_prefs(context)
    chosen = (prefs.mesh_inbetween if task == "inbetween" else prefs.mesh_autoencoder) if prefs else ""
    path = Path(bpy.path.abspath(chosen)).expanduser() if chosen else bridge.default_mesh_checkpoint(task)
    return path if path.suffix == ".json" else path.with_suffix(".json")


def mesh_cache_folder(context: bpy.types.Context | None = None) -> str:
    """The Mesh Cache Folder preference as an absolute path ("" when unset: next to the .blend)."""
    prefs = addon_prefs(context)
    chosen = prefs.mesh_cache_folder if prefs else ""
    return bpy.path.abspath(chosen) if chosen else ""


classes = (SplinetweenPreferences,)
