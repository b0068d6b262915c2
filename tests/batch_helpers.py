"""Shared by tests/test_batch*.py: .blend files with blocked keys made from the example clips, and
running ``python -m blender_addon.batch`` as a user would."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from addon_helpers import ROOT, bpy, import_bvh, thin_keys

EXAMPLES = sorted((ROOT / "examples" / "bvh").glob("*.bvh"))
EVERY = 15
SHORT = {"dataset-2_run_normal_002": "run", "dataset-2_walk-turn-left_normal_001": "turn",
         "dataset-2_walk_normal_001": "walk", "dataset-2_wave-both-hands_normal_003": "wave"}


def blocked_keys(n: int, every: int = EVERY) -> list[int]:
    """Scene frames 1, 1+every, ... and the last (the backend's every_k on frames 1..n)."""
    from backend.motion.keyframes_np import every_k
    return [1 + k for k in every_k(n, every)]


def build_blends(folder: Path, clips=None, dense: bool = False, suffix: str = "") -> dict:
    """One .blend per example clip: the BVH imported (30 fps scene), only keys every 15 frames kept
    and all of them selected ("blocked keys"); ``dense``: every imported key kept, none selected.
    -> {name: {"path", "frames", "keys", "object", "clip"}}; the scene is reset to empty afterwards."""
    b = bpy()
    folder.mkdir(parents=True, exist_ok=True)
    made = {}
    for clip in clips or EXAMPLES:
        b.ops.wm.read_homefile(use_empty=True)
        obj = import_bvh(clip)
        n = int(round(obj.animation_data.action.frame_range[1]))
        keys = blocked_keys(n)
        if dense:
            thin_keys(obj, range(1, n + 1), select=False)
        else:
            thin_keys(obj, keys)
        scene = b.context.scene
        scene.frame_start, scene.frame_end, scene.render.fps, scene.render.fps_base = 1, n, 30, 1.0
        name = SHORT.get(clip.stem, clip.stem) + suffix
        path = folder / f"{name}.blend"
        b.ops.wm.save_as_mainfile(filepath=str(path), check_existing=False)
        made[name] = {"path": path, "frames": n, "keys": keys, "object": obj.name, "clip": clip}
    b.ops.wm.read_homefile(use_empty=True)
    return made


def build_no_armature(path: Path) -> Path:
    b = bpy()
    b.ops.wm.read_homefile(use_empty=True)
    mesh = b.data.meshes.new("Plane")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    b.context.collection.objects.link(b.data.objects.new("Plane", mesh))
    b.ops.wm.save_as_mainfile(filepath=str(path), check_existing=False)
    b.ops.wm.read_homefile(use_empty=True)
    return path


def build_corrupt(path: Path, like: Path) -> Path:
    """A .blend header followed by garbage: what a truncated copy or a broken disk gives."""
    data = like.read_bytes()
    path.write_bytes(data[:64] + bytes((i * 7919) % 251 for i in range(4000)))
    return path


def run_batch(*args, env=None, timeout=300, **kw) -> subprocess.CompletedProcess:
    e = dict(os.environ, OMP_NUM_THREADS="1")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "blender_addon.batch", *map(str, args)], cwd=ROOT, env=e,
                          capture_output=True, text=True, timeout=timeout, **kw)


def load_report(out_dir: Path, command: str = "inbetween") -> dict:
    reports = sorted(out_dir.glob(f"splinetween-{command}-*.json"), key=lambda p: p.stat().st_mtime_ns)
    assert reports, f"no report in {out_dir}"
    return json.loads(reports[-1].read_text())


def by_name(report: dict) -> dict:
    return {Path(f["input"]).name: f for f in report["files"]}


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def build_trap(path: Path, blocked: Path, marker_dir: Path) -> Path:
    """``blocked`` (a .blend from build_blends) plus code that would write marker files if it ran:
    a text block registered to run on load, and a Python driver on a custom property."""
    b = bpy()
    b.ops.wm.open_mainfile(filepath=str(blocked), load_ui=False, use_scripts=False)
    obj = next(o for o in b.data.objects if o.type == "ARMATURE")
    text = b.data.texts.new("autorun.py")
    text.write(f"open({str(marker_dir / 'text-block-ran')!r}, 'w').write('ran')\n")
    text.use_module = True
    obj["trap"] = 0.0
    fc = obj.driver_add('["trap"]')
    fc.driver.type = "SCRIPTED"
    fc.driver.expression = f"__import__('pathlib').Path({str(marker_dir / 'driver-ran')!r}).write_text('ran') and 0"
    b.ops.wm.save_as_mainfile(filepath=str(path), check_existing=False)
    b.ops.wm.read_homefile(use_empty=True)
    return path


_SHARED: dict = {}


def shared_blends() -> dict:
    """The blocked-key .blend files of every example clip, made once per test session."""
    if "blocked" not in _SHARED:
        import atexit
        import shutil
        import tempfile
        folder = Path(tempfile.mkdtemp(prefix="splinetween-batch-fixtures-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _SHARED["blocked"] = build_blends(folder)
        _SHARED["folder"] = folder
    return _SHARED["blocked"]


def copy_inputs(blends: dict, names, folder: Path) -> list[Path]:
    import shutil
    folder.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy2(blends[n]["path"], folder / f"{n}.blend")) for n in names]


def temp_leftovers(folder: Path) -> list[Path]:
    return [p for p in Path(folder).rglob("*") if ".splinetween-tmp-" in p.name or p.name.endswith("@")]
