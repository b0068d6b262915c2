"""Package the Blender extension: dist/splinetween-<version>.zip.

    python build.py [--out-dir dist] [--blender-ext PATH]

Stages ``blender_addon/`` as the extension root with ``backend/`` (code and checkpoints) inside
it as the ``backend`` subpackage and ``training/`` beside it (the add-on's Train Mesh Model runs
``python -m training.train mesh`` from there), the manifest stamped with ``backend.__version__``
(the one place the version is written), the GPL licence and the data licence the shipped weights inherit; then
validates and zips it with Blender's own ``blender_ext.py`` (which runs under plain Python).
PyTorch is not bundled: the extension runs the model through a Python that has it (see
docs/blender-addon.md).
"""
from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
EXTENSION_ID = "splinetween"
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".*", "*.tmp")


def version() -> str:
    text = (ROOT / "backend" / "__init__.py").read_text(encoding="utf-8")
    m = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', text, re.M)
    if not m:
        raise SystemExit("build.py: no __version__ in backend/__init__.py")
    return m.group(1)


def find_blender_ext() -> Path:
    spec = importlib.util.find_spec("bpy")
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        hits = sorted(Path(root).glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
        if hits:
            return hits[-1]
    raise SystemExit("build.py: Blender's blender_ext.py not found (install the bpy module, or pass --blender-ext "
                     "<blender>/<version>/scripts/addons_core/bl_pkg/cli/blender_ext.py)")


def stage(dest: Path, ver: str) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(ROOT / "blender_addon", dest, ignore=IGNORE)
    shutil.copytree(ROOT / "backend", dest / "backend", ignore=IGNORE)
    # training/ next to backend/: the add-on's Train Mesh Model runs ``python -m training.train mesh``
    # with PYTHONPATH = the extension folder.
    shutil.copytree(ROOT / "training", dest / "training", ignore=IGNORE)
    manifest = (ROOT / "blender_manifest.toml").read_text(encoding="utf-8")
    manifest, n = re.subn(r'^version\s*=\s*"[^"]*"', f'version = "{ver}"', manifest, count=1, flags=re.M)
    if n != 1:
        raise SystemExit("build.py: blender_manifest.toml has no version line")
    (dest / "blender_manifest.toml").write_text(manifest, encoding="utf-8")
    shutil.copy2(ROOT / "LICENSE", dest / "LICENSE")
    shutil.copy2(ROOT / "examples" / "bvh" / "LICENSE-bandai-namco.txt", dest / "LICENSE-weights-bandai-namco.txt")
    if not list((dest / "backend" / "checkpoints").glob("inbetween.*")):
        raise SystemExit("build.py: backend/checkpoints/inbetween.json is missing; nothing to ship")
    return dest


def blender_ext(tool: Path, *args: str) -> None:
    res = subprocess.run([sys.executable, str(tool), *args], capture_output=True, text=True)
    out = (res.stdout + res.stderr).strip()
    if res.returncode != 0:
        raise SystemExit(f"build.py: blender_ext {args[0]} failed:\n{out}")
    if out:
        print(out)


def build(out_dir: Path, tool: Path | None = None, work: Path | None = None) -> Path:
    ver = version()
    tool = tool or find_blender_ext()
    src = stage((work or ROOT / "build") / EXTENSION_ID, ver)
    blender_ext(tool, "validate", str(src))
    out_dir.mkdir(parents=True, exist_ok=True)
    zpath = out_dir / f"{EXTENSION_ID}-{ver}.zip"
    if zpath.exists():
        zpath.unlink()
    blender_ext(tool, "build", "--source-dir", str(src), "--output-filepath", str(zpath))
    return zpath


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", type=Path, default=ROOT / "dist")
    ap.add_argument("--work-dir", type=Path, default=None, help="staging folder (default: build/)")
    ap.add_argument("--blender-ext", type=Path, default=None, help="path to Blender's blender_ext.py")
    args = ap.parse_args(argv)
    zpath = build(args.out_dir, args.blender_ext, args.work_dir)
    print(f"wrote {zpath} ({zpath.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
