"""Evaluate a mesh checkpoint on the held-out sequences of a split (whole sequences, as the add-on runs them).

    python -m training.evaluate CLOTH.json --data DIR --split test [--out DIR] [--spacings 5,10]

Errors are mean Euclidean vertex distances as a percentage of each sequence's bounding-box
diagonal (over all its frames), averaged over sequences.
- Autoencoder: encode + decode through ``MeshEngine``, against PCA alone (a) with the same K
  coefficients per frame the model reads (the basis floor) and (b) with the latent budget —
  as many coefficients per frame as the model keeps numbers per frame (control points x d / frames),
  and (c) the linear code with exactly the latent's numbers: the top d components, each fitted by
  the latent Bezier per segment (what a model with a linear path returns untrained).
- In-between: keys every k frames (and the last), error on the non-key frames, against linear
  vertex interpolation between the keys, Catmull-Rom (cubic Hermite) and the natural cubic spline
  through the key vertices (the base the model corrects); with a linear path, also the fitted
  regression alone (the transformer's correction switched off).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from backend.maths.splines import bezier_basis, uniform_times
from backend.mesh.engine import MeshEngine
from backend.mesh.sequences import bbox_diagonal, join_frames, linear_interpolation, project, reconstruct, vertex_errors
from backend.models.spline_transformer import least_squares_fit
from backend.motion.engine import segment_bounds

from ..keyframes import every_k, interpolation_base
from .data import load_mesh_split


def _pct(pred, true, frames=None) -> float:
    err = vertex_errors(pred, true)
    if frames is not None:
        err = err[frames]
    return 100.0 * float(err.mean()) / bbox_diagonal(true)


def base_vertices(seq: np.ndarray, keys, base: str = "cspline") -> np.ndarray:
    """An interpolation of the key vertices alone (``cspline``: the base the model corrects)."""
    mask = torch.zeros(1, len(seq), dtype=torch.bool)
    mask[0, keys] = True
    flat = torch.from_numpy(seq.reshape(1, len(seq), -1))
    keyed = torch.where(mask[..., None], flat, torch.zeros_like(flat))
    return interpolation_base(base)(keyed, mask)[0].numpy().reshape(seq.shape)


def linear_code(seq: np.ndarray, basis, latent: int, controls: int, window: int) -> np.ndarray:
    """The top ``latent`` components of each frame, each fitted per segment by a Bezier with ``controls``
    points (least squares): a linear code with exactly the latent's numbers."""
    top = basis.truncated(latent)
    coeffs = project(seq, top)
    parts = []
    for a, b in segment_bounds(len(seq), window):
        n = b - a + 1
        fit = bezier_basis(controls - 1, uniform_times(n)) @ (least_squares_fit(controls, n) @ coeffs[a:b + 1])
        parts.append(reconstruct(fit.astype(np.float32), top))
    return join_frames(parts)


def evaluate_autoencoder(engine: MeshEngine, ms) -> dict:
    rows, times = [], []
    for i in range(len(ms.names)):
        seq = ms.sequence(i)
        t0 = time.perf_counter()
        controls = engine.encode(seq)
        rec = engine.decode(controls)
        times.append(time.perf_counter() - t0)
        budget = max(1, int(round(controls.points.size / len(seq))))
        k = engine.basis.size
        cfg = engine.ckpt.config
        lin = linear_code(seq, engine.basis, cfg.latent, cfg.controls, engine.window)
        rows.append({"model": _pct(rec, seq), "linear_code": _pct(lin, seq),
                     "pca_k": _pct(reconstruct(project(seq, engine.basis), engine.basis), seq),
                     "pca_budget": _pct(reconstruct(project(seq, engine.basis.truncated(budget)),
                                                    engine.basis.truncated(budget)), seq),
                     "budget": budget, "k": k, "frames": len(seq)})
    mean = {key: float(np.mean([r[key] for r in rows])) for key in ("model", "pca_k", "pca_budget", "linear_code")}
    return {"sequences": len(rows), "components": engine.basis.size,
            "latent_numbers_per_frame": float(np.mean([r["budget"] for r in rows])),
            "error_pct": mean, "median_ms_per_sequence": 1000 * float(np.median(times)), "rows": rows}


def regression_only(engine: MeshEngine) -> MeshEngine | None:
    """A copy of an in-between engine with the transformer's correction switched off (its linear path
    alone), or None when the model has no linear path."""
    if not engine.ckpt.config.linear_path:
        return None
    alone = MeshEngine(engine.path, str(engine.device))
    with torch.no_grad():
        alone.model.module.mlp_dec[-1].weight.zero_()
        alone.model.module.mlp_dec[-1].bias.zero_()
    return alone


def evaluate_inbetween(engine: MeshEngine, ms, spacings) -> dict:
    out = {}
    alone = regression_only(engine)
    for k in spacings:
        rows = []
        for i in range(len(ms.names)):
            seq = ms.sequence(i)
            keys = every_k(len(seq), k)
            gaps = np.setdiff1d(np.arange(len(seq)), keys)
            pred, _ = engine.inbetween(seq, keys)
            rows.append({"model": _pct(pred, seq, gaps), "linear": _pct(linear_interpolation(seq, keys), seq, gaps),
                         "hermite": _pct(base_vertices(seq, keys, "hermite"), seq, gaps),
                         "cspline": _pct(base_vertices(seq, keys, "cspline"), seq, gaps),
                         "keys_exact": bool(np.array_equal(pred[keys], seq[keys]))})
            if alone is not None:
                rows[-1]["regression"] = _pct(alone.inbetween(seq, keys)[0], seq, gaps)
        names = ("model", "linear", "hermite", "cspline") + (("regression",) if alone is not None else ())
        mean = {key: float(np.mean([r[key] for r in rows])) for key in names}
        out[str(k)] = {"error_pct": mean, "ratio_to_linear": mean["model"] / mean["linear"],
                       "keys_exact": all(r["keys_exact"] for r in rows), "sequences": len(rows)}
    return out


def markdown(report: dict) -> str:
    lines = [f"# Mesh evaluation: {Path(report['checkpoint']).name} on the {report['split']} split", "",
             f"{report['sequences']} sequences of {report['vertices']} vertices; errors are mean vertex distance in "
             "% of each sequence's bounding-box diagonal.", ""]
    if "autoencoder" in report:
        a = report["autoencoder"]
        e = a["error_pct"]
        lines += ["| reconstruction | error (% diag) |", "|---|---|",
                  f"| Spline-based Transformer (d = {report['latent']}) | **{e['model']:.3f}** |",
                  f"| PCA alone, {a['components']} coefficients per frame (the model's input) | {e['pca_k']:.3f} |",
                  f"| PCA alone, {a['latent_numbers_per_frame']:.1f} coefficients per frame (the latent's budget) "
                  f"| {e['pca_budget']:.3f} |",
                  f"| Linear code, the latent's numbers: top {report['latent']} components, each a least-squares "
                  f"Bezier per segment | {e['linear_code']:.3f} |", "",
                  f"Encode + decode: {a['median_ms_per_sequence']:.1f} ms median per sequence.", ""]
    if "inbetween" in report:
        reg = "regression" in next(iter(report["inbetween"].values()))["error_pct"]
        lines += ["| keys every | Splinetween | linear | Catmull-Rom | natural cubic spline "
                  + ("| linear path alone " if reg else "") + "| Splinetween / linear | keys exact |",
                  "|---" * (7 + reg) + "|"]
        for k, r in report["inbetween"].items():
            e = r["error_pct"]
            lines.append(f"| {k} | **{e['model']:.3f}** | {e['linear']:.3f} | {e['hermite']:.3f} | {e['cspline']:.3f} "
                         + (f"| {e['regression']:.3f} " if reg else "") + f"| {r['ratio_to_linear']:.3f} | {r['keys_exact']} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.evaluate", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--data", required=True, help="folder of PC2/MDD caches (or .blend files)")
    ap.add_argument("--split", default="test", choices=("train", "val", "test"))
    ap.add_argument("--out", default=None, help="report folder (default: the checkpoint's folder)")
    ap.add_argument("--spacings", default="5,10", help="in-betweening key spacings, comma-separated")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--limit", type=int, default=None, help="use only the first N sequences")
    args, _ = ap.parse_known_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    engine = MeshEngine(args.checkpoint, args.device)
    ms = load_mesh_split(args.data, args.split, num_vertices=engine.num_vertices, verbose=False)
    if args.limit:
        ms.names = ms.names[:args.limit]
        ms.starts = ms.starts[:args.limit + 1]
    report = {"checkpoint": str(engine.path), "split": args.split, "sequences": len(ms.names),
              "vertices": engine.num_vertices, "latent": engine.ckpt.config.latent, "data": str(args.data)}
    if engine.task == "autoencoder":
        report["autoencoder"] = evaluate_autoencoder(engine, ms)
    else:
        report["inbetween"] = evaluate_inbetween(engine, ms, [int(s) for s in args.spacings.split(",")])
    text = markdown(report)
    print(text)
    out = Path(args.out) if args.out else engine.path.parent
    stem = f"eval-{engine.path.stem}-{args.split}"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.md").write_text(text)
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1))
    print(f"wrote {out / stem}.md and .json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
