"""The import contracts of pyproject.toml (``[tool.importlinter]``) hold: the backend never imports
Blender or the add-on, the add-on never imports torch and reaches the backend only through the
bridge, ``blender_addon.core`` imports nothing outside ``core/`` (no bpy, no bridge), and the add-on's
packages form layers (no cycles; tests/test_import_graph.py looks module by module)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_lint_imports_keeps_every_contract():
    exe = Path(sys.executable).with_name("lint-imports")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([str(exe), "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
    import tomllib
    count = len(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"])
    assert f"Contracts: {count} kept, 0 broken." in res.stdout, res.stdout[-3000:]
