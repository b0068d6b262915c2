"""The README's cloth job: simulate the example cloth, keep every 5th frame, in-between the rest.

Blender simulates ``examples/cloth/cloth_flag.blend`` headlessly (its evaluated vertices are read
frame by frame), the shipped cloth in-between model fills the frames between keys, and the
shipped cloth autoencoder encodes and decodes the whole sequence.  Writes OUT/cloth_inbetween.pc2,
OUT/cloth_reconstruction.pc2 and OUT/cloth.png, and prints the errors next to linear interpolation.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from backend.formats.pc2 import write_pc2
from backend.mesh.engine import DEFAULT_MESH, DEFAULT_MESH_INBETWEEN, MeshEngine
from backend.mesh.sequences import bbox_diagonal, linear_interpolation, vertex_errors
from backend.motion.keyframes_np import every_k

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BLEND = ROOT / "examples" / "cloth" / "cloth_flag.blend"


def plot(path: Path, truth, linear, model, keys):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    diag = bbox_diagonal(truth)
    e_lin = vertex_errors(linear, truth).mean(1) / diag * 100
    e_mod = vertex_errors(model, truth).mean(1) / diag * 100
    side = int(round(np.sqrt(truth.shape[1])))
    grid = side * side == truth.shape[1]
    fig, axes = plt.subplots(1, 3 if grid else 1, figsize=(15 if grid else 7, 4))
    axes = np.atleast_1d(axes)
    ax = axes[0]
    ax.plot(e_lin, color="tab:orange", label="linear")
    ax.plot(e_mod, color="tab:blue", label="Splinetween")
    ax.plot(keys, np.zeros(len(keys)), "ko", ms=3, label="keys")
    ax.set_xlabel("frame")
    ax.set_ylabel("mean vertex error (% of bbox diagonal)")
    ax.legend()
    if grid:
        f = int(np.argmax(e_lin))  # the frame where linear interpolation is worst
        vmax = float(vertex_errors(linear[f], truth[f]).max() * 100)
        for a, (name, pred) in zip(axes[1:], (("linear", linear), ("Splinetween", model)), strict=True):
            im = a.imshow((vertex_errors(pred[f], truth[f]) * 100).reshape(side, side), vmin=0, vmax=vmax,
                          cmap="magma")
            a.set_title(f"{name}, frame {f}: vertex error (cm)", fontsize=9)
            a.set_xticks([])
            a.set_yticks([])
        fig.colorbar(im, ax=axes[1:].tolist())
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)


def run(blend: Path, out: Path, every: int = 5, device: str = "auto", ae=DEFAULT_MESH,
        inbetween=DEFAULT_MESH_INBETWEEN) -> dict:
    from .blend import read_blend_sequence
    t0 = time.perf_counter()
    truth = read_blend_sequence(blend)
    t_sim = time.perf_counter() - t0
    ib = MeshEngine(inbetween, device)
    keys = every_k(len(truth), every)
    gaps = np.setdiff1d(np.arange(len(truth)), keys)
    t1 = time.perf_counter()
    model, _ = ib.inbetween(truth, keys, blend.stem)
    t_ib = time.perf_counter() - t1
    linear = linear_interpolation(truth, keys)
    enc = MeshEngine(ae, device)
    t2 = time.perf_counter()
    rec = enc.decode(enc.encode(truth, blend.stem))
    t_ae = time.perf_counter() - t2
    out.mkdir(parents=True, exist_ok=True)
    write_pc2(out / "cloth_inbetween.pc2", model, start=1.0)
    write_pc2(out / "cloth_reconstruction.pc2", rec, start=1.0)
    plot(out / "cloth.png", truth, linear, model, keys)
    diag = bbox_diagonal(truth)
    return {"frames": len(truth), "vertices": truth.shape[1], "keys": len(keys), "sim_s": t_sim,
            "inbetween_ms": 1000 * t_ib, "autoencoder_ms": 1000 * t_ae,
            "linear_pct": 100 * vertex_errors(linear, truth)[gaps].mean() / diag,
            "model_pct": 100 * vertex_errors(model, truth)[gaps].mean() / diag,
            "recon_pct": 100 * vertex_errors(rec, truth).mean() / diag}


def report(r: dict, out: Path, every: int) -> str:
    return (f"cloth: {r['frames']} frames of {r['vertices']} vertices simulated in {r['sim_s']:.1f} s; keys every "
            f"{every} ({r['keys']} keys)\n"
            f"  non-key frames (mean vertex error, % of bbox diagonal)\n"
            f"  linear           {r['linear_pct']:6.3f} %\n"
            f"  Splinetween      {r['model_pct']:6.3f} %   ({r['inbetween_ms']:.0f} ms)\n"
            f"  autoencoder reconstruction of every frame: {r['recon_pct']:.3f} % ({r['autoencoder_ms']:.0f} ms)\n"
            f"wrote {out / 'cloth_inbetween.pc2'}, {out / 'cloth_reconstruction.pc2'} and {out / 'cloth.png'}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.mesh.demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("blend", nargs="?", type=Path, default=DEFAULT_BLEND)
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "demo")
    ap.add_argument("--device", default="auto")
    args = ap.parse_args(argv)
    try:
        r = run(args.blend, args.out, args.every, args.device)
    except ValueError as e:  # DataError, CheckpointError, EngineError, MeshError: the message names the problem
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(report(r, args.out, args.every))
    return 0


if __name__ == "__main__":
    sys.exit(main())
