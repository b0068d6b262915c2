"""``blender_addon/io/keys.py`` is the one module of the add-on that touches ``keyframe_points``
(issue 31: one vocabulary for F-curve keys): every other module reads and writes keys through its
public functions.  The finder reads the sources' syntax trees, so a mention in a docstring or a
comment is not a use, and ``getattr(fc, "keyframe_points")`` is one."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADDON = ROOT / "blender_addon"
THE_MODULE = ADDON / "io" / "keys.py"
NAME = "keyframe_points"


def uses(source: str) -> list[int]:
    """The lines of ``source`` that touch ``keyframe_points`` (an attribute, or a name given to getattr,
    setattr or hasattr)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == NAME:
            found.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and node.args[1].value == NAME):
            found.append(node.lineno)
    return sorted(found)


def test_only_io_keys_touches_keyframe_points():
    bad = [f"{path.relative_to(ROOT)}:{line}" for path in sorted(ADDON.rglob("*.py")) if path != THE_MODULE
           for line in uses(path.read_text(encoding="utf-8"))]
    assert not bad, ("modules that touch keyframe_points outside blender_addon/io/keys.py (give io/keys a public "
                     "function and call it):\n" + "\n".join(bad))
    assert uses(THE_MODULE.read_text(encoding="utf-8"))  # (the finder sees the module that does)


def test_the_finder_sees_every_form_and_no_mention():
    source = ('"""Reads keyframe_points."""\n'
              "# fc.keyframe_points in a comment\n"
              "n = len(fc.keyframe_points)\n"
              "kp = getattr(fc, 'keyframe_points')\n"
              "fc.keyframe_points.foreach_set('co', co)\n"
              "name = 'keyframe_points'\n")
    assert uses(source) == [3, 4, 5]
