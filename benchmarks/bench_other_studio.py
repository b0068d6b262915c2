"""Issue 28's user-side measure: another studio's capture in Blender, Inbetween against Blender's own curves.

    python benchmarks/bench_other_studio.py [--data DIR] [--clips 6] [--frames 600] [--encode]

CMU's validation subjects (05 and 09: never trained on, never used to choose a design) imported with
Blender's *Import BVH* (their own skeleton, 120 fps), keys kept every 1/6, 1/2 and 1 s of the clip's own
time (the rest deleted), then *Inbetween* (the add-on as shipped: built-in backend, planted feet on; ``--checkpoint`` another model)
against the curves Blender draws through the same keys (auto-clamped Bézier).  Error: the mapped bones'
world heads on the frames between keys against the capture's, mean, in cm per 1.75 m of the figure's
height (its rest height, head over feet), as the issue measures.  Only the first ``--frames`` frames of
each clip are used (the Blender passes dominate the run time), from the first frame of motion: CMU's files
begin with a calibration T-pose (``backend.motion.calibration``), which an animator would not key.  ``--encode``:
Encode's own readout instead (the autoencoder's fit per segment, degrees and cm, as the panel shows it).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

SPACINGS = (1.0 / 6.0, 0.5, 1.0)  # seconds between keys


def heads(bpy, obj, bones, frames):
    import numpy as np
    out = []
    for f in frames:
        bpy.context.scene.frame_set(int(f))
        out.append([tuple(obj.matrix_world @ obj.pose.bones[b].head) for b in bones])
    return np.array(out)


def trim(obj, last: int) -> None:
    """Delete every key after frame ``last``."""
    import numpy as np

    from addon_helpers import channelbag
    for fc in channelbag(obj).fcurves:
        kp = fc.keyframe_points
        co = np.zeros(2 * len(kp), dtype=np.float32)
        kp.foreach_get("co", co)
        for i in reversed(np.flatnonzero(co[0::2] > last + 0.5)):
            kp.remove(kp[int(i)], fast=True)
        fc.update()


def first_frame(path: Path) -> int:
    """The scene frame (Import BVH puts the file's first frame on 1) where the motion starts."""
    from backend.formats.bvh import read_bvh
    from backend.motion.calibration import leading_calibration_frames
    clip = read_bvh(path)
    return 1 + leading_calibration_frames(clip.rotations, clip.frame_time)


def measure(bpy, path: Path, seconds: float, frames: int, first: int) -> tuple[float, float, int]:
    """(Inbetween's error, Bézier's error, keys) in cm per 1.75 m for one clip and key spacing, from scene
    frame ``first`` (``first_frame``) to ``frames``."""
    import numpy as np

    from addon_helpers import import_bvh, thin_keys
    from backend.motion.keyframes_np import every_k
    from blender_addon import bridge, preferences
    from blender_addon.io import bone_map as bone_map_io
    obj = import_bvh(path)
    try:
        trim(obj, frames)
        n = min(frames, int(obj.animation_data.action.frame_range[1]))
        info = bridge.describe(preferences.settings(bpy.context))
        _, joint_bones = bone_map_io.resolve(obj, info.names, info.parents)
        bones = [b for b in joint_bones if b]
        rest = np.array([tuple(obj.data.bones[b].head_local) for b in bones])
        height = float(np.ptp(rest[:, 2]))  # Blender's Z up after the import
        per = 175.0 / height
        fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
        every = max(2, int(round(seconds * fps)))
        keys = [first + k for k in every_k(n - first + 1, every)]
        between = [f for f in range(first, n + 1) if f not in set(keys)]
        truth = heads(bpy, obj, bones, between)
        thin_keys(obj, keys)
        bezier = float(np.linalg.norm(heads(bpy, obj, bones, between) - truth, axis=-1).mean()) * per
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.anim.splinetween_inbetween(editable=False) == {"FINISHED"}
        model = float(np.linalg.norm(heads(bpy, obj, bones, between) - truth, axis=-1).mean()) * per
        return model, bezier, len(keys)
    finally:
        bpy.data.objects.remove(obj)


def encode_fit(bpy, path: Path, frames: int) -> list:
    """Encode's own readout (per segment: degrees, cm) on the clip's first ``frames`` frames."""
    from addon_helpers import import_bvh
    from blender_addon.latent import core as latent_core
    obj = import_bvh(path)
    try:
        n = min(frames, int(obj.animation_data.action.frame_range[1]))
        assert bpy.ops.anim.splinetween_encode(frame_range="CUSTOM", frame_start=first_frame(path),
                                               frame_end=n) == {"FINISHED"}
        return [tuple(map(float, f)) for f in latent_core.fidelity(obj.splinetween_latent)]
    finally:
        bpy.data.objects.remove(obj)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="/work/data-cache/cmu-mocap-part/bvh",
                    help="the unpacked cmu-mocap-part archive's BVH folder")
    ap.add_argument("--clips", type=int, default=6, help="clips of subjects 05 and 09, spread over them")
    ap.add_argument("--frames", type=int, default=600, help="frames read of each clip (up to this scene frame)")
    ap.add_argument("--encode", action="store_true", help="Encode's readout (the autoencoder's fit per segment) "
                    "instead of Inbetween")
    ap.add_argument("--checkpoint", default="", help="another in-betweener (run in-process with PyTorch; default: "
                    "the shipped one on the built-in backend)")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import numpy as np

    from addon_helpers import bpy, disable_addon, fresh_scene_with_addon, prefs
    bpy = bpy()
    every = sorted(p for p in Path(args.data).glob("*.bvh") if p.name.startswith(("05_", "09_")))
    if not every:
        print(f"no CMU validation clips (05_*.bvh, 09_*.bvh) in {args.data}", file=sys.stderr)
        return 2
    clips = [every[i] for i in np.linspace(0, len(every) - 1, min(args.clips, len(every))).round().astype(int)]
    fresh_scene_with_addon(test_backend=False)
    if args.checkpoint:
        prefs().backend_mode, prefs().checkpoint = "IN_PROCESS", str(Path(args.checkpoint).resolve())
    if args.encode:
        fits = []
        for path in clips:
            fits += encode_fit(bpy, path, args.frames)
            print(f"  {path.name}: " + ", ".join(f"{d:.1f} deg / {c:.1f} cm" for d, c in fits[-3:]) + " ...", flush=True)
        disable_addon()
        f = np.array(fits)
        print(f"\n{len(clips)} CMU validation clips, first {args.frames} frames, Encode (the shipped autoencoder): "
              f"{len(f)} segments, mean {f[:, 0].mean():.2f} deg / {f[:, 1].mean():.2f} cm per segment, median "
              f"{np.median(f[:, 0]):.2f} / {np.median(f[:, 1]):.2f}, flagged as known poorly (over 5 deg or 4 cm): "
              f"{int(((f[:, 0] > 5) | (f[:, 1] > 4)).sum())}")
        return 0
    rows = {s: [] for s in SPACINGS}
    for path in clips:
        first = first_frame(path)
        for s in SPACINGS:
            rows[s].append(measure(bpy, path, s, args.frames, first))
            m, b, k = rows[s][-1]
            print(f"  {path.name} keys every {s:.3g} s ({k} keys): Inbetween {m:6.2f}  Bezier {b:6.2f} cm", flush=True)
    disable_addon()
    print(f"\n{len(clips)} CMU validation clips ({', '.join(p.stem for p in clips)}), first {args.frames} frames, "
          f"Import BVH, {args.checkpoint or 'the shipped in-betweener on the built-in backend'}; mean joint error "
          "between keys, cm per 1.75 m of height")
    print("| keys every | Inbetween | Blender's Bézier | ratio | clips worse than Bézier | subject 05 (modern dance: "
          "no training archive holds it) | subject 09 (runs) |\n|---|---:|---:|---:|---:|---:|---:|")
    for s, rs in rows.items():
        m, b = np.mean([r[0] for r in rs]), np.mean([r[1] for r in rs])
        worse = sum(r[0] > r[1] for r in rs)
        by = []
        for subject in ("05_", "09_"):
            mine = [r for p, r in zip(clips, rs, strict=True) if p.name.startswith(subject)]
            by.append(f"{np.mean([r[0] for r in mine]) / np.mean([r[1] for r in mine]):.2f} ×" if mine else "—")
        print(f"| {s:.3g} s | {m:.2f} | {b:.2f} | {m / b:.2f} × | {worse} of {len(rs)} | {by[0]} | {by[1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
