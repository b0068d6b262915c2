"""Principal-direction names and descriptions: synthetic measurements -> the words a user reads
(training.principal_names), the measurement on the shipped autoencoder (training.principal), and
the names and descriptions the shipped checkpoint carries to the add-on."""
from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from backend.runtime import checkpoint
from tests.conftest import EXAMPLES, ROOT
from training.principal_names import Effect, name_directions

ZERO = (0.0, 0.0, 0.0)
PARTS = ("arm_l", "arm_r", "leg_l", "leg_r", "torso")
AUTOENCODER = ROOT / "backend" / "checkpoints" / "motion_autoencoder.json"


def effect(parts=None, sway=None, pattern=None, alternate=None, **whole) -> Effect:
    """An Effect with nothing moving but what is given."""
    parts = {p: (parts or {}).get(p, ZERO) for p in PARTS}
    sway = {p: (sway or {}).get(p, ZERO) for p in PARTS}
    pattern = {p: (pattern or {}).get(p, ("forward", ZERO)) for p in PARTS}
    return Effect(parts=parts, sway=sway, pattern=pattern, alternate=dict({"arm": 0.0, "leg": 0.0}, **(alternate or {})),
                  **whole)


def name(e: Effect) -> str:
    return name_directions([e])[0][0]


@pytest.mark.parametrize("parts, expected", [
    ({"arm_l": (0, 0, 6.0), "arm_r": (0, 0, 5.0)}, "Arms: raise"),
    ({"arm_l": (0, 0, -6.0), "arm_r": (0, 0, -5.0)}, "Arms: lower"),
    ({"arm_l": (5.0, 0, 0), "arm_r": (5.5, 0, 0)}, "Arms: reach forward"),
    ({"arm_l": (0, 4.0, 0), "arm_r": (0, -4.0, 0)}, "Arms: spread"),  # left hand to the left, right to the right
    ({"arm_l": (0, -4.0, -4.2), "arm_r": (0, 4.0, -4.0)}, "Arms: in and down"),
    ({"arm_l": (0, 0, 6.0), "arm_r": (0, 0, 0.5)}, "Left arm: raise"),
    ({"arm_l": (0, 0, -3.0), "arm_r": (0, 0, 3.0)}, "Arms: right up, left down"),
    ({"leg_l": (0, 3.0, 0), "leg_r": (0, -3.0, 0)}, "Widen stance"),
    ({"torso": (4.0, 0, -1.0)}, "Lean forward"),
    ({"torso": (0, -3.0, 0)}, "Lean right"),
    ({"torso": (0, 0, -3.0)}, "Hunch"),
])
def test_offsets_are_named_by_the_part_and_the_way_it_moves(parts, expected):
    assert name(effect(parts=parts)) == expected


def test_whole_body_moves_are_named_by_their_way():
    assert name(effect(travel=(12.0, 1.0))) == "Travel forward"
    assert name(effect(travel=(1.0, -12.0))) == "Drift right"
    assert name(effect(height=-6.0)) == "Crouch"
    assert name(effect(turn=20.0)) == "Turn left"
    assert name(effect(turn=-20.0)) == "Turn right"


def test_swings_in_turn_say_which_side_leads():
    """Feet swinging forward and back in turn: the order the left and right feet come forward in."""
    steps = dict(sway={"leg_l": (8.0, 0, 0), "leg_r": (8.0, 0, 0)}, alternate={"leg": -0.98})
    assert name(effect(pattern={"leg_l": ("forward", (5.0, 0.0, -5.0))}, **steps)) == "Stepping: left, right"
    assert name(effect(pattern={"leg_l": ("forward", (-5.0, 0.2, 5.0))}, **steps)) == "Stepping: right, left"
    assert name(effect(pattern={"leg_l": ("forward", (3.0, -6.0, 3.5))}, **steps)) == "Stepping: left, right, left"
    arms = effect(sway={"arm_l": (6.0, 0, 0), "arm_r": (6.0, 0, 0)}, alternate={"arm": -0.9},
                  pattern={"arm_l": ("forward", (-4.0, 0.0, 4.0))})
    assert name(arms) == "Arm swing: right, left"
    together = effect(sway={"arm_l": (0, 0, 6.0), "arm_r": (0, 0, 6.0)}, alternate={"arm": 0.95},
                      pattern={"arm_l": ("up", (4.0, -4.0, 0.0))})
    assert name(together) == "Arms: swing together"


def test_the_description_gives_amounts_when_and_the_opposite():
    e = effect(parts={"arm_l": (0, 0, 6.0), "arm_r": (0, 0, 5.0)}, when=(1.0, 8.0, 1.0))
    (n,), (d,) = name_directions([e])
    assert n == "Arms: raise"
    assert d == "At +1 it moves both hands 5.5 cm up, mostly in the segment's middle; negative values move them down."
    steps = effect(sway={"leg_l": (8.0, 0, 0), "leg_r": (8.0, 0, 0)}, alternate={"leg": -0.98},
                   pattern={"leg_l": ("forward", (5.0, 0.0, -5.0))}, travel=(10.0, 0.0))
    d = name_directions([steps])[1][0]
    assert d.startswith("At +1 it swings the legs forward and back in turn (the feet about 8.0 cm each way, forward first: "
                        "left, then right) and carries the body forward (10.0 cm further by the segment's end)")
    assert d.endswith("negative values swap the sides (right, left).")


def test_names_are_unique_and_say_how_directions_differ():
    raise_arms = {"arm_l": (0, 0, 6.0), "arm_r": (0, 0, 6.0)}
    leaning = effect(parts=dict(raise_arms, torso=(3.0, 0, 0)))
    turning = effect(parts=raise_arms, turn=6.0)
    plain_early = effect(parts=raise_arms, when=(9.0, 1.0, 1.0))
    names, descriptions = name_directions([leaning, turning])
    assert names == ["Arms: raise (with lean forward)", "Arms: raise (with turning left)"]
    names, _ = name_directions([effect(parts=raise_arms, when=(9.0, 1.0, 1.0)),
                                effect(parts=raise_arms, when=(1.0, 1.0, 9.0))])
    assert names == ["Arms: raise (early)", "Arms: raise (late)"]  # nothing else differs: when
    names, _ = name_directions([effect(parts=raise_arms), effect(parts={"arm_l": (0, 0, 2.0), "arm_r": (0, 0, 2.0)})])
    assert names == ["Arms: raise (strong)", "Arms: raise (subtle)"]  # nothing else at all: how strongly
    many = [effect(parts={"arm_l": (0, 0, 1.0 + k), "arm_r": (0, 0, 1.0 + k)}) for k in range(5)] + [plain_early]
    names, descriptions = name_directions(many)
    assert len(set(names)) == len(names) and len(descriptions) == len(names)
    assert not any(re.search(r" \d+$", n) for n in names)  # never "Arms: raise 2"


def test_the_shipped_autoencoder_names_and_describes_every_direction():
    """The checkpoint carries a unique name and one sentence per direction, and the engine and the
    service's encode reply hand both to the add-on."""
    from backend.motion.engine import Engine
    engine = Engine(AUTOENCODER, "cpu")
    names, texts = engine.principal_names(), engine.principal_descriptions()
    assert len(names) == len(texts) == len(engine.principal()[1]) == 8
    assert len(set(names)) == len(names) and all(n and n[0].isupper() for n in names)
    assert all(t.endswith(".") and "negative values" in t and t.count(". ") == 0 for t in texts)
    assert not any(n.split()[-1].isdigit() for n in names)


def test_a_description_list_of_the_wrong_length_is_refused(tmp_path):
    for p in checkpoint.paths_for(AUTOENCODER):
        shutil.copy2(p, tmp_path / p.name)
    j = tmp_path / AUTOENCODER.name
    doc = json.loads(j.read_text())
    doc["info"]["principal_descriptions"] = doc["info"]["principal_descriptions"][:3]
    j.write_text(json.dumps(doc))
    with pytest.raises(checkpoint.CheckpointError, match="principal_descriptions.*8 sentences"):
        checkpoint.load(j)
    doc["info"]["principal_descriptions"] = [1] * 8
    j.write_text(json.dumps(doc))
    with pytest.raises(checkpoint.CheckpointError, match="principal_descriptions"):
        checkpoint.load(j)
    del doc["info"]["principal_descriptions"]  # optional: a checkpoint without them loads, with none
    j.write_text(json.dumps(doc))
    assert checkpoint.load(j).principal_descriptions() == []


def test_measuring_a_direction_on_example_motion():
    """The measurement on real decodes: the shipped direction named for raising the arms ("Arms: ... up")
    raises the hands on windows of the example clips too, its negative lowers them, and nothing moves
    along a zero direction."""
    from backend.formats.bvh import read_bvh
    from backend.motion.engine import Engine
    from training import principal
    engine = Engine(AUTOENCODER, "cpu")
    comps, std = engine.principal()
    i = next(k for k, n in enumerate(engine.principal_names()) if n.startswith("Arms:") and n.endswith(" up"))
    clips = [read_bvh(p).slice(0, engine.ckpt.window) for p in EXAMPLES]
    up = principal.measure(engine, clips, np.asarray(comps[i]), float(std[i]))
    down = principal.measure(engine, clips, -np.asarray(comps[i]), float(std[i]))
    for side in ("arm_l", "arm_r"):
        assert down.parts[side][2] < -2.0 and up.parts[side][2] > 2.0  # cm of the hands, per slider unit
        np.testing.assert_allclose(down.parts[side], -np.asarray(up.parts[side]), atol=1e-6)
    # both ways are named for the arms, each for its own larger part (on these few windows the hands may
    # move out more than up: "spread" / "close in")
    named_down, named_up = name_directions([down])[0][0], name_directions([up])[0][0]
    assert named_down.startswith("Arms: ") and named_up.startswith("Arms: ") and named_down != named_up
    still = principal.measure(engine, clips, np.zeros_like(comps[i]), float(std[i]))
    assert max(max(abs(x) for x in v) for v in still.parts.values()) < 1e-9 and still.turn == 0.0
