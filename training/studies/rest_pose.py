"""Does the rest pose change the answer?  The same world motion on rigs that rest in other poses.

``python -m training.studies.rest_pose [--data ../shared/data-unpacked] [--every 15 30]`` takes familiar
clips (the data set's test split) and other studios' (CMU's validation subjects), gives each file
another rest pose with the same world motion (``re_rest``: an A-pose, arms down, lying, every bone
turned at random), and in-betweens every variant through the one conversion (``backend.humanoid``, as the
batch does): the mean world joint error on the in-between frames (cm, mapped joints) beside SLERP's
through the same keys, and how far each variant's model input lies from the file's own.

The property test (``tests/test_rest_invariance.py``) asserts the invariance; this study says what it costs
or wins against today's reading of the file's own rest.
"""
from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import numpy as np

from backend.formats import bvh
from backend.humanoid import bvh_rig
from backend.maths import quat_np
from backend.motion.engine import DEFAULT_INBETWEEN, Engine
from backend.motion.skeleton import Clip


def re_rest(clip: Clip, pose: np.ndarray) -> Clip:
    """``clip`` on a skeleton whose rest is ``pose`` (local rotations ``[J, 4]`` of ``clip``'s skeleton, as
    Blender's *Apply Pose as Rest Pose*), with the same world motion: every joint's frame turned by the
    pose's global rotation ``P_j`` (new offsets ``P_parent o``, new local rotations ``P_parent L P_j^-1``)."""
    sk = clip.skeleton
    parents = np.asarray(sk.parents)
    g, _ = quat_np.fk(pose[None], np.asarray(sk.offsets, dtype=np.float64)[None], parents)
    g = g[0]
    gp = np.array([g[p] if p >= 0 else [1.0, 0.0, 0.0, 0.0] for p in parents])
    offsets = quat_np.rotate(gp, np.asarray(sk.offsets, dtype=np.float64))
    ends = tuple(None if e is None else tuple(quat_np.rotate(g[j], np.asarray(e, dtype=np.float64)))
                 for j, e in enumerate(sk.end_sites))
    skeleton = replace(sk, offsets=offsets, end_sites=ends)
    rot = quat_np.mul(quat_np.mul(gp[None], clip.rotations), quat_np.inv(g)[None])
    pos = clip.positions.copy()
    inner = parents >= 0
    pos[:, inner] = quat_np.rotate(np.broadcast_to(gp[inner], pos[:, inner].shape[:-1] + (4,)), pos[:, inner])
    return Clip(skeleton, quat_np.fix_hemisphere(rot), pos, clip.frame_time, clip.name)


def axis_angle(axis, degrees) -> np.ndarray:
    a = np.asarray(axis, dtype=np.float64)
    half = np.radians(degrees) / 2
    return np.concatenate([[np.cos(half)], np.sin(half) * a / np.linalg.norm(a)])


def random_pose(j_count: int, rng: np.random.Generator, max_degrees: float = 180.0) -> np.ndarray:
    axis = rng.normal(size=(j_count, 3))
    angle = rng.uniform(0, max_degrees, size=j_count)
    return np.array([axis_angle(a, d) for a, d in zip(axis, angle, strict=True)])


def named_pose(sk, turns: dict[str, tuple]) -> np.ndarray:
    """Local rotations: ``turns`` ``{joint name (or a suffix such as 'UpperArm_L'): (axis, degrees)}``."""
    pose = np.tile([1.0, 0.0, 0.0, 0.0], (sk.num_joints, 1))
    for j, n in enumerate(sk.names):
        for key, (axis, deg) in turns.items():
            if n == key or n.endswith(key):
                pose[j] = axis_angle(axis, deg)
    return pose


def variants(clip: Clip, rng: np.random.Generator) -> dict[str, Clip]:
    """The file's own rest and others of the same world motion (BVH axes: Y up, the character faces +Z)."""
    sk = clip.skeleton
    names = list(sk.names)
    # The arm chain's first bone below the shoulder, whatever the skeleton's names.
    left = next(n for n in names if n in ("UpperArm_L", "LeftArm"))
    right = next(n for n in names if n in ("UpperArm_R", "RightArm"))
    hips = next(n for n in names if n in ("Hips",))
    return {
        "own rest": clip,
        "A-pose (arms 40 down)": re_rest(clip, named_pose(sk, {left: ((0, 0, 1), -40), right: ((0, 0, 1), 40)})),
        "arms down": re_rest(clip, named_pose(sk, {left: ((0, 0, 1), -85), right: ((0, 0, 1), 85)})),
        "lying": re_rest(clip, named_pose(sk, {hips: ((1, 0, 0), 90)})),
        "every bone turned": re_rest(clip, random_pose(sk.num_joints, rng)),
    }


def fill(engine: Engine, clip: Clip, keys: list[int]) -> tuple[np.ndarray, np.ndarray, object]:
    """(the fill's world joint positions, the model input's rotations at the keys, the conversion) of
    ``clip`` through the batch's steps: the conversion read on the keys, the model on its skeleton, back."""
    model = engine.skeleton
    found = bvh_rig.conversion(clip, model.names, model.parents, model.offsets, known=keys)
    rt = found.retarget
    m_rot, m_pos = rt.to_model(*bvh_rig.file_channels(clip, rt))
    work = Clip(replace(model, offsets=rt.offsets), m_rot, m_pos, clip.frame_time, clip.name)
    out, _ = engine.inbetween(work, keys)
    rot, pos = bvh_rig.from_model(rt, clip.skeleton, out.rotations, out.positions, clip.rotations, clip.positions)
    _, x = quat_np.fk(rot, pos, clip.skeleton.parents)
    return x, m_rot[keys], rt


def slerp_world(clip: Clip, keys: list[int]) -> np.ndarray:
    rot, pos = clip.rotations.copy(), clip.positions.copy()
    for a, b in zip(keys, keys[1:], strict=False):
        t = (np.arange(a + 1, b) - a) / (b - a)
        rot[a + 1:b] = quat_np.slerp(rot[a][None], rot[b][None], t[:, None])
        pos[a + 1:b] = pos[a] + t[:, None, None] * (pos[b] - pos[a])
    return quat_np.fk(rot, pos, clip.skeleton.parents)[1]


def error_cm(x: np.ndarray, truth: np.ndarray, keys: list[int], joints: list[int], cm: float) -> float:
    inner = np.setdiff1d(np.arange(keys[0], keys[-1] + 1), keys)
    return float(np.linalg.norm(x[inner][:, joints] - truth[inner][:, joints], axis=-1).mean() * cm)


def study(paths: list[Path], every: list[int], seed: int = 0, frames: int = 241) -> dict:
    engine = Engine(DEFAULT_INBETWEEN)
    rng = np.random.default_rng(seed)
    rows: dict = {}
    own_inputs: dict = {}
    for path in paths:
        clip = bvh.read_bvh(path, keep_source=False)
        start = 120 if clip.frame_time < 1 / 60 else 0  # CMU's calibration T-pose (backend.motion.calibration)
        clip = Clip(clip.skeleton, clip.rotations[start:start + frames], clip.positions[start:start + frames],
                    clip.frame_time, clip.name)
        for name, v in variants(clip, rng).items():
            for k in every:
                keys = list(range(0, v.num_frames, k))
                truth = quat_np.fk(v.rotations, v.positions, v.skeleton.parents)[1]
                try:
                    x, m_in, rt = fill(engine, v, keys)
                except ValueError as e:
                    rows.setdefault((name, k), []).append((np.nan, np.nan, np.nan, str(e)[:80]))
                    continue
                joints = [v.skeleton.names.index(rt.bone_of(j)) for j in rt.mapped]
                cm = rt.scale
                own = own_inputs.get((path.name, k))
                drift = np.nan if own is None else float(np.degrees(
                    2 * np.arccos(np.clip(np.abs((own * m_in).sum(-1)), 0, 1))).max())
                if name == "own rest":
                    own_inputs[path.name, k] = m_in
                rows.setdefault((name, k), []).append(
                    (error_cm(x, truth, keys, joints, cm), error_cm(slerp_world(v, keys), truth, keys, joints, cm),
                     drift, ""))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path, help=".bvh files (familiar: the test split; other studios)")
    ap.add_argument("--every", type=int, nargs="+", default=[15, 30])
    ap.add_argument("--frames", type=int, default=241)
    args = ap.parse_args(argv)
    rows = study(args.files, args.every, frames=args.frames)
    print(f"{'rest':24s} {'keys':>4s} {'model cm':>9s} {'SLERP cm':>9s} {'ratio':>6s} {'input drift deg':>15s} refused")
    for (name, k), vals in rows.items():
        a = np.array([v[:3] for v in vals], dtype=float)
        refused = sum(1 for v in vals if v[3])
        m, s = np.nanmean(a[:, 0]), np.nanmean(a[:, 1])
        print(f"{name:24s} {k:4d} {m:9.2f} {s:9.2f} {m / s:6.2f} {np.nanmax(a[:, 2]) if np.isfinite(a[:, 2]).any() else float('nan'):15.3g} "
              f"{refused}/{len(vals)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
