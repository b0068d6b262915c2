"""blender_addon.core.constraints alone (no bpy): which written channels a constraint overrides."""
from blender_addon.core import constraints
from blender_addon.core.constraints import Constraint

PARENTS = {"root": None, "hips": "root", "thigh.L": "hips", "shin.L": "thigh.L", "foot.L": "shin.L",
           "hand.R": "hips", "spine": "hips"}
ROT = {constraints.ROTATION}
WRITTEN = {b: set(ROT) for b in PARENTS} | {"hips": {constraints.ROTATION, constraints.LOCATION}}


def test_ik_takes_its_chain():
    ik = Constraint("IK", chain_count=2, target="Rig.shin_ik.L")
    found = constraints.driven_bones({"shin.L": [ik]}, PARENTS, WRITTEN)
    assert set(found) == {"shin.L", "thigh.L"}
    assert found["thigh.L"].describe() == "thigh.L (IK on shin.L)"
    assert found["shin.L"].describe() == "shin.L (IK on shin.L from Rig.shin_ik.L)"
    to_root = constraints.driven_bones({"foot.L": [Constraint("IK", chain_count=0)]}, PARENTS, WRITTEN)
    assert set(to_root) == {"foot.L", "shin.L", "thigh.L", "hips", "root"}
    assert to_root["hips"].channels == ROT  # the solver turns bones, it never moves the root


def test_what_does_not_count():
    off = [Constraint("COPY_ROTATION", enabled=False), Constraint("COPY_ROTATION", influence=0.0),
           Constraint("IK", valid=False), Constraint("LIMIT_ROTATION"), Constraint("COPY_SCALE"),
           Constraint("COPY_LOCATION")]  # hand.R's location is not written
    assert constraints.driven_bones({"hand.R": off}, PARENTS, WRITTEN) == {}
    assert constraints.driven_bones({"hand.R": [Constraint("COPY_ROTATION", influence=0.01)]}, PARENTS, WRITTEN)
    unwritten = {"spine": ROT}
    assert constraints.driven_bones({"hand.R": [Constraint("COPY_ROTATION")]}, PARENTS, unwritten) == {}


def test_location_and_both():
    found = constraints.driven_bones({"hips": [Constraint("COPY_LOCATION", target="Empty")],
                                      "spine": [Constraint("CHILD_OF", target="Prop"), Constraint("DAMPED_TRACK")]},
                                     PARENTS, WRITTEN)
    assert found["hips"].channels == {constraints.LOCATION} and found["spine"].channels == ROT
    assert found["spine"].describe() == "spine (Child Of from Prop; Damped Track)"


def test_report_names_the_bones_and_the_fix():
    assert constraints.report({}) == ""
    one = constraints.report({"hand.R": "hand.R (Copy Rotation from Empty)"})
    assert one == ("1 bone driven by constraints was left as it was: hand.R (Copy Rotation from Empty); mute the "
                   "constraint (or set its influence to 0) or key its controller")
    many = constraints.report({f"b{i}": f"b{i} (IK on b0)" for i in range(8)}, limit=3)
    assert many.startswith("8 bones driven by constraints were left as they were: b0 (IK on b0), b1 (IK on b0), "
                           "b2 (IK on b0), and 5 more;")


def test_ik_follow_arithmetic():
    import numpy as np

    from blender_addon.core import ik_follow
    # two bones along +Y, the second turned 90 degrees about Z: its tail ends up at -X of its head
    rest = np.array([np.eye(4), np.eye(4)])
    rest[1][:3, 3] = [0, 2, 0]
    q90z = np.array([np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)])
    basis = np.array([[[1.0, 0, 0, 0], q90z]])
    pose = ik_follow.chain_pose(rest, basis, np.zeros((1, 2, 3)))
    assert np.allclose(ik_follow.tip(pose, 3.0), [[-3, 2, 0]])
    assert np.allclose(ik_follow.tip(pose, 3.0, use_tail=False), [[0, 2, 0]])
    # the offset is exact at the gap's ends and linear between them
    frames = np.array([1, 2, 3])
    tips = np.zeros((3, 3))
    at = {0: (np.array([0.0, 0, 0]), np.zeros(3)), 4: (np.array([4.0, 0, 0]), np.zeros(3))}
    assert np.allclose(ik_follow.follow(tips, frames, [(0, 4)], at)[:, 0], [1, 2, 3])
    a = np.eye(4)
    a[:3, :3] = [[0, -2, 0], [2, 0, 0], [0, 0, 2]]
    a[:3, 3] = [1, 2, 3]
    w = np.array([[5.0, -1, 7]])
    assert np.allclose(ik_follow.to_world(ik_follow.to_location(w, a), a), w)
