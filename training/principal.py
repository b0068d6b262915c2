"""python -m training.principal CKPT --data PATH: principal directions of the control points.

Encodes random train windows, runs PCA on the flattened control points, and stores the
leading directions (unit vectors, with their standard deviations) in the checkpoint, so
a slider of +1 moves one standard deviation along a direction seen in real motion.

Each direction is then named and described from what it does (``info.principal_names`` and
``info.principal_descriptions``): ``--probe`` other random train windows are decoded with the
direction at -1 and +1, and :func:`measure` records what changes -- each body part's offset and
swing in the character's heading frame (forward, left, up), whether left and right limbs swing in
turn or together, the hips' travel, height and turn, and when in the segment -- which
``training.principal_names`` puts into words.  ``--names-only`` keeps the stored directions and
only measures and names them again.

    python -m training.principal backend/checkpoints/motion_autoencoder.json \\
        --data /work/data/bandai-namco-2/bvh,/work/data/bandai-namco-1-part/bvh --cache .cache --names-only
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import torch

from backend.formats.atomic import write_text
from backend.maths import quat_np
from backend.motion.engine import Engine
from backend.motion.skeleton import Clip
from backend.runtime import checkpoint

from .data import WindowSampler, load_split
from .principal_names import Effect, name_directions


def control_matrix(engine: Engine, ms, windows: int, seed: int, batch: int = 256) -> np.ndarray:
    """[windows, K*d] control points of random train windows of the checkpoint's length."""
    sampler = WindowSampler(ms, engine.ckpt.window, engine.ckpt.window, seed)
    rows = []
    for a in range(0, windows, batch):
        idx = sampler.sample(min(batch, windows - a))
        clips = [Clip(ms.skeleton, ms.rotations[i].astype(np.float64), ms.positions[i].astype(np.float64))
                 for i in idx]
        rows += [c.points.reshape(-1) for c in engine.encode(clips)]
    return np.stack(rows)


def pca(x: np.ndarray, count: int):
    mean = x.mean(0)
    _, s, vt = np.linalg.svd(x - mean, full_matrices=False)
    std = s[:count] / np.sqrt(len(x) - 1)
    return mean, vt[:count], std


def body_parts(skel) -> dict:
    """part -> (its joints, the joint it hangs from): the hands from the chest, the feet from the hips,
    chest, neck and head from the hips.  Sides by the names' _L/_R."""
    names, parents = list(skel.names), list(skel.parents)

    def side(n, s):
        return n.lower().endswith("_" + s)

    def find(words, s=None):
        return [j for j, n in enumerate(names) if any(w in n for w in words) and (s is None or side(n, s))]

    hips = (find(["Hips"]) or [0])[0]
    parts = {}
    for s in ("l", "r"):
        upper = find(["UpperArm"], s)[0]
        parts[f"arm_{s}"] = (find(["Hand"], s), parents[parents[upper]])  # from the chest
        parts[f"leg_{s}"] = (find(["Foot"], s), hips)
    parts["torso"] = (find(["Chest", "Neck", "Head"]), hips)
    return parts


def _heading(gpos, names, up: int):
    """Per frame: unit forward and left vectors on the ground (from the hips' and shoulders' left-right
    lines), and the up axis."""
    j = {n: i for i, n in enumerate(names)}
    left = sum(gpos[:, j[f"{a}_L"]] - gpos[:, j[f"{a}_R"]] for a in ("UpperLeg", "UpperArm"))
    left[:, up] = 0.0
    left /= np.maximum(np.linalg.norm(left, axis=-1, keepdims=True), 1e-9)
    upv = np.zeros(3)
    upv[up] = 1.0
    fwd = np.cross(left, upv)  # Y up, left +X: forward +Z
    return fwd, left, upv


def _sway(profile: np.ndarray) -> np.ndarray:
    """Peak amplitude of what varies over the window (per axis): sqrt(2) x its standard deviation."""
    return np.sqrt(2.0) * profile.std(0)


def _thirds(x: np.ndarray) -> tuple:
    """A per-frame amount's mean over the window's first, middle and last third."""
    return tuple(round(float(p.mean()), 3) for p in np.array_split(x, 3))


def _mirror(v: np.ndarray) -> np.ndarray:
    """A right limb's vector as the left one's counterpart (the left axis flipped)."""
    return v * np.array([1.0, -1.0, 1.0])


def measure(engine: Engine, clips, component: np.ndarray, std: float) -> Effect:
    """What slider +1 (one standard deviation along ``component``) changes: each window decoded at -1
    and +1, half the difference, in the neutral decode's heading frame, averaged over the windows
    frame by frame (the decoder is close to linear in its control points, so a direction adds nearly
    the same change to every window: that average is what the slider does).  ``clips``: windows of one
    length."""
    skel, up = engine.skeleton, engine.layout.up_axis
    names, parents = list(skel.names), skel.parents
    parts = body_parts(skel)
    hips = parts["leg_l"][1]
    prof = {p: 0.0 for p in parts}
    way, yaw, height = 0.0, 0.0, 0.0
    for c in engine.encode(list(clips)):
        step = std * component.reshape(c.points.shape[1:])
        base, plus, minus = (quat_np.fk(d.rotations, d.positions, parents)[1] for d in
                             (engine.decode(c, points=c.points + k * step) for k in (0.0, 1.0, -1.0)))
        fwd, left, upv = _heading(base, names, up)
        frame = np.stack([fwd, left, np.broadcast_to(upv, fwd.shape)], axis=1)  # [F, (fwd, left, up), 3]
        for p, (js, at) in parts.items():
            rel = [g[:, js] - g[:, at:at + 1] for g in (plus, minus)]
            d = np.einsum("fax,fjx->fja", frame, 0.5 * (rel[0] - rel[1]))  # [F, joints, (fwd, left, up)]
            prof[p] = prof[p] + d.mean(1)
        go = [g[:, hips] - g[0, hips] for g in (plus, minus)]
        way = way + np.stack([0.5 * (go[0] - go[1]) @ fwd[0], 0.5 * (go[0] - go[1]) @ left[0]], -1)
        height = height + 0.5 * (plus[:, hips, up] - minus[:, hips, up])
        turn = []
        for g in (plus, minus):
            f = _heading(g, names, up)[0]
            a = np.unwrap(np.arctan2(f @ left[0], f @ fwd[0]))  # > 0: turned towards the left
            turn.append(a - a[0])
        yaw = yaw + np.degrees(0.5 * (turn[0] - turn[1]))
    n = len(clips)
    prof = {p: v / n for p, v in prof.items()}
    way, yaw, height = way / n, yaw / n, height / n

    def r(v):
        return tuple(round(float(x), 3) for x in v)

    pattern, alternate = {}, {}
    for p, v in prof.items():
        ac = v - v.mean(0)
        axis = int(np.argmax(ac.std(0)))
        pattern[p] = (("forward", "left", "up")[axis], _thirds(ac[:, axis]))
    for limb in ("arm", "leg"):
        a, b = (prof[f"{limb}_{s}"] - prof[f"{limb}_{s}"].mean(0) for s in "lr")
        b = _mirror(b)
        denom = np.sqrt((a ** 2).sum() * (b ** 2).sum())
        alternate[limb] = round(float((a * b).sum() / denom), 3) if denom > 1e-12 else 0.0
    pose = sum(np.linalg.norm(v, axis=-1) for v in prof.values())
    return Effect(parts={p: r(v.mean(0)) for p, v in prof.items()}, sway={p: r(_sway(v)) for p, v in prof.items()},
                  pattern=pattern, alternate=alternate, travel=r(way[-1]),
                  travel_when=_thirds(np.diff(way[:, 0], prepend=0.0)), height=round(float(height.mean()), 3),
                  bob=round(float(_sway(height[:, None])[0]), 3), turn=round(float(yaw[-1]), 3), when=_thirds(pose))


def probe_windows(engine: Engine, ms, count: int, seed: int) -> list:
    """``count`` random training windows of the checkpoint's length (the same ones for every direction)."""
    sampler = WindowSampler(ms, engine.ckpt.window, engine.ckpt.window, seed)
    return [Clip(ms.skeleton, ms.rotations[i].astype(np.float64), ms.positions[i].astype(np.float64))
            for i in sampler.sample(count)]


def name_stored(engine: Engine, ms, probe: int, seed: int) -> tuple[list[str], list[str]]:
    """Measure and name the checkpoint's stored directions on ``probe`` random train windows."""
    comps, std = engine.principal()
    clips = probe_windows(engine, ms, probe, seed)
    return name_directions([measure(engine, clips, np.asarray(comps[i], dtype=np.float64), float(std[i]))
                            for i in range(len(std))])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.principal", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache")
    ap.add_argument("--windows", type=int, default=4096)
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--probe", type=int, default=512, help="train windows on which each direction is measured")
    ap.add_argument("--names-only", action="store_true", help="keep the stored directions; name them again")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    engine = Engine(args.checkpoint, "cpu")
    ms = load_split(args.data, "train", args.cache)
    c = engine.ckpt
    if not args.names_only:
        x = control_matrix(engine, ms, args.windows, args.seed)
        mean, comps, std = pca(x, args.count)
        explained = (std ** 2) / x.var(0, ddof=1).sum()
        c.extra.update({"pca.mean": torch.tensor(mean, dtype=torch.float32),
                        "pca.components": torch.tensor(comps, dtype=torch.float32),
                        "pca.std": torch.tensor(std, dtype=torch.float32)})
        c.info["principal_explained"] = [round(float(e), 4) for e in explained]
        c.info["principal_source"] = f"{args.windows} random train windows of {c.window} frames, seed {args.seed}"
    elif engine.principal() is None:
        raise SystemExit(f"{args.checkpoint} has no principal directions to name; run without --names-only")
    names, descriptions = name_stored(engine, ms, args.probe, args.seed + 1)
    naming = {"principal_names": names, "principal_descriptions": descriptions,
              "principal_names_source": f"each direction decoded at -1 and +1 on {args.probe} random train windows "
                                        f"(seed {args.seed + 1}) and named by what changes (training.principal_names)"}
    c.info.update(naming)
    if args.names_only:  # the config alone: the weights file (and the directions in it) stays byte for byte
        jpath = checkpoint.paths_for(c.path)[0]
        doc = json.loads(jpath.read_text(encoding="utf-8"))
        doc["info"].update(naming)
        write_text(jpath, json.dumps(doc, indent=1))
    else:
        checkpoint.save(c.path, c)
        from backend.runtime.export import export_saved
        print(export_saved(c.path))  # (the weights file changed: the graphs point into it again)
    for i, (n, e, d) in enumerate(zip(names, c.info.get("principal_explained", []), descriptions, strict=False)):
        print(f"PC{i + 1}: {n} (explains {100 * e:.1f} % of control-point variance)\n      {d}")
    print(f"stored in {c.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
