"""Headless batch processing: the add-on's operations on many .blend and .bvh files, safely.

    python -m blender_addon.batch inbetween shots/*.blend --every 15 --out-dir out
    blender -b --python <extension>/batch/__main__.py -- inbetween shots/*.blend --out-dir out

Modules: ``cli`` (arguments), ``inputs`` (paths, globs, mirrored outputs), ``run`` (the coordinator),
``pool`` (worker processes), ``worker`` (one Blender working through files), ``jobs`` / ``job_blend``
/ ``job_bvh`` / ``latent`` (one file's work), ``report`` (JSON report, progress bar, summary) and
``safe_io`` (temporary files renamed into place, backups, done markers).  See docs/batch.md.
"""
from __future__ import annotations


def main(argv=None) -> int:
    from .cli import main as _main
    return _main(argv)
