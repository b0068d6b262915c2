"""io.keys, the bulk key primitives (one foreach call per attribute and curve), in real bpy."""
from __future__ import annotations

import numpy as np
import pytest

import writer_cases
from addon_helpers import bpy, disable_addon, fresh_scene_with_addon

bpy = bpy()
from blender_addon.core import key_rows  # noqa: E402
from blender_addon.io import keys as K  # noqa: E402
from blender_addon.io import scene as scene_io  # noqa: E402

pytestmark = pytest.mark.blender


@pytest.fixture(scope="module")
def bag():
    fresh_scene_with_addon()
    obj = bpy.data.objects.new("Keys", None)
    bpy.context.collection.objects.link(obj)
    obj.animation_data_create()
    act = bpy.data.actions.new("Keys")
    obj.animation_data.action = act
    act.fcurve_ensure_for_datablock(obj, "location", index=0)  # (gives the object an action slot)
    yield scene_io.channelbag(obj)
    disable_addon()


def random_keys(rng, n=12):
    frames = np.sort(rng.choice(np.arange(1, 80), n, replace=False)).astype(np.float32)
    co = np.stack([frames, rng.normal(size=n).astype(np.float32)], -1)
    return writer_cases.random_attributes({"co": co}, rng)


def test_added_keys_are_as_ADDED_says(bag):
    """The writer leaves unwritten what keyframe_points.add already gives: that must hold."""
    fc = K.Curves(bag).ensure("location", 1)
    fc.keyframe_points.add(3)
    got = K.read(fc)
    for attr in K.ADDED:
        assert (got[attr] == K.added_value(attr)).all(), attr


def test_write_then_read_is_bit_identical(bag):
    rng = np.random.default_rng(1)
    fc = K.Curves(bag).ensure("location", 2)
    for _ in range(5):
        keys = random_keys(rng)
        K.write(fc, keys, exact_handles=True)
        got = K.read(fc)
        for attr in K.ATTRS:
            assert np.array_equal(got[attr], keys[attr]), attr
    K.write(fc, K.empty())
    assert len(fc.keyframe_points) == 0


def test_write_recomputes_automatic_handles_like_update(bag):
    """Handles left unwritten (AUTO_CLAMPED on every key) come out as Blender computes them."""
    rng = np.random.default_rng(2)
    curves = K.Curves(bag)
    a, b = curves.ensure("rotation_euler", 0), curves.ensure("rotation_euler", 1)
    keys = writer_cases.plain_attributes(random_keys(rng))
    keys["interpolation"][:] = K.enum_value("interpolation", "BEZIER")
    K.write(a, keys)
    kp = b.keyframe_points  # the same keys written in full, then update()
    kp.clear()
    kp.add(len(keys["co"]))
    for attr, v in keys.items():
        kp.foreach_set(attr, v.ravel())
    b.update()
    for attr in ("handle_left", "handle_right"):
        assert np.array_equal(K.read(a)[attr], K.read(b)[attr])


def test_a_lone_key_keeps_the_handles_given(bag):
    """update() leaves the handles of a curve with one key alone: they are written."""
    fc = K.Curves(bag).ensure("rotation_euler", 2)
    keys = writer_cases.plain_attributes({"co": np.array([[4.0, 0.5]], np.float32)})
    keys["handle_left"][:] = [[3.0, 0.25]]
    K.write(fc, keys)
    assert np.array_equal(K.read(fc)["handle_left"], keys["handle_left"])


def test_values_at_is_what_evaluate_gives(bag):
    rng = np.random.default_rng(3)
    fc = K.Curves(bag).ensure("scale", 0)
    K.write(fc, random_keys(rng, 20))
    x = K.read(fc)["co"][:, 0]
    on = x.astype(np.float64)
    between = np.linspace(x[0] - 5, x[-1] + 5, 97)
    for frames in (on[:3], on, between, np.concatenate([on, between]), np.concatenate([on, on[::-1]])):  # (the last
        # reads the keys: as many frames as keys; the others evaluate, as with few keys)
        want = np.array([fc.evaluate(f) for f in frames])
        assert np.array_equal(K.values_at(fc, frames), want)
    mod = fc.modifiers.new("NOISE")  # a modifier changes the value on the keys too
    mod.strength = 0.5
    assert np.array_equal(K.values_at(fc, on), np.array([fc.evaluate(f) for f in on]))
    fc.modifiers.remove(mod)


def test_new_rows_and_merge():
    rows = key_rows.new_rows([5, 6, 7], np.arange(6.0).reshape(2, 3), K.new_key_enums(True, [True, True, False]),
                             handles=(np.zeros((2, 3, 2)), np.ones((2, 3, 2))))
    assert rows["co"].shape == (2, 3, 2) and rows["co"].dtype == np.float32
    assert rows["co"][1, :, 1].tolist() == [3.0, 4.0, 5.0]
    aligned, clamped = K.enum_value("handle_left_type", "ALIGNED"), K.enum_value("handle_left_type", "AUTO_CLAMPED")
    assert rows["handle_left_type"][0].tolist() == [aligned, aligned, clamped]
    assert (rows["interpolation"] == K.enum_value("interpolation", "BEZIER")).all()
    assert (rows["type"] == K.enum_value("type", "GENERATED")).all() and not rows["select_control_point"].any()
    old = key_rows.new_rows([1, 6, 9], np.full((2, 3), -1.0), K.new_key_enums())
    merged, order = K.merge(old, np.array([True, True, False]), rows)
    assert merged["co"][0, :, 0].tolist() == [1, 5, 6, 6, 7]  # sorted; the kept key first on frame 6
    assert merged["co"][0, :, 1].tolist() == [-1, 0, -1, 1, 2]
    assert merged["interpolation"][0].tolist()[:2] == [K.enum_value("interpolation", "LINEAR"),
                                                        K.enum_value("interpolation", "BEZIER")]


def test_replacing_many_curves_at_once_is_replacing_each(bag):
    """keys.replace_in_gaps over stacked curves writes what it writes on each curve alone."""
    rng = np.random.default_rng(4)
    curves = K.Curves(bag)
    frames = np.array([1, 5, 9, 14, 20], dtype=np.float32)
    gaps, inside = [(1, 9), (9, 20)], np.array([3, 6, 11, 12, 17])
    together, alone = [curves.ensure("delta_location", i) for i in range(3)], \
        [curves.ensure("delta_scale", i) for i in range(3)]
    for a, b in zip(together, alone, strict=True):
        keys = random_keys(rng, 5)
        keys["co"][:, 0] = frames
        for fc in (a, b):
            K.write(fc, keys, exact_handles=True)
    values = rng.normal(size=(3, len(inside)))
    handles = tuple(rng.normal(size=(3, len(inside), 2)) for _ in range(2))
    K.replace_in_gaps(together, [K.read(fc) for fc in together], gaps, inside, values, handles)
    for c, fc in enumerate(alone):
        K.replace_in_gaps([fc], [K.read(fc)], gaps, inside, values[c:c + 1], tuple(h[c:c + 1] for h in handles))
    for a, b in zip(together, alone, strict=True):
        got, want = K.read(a), K.read(b)
        assert got["co"][:, 0].tolist() == [1, 3, 6, 9, 11, 12, 17, 20]  # the key inside (at 5, 14) replaced
        for attr in K.ATTRS:
            assert np.array_equal(got[attr], want[attr]), attr


def test_curves_are_looked_up_once_and_made_in_their_group(bag):
    curves = K.Curves(bag)
    assert curves.get("location", 0) == bag.fcurves.find("location", index=0)
    assert curves.get("rotation_quaternion", 3) is None
    fc = curves.ensure("rotation_quaternion", 3, "Pose")
    assert bag.fcurves.find("rotation_quaternion", index=3) == fc and fc.group.name == "Pose"
    assert curves.ensure("rotation_quaternion", 3) == fc


@pytest.mark.parametrize("value", [-0.0, 0.0, 0.3, -1.25])
@pytest.mark.parametrize("bezier", [True, False])
def test_values_at_on_a_flat_curve_is_what_evaluate_gives_bit_for_bit(bag, value, bezier):
    """An unanimated channel keyed with the rest (every key and handle at one value) is read as that value
    without evaluating each frame: the same floats, the sign of a zero included, between, on and beyond
    the keys, with either extrapolation, Bezier or linear keys; a curve with one handle off that value is
    evaluated."""
    fc = K.Curves(bag).ensure("scale", 1)
    keys = key_rows.new_rows([1, 16, 31, 46], np.full((1, 4), value), K.new_key_enums(bezier))
    K.write(fc, {a: v[0] for a, v in keys.items()})
    frames = np.linspace(-10.0, 60.0, 121)
    for extrapolation in ("CONSTANT", "LINEAR"):
        fc.extrapolation = extrapolation
        want = np.array([fc.evaluate(f) for f in frames])
        assert K.values_at(fc, frames).tobytes() == want.tobytes()
    fc.extrapolation = "CONSTANT"  # (read as flat: the comparison above is the fast path's)
    assert (K._flat(fc, frames) is None) == (not bezier and value == 0 and np.signbit(value))
    if bezier:
        fc.keyframe_points[1].handle_right_type = "FREE"
        fc.keyframe_points[1].handle_right.y = value + 0.5
    else:
        fc.keyframe_points[1].co.y = value + 0.5
    got = K.values_at(fc, frames)
    assert got.tobytes() == np.array([fc.evaluate(f) for f in frames]).tobytes() and len(set(got.tolist())) > 1
