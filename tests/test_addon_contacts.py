"""Plant Feet in the Inbetween operator's redo panel, in real (headless) Blender: on (the default) a foot
the capture plants slides less than with it off; the keys stay as they were either way."""
from __future__ import annotations

import numpy as np
import pytest

from addon_helpers import (
    assert_same_keys,
    bpy,
    copy_armature,
    disable_addon,
    fresh_scene_with_addon,
    heads,
    import_bvh,
    keys_on,
    snapshot,
    thin_every,
    use_test_backend,
)

bpy = bpy()
from backend.motion.inbetween.contacts import CAPTURE, ground_contacts  # noqa: E402  (numpy only)

pytestmark = pytest.mark.blender
OP = bpy.ops.anim.splinetween_inbetween
FEET = ("Foot_L", "Toes_L", "Foot_R", "Toes_R")


@pytest.fixture(scope="module")
def walk():
    fresh_scene_with_addon()
    use_test_backend()
    obj = import_bvh()
    n = int(obj.animation_data.action.frame_range[1])
    names = [pb.name for pb in obj.pose.bones]
    feet = [names.index(f) for f in FEET]
    gt = heads(obj, range(1, n + 1))
    _, keys = thin_every(obj, 10)
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    leg = np.linalg.norm(gt[0, names.index("UpperLeg_L")] - gt[0, names.index("Foot_L")])
    planted = ground_contacts(gt, feet, np.array([0.0, 0.0, 1.0]), 1.0 / fps, leg, CAPTURE)
    yield {"name": obj.name, "n": n, "keys": keys, "feet": feet, "planted": planted, "fps": fps}
    disable_addon()


def _sliding(walk, obj) -> float:
    """Mean speed (units per second) of the feet over frame steps the capture has them planted, keys aside."""
    got = heads(obj, range(1, walk["n"] + 1))[:, walk["feet"]]
    free = ~np.isin(np.arange(1, walk["n"] + 1), walk["keys"])
    steps = walk["planted"][:-1] & walk["planted"][1:] & (free[:-1] | free[1:])[:, None]
    return float((np.linalg.norm(np.diff(got, axis=0), axis=-1) * walk["fps"])[steps].mean())


def test_plant_feet_keeps_the_capture_s_contacts(walk):
    source = bpy.data.objects[walk["name"]]
    speeds = {}
    for contacts in (True, False):
        arm = copy_armature(source)
        before = snapshot(arm)
        assert OP(contacts=contacts) == {"FINISHED"}
        after = snapshot(arm)
        for path, old in before.items():  # the keys as they were, with the option on or off
            assert_same_keys(old, after[path], rows_a=keys_on(old, walk["keys"]), rows_b=keys_on(after[path], walk["keys"]),
                             skip=("handle_left", "handle_right"))
        speeds[contacts] = _sliding(walk, arm)
        bpy.data.objects.remove(arm)
    bpy.context.view_layer.objects.active = source
    assert walk["planted"].sum() > 100
    # a fifth less at least (this model, trained with a planted-foot loss, slides less with the option off
    # too: 0.72 x here)
    assert speeds[True] < 0.8 * speeds[False], speeds
