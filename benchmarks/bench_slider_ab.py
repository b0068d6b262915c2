"""Two source trees' slider, side by side on a shared machine: a paired A/B of one slider change.

    python benchmarks/bench_slider_ab.py TREE_A TREE_B [--rounds 40] [--block 20] [--segments 4 5] [--backwards]

Each tree's add-on runs in its own headless Blender (the bpy module), on benchmarks/bench_latent.py's 300
frames of walking after Encode; the two processes take turns, a block of slider changes each (Amplify
of the given segments, a new value every change, then the re-decode and the key writes, model
in-process, one thread), so both see the same moments of the machine.  Prints each tree's median and,
per round, how much B took more or less than A.  On this 2-core machine the level of a run moves by
up to 25 % within minutes (a neighbour's load); a difference between two trees holds across those
moves only when measured like this.  E.g. the tree before a change:
``git archive HEAD~1 | tar -x -C /tmp/before``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(tree: Path, name: str, turn: Path, rounds: int, block: int, segments, backwards: bool) -> None:
    """One side: set up the scene with ``tree``'s add-on, then a block of changes whenever ``turn`` names it."""
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="splinetween-ab-"))
    sys.path[:0] = [str(tree), str(tree / "tests"), str(ROOT / "benchmarks")]
    import torch
    torch.set_num_threads(1)
    import bpy
    from bench_latent import clip_300

    import blender_addon
    from addon_helpers import fresh_scene_with_addon, import_bvh, prefs
    from blender_addon.latent import core as latent_core
    from blender_addon.latent import slider
    assert Path(blender_addon.__file__).resolve().is_relative_to(tree.resolve()), blender_addon.__file__
    fresh_scene_with_addon()
    prefs().backend_mode = "IN_PROCESS"
    obj = import_bvh(clip_300(ROOT, Path(tempfile.mkdtemp(prefix="splinetween-ab-")), backwards=backwards))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.anim.splinetween_encode(frame_range="ACTION") == {"FINISHED"}
    st = obj.splinetween_latent
    segs = [st.segments[s - 1] for s in segments]

    def change(value: float) -> None:
        with latent_core.suspended():
            for seg in segs:
                seg.amplify = value
        slider.sync_quietly(obj)
    for i in range(30):  # (the first decodes warm the model up)
        change(1.5 + 0.001 * i)
    with open(turn, "a") as f:
        f.write("ready")
    other, out, k = "B" if name == "A" else "A", [], 0
    for _ in range(rounds):
        while turn.read_text() != name:
            time.sleep(0.0005)
        times = []
        for _ in range(block):
            t = time.perf_counter()
            change(1.6 + 0.0001 * k)
            times.append(1e3 * (time.perf_counter() - t))
            k += 1
        assert st.status == "", st.status
        out.append(times)
        turn.write_text(other)
    print(json.dumps(out))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--block", type=int, default=20)
    ap.add_argument("--segments", type=int, nargs="+", default=[4, 5], help="1-based segments whose Amplify moves")
    ap.add_argument("--backwards", action="store_true", help="the clip played backwards")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(Path(args.child[0]), args.child[1], Path(os.environ["SPLINETWEEN_AB_TURN"]), args.rounds, args.block,
              args.segments, args.backwards)
        return 0
    turn = Path(tempfile.mkdtemp(prefix="splinetween-ab-")) / "turn"
    turn.write_text("")
    env = dict(os.environ, OMP_NUM_THREADS="1", SPLINETWEEN_AB_TURN=str(turn))
    common = ["--rounds", str(args.rounds), "--block", str(args.block), "--segments", *map(str, args.segments)]
    common += ["--backwards"] if args.backwards else []
    procs = [subprocess.Popen([sys.executable, __file__, str(tree), str(tree), "--child", str(tree.resolve()), name,
                               *common], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for name, tree in (("A", args.a), ("B", args.b))]
    while turn.read_text().count("ready") < 2:
        if any(p.poll() is not None for p in procs):
            print("a side failed to start (run it alone to see why)", file=sys.stderr)
            return 1
        time.sleep(0.05)
    turn.write_text("A")
    a, b = (json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs)
    ma, mb = [statistics.median(r) for r in a], [statistics.median(r) for r in b]
    diff = [y - x for x, y in zip(ma, mb, strict=True)]
    which = f"segments {'-'.join(map(str, args.segments))}" + (", played backwards" if args.backwards else "")
    print(f"bench_slider_ab: one slider change ({which}), medians of {args.block} changes per round, "
          f"{args.rounds} rounds each, ms")
    print(f"  A {args.a}: {statistics.median(ma):.3f}")
    print(f"  B {args.b}: {statistics.median(mb):.3f}")
    print(f"  B - A per round: median {statistics.median(diff):+.3f} ms, B faster in {sum(d < 0 for d in diff)} of "
          f"{len(diff)} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
