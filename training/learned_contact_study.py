"""python -m training.learned_contact_study CKPT --data <folders> [--other <folder>] [--cache DIR] [--every N]
[--hidden] [--steps N]: can a learned contact tell the planted-feet pass where a foot is down better than the
fill's own low, slow frames?

The oracle (``training.slide_study --oracle outside=1``) says the pass, holding the capture's own contacts,
would plant the other studio's feet at 0.87 x the capture's speed at keys every 30 (2.1 x as shipped).  This
study learns those contacts: per in-between frame and foot joint, a two-layer perceptron reads the fill's
height and speed over the nine frames around it and what the gap's two keys say of that joint (leg lengths
and seconds: any skeleton, any rate), and with ``--hidden`` also the in-betweener's decoder state at that
frame (what a contact head on the decoder would read).  It trains on fills of CKPT (planted feet off) of
the training windows of every archive given (every kind but the left-out ones; keys every 5 to 30 frames,
seeded), labelled by the capture's contacts (``backend.motion.inbetween.contacts.capture_contacts``, the figure's own
reading), and prints on the validation windows (familiar: the first archives; other studio: ``--other``) at
keys every 15 and 30: precision and recall of the planted class beside the fill's own reading, and the
foot-sliding figure with the pass holding the learned contacts (eased in the air, ``outside``) beside the
pass as shipped, all from the same fills.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from backend.maths import quat_np
from backend.motion.inbetween import contacts as C

from .data import LEAVE_OUT, Selection
from .evaluate import load_windows

REACH = 4  # frames either side of the frame read
SPEED_SCALE = 4.0  # leg lengths per second: speeds enter as log1p(speed / scale)
SPACINGS = (5, 8, 10, 15, 20, 30)


def features(gpos, keys, joints, toes, up, frame_time: float, length: float):
    """(frames [M], inputs [M, N, 4 * 9 + 6]) for the in-between frames of the fill's global positions
    ``gpos`` [F, J, 3] and its foot joints ``joints`` (N; ``toes`` [N] bool): per frame of the nine around
    it, the joint's height above the lowest foot joint of that frame and above the keys' lowest, its speed
    along the ground and up; then its height at the gap's two keys, how far it moves between them, the
    frame's place in its gap, the gap's length (seconds) and whether it is a toe."""
    ka, kb, frames, gap = C.judged_gaps(sorted(int(k) for k in keys))
    ka, kb = ka[gap], kb[gap]
    g = np.asarray(gpos, dtype=np.float64)[:, joints] / length
    h = g @ up
    rel = np.minimum(h - h.min(1, keepdims=True), 1.0)
    vel = np.gradient(g, axis=0) / frame_time
    rise = vel @ up
    along = np.linalg.norm(vel - rise[..., None] * up, axis=-1)
    per_frame = np.stack([rel, np.log1p(along / SPEED_SCALE), np.sign(rise) * np.log1p(np.abs(rise) / SPEED_SCALE),
                          h - h[np.asarray(keys, dtype=np.int64)].min()], -1)  # [F, N, 4]
    n = len(joints)
    around = np.clip(frames[:, None] + np.arange(-REACH, REACH + 1), 0, len(g) - 1)
    window = per_frame[around].transpose(0, 2, 3, 1).reshape(len(frames), n, -1)
    moved = np.minimum(np.linalg.norm(g[kb] - g[ka], axis=-1), 2.0)
    u = ((frames - ka) / np.maximum(kb - ka, 1))[:, None].repeat(n, 1)
    span = np.minimum((kb - ka) * frame_time, 2.0)[:, None].repeat(n, 1)
    toe = np.broadcast_to(np.asarray(toes, dtype=np.float64), (len(frames), n))
    return frames, np.concatenate([window, np.stack([rel[ka], rel[kb], moved, u, span, toe], -1)], -1)


def windows_read(engine, rot, pos, spacing, hidden: bool):
    """Per window: (keys, fill rotations, fill positions, global positions, up, leg length, frames, inputs
    [M, N, *], the capture's contacts [M, N]), the fill made by ``engine`` as shipped with its planted-feet pass
    off; ``hidden``: the decoder's state of the unguarded, unmirrored pass appended to each joint's inputs."""
    from backend.motion.keyframes_np import every_k
    from backend.motion.skeleton import Clip
    skel, ft = engine.skeleton, float(engine.frame_time)
    legs = C.find_legs(skel.names, skel.parents)
    joints = C.foot_joints(legs)
    toes = [j == leg.toe for leg in legs for j in (leg.ankle, leg.toe) if j is not None]
    out = []
    for k in sorted(set(spacing.tolist())):
        idx = np.flatnonzero(spacing == k)
        keys = every_k(rot.shape[1], int(k))
        clips = [Clip(skel, rot[i], pos[i], ft) for i in idx]
        engine.contacts = False
        try:
            fills = [c for c, _ in engine.inbetween(clips, [keys] * len(clips))]
            states = decoder_states(engine, clips, keys) if hidden else None
        finally:
            engine.contacts = True
        for n, (i, fill) in enumerate(zip(idx, fills, strict=True)):
            g = quat_np.fk(quat_np.normalize(fill.rotations), fill.positions, skel.parents)[1]
            up = C.up_vector(g[keys], legs, skel.parents)
            length = max(C.leg_length(pos[i][keys[0]], leg) for leg in legs)
            frames, x = features(g, keys, joints, toes, up, ft, length)
            if hidden:
                x = np.concatenate([x, np.repeat(states[n][frames][:, None], len(joints), 1)], -1)
            y = C.capture_contacts(skel.parents, legs, rot[i], pos[i], keys, ft)[frames]
            out.append((keys, fill.rotations, fill.positions, g, up, length, frames, x, y))
    return out


def decoder_states(engine, clips, keys) -> np.ndarray:
    """[B, F, width]: the in-betweener's decoder output per frame of ``clips`` (the pass without guard or mirror)."""
    grabbed = []
    hook = engine.model.module.dec.register_forward_hook(lambda m, i, o: grabbed.append(o.detach().numpy()))
    guard, sym = engine.guard, engine.symmetric
    engine.guard, engine.symmetric = False, False
    try:
        engine.inbetween(clips, [keys] * len(clips))
    finally:
        hook.remove()
        engine.guard, engine.symmetric = guard, sym
    return np.concatenate(grabbed)


def fit(x, y, steps: int, seed: int = 0):
    """A perceptron (inputs -> 64 -> 64 -> 1; minibatch Adam on the cross-entropy, seeded) -> probability(x)."""
    import torch
    torch.manual_seed(seed)
    mean, std = x.mean(0), x.std(0) + 1e-6
    xt = torch.as_tensor((x - mean) / std, dtype=torch.float32)
    yt = torch.as_tensor(y, dtype=torch.float32)
    net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                              torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.Adam(net.parameters(), 3e-3)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        b = torch.randint(0, len(xt), (min(8192, len(xt)),), generator=gen)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(net(xt[b])[:, 0], yt[b])
        opt.zero_grad()
        loss.backward()
        opt.step()

    def probability(z):
        with torch.no_grad():
            return torch.sigmoid(net(torch.as_tensor((z - mean) / std, dtype=torch.float32))[..., 0]).numpy()
    return probability


def _with_joint(x: np.ndarray) -> np.ndarray:
    """Inputs [M, N, *] with each foot joint's one-hot appended."""
    n = x.shape[1]
    return np.concatenate([x, np.broadcast_to(np.eye(n), (len(x), n, n))], -1)


def _inputs(read):
    """Every sample of windows read: (inputs [S, *] with the joint one-hot, labels [S])."""
    x = _with_joint(np.concatenate([r[7] for r in read]))
    return x.reshape(-1, x.shape[-1]), np.concatenate([r[8] for r in read]).reshape(-1)


def report(engine, rot, pos, read, probability, threshold: float) -> str:
    """Precision / recall (learned, the fill's own) and the figure (cm/s: as shipped, learned + outside) with
    the capture's own speed, on windows read at one spacing."""
    skel, ft = engine.skeleton, float(engine.frame_time)
    legs = C.find_legs(skel.names, skel.parents)
    joints = C.foot_joints(legs)
    counts = np.zeros((2, 3))  # (learned, own) x (true +, predicted +, both)
    speeds = {"shipped": [], "learned": [], "capture": []}
    for i, (keys, frot, fpos, g, up, length, frames, x, y) in enumerate(read):
        down = np.zeros((len(frot), x.shape[1]), dtype=bool)
        down[frames] = probability(_with_joint(x)) > threshold
        own = C.ground_contacts(g, joints, up, ft, length)[frames]
        for row, pred in enumerate((down[frames], own)):
            counts[row] += (y.sum(), pred.sum(), (pred & y).sum())
        steps = C.planted_step_mask(skel.parents, legs, rot[i], pos[i], keys, ft)
        for name, held in (("shipped", C.plant_feet(skel.parents, skel.names, frot, fpos, keys, ft)),
                           ("learned", C.plant_feet(skel.parents, skel.names, frot, fpos, keys, ft,
                                                    C.ContactConfig(outside=True), down=down))):
            speeds[name].append(C.foot_step_speeds(skel.parents, legs, held, fpos, ft)[steps])
        speeds["capture"].append(C.foot_step_speeds(skel.parents, legs, rot[i], pos[i], ft)[steps])
    pr = [f"P {c[2] / max(c[1], 1):.3f} R {c[2] / max(c[0], 1):.3f}" for c in counts]
    s = {k: np.concatenate(v).mean() for k, v in speeds.items()}
    return (f"learned {pr[0]} (the fill's own {pr[1]}); feet {s['learned']:.2f} cm/s held as learned, "
            f"{s['shipped']:.2f} as shipped, the capture {s['capture']:.2f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("--data", required=True, help="the familiar archives' BVH folders, comma-separated")
    ap.add_argument("--other", default="", help="another studio's BVH folder (converted): trains and validates too")
    ap.add_argument("--cache", default=None)
    ap.add_argument("--every", type=int, default=3, help="every n-th training window of the familiar archives")
    ap.add_argument("--hidden", action="store_true", help="also read the decoder's state (a contact head's input)")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--threshold", type=float, default=0.5)
    args = ap.parse_args(argv)
    import torch

    from backend.motion.engine import Engine
    torch.set_num_threads(1)
    t0 = time.time()
    eng = Engine(args.checkpoint, "cpu")
    rng = np.random.default_rng(0)
    train, val = [], {}
    sources = [(f, args.every) for f in args.data.split(",")] + ([(args.other, 1)] if args.other else [])
    for folder, every in sources:
        rot, pos, _ = load_windows(folder, Selection(("train",), exclude=LEAVE_OUT), args.cache,
                                   skeleton=eng.skeleton, every=every)
        train += windows_read(eng, rot, pos, rng.choice(SPACINGS, len(rot)), args.hidden)
    for folder, column in ((args.data, "familiar"),) + (((args.other, "other studio"),) if args.other else ()):
        rot, pos, _ = load_windows(folder, Selection(("val",), exclude=LEAVE_OUT), args.cache, skeleton=eng.skeleton)
        for k in (15, 30):
            val[(column, k)] = (rot, pos, windows_read(eng, rot, pos, np.full(len(rot), k), args.hidden))
    x, y = _inputs(train)
    probability = fit(x, y.astype(np.float32), args.steps)
    print(f"{len(y)} training samples ({y.mean():.1%} planted), {'fill and decoder state' if args.hidden else 'fill'}"
          f" inputs, threshold {args.threshold} ({time.time() - t0:.0f} s)")
    for (column, k), (rot, pos, read) in val.items():
        print(f"  {column}, keys every {k}: {report(eng, rot, pos, read, probability, args.threshold)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
