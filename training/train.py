"""python -m training.train CONFIG.json [--key=value ...]: train a Splinetween checkpoint."""
from __future__ import annotations

import argparse
import sys

from .config import ConfigError, load_config
from .data import DataError


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m training.train", description=__doc__)
    ap.add_argument("config", nargs="?", help="JSON config (keys of training.config.TrainConfig)")
    args, overrides = ap.parse_known_args(argv)
    if args.config and args.config.startswith("--"):
        overrides.insert(0, args.config)
        args.config = None
    try:
        cfg = load_config(args.config, overrides)
        if not cfg.data:
            raise ConfigError("no data: pass --data=PATH (a BVH folder or the .tar.xz archive)")
        from .loop import train
        train(cfg)
    except (ConfigError, DataError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
