"""Package the Blender extension: one zip per platform, dist/splinetween-<version>-<platform>.zip.

    python build.py [--platform linux-x64 ...] [--out-dir dist] [--blender-ext PATH]

Stages ``blender_addon/`` as the extension root with ``backend/`` (code, checkpoints and their exported
ONNX graphs) inside it as the ``backend`` subpackage and ``training/`` beside it (the add-on's Train
Mesh Model runs ``python -m training.train mesh`` from there), the manifest stamped with
``backend.__version__`` (the one place the version is written), the GPL licence and the data licence
the shipped weights inherit.  ONNX Runtime and what it imports are fetched as wheels for each platform
(``pip download --only-binary=:all: --platform ...`` into the git-ignored ``wheels/``, kept between
builds) and listed in the staged manifest's ``wheels``, which Blender installs with the extension;
Blender's own ``blender_ext.py`` (it runs under plain Python) validates the folder and builds one zip
per platform (``--split-platforms``: each zip holds its platform's wheels, its manifest that
platform).  The weights ship once: the graphs point into the checkpoints' safetensors.  PyTorch is not
bundled: the built-in backend runs the models on ONNX Runtime (docs/blender-addon.md).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
EXTENSION_ID = "splinetween"
WHEELS = ROOT / "wheels"  # git-ignored: wheels are fetched, never committed
# Blender's platform -> (pip's platform tag, the ONNX Runtime release with a Python 3.11 wheel for it)
PLATFORMS = {
    "linux-x64": ("manylinux_2_28_x86_64", "1.32.0"),
    "windows-x64": ("win_amd64", "1.32.0"),
    "macos-arm64": ("macosx_14_0_arm64", "1.32.0"),
    "macos-x64": ("macosx_13_0_x86_64", "1.23.2"),  # (the last release with an Intel Mac wheel)
}
# What ``import onnxruntime`` needs beside Blender's own numpy (Blender ships numpy; it is not bundled)
RUNTIME_DEPS = ("flatbuffers==25.12.19", "packaging==26.4", "protobuf==7.36.2")
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


def fetch_wheels(platforms, folder: Path = WHEELS) -> list[Path]:
    """ONNX Runtime and its import-time dependencies as wheels for ``platforms`` (Python 3.11, Blender's),
    downloaded once into ``folder``; -> the wheel files, in the order of ``platforms``."""
    folder.mkdir(parents=True, exist_ok=True)
    found: list[Path] = []
    for platform in platforms:
        tag, ort = PLATFORMS[platform]
        for req in (f"onnxruntime=={ort}",) + RUNTIME_DEPS:
            name, ver = req.split("==")
            have = [p for p in folder.glob(f"{name.replace('-', '_')}-{ver}-*.whl") if _fits(p.name, tag)]
            if not have:
                # into a folder of its own, then moved in whole: two builds at once (the test suite under Blender
                # 5.0 and 4.5 side by side) never read a wheel the other is still writing
                with tempfile.TemporaryDirectory(dir=folder, prefix=".fetch-") as tmp:
                    res = subprocess.run([sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--no-deps",
                                          "--platform", tag, "--python-version", "3.11", "--implementation", "cp",
                                          "--abi", "cp311", "--abi", "abi3", "--abi", "none", "-d", tmp, req],
                                         capture_output=True, text=True)
                    for w in Path(tmp).glob("*.whl"):
                        os.replace(w, folder / w.name)
                have = [p for p in folder.glob(f"{name.replace('-', '_')}-{ver}-*.whl") if _fits(p.name, tag)]
                if res.returncode != 0 or not have:
                    raise SystemExit(f"build.py: cannot fetch the {platform} wheel of {req} (pip download needs the "
                                     f"package index):\n{(res.stdout + res.stderr).strip()[-2000:]}")
            found += [p for p in have if p not in found]
    return found


def _fits(wheel: str, tag: str) -> bool:
    """Whether a wheel is for pip's platform ``tag`` (an any-platform wheel is for every one)."""
    plat = wheel[:-4].split("-")[-1]
    return plat == "any" or tag in plat.split(".")


def stage(dest: Path, ver: str, platforms=tuple(PLATFORMS), wheels=()) -> Path:
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
    if wheels:  # (listed here, not in the source manifest: the files exist only where they were fetched)
        (dest / "wheels").mkdir()
        for w in wheels:
            shutil.copy2(w, dest / "wheels" / w.name)
        listed = ",\n".join(f'  "./wheels/{w.name}"' for w in wheels)
        manifest += f"\nplatforms = [{', '.join(repr(p).replace(chr(39), chr(34)) for p in platforms)}]\n"
        manifest += f"wheels = [\n{listed},\n]\n"
        manifest = _before_tables(manifest)
    (dest / "blender_manifest.toml").write_text(manifest, encoding="utf-8")
    shutil.copy2(ROOT / "LICENSE", dest / "LICENSE")
    shutil.copy2(ROOT / "examples" / "bvh" / "LICENSE-bandai-namco.txt", dest / "LICENSE-weights-bandai-namco.txt")
    if not list((dest / "backend" / "checkpoints").glob("inbetween.*")):
        raise SystemExit("build.py: backend/checkpoints/inbetween.json is missing; nothing to ship")
    return dest


def _before_tables(manifest: str) -> str:
    """Move the appended top-level keys (platforms, wheels) above the first ``[table]``, where TOML keeps
    top-level keys."""
    head, sep, tail = manifest.partition("\n[")
    if not sep:
        return manifest
    body, added = tail.split("\nplatforms = ", 1)
    return head.rstrip() + "\n\nplatforms = " + added.rstrip() + "\n\n[" + body.rstrip() + "\n"


def blender_ext(tool: Path, *args: str) -> None:
    res = subprocess.run([sys.executable, str(tool), *args], capture_output=True, text=True)
    out = (res.stdout + res.stderr).strip()
    if res.returncode != 0:
        raise SystemExit(f"build.py: blender_ext {args[0]} failed:\n{out}")
    if out:
        print(out)


def build(out_dir: Path, tool: Path | None = None, work: Path | None = None,
          platforms=tuple(PLATFORMS)) -> list[Path]:
    """Validate and build one zip per platform; -> the zips."""
    ver = version()
    tool = tool or find_blender_ext()
    unknown = [p for p in platforms if p not in PLATFORMS]
    if unknown:
        raise SystemExit(f"build.py: unknown platform {unknown[0]!r} (one of {', '.join(PLATFORMS)})")
    src = stage((work or ROOT / "build") / EXTENSION_ID, ver, platforms, fetch_wheels(platforms))
    blender_ext(tool, "validate", str(src))
    out_dir.mkdir(parents=True, exist_ok=True)
    zpath = out_dir / f"{EXTENSION_ID}-{ver}.zip"
    zips = [out_dir / f"{EXTENSION_ID}-{ver}-{p.replace('-', '_')}.zip" for p in platforms]
    for z in zips:
        z.unlink(missing_ok=True)
    blender_ext(tool, "build", "--source-dir", str(src), "--output-filepath", str(zpath), "--split-platforms")
    missing = [z.name for z in zips if not z.exists()]
    if missing:
        raise SystemExit(f"build.py: blender_ext wrote no {', '.join(missing)}")
    return zips


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", type=Path, default=ROOT / "dist")
    ap.add_argument("--work-dir", type=Path, default=None, help="staging folder (default: build/)")
    ap.add_argument("--blender-ext", type=Path, default=None, help="path to Blender's blender_ext.py")
    ap.add_argument("--platform", action="append", choices=sorted(PLATFORMS), dest="platforms",
                    help="build this platform's zip (repeatable; default: all four)")
    args = ap.parse_args(argv)
    for zpath in build(args.out_dir, args.blender_ext, args.work_dir, tuple(args.platforms or PLATFORMS)):
        print(f"wrote {zpath} ({zpath.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
