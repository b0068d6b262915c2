"""The backend and training code must never pull in Blender: they run headless and on servers."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MODULES = ["backend", "backend.formats.bvh", "backend.models.spline_transformer", "backend.maths.quat_torch"]
if (ROOT / "training" / "__init__.py").exists():
    MODULES.append("training")


def _run(code):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("module", MODULES)
def test_import_leaves_bpy_out(module):
    code = (f"import sys, importlib; importlib.import_module({module!r}); "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('bpy', 'bpy_extras', 'mathutils')); "
            "print('BLENDER', bad)")
    res = _run(code)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "BLENDER []" in res.stdout, f"importing {module} loaded Blender modules: {res.stdout}"


def test_all_together():
    res = _run("import sys; " + "; ".join(f"import {m}" for m in MODULES)
               + "; assert 'bpy' not in sys.modules, 'bpy imported'; print('ok')")
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-3000:]
