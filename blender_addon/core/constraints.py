"""Which bones' written channels a constraint would override (pure Python, no bpy).

Inbetween and Encode write F-curves (every mapped bone's rotation, the root's location).  A constraint
evaluated after those channels can replace what they say: keys written under it change nothing visible.
Such bones are left unwritten and named, with the fix.  ``io.constraints`` reads the description below
from a rig; this module decides.

A constraint counts when it is enabled (not muted), valid (Blender evaluates it: it has its target) and
has an influence above 0.  Limit constraints only clamp, and scale-only ones touch no written channel, so
they do not count.
"""
from __future__ import annotations

from dataclasses import dataclass, field

ROTATION, LOCATION = "rotation", "location"
BOTH = frozenset((ROTATION, LOCATION))

# constraint type (bpy's ``Constraint.type``) -> the written channels it overrides on its owner
OVERRIDES: dict[str, frozenset] = {
    "COPY_ROTATION": frozenset((ROTATION,)),
    "COPY_LOCATION": frozenset((LOCATION,)),
    "COPY_TRANSFORMS": BOTH,
    "CHILD_OF": BOTH,
    "ARMATURE": BOTH,
    "TRANSFORM": BOTH,  # Transformation: any mapping may land on rotation or location
    "ACTION": BOTH,
    "DAMPED_TRACK": frozenset((ROTATION,)),
    "LOCKED_TRACK": frozenset((ROTATION,)),
    "TRACK_TO": frozenset((ROTATION,)),
    "STRETCH_TO": frozenset((ROTATION,)),
    "PIVOT": BOTH,
    "SHRINKWRAP": frozenset((LOCATION,)),
    "CLAMP_TO": frozenset((LOCATION,)),
    "FOLLOW_TRACK": BOTH,
    "OBJECT_SOLVER": BOTH,
    "CAMERA_SOLVER": BOTH,
    "FOLLOW_PATH": BOTH,
    "TRANSFORM_CACHE": BOTH,
    "GEOMETRY_ATTRIBUTE": BOTH,
}
# they only clamp or scale: the written channels still show (every other type is in OVERRIDES or CHAINS)
IGNORED = frozenset(("COPY_SCALE", "LIMIT_DISTANCE", "LIMIT_LOCATION", "LIMIT_ROTATION", "LIMIT_SCALE",
                     "MAINTAIN_VOLUME", "FLOOR"))
CHAINS = {"IK": "IK", "SPLINE_IK": "Spline IK"}
DRIVER = "a driver"  # drivers count as constraints: the channel shows the driver's value, not the keys  # the whole chain's rotations follow the solver
TITLES = {"COPY_ROTATION": "Copy Rotation", "COPY_LOCATION": "Copy Location", "COPY_TRANSFORMS": "Copy Transforms",
          "CHILD_OF": "Child Of", "ARMATURE": "Armature", "TRANSFORM": "Transformation", "ACTION": "Action",
          "DAMPED_TRACK": "Damped Track", "LOCKED_TRACK": "Locked Track", "TRACK_TO": "Track To",
          "STRETCH_TO": "Stretch To", "PIVOT": "Pivot", "SHRINKWRAP": "Shrinkwrap", "CLAMP_TO": "Clamp To",
          "FOLLOW_TRACK": "Follow Track", "OBJECT_SOLVER": "Object Solver", "CAMERA_SOLVER": "Camera Solver",
          "FOLLOW_PATH": "Follow Path", "TRANSFORM_CACHE": "Transform Cache", "GEOMETRY_ATTRIBUTE": "Geometry Attribute"}


@dataclass(frozen=True)
class Constraint:
    """One constraint of a pose bone, as ``io.constraints`` reads it."""
    type: str
    name: str = ""
    enabled: bool = True  # not muted
    valid: bool = True  # Blender evaluates it (an IK without a target, for one, does nothing)
    influence: float = 1.0
    chain_count: int = 0  # IK / Spline IK: bones in the chain, the owner included (0: up to the root)
    target: str = ""  # what it follows, for the message ("Armature.shin_ik.L", "Empty")

    @property
    def active(self) -> bool:
        return self.enabled and self.valid and self.influence > 0.0


@dataclass
class Driven:
    """A bone whose written channels a constraint overrides: which channels and why."""
    bone: str
    channels: set = field(default_factory=set)
    reasons: list = field(default_factory=list)

    def describe(self) -> str:
        return f"{self.bone} ({'; '.join(dict.fromkeys(self.reasons))})"


def _chain(owner: str, count: int, parents: dict) -> list[str]:
    out: list[str] = []
    bone: str | None = owner
    while bone and (count <= 0 or len(out) < count):
        out.append(bone)
        bone = parents.get(bone)
    return out


def driven_bones(constraints: dict, parents: dict, written: dict, drivers: dict | None = None) -> dict[str, Driven]:
    """``constraints``: bone -> [Constraint] (pose bones with any); ``parents``: bone -> parent bone (or None);
    ``written``: bone -> the channels the operation writes ({"rotation"}, {"rotation", "location"});
    ``drivers``: bone -> {channel: driven property} (working drivers, which replace the keys' value).
    -> bone -> Driven, for the written bones whose written channels an active constraint or a driver overrides."""
    found: dict[str, Driven] = {}

    def mark(bone: str, channels, reason: str):
        hit = set(channels) & set(written.get(bone, ()))
        if hit:
            d = found.setdefault(bone, Driven(bone))
            d.channels |= hit
            d.reasons.append(reason)

    for owner, items in constraints.items():
        for c in items:
            if not c.active:
                continue
            via = f" from {c.target}" if c.target else ""
            if c.type in CHAINS:
                for bone in _chain(owner, c.chain_count, parents):
                    mark(bone, (ROTATION,), f"{CHAINS[c.type]} on {owner}" + (via if bone == owner else ""))
            elif c.type in OVERRIDES:
                mark(owner, OVERRIDES[c.type], f"{TITLES.get(c.type, c.type.title())}{via}")
    for bone, channels in (drivers or {}).items():
        for channel, prop in channels.items():
            mark(bone, (channel,), f"{DRIVER} on {prop}")
    return found


def report(left: dict[str, str], limit: int = 6) -> str:
    """The report's sentence naming the bones left as they were (bone -> ``Driven.describe()``), and the fix;
    "" when none."""
    if not left:
        return ""
    items = [left[b] for b in sorted(left)]
    more = f", and {len(items) - limit} more" if len(items) > limit else ""
    n = len(items)
    reasons = [r for b in left for r in left[b][len(b) + 2:-1].split("; ")]  # (``Driven.describe()``'s form)
    drivers = sum(r.startswith(f"{DRIVER} on ") for r in reasons)
    rigs = len(reasons) - drivers
    by = "constraints and drivers" if drivers and rigs else "drivers" if drivers else "constraints"
    fixes = (["mute the constraint (or set its influence to 0) or key its controller"] if rigs else []) + \
        (["mute or remove the driver (Drivers editor) to key the channel"] if drivers else [])
    return (f"{n} bone{'s' * (n != 1)} driven by {by} {'were' if n != 1 else 'was'} left as "
            f"{'they were' if n != 1 else 'it was'}: {', '.join(items[:limit])}{more}; {'; '.join(fixes)}")


def written_channels(bones: list[str], rotation_joints, position_joints, only=None) -> dict[str, set]:
    """bone -> the channels the add-on writes on it (``ROTATION``, ``LOCATION``); ``rotation_joints`` and
    ``position_joints`` index ``bones``; with ``only``, just the bones in it (those with gaps to fill)."""
    rot, pos = set(rotation_joints), set(position_joints)
    return {b: ({ROTATION} if j in rot else set()) | ({LOCATION} if j in pos else set())
            for j, b in enumerate(bones) if only is None or b in only}
