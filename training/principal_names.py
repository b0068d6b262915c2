"""Names and one-sentence descriptions of principal directions, from what each one was measured to do
(``training.principal`` measures; this module only puts it into words: a pure function).

An :class:`Effect` is what moving one standard deviation along a direction (slider +1) changes in
the decoded motion, averaged over training windows: centimetres and degrees, in the character's own
heading (forward, left, up).  The name says the body part that moves most *and* how it moves
("Arms: raise", "Stepping: left, right", "Lean forward", "Turn left", "Crouch"); the description adds
how far, what else moves and when in the segment, and what negative values do.  Names are unique:
directions that would share one are told apart by what differs between them (a second effect, the
time in the segment, the strength), never by a number.

Longer than 300 lines: one table of cases that put measured directions into words.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

TURN_RADIUS_CM = 40.0  # a turn is scored by how far it carries a point this far from the body's axis
ALSO = 0.5  # a second effect is named in the description from half the main one's size
LEAD = 0.35  # a third of the window counts in a swing's order when it holds this share of the largest
SIDE = 2.0  # one limb "moves alone" when it moves this many times more than the other
TOGETHER = 0.5  # |correlation| from which two limbs' swings count as together / in turn


@dataclass(frozen=True)
class Effect:
    """What slider +1 changes (moved minus neutral), averaged over windows.

    Per part ("arm_l", "arm_r", "leg_l", "leg_r", "torso"; positions relative to where the part
    hangs from: arms from the chest, legs and torso from the hips), as (forward, left, up) cm:
    ``parts`` the offset over the whole window, ``sway`` the peak amplitude of what varies over it,
    ``pattern`` the axis it varies most along and its mean in the window's first, middle and last
    third.  ``alternate``: for "arm" and
    "leg", how the left and right sways relate (-1 in turn, +1 together).  ``travel``: the hips' way
    by the window's last frame (forward, left) cm, and ``travel_when`` how much of its forward part
    comes in each third; ``height``: the hips' height, and ``bob`` how much
    it varies; ``turn``: the heading by the last frame (degrees, > 0 to the left); ``when``: the
    pose change in each third of the window."""
    parts: dict
    sway: dict
    pattern: dict
    alternate: dict
    travel: tuple = (0.0, 0.0)
    travel_when: tuple = (1.0, 1.0, 1.0)
    height: float = 0.0
    bob: float = 0.0
    turn: float = 0.0
    when: tuple = (1.0, 1.0, 1.0)


@dataclass(frozen=True)
class Move:
    """One way a direction moves the body: its size (cm of joint motion), a short name, what it does
    and what negative values do (for the description), and a short phrase when it is secondary."""
    family: str  # 'arm-offset', 'leg-sway', 'torso-offset', 'travel', ...
    score: float
    name: str
    does: str
    undoes: str
    aside: str
    timed: bool = True  # an offset, whose place in the segment is worth saying (not a swing, which has one)


def _norm(v) -> float:
    return math.sqrt(sum(float(x) ** 2 for x in v))


def _body(v, side: str) -> tuple:
    """(forward, out, up): 'out' is away from the body's middle (left for a left limb)."""
    f, l, u = (float(x) for x in v)
    return f, (l if side == "l" else -l), u


_WORDS = {  # axis -> (positive, negative) as one word after "moves ... "
    "forward": ("forward", "back"), "out": ("out", "in"), "up": ("up", "down")}
_ONE = {  # a limb offset along one axis: (positive name, negative name)
    ("arm", "forward"): ("reach forward", "pull back"), ("arm", "out"): ("spread", "close in"),
    ("arm", "up"): ("raise", "lower"), ("leg", "forward"): ("forward", "back"),
    ("leg", "out"): ("widen stance", "narrow stance"), ("leg", "up"): ("lift", "straighten")}
_END = {"arm": ("hand", "hands"), "leg": ("foot", "feet")}


def _axes(vec: dict) -> list[str]:
    """The axes that carry a vector: the largest and any of at least 60 % of it (in the order forward,
    out, up, so that near-equal sizes do not reorder a name)."""
    top = max(abs(x) for x in vec.values())
    return [k for k in vec if abs(vec[k]) >= 0.6 * top] if top > 0 else [next(iter(vec))]


def _amounts(vec: dict, axes: list[str]) -> str:
    """"2.8 cm forward, 3.2 cm in and 2.7 cm down"."""
    return _and([f"{abs(vec[a]):.1f} cm {_WORDS[a][vec[a] < 0]}" for a in axes])


def _limb_offset(e: Effect, limb: str) -> Move:
    left = dict(zip(("forward", "out", "up"), _body(e.parts.get(f"{limb}_l", (0, 0, 0)), "l"), strict=True))
    right = dict(zip(("forward", "out", "up"), _body(e.parts.get(f"{limb}_r", (0, 0, 0)), "r"), strict=True))
    nl, nr = _norm(left.values()), _norm(right.values())
    score = 0.5 * (nl + nr)
    limbs = f"{limb.capitalize()}s"
    if nl > SIDE * nr or nr > SIDE * nl:  # one side
        side, vec = ("left", left) if nl > nr else ("right", right)
        axes = _axes(vec)
        words = [_WORDS[a][vec[a] < 0] for a in axes]
        name = f"{side.capitalize()} {limb}: " + (_ONE[limb, axes[0]][vec[axes[0]] < 0] if len(axes) == 1
                                                  else _and(words))
        does = f"moves the {side} {_END[limb][0]} {_amounts(vec, axes)}"
        undoes = f"move it {_and([_WORDS[a][vec[a] >= 0] for a in axes])}"
        return Move(f"{limb}-offset", max(nl, nr), name, does, undoes, f"{side} {limb} {_and(words)}")
    sym = {k: 0.5 * (left[k] + right[k]) for k in left}
    anti = {k: 0.5 * (left[k] - right[k]) for k in left}
    if _norm(anti.values()) > _norm(sym.values()):  # the two sides move opposite ways
        a = max(anti, key=lambda k: abs(anti[k]))
        lw, rw = _WORDS[a][anti[a] < 0], _WORDS[a][anti[a] >= 0]
        first, second = ("right", rw), ("left", lw)
        if lw in ("forward", "out", "up"):
            first, second = second, first
        name = f"{limbs}: {first[0]} {first[1]}, {second[0]} {second[1]}"
        does = (f"moves the {first[0]} {_END[limb][0]} {abs(anti[a]):.1f} cm {first[1]} and the {second[0]} one "
                f"{abs(anti[a]):.1f} cm {second[1]}")
        return Move(f"{limb}-offset", score, name, does, "swap the sides", f"{first[0]} {limb} {first[1]}")
    axes = _axes(sym)
    words = [_WORDS[a][sym[a] < 0] for a in axes]
    if limb == "leg" and axes == ["out"]:
        name = _ONE[limb, "out"][sym["out"] < 0].capitalize()  # "Widen stance", not "Legs: widen stance"
    else:
        name = f"{limbs}: " + (_ONE[limb, axes[0]][sym[axes[0]] < 0] if len(axes) == 1 else _and(words))
    does = f"moves both {_END[limb][1]} {_amounts(sym, axes)}"
    undoes = f"move them {_and([_WORDS[a][sym[a] >= 0] for a in axes])}"
    return Move(f"{limb}-offset", score, name, does, undoes, f"{limb}s {_and(words)}")


def _sequence(thirds, positive: str, negative: str) -> list[str]:
    """Which side leads in each third of the window ('left' where the left limb's swing is positive),
    thirds near zero left out, repeats merged: ['left', 'right'] or ['left', 'right', 'left']."""
    top = max(abs(float(x)) for x in thirds) or 1.0
    seq = []
    for x in thirds:
        if abs(float(x)) >= LEAD * top:
            side = positive if x > 0 else negative
            if not seq or seq[-1] != side:
                seq.append(side)
    return seq


def _limb_sway(e: Effect, limb: str) -> Move:
    sl, sr = (_norm(e.sway.get(f"{limb}_{s}", (0, 0, 0))) for s in "lr")
    score = 0.5 * (sl + sr)
    axis, thirds = e.pattern.get(f"{limb}_l", ("forward", (0.0, 0.0, 0.0)))
    axis = "out" if axis == "left" else axis
    corr = float(e.alternate.get(limb, 0.0))
    how = "in turn" if corr <= -TOGETHER else "together" if corr >= TOGETHER else "unevenly"
    ways = {"forward": "forward and back", "out": "in and out", "up": "up and down"}[axis]
    seq = _sequence(thirds, "left", "right")
    if how == "in turn" and seq:
        label = {("leg", "forward"): "Stepping", ("leg", "up"): "Knee lifts", ("arm", "forward"): "Arm swing",
                 ("arm", "up"): "Arms: up and down"}.get((limb, axis), f"{limb.capitalize()}s: {ways}")
        name = f"{label}: {', '.join(seq)}"
        does = (f"swings the {limb}s {ways} in turn (the {_END[limb][1]} about {score:.1f} cm each way, "
                f"{_WORDS[axis][0]} first: {_then(seq)})")
        undoes = f"swap the sides ({', '.join('right' if s == 'left' else 'left' for s in seq)})"
        return Move(f"{limb}-sway", score, name, does, undoes, f"{limb}s swinging in turn", timed=False)
    name = f"{limb.capitalize()}s: {'uneven swing' if how == 'unevenly' else 'swing ' + how}"
    does = f"swings the {limb}s {ways} {how} (the {_END[limb][1]} about {score:.1f} cm each way)"
    if how == "unevenly":  # neither in turn nor together: only its coherent part counts as a way of moving
        score *= abs(corr)
    return Move(f"{limb}-sway", score, name, does, "swing them the other way round", f"{limb}s swinging {how}",
                timed=False)


def _torso(e: Effect) -> list[Move]:
    f, l, u = (float(x) for x in e.parts.get("torso", (0, 0, 0)))
    k = max((("forward", f), ("left", l), ("up", u)), key=lambda a: abs(a[1]))
    names = {("forward", True): ("Lean forward", "leans forward", "lean back"),
             ("forward", False): ("Lean back", "leans back", "lean forward"),
             ("left", True): ("Lean left", "leans to the left", "lean right"),
             ("left", False): ("Lean right", "leans to the right", "lean left"),
             ("up", True): ("Stand tall", "straightens the back", "hunch"),
             ("up", False): ("Hunch", "hunches the back", "straighten it")}
    name, does, undoes = names[k[0], k[1] > 0]
    offset = Move("torso-offset", _norm((f, l, u)), name, f"{does} (chest and head {abs(k[1]):.1f} cm)", undoes,
                  name.lower())
    sf, sl, su = (float(x) for x in e.sway.get("torso", (0, 0, 0)))
    name, does = ("Rock forward and back", "rocks the chest forward and back") if abs(sf) >= abs(sl) else \
        ("Sway side to side", "sways the chest from side to side")
    sway = Move("torso-sway", _norm((sf, sl, su)), name, f"{does}, about {max(abs(sf), abs(sl)):.1f} cm each way",
                "rock the other way round", "rocking", timed=False)
    return [offset, sway]


def _whole_body(e: Effect) -> list[Move]:
    fwd, left = (float(x) for x in e.travel)
    h, turn = float(e.height), float(e.turn)
    return [
        Move("travel", 0.5 * abs(fwd), "Travel forward" if fwd > 0 else "Travel back",
             f"carries the body {'forward' if fwd > 0 else 'back'} ({abs(fwd):.1f} cm further by the segment's end)",
             "hold it back" if fwd > 0 else "carry it forward", "travelling " + ("forward" if fwd > 0 else "back")),
        Move("drift", 0.5 * abs(left), "Drift left" if left > 0 else "Drift right",
             f"carries the body to the {'left' if left > 0 else 'right'} ({abs(left):.1f} cm by the segment's end)",
             f"drift {'right' if left > 0 else 'left'}", "drifting " + ("left" if left > 0 else "right")),
        Move("height", abs(h), "Crouch" if h < 0 else "Rise", f"{'lowers' if h < 0 else 'raises'} the hips "
             f"({abs(h):.1f} cm)", "rise" if h < 0 else "crouch", "crouching" if h < 0 else "rising"),
        Move("bob", abs(float(e.bob)), "Bob up and down", f"bobs the hips up and down, about {abs(e.bob):.1f} cm",
             "bob the other way round", "bobbing", timed=False),
        Move("turn", 0.5 * math.radians(abs(turn)) * TURN_RADIUS_CM, "Turn left" if turn > 0 else "Turn right",
             f"turns the body to the {'left' if turn > 0 else 'right'} ({abs(turn):.1f} degrees by the segment's end)",
             f"turn {'right' if turn > 0 else 'left'}", "turning " + ("left" if turn > 0 else "right")),
    ]


def moves(e: Effect) -> list[Move]:
    """Every way the direction moves the body, largest first."""
    found = [_limb_offset(e, "arm"), _limb_sway(e, "arm"), _limb_offset(e, "leg"), _limb_sway(e, "leg")]
    return sorted(found + _torso(e) + _whole_body(e), key=lambda m: -m.score)


def when_phrase(when) -> str:
    """Where in the segment the change is: a third holding over 45 % of it, else throughout."""
    shares = [abs(float(x)) for x in when]
    total = sum(shares) or 1.0
    i = max(range(3), key=lambda k: shares[k])
    if shares[i] / total < 0.45:
        return "throughout the segment"
    return ("early in the segment", "in the segment's middle", "late in the segment")[i]


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _then(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", then ".join(items)


def describe(ms: list[Move], e: Effect) -> str:
    """One sentence: what the main move does, what else moves, when, and what negative values do."""
    main, also = ms[0], [m for m in ms[1:] if m.score >= ALSO * ms[0].score][:1]
    text = " and ".join([main.does] + [m.does for m in also])
    when = when_phrase(e.when)
    where = "" if not main.timed or when.startswith("throughout") else f", mostly {when}"
    return f"At +1 it {text}{where}; negative values {main.undoes}."


def _secondary(ms: list[Move]) -> list[str]:
    """The direction's other effects (at least a fifth of the main one), as short phrases, largest first."""
    main = ms[0]
    part = main.family.split("-")[0]
    return [m.aside for m in ms[1:] if m.score >= 0.2 * main.score and m.family.split("-")[0] != part]


def _when_word(ms: list[Move], e: Effect) -> str:
    when = when_phrase(e.travel_when if ms[0].family in ("travel", "drift") else e.when)
    return {"early in the segment": "early", "in the segment's middle": "mid-segment",
            "late in the segment": "late"}.get(when, "")


def _tell_apart(group: list[int], found, effects) -> dict:
    """Qualifiers for directions that share a name: the largest other effect that none of the rest
    has; else when in the segment; else how strongly.  -> {index: qualifier}"""
    seconds = {i: _secondary(found[i]) for i in group}
    own = {}
    for i in group:
        theirs = {a for j in group if j != i for a in seconds[j]}
        mine = [a for a in seconds[i] if a not in theirs]
        own[i] = f"with {mine[0]}" if mine else ""
    if sum(1 for q in own.values() if not q) <= 1:  # all told apart (one may stay plain)
        return own
    when = {i: _when_word(found[i], effects[i]) for i in group}
    if len(set(when.values())) == len(group):
        return when
    ranked = sorted(group, key=lambda i: -found[i][0].score)
    return dict(zip(ranked, _strengths(found, ranked), strict=True))


def name_directions(effects: list[Effect]) -> tuple[list[str], list[str]]:
    """(names, descriptions) in the directions' order; the names are unique."""
    found = [moves(e) for e in effects]
    names = [m[0].name for m in found]
    descriptions = [describe(m, e) for m, e in zip(found, effects, strict=True)]
    for group in _clashes(names):
        for i, q in _tell_apart(group, found, effects).items():
            names[i] = f"{names[i]} ({q})" if q else names[i]
    for group in _clashes(names):  # a qualifier that met another direction's name: how strongly
        ranked = sorted(group, key=lambda i: -found[i][0].score)
        for i, word in zip(ranked, _strengths(found, ranked), strict=True):
            names[i] = f"{names[i]} ({word})"
    return names, descriptions


def _clashes(names: list[str]) -> list[list[int]]:
    groups: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        groups.setdefault(n, []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def _strengths(found, ranked: list[int]) -> list[str]:
    if len(ranked) == 2:
        return ["strong", "subtle"]
    if len(ranked) == 3:
        return ["strong", "moderate", "subtle"]
    return [f"{found[i][0].score:.1f} cm" for i in ranked]  # as many sizes as directions
