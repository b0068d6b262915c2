"""Issue 16 item 5's benchmark: a latent slider on the data set's rig (the cached 4x4 maps of
``core/slider_math``) and on a Mixamo-named copy with twist bones and an A-pose rest (the conversion's
path, ``latent/armature_retarget``).

    python benchmarks/bench_rig_latent.py [--repeats 15] [--threads 1]

The walk, every frame keyed, frames 1-121 encoded, in-process; Amplify on segment 2.  Per rig, the
median time of a slider change to a new value (decoded by the model) and between two values already
decoded (the layer's own work: composition, conversion, channel values, the write).
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_addon import bench_args  # noqa: E402


def main(argv=None) -> int:
    args = bench_args(argv, __doc__)
    import bpy
    from bench_bone_map import mixamo_copy

    from addon_helpers import copy_armature, fresh_scene_with_addon, import_bvh, prefs
    from latent_helpers import AUTOENCODER

    fresh_scene_with_addon()
    prefs().backend_mode = "IN_PROCESS"
    prefs().autoencoder = str(AUTOENCODER)
    src = import_bvh()
    rigs = {"data set's rig": src, "Mixamo, twist bones, A-pose": mixamo_copy(bpy, src, copy_armature)}
    print(f"Amplify on segment 2 of frames 1-121 (every frame keyed), in-process, {args.threads} thread(s); "
          f"medians of {args.repeats}")
    for name, rig in rigs.items():
        obj = copy_armature(rig)
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.anim.splinetween_encode(frame_range="CUSTOM", frame_start=1, frame_end=121) == {"FINISHED"}
        st = obj.splinetween_latent
        new, cached = [], []
        for i in range(args.repeats + 3):
            t = time.perf_counter()
            st.segments[1].amplify = 1.2 + 0.01 * i  # a new value: decoded
            new.append(time.perf_counter() - t)
            assert st.status == "", st.status
        for i in range(args.repeats + 3):
            t = time.perf_counter()
            st.segments[1].amplify = 1.2 + 0.01 * (i % 2)  # decoded before: the layer's work only
            cached.append(time.perf_counter() - t)
        print(f"  {name:30s} new value {1e3 * statistics.median(new[3:]):6.1f} ms; "
              f"a value decoded before {1e3 * statistics.median(cached[3:]):6.1f} ms")
        bpy.data.objects.remove(obj)
    return 0


if __name__ == "__main__":
    sys.exit(main())
