"""python -m training.mesh.cloth_gen --out DIR --count 300: cloth mesh sequences simulated by headless
Blender, written as PC2 caches for training the per-asset mesh models.

One asset, a square cloth grid (2 m x 2 m, 71 x 71 = 5,041 vertices by default, vertex ``j * n + i``
at grid column ``i``, row ``j``), is simulated in many randomised scenarios:

* flag:  hangs vertically (plane y = 0, x in [-1, 1], z in [1, 3]), pinned along its x = -1 edge (the
  pole), blown by a Wind field with random strength, noise, flow and direction: mostly across the
  flag from the pole, 10-50 degrees through its plane (wind in the plane pushes nothing).
* drape: starts horizontal above a ground plane and a random obstacle (sphere, cube, cylinder or
  none), pinned at no corner, one corner or the two corners of one edge; sometimes a weak wind.

Both draw random stretch, shear and bending stiffness, mass and air damping.  Every sequence is
reproducible from ``(seed, index)``.  Positions are the evaluated cloth vertices in object space;
the cloth object's transform is the identity, so they are world space too.

Output: ``DIR/{train,val,test}/cloth_XXXX.pc2`` (index % 10 == 8: val, == 9: test, else train) and
``DIR/manifest.json`` (every sequence's scenario, split, frames and seconds).  A sequence whose
solver blows up (NaN, or a vertex beyond 10 m) is reported and left out.  Re-running the same
command resumes: sequences already written (or already left out) are not simulated again.  This is the one module of ``training`` that
imports ``bpy``.

Longer than 300 lines: the scenario sampler and the Blender scene it builds share every parameter, read together.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import bpy
import numpy as np

from backend.formats.atomic import write_text
from backend.formats.pc2 import write_pc2

ROOT = Path(__file__).resolve().parents[2]
ASSET_RESOLUTION = 71  # vertices per side: 71 x 71 = 5,041
ASSET_SIZE = 2.0  # metres per side
FPS = 30
EXPLODED_M = 10.0  # a vertex further than this from the origin means the solver blew up
RECORD = "RECORD "  # prefix of a worker's result line on stdout


@dataclass
class GenConfig:
    out: str = ""
    count: int = 300
    frames: int = 72
    seed: int = 0
    resolution: int = ASSET_RESOLUTION
    quality: int = 3  # cloth solver steps per frame: 5 (Blender's default) is slower and no steadier here
    collision_quality: int = 2
    jobs: int = 1

    def validate(self):
        if self.count < 1:
            raise ValueError(f"--count {self.count}: make at least 1 sequence")
        if self.frames < 2:
            raise ValueError(f"--frames {self.frames}: a sequence needs at least 2 frames")
        if self.resolution < 3:
            raise ValueError(f"--resolution {self.resolution}: the grid needs at least 3 vertices per side")
        if self.seed < 0:
            raise ValueError(f"--seed {self.seed}: use a seed of 0 or more")
        if self.jobs < 1:
            raise ValueError(f"--jobs {self.jobs}: use at least 1 worker")
        if not 1 <= self.quality <= 20 or not 1 <= self.collision_quality <= 20:
            raise ValueError("--quality and --collision-quality must be between 1 and 20")


@dataclass
class Scenario:
    """Everything random about one sequence (lengths in metres, angles in degrees)."""
    kind: str  # flag | drape
    tension: float
    compression: float
    shear: float
    bending: float
    mass: float  # kg per vertex, Blender's convention
    air_damping: float
    pin: str  # edge | none | corner | two_corners
    pin_corners: list = field(default_factory=list)  # (i, j) grid corners, drape only
    wind_strength: float = 0.0  # 0: no wind field
    wind_yaw: float = 0.0  # from +x (along the flag, away from the pole) towards +y
    wind_pitch: float = 0.0
    wind_noise: float = 0.0
    wind_flow: float = 0.0
    wind_seed: int = 1
    obstacle: str = "none"  # sphere | cube | cylinder | none (drape)
    obstacle_size: float = 0.0  # radius of the sphere and cylinder, half the cube's side
    obstacle_height: float = 0.0  # cylinder height
    obstacle_offset: list = field(default_factory=lambda: [0.0, 0.0])
    drop_height: float = 0.0  # cloth height above the obstacle's top (or the ground) at rest


def split_of(index: int) -> str:
    return {8: "val", 9: "test"}.get(index % 10, "train")


def _log_uniform(rng, lo, hi):
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def sample_scenario(seed: int, index: int) -> Scenario:
    """The scenario of sequence ``index``: a pure function of ``(seed, index)``."""
    rng = np.random.default_rng([seed, index])
    kind = "flag" if rng.random() < 0.5 else "drape"
    stretch = _log_uniform(rng, 5.0, 40.0)
    common = dict(kind=kind, tension=stretch, compression=stretch * rng.uniform(0.5, 1.0),
                  shear=_log_uniform(rng, 2.0, 15.0), bending=_log_uniform(rng, 0.05, 5.0),
                  mass=float(rng.uniform(0.15, 0.8)), air_damping=float(rng.uniform(0.5, 3.0)))
    if kind == "flag":
        # Blender's wind pushes along face normals only: it must cross the cloth at an angle to act
        yaw = float(rng.uniform(10.0, 50.0) * rng.choice([-1, 1]))
        return Scenario(pin="edge", wind_strength=_log_uniform(rng, 4000.0, 40000.0), wind_yaw=yaw,
                        wind_pitch=float(rng.uniform(-10.0, 10.0)), wind_noise=float(rng.uniform(0.0, 3.0)),
                        wind_flow=float(rng.uniform(0.0, 1.0)), wind_seed=int(rng.integers(1, 10_000)), **common)
    obstacle = str(rng.choice(["sphere", "cube", "cylinder", "none"], p=[0.3, 0.3, 0.25, 0.15]))
    pin = str(rng.choice(["none", "corner", "two_corners"], p=[0.5, 0.3, 0.2]))
    corners = [(0, 0), (1, 0), (1, 1), (0, 1)]  # in order round the square: neighbours share an edge
    c = int(rng.integers(4))
    pin_corners = {"none": [], "corner": [corners[c]], "two_corners": [corners[c], corners[(c + 1) % 4]]}[pin]
    s = Scenario(pin=pin, pin_corners=[list(p) for p in pin_corners], obstacle=obstacle,
                 obstacle_size=float(rng.uniform(0.25, 0.6)), obstacle_height=float(rng.uniform(0.4, 1.2)),
                 obstacle_offset=[float(v) for v in rng.uniform(-0.4, 0.4, 2)],
                 drop_height=float(rng.uniform(0.1, 0.6)), **common)
    if obstacle == "none":
        s.obstacle_size = s.obstacle_height = 0.0
    if rng.random() < 0.3:
        s.wind_strength, s.wind_yaw = float(rng.uniform(500.0, 3000.0)), float(rng.uniform(-180.0, 180.0))
        s.wind_pitch, s.wind_noise = float(rng.uniform(-30.0, 0.0)), float(rng.uniform(0.0, 1.0))
        s.wind_seed = int(rng.integers(1, 10_000))
    return s


def default_flag() -> Scenario:
    """The flag in the shipped asset .blend: Blender's default cloth in a strong wind with gusts."""
    return Scenario(kind="flag", tension=15.0, compression=15.0, shear=5.0, bending=0.5, mass=0.3,
                    air_damping=1.0, pin="edge", wind_strength=20000.0, wind_yaw=20.0, wind_pitch=0.0,
                    wind_noise=1.5, wind_flow=0.3, wind_seed=7)


def obstacle_top(s: Scenario) -> float:
    return {"sphere": 2 * s.obstacle_size, "cube": 2 * s.obstacle_size,
            "cylinder": s.obstacle_height, "none": 0.0}[s.obstacle]


def rest_positions(s: Scenario, resolution: int) -> np.ndarray:
    """[V, 3] rest positions of the grid for a scenario (vertex j * n + i at column i, row j)."""
    u = np.linspace(-ASSET_SIZE / 2, ASSET_SIZE / 2, resolution)
    x, y = (a.ravel() for a in np.meshgrid(u, u))  # x runs fastest, as in Blender's grid
    if s.kind == "flag":
        return np.stack([x, np.zeros_like(x), y + 2.0], 1)
    return np.stack([x, y, np.full_like(x, obstacle_top(s) + s.drop_height)], 1)


def pinned_vertices(s: Scenario, resolution: int) -> list[int]:
    n = resolution
    if s.pin == "edge":
        return [j * n for j in range(n)]  # column i = 0: the x = -1 edge
    return [j * (n - 1) * n + i * (n - 1) for i, j in s.pin_corners]


# --- Blender ----------------------------------------------------------------------------------

def build_asset(resolution: int = ASSET_RESOLUTION):
    """Empty the scene and add the cloth grid (identity transform, flat in z = 0); returns the object."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    # Blender 5.0 counts subdivisions as faces per side: n - 1 of them give n vertices per side
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=resolution - 1, y_subdivisions=resolution - 1,
                                    size=ASSET_SIZE)
    obj = bpy.context.object
    obj.name = obj.data.name = "cloth"
    if len(obj.data.vertices) != resolution ** 2:
        raise RuntimeError(f"Blender made {len(obj.data.vertices)} grid vertices, expected {resolution ** 2}")
    return obj


def _direction(yaw, pitch):
    y, p = math.radians(yaw), math.radians(pitch)
    return (math.cos(y) * math.cos(p), math.sin(y) * math.cos(p), math.sin(p))


def _add_wind(s: Scenario, target):
    from mathutils import Vector
    d = Vector(_direction(s.wind_yaw, s.wind_pitch))
    bpy.ops.object.effector_add(type="WIND", location=tuple(Vector(target) - 3 * d))
    wind = bpy.context.object
    wind.name = "wind"
    wind.rotation_mode = "QUATERNION"
    wind.rotation_quaternion = d.to_track_quat("Z", "Y")  # a wind field blows along its local +z
    wind.field.strength, wind.field.noise, wind.field.flow = s.wind_strength, s.wind_noise, s.wind_flow
    wind.field.seed = s.wind_seed
    return wind


def _add_collider(obj):
    obj.modifiers.new("Collision", "COLLISION")
    return obj


def _add_obstacles(s: Scenario):
    bpy.ops.mesh.primitive_plane_add(size=8.0)
    _add_collider(bpy.context.object).name = "ground"
    (ox, oy), r = s.obstacle_offset, s.obstacle_size
    if s.obstacle == "sphere":
        bpy.ops.mesh.primitive_uv_sphere_add(radius=r, location=(ox, oy, r), segments=32, ring_count=16)
    elif s.obstacle == "cube":
        bpy.ops.mesh.primitive_cube_add(size=2 * r, location=(ox, oy, r))
    elif s.obstacle == "cylinder":
        h = s.obstacle_height
        bpy.ops.mesh.primitive_cylinder_add(radius=r, depth=h, location=(ox, oy, h / 2), vertices=32)
    else:
        return
    _add_collider(bpy.context.object).name = s.obstacle


def setup_scenario(obj, s: Scenario, frames: int, quality: int = 3, collision_quality: int = 2):
    """Shape the grid, pin it, add the cloth modifier, the wind and the colliders for scenario ``s``."""
    n = int(round(math.sqrt(len(obj.data.vertices))))
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end, scene.render.fps = 1, frames, FPS
    rest = rest_positions(s, n)
    obj.data.vertices.foreach_set("co", rest.astype(np.float32).ravel())
    obj.data.update()
    cloth = obj.modifiers.new("Cloth", "CLOTH")
    cs = cloth.settings
    cs.quality, cs.mass, cs.air_damping = quality, s.mass, s.air_damping
    cs.tension_stiffness, cs.compression_stiffness = s.tension, s.compression
    cs.shear_stiffness, cs.bending_stiffness = s.shear, s.bending
    pins = pinned_vertices(s, n)
    if pins:
        obj.vertex_groups.new(name="pin").add(pins, 1.0, "REPLACE")
        cs.vertex_group_mass = "pin"
    cloth.collision_settings.collision_quality = collision_quality
    cloth.collision_settings.use_self_collision = False  # far slower and rarely reached here
    cloth.point_cache.frame_start, cloth.point_cache.frame_end = 1, frames
    if s.kind == "drape":
        _add_obstacles(s)
    if s.wind_strength > 0:
        _add_wind(s, rest.mean(0))
    bpy.context.view_layer.objects.active = obj
    return cloth


def simulate(obj, frames: int) -> np.ndarray:
    """Step the scene from frame 1 to ``frames`` (cloth needs every frame in order) and read the
    evaluated vertex positions: float32 [frames, V, 3].  Stops early at NaN or explosion."""
    scene = bpy.context.scene
    buf = np.empty(len(obj.data.vertices) * 3, np.float32)
    out = np.empty((frames, len(obj.data.vertices), 3), np.float32)
    for f in range(1, frames + 1):
        scene.frame_set(f)
        ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        ev.data.attributes["position"].data.foreach_get("vector", buf)
        out[f - 1] = buf.reshape(-1, 3)
        if not np.isfinite(buf).all() or np.abs(buf).max() > EXPLODED_M:
            return out[:f]
    return out


def explosion(frames: np.ndarray, expected: int) -> str | None:
    """Why a simulated sequence is unusable, or None."""
    if len(frames) < expected or not np.isfinite(frames).all():
        return f"blew up at frame {len(frames)} (NaN or a vertex beyond {EXPLODED_M:g} m)"
    far = np.linalg.norm(frames, axis=-1).max()
    if far > EXPLODED_M:
        return f"blew up: a vertex reached {far:.1f} m from the origin"
    return None


def save_asset_blend(path, resolution: int = ASSET_RESOLUTION, frames: int = 60) -> Path:
    """A small .blend with the cloth object set up as the default flag (and its wind field):
    frames 1..``frames`` at 30 fps, ready to press play."""
    path = Path(path).resolve()
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK):
        raise ValueError(f"{path.parent} is not a writable folder; create it or choose another")
    obj = build_asset(resolution)
    setup_scenario(obj, default_flag(), frames)
    bpy.context.scene.frame_set(1)
    bpy.ops.wm.save_as_mainfile(filepath=str(path), compress=True, check_existing=False)
    return path


# --- generating a data set ------------------------------------------------------------------------

def sequence_path(out: Path, index: int) -> Path:
    return Path(out) / split_of(index) / f"cloth_{index:04d}.pc2"


def generate_one(cfg: GenConfig, index: int) -> dict:
    """Simulate sequence ``index`` and write its PC2 (unless it blew up); returns its manifest entry."""
    t0 = time.perf_counter()
    s = sample_scenario(cfg.seed, index)
    obj = build_asset(cfg.resolution)
    setup_scenario(obj, s, cfg.frames, cfg.quality, cfg.collision_quality)
    frames = simulate(obj, cfg.frames)
    problem = explosion(frames, cfg.frames)
    path = sequence_path(cfg.out, index)
    if problem is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_pc2(path, frames, start=1.0, rate=1.0)
    return {"index": index, "file": str(path.relative_to(cfg.out)), "split": split_of(index),
            "status": "ok" if problem is None else "skipped", "problem": problem,
            "frames": len(frames), "seconds": round(time.perf_counter() - t0, 3), "scenario": asdict(s)}


def _options(cfg: GenConfig) -> dict:
    """The settings a data set must keep when it is resumed."""
    return {k: getattr(cfg, k) for k in ("seed", "frames", "resolution", "quality", "collision_quality")}


def _load_manifest(cfg: GenConfig) -> dict:
    path = Path(cfg.out) / "manifest.json"
    if not path.exists():
        return {}
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} cannot be read ({e}); move it away to start afresh") from None
    if old.get("options") != _options(cfg):
        raise ValueError(f"{cfg.out} holds a data set made with {old.get('options')}; resume it with the same "
                         f"options or choose another --out (asked for {_options(cfg)})")
    return {e["index"]: e for e in old.get("sequences", [])}


def _write_manifest(cfg: GenConfig, entries: dict):
    seqs = [entries[i] for i in sorted(entries)]
    manifest = {"asset": {"name": "cloth", "vertices": cfg.resolution ** 2, "resolution": cfg.resolution,
                          "size_m": ASSET_SIZE, "vertex_order": "j * resolution + i (i along x, j along y)"},
                "options": _options(cfg), "fps": FPS, "count": cfg.count, "positions": "object space = world space",
                "split_rule": "index % 10 == 8: val, == 9: test, else train",
                "splits": {k: sum(e["split"] == k and e["status"] == "ok" for e in seqs)
                           for k in ("train", "val", "test")},
                "skipped": [e["index"] for e in seqs if e["status"] != "ok"], "sequences": seqs}
    path = Path(cfg.out) / "manifest.json"
    write_text(path, json.dumps(manifest, indent=1), path.with_name(path.name + ".tmp"))


def _pending(cfg: GenConfig, entries: dict) -> list[int]:
    todo = []
    for i in range(cfg.count):
        done = sequence_path(cfg.out, i).exists() or entries.get(i, {}).get("status") == "skipped"
        if not done:
            todo.append(i)
        elif i not in entries:  # written just before an interruption: the scenario is reproducible
            entries[i] = {"index": i, "file": str(sequence_path(cfg.out, i).relative_to(cfg.out)),
                          "split": split_of(i), "status": "ok", "problem": None, "frames": cfg.frames,
                          "seconds": None, "scenario": asdict(sample_scenario(cfg.seed, i))}
    return todo


def _worker_cmd(cfg: GenConfig, indices: list[int]) -> list[str]:
    return [sys.executable, "-m", "training.mesh.cloth_gen", "--out", str(cfg.out), "--count", str(cfg.count),
            "--frames", str(cfg.frames), "--seed", str(cfg.seed), "--resolution", str(cfg.resolution),
            "--quality", str(cfg.quality), "--collision-quality", str(cfg.collision_quality),
            "--indices", ",".join(map(str, indices))]


def _run_workers(cfg: GenConfig, todo: list[int]):
    """Yield manifest entries from ``cfg.jobs`` worker processes, each simulating every jobs-th index."""
    results = queue.Queue()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen(_worker_cmd(cfg, todo[k::cfg.jobs]), cwd=ROOT, env=env, text=True,
                              stdout=subprocess.PIPE) for k in range(min(cfg.jobs, len(todo)))]

    def pump(proc):
        for line in proc.stdout:  # Blender prints its own lines too; ours carry the prefix
            if line.startswith(RECORD):
                results.put(json.loads(line[len(RECORD):]))
        results.put(None)

    for p in procs:
        threading.Thread(target=pump, args=(p,), daemon=True).start()
    running = len(procs)
    while running:
        entry = results.get()
        if entry is None:
            running -= 1
        else:
            yield entry
    bad = [code for code in (p.wait() for p in procs) if code]
    if bad:
        raise RuntimeError(f"{len(bad)} worker(s) failed (exit {bad}); re-run the same command to resume")


def generate(cfg: GenConfig, log=print) -> dict:
    """Make (or finish) the data set in ``cfg.out``; returns the manifest's entries by index."""
    cfg.validate()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    entries = _load_manifest(cfg)
    todo = _pending(cfg, entries)
    log(f"{cfg.count - len(todo)} of {cfg.count} sequences already there; {len(todo)} to simulate "
        f"({cfg.resolution ** 2} vertices, {cfg.frames} frames, {cfg.jobs} job(s)) into {out}")
    stream = (generate_one(cfg, i) for i in todo) if cfg.jobs == 1 else _run_workers(cfg, todo)
    t0 = time.perf_counter()
    for k, entry in enumerate(stream, 1):
        entries[entry["index"]] = entry
        _write_manifest(cfg, entries)
        rate = k / (time.perf_counter() - t0) * 60
        eta = (len(todo) - k) / rate if rate else 0.0
        note = "" if entry["status"] == "ok" else f"  SKIPPED: {entry['problem']}"
        log(f"[{k:4d}/{len(todo)}] cloth_{entry['index']:04d} {entry['split']:5s} "
            f"{entry['scenario']['kind']:5s} {entry['frames']} frames {entry['seconds']:6.1f} s "
            f"({entry['seconds'] / max(entry['frames'], 1) * 1000:.0f} ms/frame)  "
            f"{rate:.1f} seq/min, ETA {eta:.1f} min{note}", flush=True)
    _write_manifest(cfg, entries)
    return entries


def _writable_folder(path: Path) -> str | None:
    """Why ``path`` cannot hold the data set, or None."""
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, not a folder; choose another --out"
    if not os.access(probe, os.W_OK):
        return f"{probe} is not writable; choose a writable --out"
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m training.mesh.cloth_gen", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="data set folder (created; re-run to resume)")
    ap.add_argument("--count", type=int, default=300, help="sequences to make (default 300)")
    ap.add_argument("--frames", type=int, default=72, help="frames per sequence at 30 fps (default 72)")
    ap.add_argument("--seed", type=int, default=0, help="data set seed; sequence i is drawn from (seed, i)")
    ap.add_argument("--resolution", type=int, default=ASSET_RESOLUTION,
                    help=f"grid vertices per side (default {ASSET_RESOLUTION}: the shipped asset; "
                         "smaller only for tests)")
    ap.add_argument("--quality", type=int, default=GenConfig.quality, help="cloth solver steps per frame")
    ap.add_argument("--collision-quality", type=int, default=GenConfig.collision_quality,
                    help="cloth collision steps per solver step")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--asset-blend", metavar="PATH",
                    help="only write the cloth asset .blend (default flag, frames 1..60) to PATH")
    ap.add_argument("--indices", help="internal: the comma-separated indices one worker simulates")
    args = ap.parse_args(argv)
    try:
        if args.asset_blend:
            print(f"wrote {save_asset_blend(args.asset_blend, args.resolution)}")
            return 0
        if not args.out:
            raise ValueError("no --out: pass the folder for the data set (or --asset-blend PATH)")
        cfg = GenConfig(out=args.out, count=args.count, frames=args.frames, seed=args.seed,
                        resolution=args.resolution, quality=args.quality,
                        collision_quality=args.collision_quality, jobs=args.jobs)
        cfg.validate()
        problem = _writable_folder(Path(cfg.out))
        if problem:
            raise ValueError(problem)
        if args.indices is not None:  # a worker: one result line per sequence for the coordinator
            for i in (int(v) for v in args.indices.split(",") if v):
                print(RECORD + json.dumps(generate_one(cfg, i)), flush=True)
            return 0
        generate(cfg)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:  # a worker died: what it finished is kept
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
