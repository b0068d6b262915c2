"""python -m training.offstudio_study [CKPT] [--limit N]: is the motion autoencoder's miss on another
studio's capture the model's, or the conversion's?

Reads the Bandai validation windows (familiar kinds) and the CMU validation subjects converted to the
model's skeleton (``backend.humanoid``, as the add-on and the batch convert), and prints, per set:

* the autoencoder's reconstruction error (``training.evaluate``: local rotation, degrees; MPJPE, cm);
* per modelled joint, the angle between the set's mean local rotation and the Bandai set's: a rest-pose
  offset left in converted rotations shows as a large, steady angle on every clip;
* the same reconstruction after each CMU joint's rotations are turned by that constant offset
  (``q -> q * inv(mean_cmu) * mean_bandai``): if the miss comes from the conversion, removing the
  offset removes most of it; if it stays, the poses themselves are new to the model.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from backend.maths import quat_np as Q

from .data import CMU_DATA, DEFAULT_DATA, Selection, load_split
from .evaluate import evaluate_reconstruction, reconstruct_windows


def mean_rotation(q: np.ndarray) -> np.ndarray:
    """[J, 4] mean of unit quaternions [N, J, 4] per joint (the principal eigenvector of sum q q^T)."""
    m = np.einsum("nji,njk->jik", q, q)
    return np.linalg.eigh(m)[1][..., -1]


def scores(engine, rot, pos) -> dict:
    pr, pp = reconstruct_windows(engine, rot, pos)
    return evaluate_reconstruction(pr, pp, rot, pos, engine.skeleton.parents, engine.layout.rotation_joints)


def windows_of(ms, prefixes, limit=None):
    """Protocol windows (61 frames, stride 61) of the clips whose names start with one of ``prefixes``."""
    idx = [np.arange(a, a + 61) for c, n in enumerate(ms.names) if n.startswith(tuple(prefixes))
           for a in range(ms.starts[c], ms.starts[c + 1] - 60, 61)][:limit]
    idx = np.array(idx, dtype=np.int64).reshape(-1, 61)
    return ms.rotations[idx].astype(np.float64), ms.positions[idx].astype(np.float64)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.offstudio_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", nargs="?", default=None, help="motion autoencoder (default: the shipped one)")
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--other-data", default=CMU_DATA)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--limit", type=int, default=None, help="windows per set")
    args = ap.parse_args(argv)
    from backend.motion.engine import DEFAULT_CHECKPOINT, Engine
    engine = Engine(args.checkpoint or DEFAULT_CHECKPOINT, "cpu")
    skel, rj = engine.skeleton, list(engine.layout.rotation_joints)
    bandai = load_split(args.data, Selection(("val",)), args.cache, verbose=False, skeleton=skel)
    cmu = load_split(args.other_data, Selection(("train", "val")), args.cache, verbose=False, skeleton=skel)
    sets = {"Bandai val, walks": windows_of(bandai, ("dataset-2_walk_", "dataset-1_walk_"), args.limit),
            "Bandai val, runs": windows_of(bandai, ("dataset-2_run_", "dataset-1_run_"), args.limit),
            "Bandai val, every kind": windows_of(bandai, ("dataset",), args.limit),
            "CMU walks (07, 08: training subjects)": windows_of(cmu, ("07_", "08_"), args.limit),
            "CMU runs (09: validation)": windows_of(cmu, ("09_",), args.limit),
            "CMU modern dance (05: validation)": windows_of(cmu, ("05_",), args.limit),
            "CMU, every clip": windows_of(cmu, ("0",), args.limit)}
    b_rot, c_rot = sets["Bandai val, every kind"][0], sets["CMU, every clip"][0]
    mean_b = mean_rotation(b_rot.reshape(-1, *b_rot.shape[2:]))
    mean_c = mean_rotation(c_rot.reshape(-1, *c_rot.shape[2:]))
    offset = np.degrees(Q.angle_between(mean_b, mean_c))
    fix = Q.mul(Q.inv(mean_c), mean_b)  # per joint: the CMU mean turned onto the Bandai mean
    for name in ("CMU walks (07, 08: training subjects)", "CMU, every clip"):
        rot, pos = sets[name]
        fixed = rot.copy()
        fixed[..., rj, :] = Q.normalize(Q.mul(rot[..., rj, :], np.broadcast_to(fix[rj], rot[..., rj, :].shape)))
        sets[name.split(" (")[0].split(",")[0] + ", constant per-joint offset removed"] = (fixed, pos)
    print(f"checkpoint: {engine.path}")
    print("| set | windows | rotation error (deg) | MPJPE (cm) |\n|---|---:|---:|---:|")
    for name, (rot, pos) in sets.items():
        s = scores(engine, rot, pos)
        print(f"| {name} | {len(rot)} | {s['rot_deg']:.2f} | {s['mpjpe_cm']:.2f} |", flush=True)
    print("\nmean local rotation, CMU against Bandai, per modelled joint (deg):")
    print(", ".join(f"{skel.names[j]} {offset[j]:.1f}" for j in rj))
    print("\nlargest normalised input |z| (the autoencoder's normaliser) and where:")
    for name in ("Bandai val, walks", "CMU walks (07, 08: training subjects)"):
        print(f"- {name}: " + normalised_outliers(engine, *sets[name]))
    return 0


def normalised_outliers(engine, rot, pos, top: int = 4) -> str:
    """The largest |z| of the normalised features over windows, with the joint each feature belongs to."""
    import torch

    from .features import to_features
    feat, _ = to_features(torch.from_numpy(rot).float(), torch.from_numpy(pos).float(), engine.layout)
    z = np.abs(np.asarray(engine.norm(feat))).reshape(-1, feat.shape[-1]).max(0)
    npos = 3 * len(engine.layout.position_joints)
    where = [f"position of {engine.skeleton.names[engine.layout.position_joints[i // 3]]}" if i < npos else
             engine.skeleton.names[engine.layout.rotation_joints[(i - npos) // 6]] for i in range(len(z))]
    order = np.argsort(z)[::-1][:top]
    floor = int((np.asarray(engine.norm.std) <= 1e-3 + 1e-9).sum())
    return (", ".join(f"{z[i]:.0f} ({where[i]})" for i in order)
            + f"; {floor} of {len(z)} features have the normaliser's floor as their spread")


if __name__ == "__main__":
    sys.exit(main())
