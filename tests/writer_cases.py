"""The rig and the fills behind tests/fixtures/writer_keys.npz, the key writer's reference.

tests/fixtures/make_writer_keys.py built the rig once from the fixture BVH, ran the Inbetween writer
of its day (the per-key writer, before issue 19) on it and stored the keys it wrote;
tests/test_addon_writer.py rebuilds the same rig from the stored keys and runs today's writer.

The rig: ten bones of the fixture walk over frames 1-41, key poses every 10 frames, in every
rotation mode (quaternion, axis-angle, the six Euler orders), with Euler keys several turns away
from the principal angles, dense keys inside the gaps on one bone, a missing gap-end key, a locked
curve, a curve with a Noise modifier, a position bone without location curves, and key attributes
(interpolation, handle types, key types, easing, handles) drawn at random so that every one of
them is checked to survive, except on two bones whose keys are plain imported ones.  The "model
output" is the file's own motion with four bones spun by several turns across the clip, so written
Euler angles cross +-180 degrees and keep turning.
"""
from __future__ import annotations

import numpy as np

from addon_helpers import ROOT, TEST_CLIP, bpy, fresh_scene_with_addon, import_bvh

FIXTURE = ROOT / "tests" / "fixtures" / "writer_keys.npz"
FRAMES = 41
KEYS = [1, 11, 21, 31, 41]
BONES = ["Hips", "Spine", "Chest", "Neck", "Head", "Shoulder_L", "UpperArm_L", "LowerArm_L", "UpperLeg_L", "Hand_L"]
MODES = ["ZXY", "QUATERNION", "AXIS_ANGLE", "XYZ", "XZY", "YXZ", "YZX", "ZYX", "ZXY", "AXIS_ANGLE"]
POSITION_BONES = ["Hips", "Spine"]  # Spine has no location curves: the writer makes them
ROTATION_BONES = BONES  # every bone's rotation is written
SPIN = {"Shoulder_L": 31.0, "LowerArm_L": -37.0, "UpperLeg_L": 43.0, "Hand_L": 29.0}  # degrees per frame
TURNS = {"Neck": (1, -2, 3), "LowerArm_L": (-1, 0, 2)}  # whole turns added to the Euler keys
DENSE = "Chest"  # keeps a key on every frame (replaced inside the gaps)
PLAIN = ("Hips", "UpperLeg_L")  # keys as the BVH importer makes them: LINEAR, AUTO_CLAMPED, KEYFRAME
PLAIN_EXTRA = [6, 36]  # and two keys inside the gaps (their curves are written together, apart from the rest)
MISSING = ('pose.bones["UpperArm_L"].rotation_euler', 1, 21)  # a gap end without a key
LOCKED = ('pose.bones["Head"].rotation_euler', 0)
NOISE = ('pose.bones["Hips"].location', 2)
STATIC_SPINE = (0.01, -0.02, 0.03)  # Spine's pose location: the value of its new curves' gap ends

# name -> (fill.Options keyword arguments, selected key frames per bone; None: KEYS on every bone)
SCENARIOS = {
    "every_frame": (dict(blend=1.0, key_mode="EVERY_FRAME", all_bones=True), None),
    "every_n": (dict(blend=1.0, key_mode="EVERY_N", step=3, all_bones=True), None),
    "every_frame_blend": (dict(blend=0.4, key_mode="EVERY_FRAME"), {"Neck": [1, 11, 21], "UpperArm_L": [1, 21, 41]}),
    "every_n_blend": (dict(blend=0.7, key_mode="EVERY_N", step=4), {"Neck": [11, 21, 31], "Hand_L": [1, 41]}),
}

VEC2 = ("co", "handle_left", "handle_right")
ENUMS = ("handle_left_type", "handle_right_type", "interpolation", "type", "easing")
FLOATS = ("back", "amplitude", "period")
BOOLS = ("select_control_point", "select_left_handle", "select_right_handle")


def _enum_items(attr):
    return [e.identifier for e in bpy().types.Keyframe.bl_rna.properties[attr].enum_items]


# -- key arrays: plain foreach_get / foreach_set, independent of the add-on's own readers ------------
def read_curve(fc) -> dict:
    kp = fc.keyframe_points
    n = len(kp)
    out = {}
    for a in VEC2:
        buf = np.zeros(2 * n, np.float32)
        kp.foreach_get(a, buf)
        out[a] = buf.reshape(n, 2)
    for a, dt in [(a, np.int32) for a in ENUMS] + [(a, np.float32) for a in FLOATS] + [(a, bool) for a in BOOLS]:
        out[a] = np.zeros(n, dt)
        kp.foreach_get(a, out[a])
    return out


def write_curve(fc, keys: dict) -> None:
    """Exactly these keys: every attribute, the handles as given (set again after update())."""
    kp = fc.keyframe_points
    kp.clear()
    kp.add(len(keys["co"]))
    for a, v in keys.items():
        kp.foreach_set(a, np.ascontiguousarray(v).ravel())
    fc.update()
    for a in ("handle_left", "handle_right"):
        kp.foreach_set(a, np.ascontiguousarray(keys[a], np.float32).ravel())


def curves_of(obj) -> dict:
    from blender_addon.io.scene import channelbag
    return {(fc.data_path, fc.array_index): read_curve(fc) for fc in channelbag(obj).fcurves}


def pack(prefix: str, curves: dict) -> dict:
    """{(path, index): keys} -> flat arrays under ``prefix`` (enums as int8: small and exact)."""
    names = sorted(curves)
    out = {f"{prefix}/paths": np.array([p for p, _ in names]),
           f"{prefix}/index": np.array([i for _, i in names], np.int8),
           f"{prefix}/count": np.array([len(curves[k]["co"]) for k in names], np.int32)}
    for a in VEC2 + ENUMS + FLOATS + BOOLS:
        out[f"{prefix}/{a}"] = np.concatenate([curves[k][a] for k in names]).astype(
            np.int8 if a in ENUMS else curves[names[0]][a].dtype)
    return out


def unpack(data, prefix: str) -> dict:
    ends = np.cumsum(np.concatenate([[0], data[f"{prefix}/count"]]))
    out = {}
    for c, (p, i) in enumerate(zip(data[f"{prefix}/paths"], data[f"{prefix}/index"], strict=True)):
        out[str(p), int(i)] = {a: (data[f"{prefix}/{a}"][ends[c]:ends[c + 1]].astype(np.int32) if a in ENUMS else
                                   data[f"{prefix}/{a}"][ends[c]:ends[c + 1]]) for a in VEC2 + ENUMS + FLOATS + BOOLS}
    return out


# -- the rig ------------------------------------------------------------------------------------------
def build_rig(base: dict):
    """A fresh scene with the add-on, the fixture armature, and exactly the ``base`` keys (unpacked)."""
    b = bpy()
    from blender_addon.io.compat import new_fcurve
    from blender_addon.io.scene import channelbag
    fresh_scene_with_addon()
    obj = import_bvh(TEST_CLIP)
    bag = channelbag(obj)
    for fc in list(bag.fcurves):
        bag.fcurves.remove(fc)
    for bone, mode in zip(BONES, MODES, strict=True):
        pb = obj.pose.bones[bone]
        pb.rotation_mode = mode
        pb.location = STATIC_SPINE if bone == "Spine" else (0.0, 0.0, 0.0)
        pb.rotation_quaternion, pb.rotation_axis_angle, pb.rotation_euler = (1, 0, 0, 0), (0, 0, 1, 0), (0, 0, 0)
    for (path, index), keys in base.items():
        fc = new_fcurve(bag, path, index, path.split('"')[1])
        write_curve(fc, keys)
        fc.lock = (path, index) == LOCKED
        if (path, index) == NOISE:
            mod = fc.modifiers.new("NOISE")
            mod.strength, mod.scale, mod.phase = 0.05, 3.0, 0.7
    b.context.view_layer.objects.active = obj
    return obj


def select(obj, scenario: str) -> None:
    from blender_addon.io.scene import channelbag
    chosen = SCENARIOS[scenario][1] or {}
    for fc in channelbag(obj).fcurves:
        kp = fc.keyframe_points
        co = np.zeros(2 * len(kp), np.float32)
        kp.foreach_get("co", co)
        frames = chosen.get(fc.data_path.split('"')[1], KEYS)
        kp.foreach_set("select_control_point", np.isin(np.round(co[0::2]).astype(int), frames))


def run_scenario(obj, scenario: str, basis: np.ndarray, loc: np.ndarray):
    """Select, plan and write as the Inbetween operator does after the backend call.  -> (written, skipped)."""
    from blender_addon.core import gaps
    from blender_addon.inbetween import fill
    from blender_addon.io import scene as scene_io
    select(obj, scenario)
    bag = scene_io.channelbag(obj)
    curves = scene_io.curves_by_bone(bag, BONES)
    selected = {b: scene_io.selected_frames(c) for b, c in curves.items()}
    options = fill.Options(**SCENARIOS[scenario][0])
    plan = gaps.plan(selected, BONES, options.all_bones, 60)
    assert plan.start == 1 and plan.num_frames == FRAMES, plan
    locked = {(fc.data_path, fc.array_index) for fc in bag.fcurves if fc.lock}
    return fill.write(obj, bag, BONES, plan, basis, loc, options, [BONES.index(b) for b in ROTATION_BONES],
                      [BONES.index(b) for b in POSITION_BONES], locked)


# -- what the stored model output and key values were made from (the fixture script) ----------------
def spin(basis: np.ndarray) -> np.ndarray:
    """The motion with the SPIN bones turning about a fixed axis by their rate per frame."""
    from blender_addon.core import rig_math
    out = basis.copy()
    t = np.arange(len(basis), dtype=np.float64)
    for j, bone in enumerate(BONES):
        if bone in SPIN:
            axis = np.array([0.3, 1.0, -0.5]) if j % 2 else np.array([1.0, 0.2, 0.4])
            axis = axis / np.linalg.norm(axis)
            q = np.concatenate([np.cos(0.5 * np.radians(SPIN[bone]) * t)[:, None],
                                np.sin(0.5 * np.radians(SPIN[bone]) * t)[:, None] * axis], -1)
            out[:, j] = rig_math.qmul(basis[:, j], q)
    return out


def plain_attributes(keys: dict) -> dict:
    """As the BVH importer keys: LINEAR, AUTO_CLAMPED (handles on the points), KEYFRAME, unselected."""
    n = len(keys["co"])
    ids = {a: _enum_items(a) for a in ENUMS}
    out = {"co": keys["co"], "handle_left": keys["co"].copy(), "handle_right": keys["co"].copy()}
    for a, v in (("handle_left_type", "AUTO_CLAMPED"), ("handle_right_type", "AUTO_CLAMPED"),
                 ("interpolation", "LINEAR"), ("type", "KEYFRAME"), ("easing", "AUTO")):
        out[a] = np.full(n, ids[a].index(v), np.int32)
    for a, v in (("back", 1.70158), ("amplitude", 0.8), ("period", 4.1)):
        out[a] = np.full(n, v, np.float32)
    for a in BOOLS:
        out[a] = np.zeros(n, bool)
    return out


def random_attributes(keys: dict, rng: np.random.Generator) -> dict:
    """Interpolation, handle types, key types, easing, handles and handle selection drawn at random."""
    n = len(keys["co"])
    out = dict(keys)
    ids = {a: _enum_items(a) for a in ENUMS}
    pick = {"interpolation": ["BEZIER", "LINEAR", "CONSTANT", "SINE", "BACK", "ELASTIC"],
            "handle_left_type": ["AUTO_CLAMPED", "AUTO", "VECTOR", "ALIGNED", "FREE"],
            "type": ["KEYFRAME", "BREAKDOWN", "MOVING_HOLD", "EXTREME", "JITTER"],
            "easing": ["AUTO", "EASE_IN", "EASE_OUT", "EASE_IN_OUT"]}
    for a, names in pick.items():
        out[a] = np.array([ids[a].index(s) for s in rng.choice(names, n)], np.int32)
    other = np.array([ids["handle_right_type"].index(s) for s in rng.choice(pick["handle_left_type"], n)], np.int32)
    out["handle_right_type"] = np.where(rng.random(n) < 0.7, out["handle_left_type"], other).astype(np.int32)
    dx = rng.uniform(0.5, 3.0, (n, 1)).astype(np.float32)
    slope = rng.normal(0.0, 0.05, (n, 1)).astype(np.float32)
    out["handle_left"] = keys["co"] - np.concatenate([dx, dx * slope], 1)
    longer = rng.uniform(0.5, 1.5, (n, 1)).astype(np.float32)
    out["handle_right"] = keys["co"] + np.concatenate([dx, dx * slope], 1) * longer
    out["back"] = rng.uniform(0.5, 3.0, n).astype(np.float32)
    out["amplitude"] = rng.uniform(0.1, 1.5, n).astype(np.float32)
    out["period"] = rng.uniform(1.0, 6.0, n).astype(np.float32)
    out["select_control_point"] = np.zeros(n, bool)
    out["select_left_handle"] = rng.random(n) < 0.3
    out["select_right_handle"] = rng.random(n) < 0.3
    return out
