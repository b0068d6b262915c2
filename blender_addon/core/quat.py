"""The add-on's quaternions: ``backend.maths.quat_np`` itself, ``[..., 4]`` (w, x, y, z), numpy only.

Not a copy: the one implementation lives in the backend and this module re-exports it, so the add-on and
the backend give the same floats because they run the same code.  ``core/`` may not import ``backend``
(nor the bridge: the import contracts in pyproject.toml), so this is the floor's one sanctioned reach into
it (docs/architecture.md, *core and the backend's maths*): the numpy-only ``maths.quat_np`` and
``humanoid.axes``, found by the bridge's rule (``bridge.backend_package``: the ``backend`` bundled inside
the extension by build.py, else a source checkout's top-level one), no torch and no request.
``rig_math`` gives them the add-on's names; ``conj`` and ``from_matrix`` work in float64, as the
retargeting's (``humanoid.axes``).
"""
from __future__ import annotations

import importlib
import importlib.util


def _backend(name: str):
    """``backend.<name>``: the bundled copy inside the extension (``<add-on>.backend``) when present, else the
    source checkout's."""
    addon = __package__.rpartition(".")[0]  # (``blender_addon``, or the extension's ``bl_ext.<repo>.<id>``)
    root = f"{addon}.backend" if importlib.util.find_spec(f"{addon}.backend") is not None else "backend"
    return importlib.import_module(f"{root}.{name}")


_quat_np = _backend("maths.quat_np")
_axes = _backend("humanoid.axes")

normalize, mul, rotate, to_matrix, slerp = (_quat_np.normalize, _quat_np.mul, _quat_np.rotate, _quat_np.to_matrix,
                                            _quat_np.slerp)
left_matrix, right_matrix = _quat_np.left_matrix, _quat_np.right_matrix
conj, from_matrix = _axes.qconj, _axes.q_from_matrix
