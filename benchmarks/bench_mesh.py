"""Speed of mesh sequences in headless Blender (the bpy module), model in-process: medians in ms.

    python benchmarks/bench_mesh.py [--repeats 11] [--threads 1] [--autoencoder AE.json]

The sequence is the example cloth flag (examples/cloth/cloth_flag.blend, 71 x 71 = 5,041 vertices),
simulated once over frames 1-60 and then played from a PC2 file through a MeshCache modifier on a
grid (so reading it measures the add-on, not the cloth solver).

* Encode + decode (the issue's budget, 200 ms): the backend's ``mesh_encode`` request with the
  neutral decode of every segment, joining the segments and writing the PC2 file -- what Encode
  Mesh does after reading the frames.  Also Encode Mesh end to end (the operator: reading the 60
  evaluated frames, the above, the modifier and its driver, the bookkeeping).
* Reading the evaluated sequence: ``mesh_io.read_mesh_sequence`` over 60 frames (frame_set, the
  depsgraph evaluating the MeshCache modifier, ``foreach_get`` of the positions).
* One slider change -> PC2 -> evaluated mesh: setting a segment's Amplify (a new value each time,
  so never from the cache) runs its update callback, which decodes, rewrites the PC2 file and tags
  the object; then the depsgraph evaluates the mesh at the current frame and its positions are read.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-bench-"))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
BUDGET = {"encode + decode + PC2 write": 200.0}  # the number

from bench_latent import Timers  # noqa: E402  (the script's folder is on sys.path)


def med(xs) -> float:
    return 1e3 * statistics.median(xs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--autoencoder", help="mesh autoencoder .json (default: the shipped cloth one)")
    args = ap.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = os.environ["SPLINETWEEN_THREADS"] = str(args.threads)
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)

    from addon_helpers import bpy
    bpy = bpy()
    import mesh_addon_helpers
    from backend.mesh.sequences import join_frames
    from blender_addon import bridge
    from blender_addon.io import cache as mesh_cache
    from blender_addon.io import mesh as mesh_io
    ckpt = Path(args.autoencoder) if args.autoencoder else mesh_addon_helpers.MESH_AUTOENCODER
    if not ckpt.exists():
        raise SystemExit(f"bench_mesh: no mesh autoencoder at {ckpt} (pass --autoencoder)")
    flag = mesh_addon_helpers.flag()
    mesh_addon_helpers.setup_scene()
    mesh_addon_helpers.prefs().mesh_autoencoder = str(ckpt)
    obj = mesh_addon_helpers.cached_grid(flag["pc2"], "Flag")
    frames = mesh_io.read_mesh_sequence(bpy.context, obj, 1, 60)
    settings = bridge.BackendSettings(mode="IN_PROCESS", device="cpu")
    header = {"op": "mesh_encode", "checkpoint": str(ckpt), "name": "flag", "decode": True}
    out_path = mesh_addon_helpers.session_dir() / "bench.pc2"
    rows: dict[str, float] = {}

    bridge.request(settings, header, {"frames": frames})  # load the model
    enc, model = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        reply, out = bridge.request(settings, header, {"frames": frames})
        t1 = time.perf_counter()
        at = np.cumsum([0] + [b - a + 1 for a, b in reply["segments"]])
        parts = [out["vertices"][at[s]:at[s + 1]] for s in range(len(reply["segments"]))]
        mesh_cache.write(out_path, join_frames(parts), 1)
        enc.append(time.perf_counter() - t)
        model.append(t1 - t)
    rows["encode + decode + PC2 write"] = med(enc)
    rows["  of which the model (encode, decode)"] = med(model)
    # Baseline in the same run: the linear part alone (PCA projection and reconstruction with the
    # checkpoint's basis) plus the same PC2 write -- what the transformer adds on top of it.
    from backend.mesh.engine import MeshEngine
    from backend.mesh.sequences import project, reconstruct
    basis = MeshEngine(ckpt, "cpu").basis
    lin = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        mesh_cache.write(out_path, reconstruct(project(frames, basis), basis), 1)
        lin.append(time.perf_counter() - t)
    rows["baseline: PCA round trip + PC2 write"] = med(lin)

    reads = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        mesh_io.read_mesh_sequence(bpy.context, obj, 1, 60)
        reads.append(time.perf_counter() - t)
    rows["read the evaluated sequence (60 frames)"] = med(reads)

    ops = []
    for i in range(args.repeats):
        t = time.perf_counter()
        assert bpy.ops.anim.splinetween_mesh_encode(frame_range="CUSTOM", frame_start=1, frame_end=60) == {"FINISHED"}
        ops.append(time.perf_counter() - t)
        if i < args.repeats - 1:
            bpy.ops.anim.splinetween_remove()
    rows["Encode Mesh operator, end to end"] = med(ops)

    timers = Timers()
    from blender_addon.latent import decode as latent_decode
    timers.wrap(latent_decode, "decoded", "model")
    timers.wrap(mesh_cache, "write", "PC2 write")
    st = obj.splinetween_latent
    bpy.context.scene.frame_set(30)
    sliders, evals, parts = [], [], defaultdict(list)
    for i in range(args.repeats):
        timers.now.clear()
        t = time.perf_counter()
        st.segments[0].amplify = 1.0 + 0.05 * (i + 1)  # a new value: never from the cache
        t1 = time.perf_counter()
        dg = bpy.context.evaluated_depsgraph_get()
        mesh_io.evaluated_positions(obj, dg)
        t2 = time.perf_counter()
        assert st.status == "", st.status
        sliders.append(t2 - t)
        evals.append(t2 - t1)
        for k, v in timers.now.items():
            parts[k].append(v)
    rows["slider -> PC2 -> evaluated mesh"] = med(sliders)
    for k, v in parts.items():
        rows[f"  of which {k}"] = med(v)
    rows["  of which evaluating the mesh and reading it"] = med(evals)
    bpy.ops.anim.splinetween_remove()

    print(f"bench_mesh: {ckpt.name}, 5,041 vertices x 60 frames, {args.threads} thread(s), medians of {args.repeats}")
    print(f"  encode + decode + PC2 write / baseline: {rows['encode + decode + PC2 write'] / rows['baseline: PCA round trip + PC2 write']:.1f}x")
    for k, v in rows.items():
        budget = BUDGET.get(k)
        print(f"  {k:<48} {v:8.1f} ms" + (f"   (budget {budget:g} ms: {'ok' if v < budget else 'OVER'})"
                                              if budget else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
