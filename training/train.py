"""python -m training.train [mesh] [CONFIG.json] [--key=value ...]: train a Splinetween checkpoint.

Without ``mesh``: a motion model from BVH (keys of training.config.TrainConfig).
With ``mesh``: a per-asset mesh-sequence model from PC2/MDD caches or .blend files
(keys of training.config.MeshTrainConfig), e.g.

    python -m training.train mesh --data=/data/cloth --out=runs/cloth --components=64

``--events PATH`` (``-``: standard output) also writes the progress as JSON lines for programs
(training/progress.py); the progress bar on stderr stays.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from . import progress
from .config import ConfigError, MeshTrainConfig, TrainConfig, load_config
from .data import DataError


def _epilog(cls) -> str:
    return "config keys (--key=value): " + ", ".join(f"{f.name}={f.default!r}" for f in fields(cls))


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    mesh = bool(argv) and argv[0] == "mesh"
    if mesh:
        argv = argv[1:]
    cls = MeshTrainConfig if mesh else TrainConfig
    ap = argparse.ArgumentParser(prog="python -m training.train" + (" mesh" if mesh else ""), description=__doc__,
                                 epilog=_epilog(cls), formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", nargs="?", help=f"JSON config (keys of training.config.{cls.__name__})")
    ap.add_argument("--events", metavar="PATH", help="also write progress as JSON lines to PATH ('-': stdout)")
    args, overrides = ap.parse_known_args(argv)
    if args.config and args.config.startswith("--"):
        overrides.insert(0, args.config)
        args.config = None
    if args.events:
        try:
            progress.open_events(args.events)
        except OSError as e:
            print(f"error: cannot write the events to {args.events} ({e.strerror or e})", file=sys.stderr)
            return 2
    try:
        cfg = load_config(args.config, overrides, cls)
        if not cfg.data:
            raise ConfigError("no data: pass --data=PATH (" + ("a folder of PC2/MDD caches or .blend files" if mesh
                              else "a BVH folder or the .tar.xz archive") + ")")
        if mesh:
            from .mesh.loop import train_mesh
            train_mesh(cfg)
        else:
            from .loop import train
            train(cfg)
    except (ConfigError, DataError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        progress.emit("error", message=str(e))
        return 2
    finally:
        progress.close_events()
    return 0


def _exit(code: int) -> None:
    """Exit; a torchrun rank leaves without interpreter teardown, where Gloo's worker threads can
    still release tensors after Python is gone and abort the process (SIGABRT, 'terminate called
    without an active exception') after a finished, saved run."""
    import os
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    _exit(main())
