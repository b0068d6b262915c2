"""Model joint -> bone of the user's rig: presets detected by name, a fallback by name and geometry.

Pure Python (no bpy): ``detect`` takes the rig as ``{bone: (parent, head, tail)}`` in armature space
(Blender axes: Z up, the character's left at +X) and gives a :class:`BoneMap`.  A joint's bone must
have the bone of its parent joint (the nearest mapped one) as an *ancestor*: bones in between (a
three-bone spine, twist bones, a control root) keep their own animation.  Joints the model can do
without (``OPTIONAL``) may stay unmapped; a map without the rest is refused by :func:`check`.

The presets are data (``PRESETS``), written for the left side; ``_sided`` makes the right side's
names.  The names follow each tool's own output: Mixamo's FBX (``mixamorig:`` or another namespace),
Rigify's generated rig (FK controls) and its deform bones (``DEF-``), Unreal's mannequin (UE4 and
UE5 spines), Auto-Rig Pro (deform bones and ``c_`` FK controls), BVH/CMU captures.

Longer than 300 lines: presets, name hints and the structural match are one detection, tried in order.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field

import numpy as np

from . import structure
from .names import MACHINERY, SYNONYMS, normalise, strip_namespace

FORMAT = "splinetween-bone-map"
VERSION = 1

# Joints the model can do without: filled neutrally (the rest pose), in-betweened but not written.
OPTIONAL = ("joint_Root", "Spine", "Chest", "Neck", "Shoulder_L", "Shoulder_R", "Toes_L", "Toes_R")
ONE_OF = (("Spine", "Chest"),)  # at least one of each group: the model needs a spine

# Left-side names per model joint; "{s}" marks where a side token goes, "{S}" a side word (see _sided).
PRESETS: dict[str, dict[str, list[str]]] = {
    "Splinetween data set": {
        "joint_Root": ["joint_Root"], "Hips": ["Hips"], "Spine": ["Spine"], "Chest": ["Chest"],
        "Neck": ["Neck"], "Head": ["Head"], "Shoulder": ["Shoulder_{s}"], "UpperArm": ["UpperArm_{s}"],
        "LowerArm": ["LowerArm_{s}"], "Hand": ["Hand_{s}"], "UpperLeg": ["UpperLeg_{s}"],
        "LowerLeg": ["LowerLeg_{s}"], "Foot": ["Foot_{s}"], "Toes": ["Toes_{s}"]},
    "Mixamo": {
        "Hips": ["Hips"], "Spine": ["Spine"], "Chest": ["Spine2", "Spine1"], "Neck": ["Neck"], "Head": ["Head"],
        "Shoulder": ["{S}Shoulder"], "UpperArm": ["{S}Arm"], "LowerArm": ["{S}ForeArm"], "Hand": ["{S}Hand"],
        "UpperLeg": ["{S}UpLeg"], "LowerLeg": ["{S}Leg"], "Foot": ["{S}Foot"], "Toes": ["{S}ToeBase"]},
    # A generated Rigify rig: the legs hang from the hip FK bones and the spine from spine_fk.002, both under
    # ``torso``, which is therefore the hips joint (the hip FK bones are bones in between on the legs).
    "Rigify (FK controls)": {
        "Hips": ["torso", "hips"], "Spine": ["spine_fk.002", "spine_fk.001"], "Chest": ["spine_fk.003", "chest"],
        # (shoulder.L is no ancestor of upper_arm_fk.L, which hangs from ORG-shoulder.L: the shoulder stays unmapped)
        "Neck": ["neck"], "Head": ["head"], "Shoulder": [], "UpperArm": ["upper_arm_fk.{s}"],
        "LowerArm": ["forearm_fk.{s}"], "Hand": ["hand_fk.{s}"], "UpperLeg": ["thigh_fk.{s}"],
        "LowerLeg": ["shin_fk.{s}"], "Foot": ["foot_fk.{s}"], "Toes": ["toe_fk.{s}", "toe.{s}"]},
    "Rigify (deform bones)": {
        "Hips": ["DEF-spine"], "Spine": ["DEF-spine.001"], "Chest": ["DEF-spine.003", "DEF-spine.002"],
        "Neck": ["DEF-spine.004"], "Head": ["DEF-spine.006", "DEF-spine.005"], "Shoulder": ["DEF-shoulder.{s}"],
        "UpperArm": ["DEF-upper_arm.{s}"], "LowerArm": ["DEF-forearm.{s}"], "Hand": ["DEF-hand.{s}"],
        "UpperLeg": ["DEF-thigh.{s}"], "LowerLeg": ["DEF-shin.{s}"], "Foot": ["DEF-foot.{s}"], "Toes": ["DEF-toe.{s}"]},
    "Unreal mannequin": {
        "Hips": ["pelvis"], "Spine": ["spine_01"], "Chest": ["spine_05", "spine_03", "spine_02"],
        "Neck": ["neck_01"], "Head": ["head"], "Shoulder": ["clavicle_{s}"], "UpperArm": ["upperarm_{s}"],
        "LowerArm": ["lowerarm_{s}"], "Hand": ["hand_{s}"], "UpperLeg": ["thigh_{s}"], "LowerLeg": ["calf_{s}"],
        "Foot": ["foot_{s}"], "Toes": ["ball_{s}"]},
    "Auto-Rig Pro": {
        "Hips": ["c_root.x", "root.x"], "Spine": ["c_spine_01.x", "spine_01.x"],
        "Chest": ["c_spine_03.x", "spine_03.x", "c_spine_02.x", "spine_02.x"], "Neck": ["c_neck.x", "neck.x"],
        "Head": ["c_head.x", "head.x"], "Shoulder": ["c_shoulder.{s}", "shoulder.{s}"],
        "UpperArm": ["c_arm_fk.{s}", "arm.{s}"], "LowerArm": ["c_forearm_fk.{s}", "forearm.{s}"],
        "Hand": ["c_hand_fk.{s}", "hand.{s}"], "UpperLeg": ["c_thigh_fk.{s}", "thigh.{s}"],
        "LowerLeg": ["c_leg_fk.{s}", "leg.{s}"], "Foot": ["c_foot_fk.{s}", "foot.{s}"],
        "Toes": ["c_toes_fk.{s}", "toes_01.{s}"]},
    "BVH / CMU": {
        "Hips": ["Hips", "hip"], "Spine": ["Spine", "LowerBack", "abdomen"], "Chest": ["Spine1", "Chest", "chest"],
        "Neck": ["Neck", "neck"], "Head": ["Head", "head"], "Shoulder": ["{S}Shoulder", "{S}Collar", "{s}Collar"],
        "UpperArm": ["{S}Arm", "{S}UpArm", "{s}Shldr"], "LowerArm": ["{S}ForeArm", "{S}LowArm", "{s}ForeArm"],
        "Hand": ["{S}Hand", "{s}Hand"], "UpperLeg": ["{S}UpLeg", "{s}Thigh"], "LowerLeg": ["{S}Leg", "{S}LowLeg", "{s}Shin"],
        "Foot": ["{S}Foot", "{s}Foot"], "Toes": ["{S}ToeBase", "{S}Toe", "{s}Toe"]},
}

# Model joint -> the part of its name the presets use, and its side.
_PART = re.compile(r"^(.*?)(?:_([LR]))?$")
# Side spellings: "{s}" -> token, "{S}" -> word.  Tried in this order; the rig keeps one convention.
_SIDE_TOKENS = {"L": ("L", "l", "Left", "left"), "R": ("R", "r", "Right", "right")}
_SIDE_WORDS = {"L": ("Left", "L_", "l_", "left"), "R": ("Right", "R_", "r_", "right")}


@dataclass
class BoneMap:
    """Model joint -> bone (None: unmapped), the preset it came from and how much of it was found;
    ``reasons``: joint -> how its bone was found (``preset``, ``name and position``, ``structure``,
    ``structure, side by geometry``, ``given``)."""
    bones: dict[str, str | None]
    preset: str = "Custom"
    score: float = 0.0  # mapped joints / joints
    reasons: dict[str, str] = field(default_factory=dict)

    def found(self) -> list[str]:
        """``joint <- bone (reason)`` for every mapped joint: what a report and the panel show."""
        return [f"{j} <- {b} ({self.reasons.get(j, 'given')})" for j, b in self.bones.items() if b]

    def mapped(self) -> dict[str, str]:
        return {j: b for j, b in self.bones.items() if b}

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, "version": VERSION, "preset": self.preset, "bones": self.bones}, indent=2)


class BoneMapError(ValueError):
    """A bone map that cannot drive the model, or a preset file that cannot be read; the message says
    what is wrong and how to fix it."""


def part_and_side(joint: str) -> tuple[str, str | None]:
    """``"UpperArm_L"`` -> ``("UpperArm", "L")``; ``"joint_Root"`` -> ``("Root", None)``."""
    if joint == "joint_Root":
        return "Root", None
    m = _PART.match(joint)
    return m.group(1), m.group(2)


def _sided(pattern: str, side: str | None) -> list[str]:
    if side is None:
        return [pattern.replace("{s}", "").replace("{S}", "")]
    out = []
    for t in _SIDE_TOKENS[side] if "{s}" in pattern else ():
        out.append(pattern.replace("{s}", t))
    for w in _SIDE_WORDS[side] if "{S}" in pattern else ():
        out.append(pattern.replace("{S}", w))
    return out or [pattern]


def ancestors(bone: str, parents: dict) -> list[str]:
    """The bone's parent, grandparent, ... (a cycle-safe walk)."""
    out, seen = [], {bone}
    p = parents.get(bone)
    while p is not None and p not in seen:
        out.append(p)
        seen.add(p)
        p = parents.get(p)
    return out


def _mapped_parent(j: int, joint_parents, bones: dict, names) -> str | None:
    """The bone of the nearest mapped ancestor joint of joint ``j``."""
    p = joint_parents[j]
    while p >= 0:
        if bones.get(names[p]):
            return bones[names[p]]
        p = joint_parents[p]
    return None


def _fits(bone: str, above: str | None, parents: dict) -> bool:
    return above is None or above in ancestors(bone, parents)


def _preset_map(preset: dict, joint_names, joint_parents, parents: dict) -> dict[str, str | None]:
    lookup = {}
    for b in parents:  # exact names first, then the same name without a namespace
        lookup.setdefault(strip_namespace(b), b)
    for b in parents:
        lookup[b] = b
    out: dict[str, str | None] = {}
    for j, joint in enumerate(joint_names):
        part, side = part_and_side(joint)
        above = _mapped_parent(j, joint_parents, out, joint_names)
        out[joint] = None
        for pattern in preset.get(part, preset.get(joint, [])):
            hits = [lookup[n] for n in _sided(pattern, side) if n in lookup]
            hits = [h for h in hits if h not in out.values() and _fits(h, above, parents)]
            if hits:
                out[joint] = hits[0]
                break
    return out


def _below(j: int, joint_parents, found: dict, names) -> list[str]:
    """The bones of the joints already mapped under joint ``j`` (they must stay under its bone)."""
    out = []
    for k, n in enumerate(names):
        p = joint_parents[k]
        while p >= 0 and p != j:
            p = joint_parents[p]
        if p == j and found.get(n):
            out.append(found[n])
    return out


def _fallback(joint_names, joint_parents, bones: dict, found: dict) -> dict[str, str | None]:
    """Unmapped joints by name similarity to ``SYNONYMS``, the side from the name or the head's x, and
    the ancestry rule (the nearest mapped parent joint's bone must be an ancestor, the bones of mapped
    joints below must be descendants)."""
    parents = {b: v[0] for b, v in bones.items()}
    norm = {b: normalise(b) for b in bones if not MACHINERY.search(strip_namespace(b))}
    out = dict(found)
    for j, joint in enumerate(joint_names):
        if out.get(joint):
            continue
        part, side = part_and_side(joint)
        words = SYNONYMS.get(part, [part.lower()])
        above = _mapped_parent(j, joint_parents, out, joint_names)
        below = _below(j, joint_parents, out, joint_names)
        best, best_score = None, 0.0
        for b, (core, bside) in norm.items():
            if b in out.values() or not _fits(b, above, parents) or not all(b in ancestors(x, parents) for x in below):
                continue
            if side is None and bside is not None:  # a centre joint never takes a left or right bone
                continue
            if side is not None and (bside or _side_by_x(bones[b][1])) != side:
                continue
            score = max(1.0 - 0.01 * k if core == w else 0.85 - 0.01 * k if w in core
                        else 0.9 * difflib.SequenceMatcher(None, core, w).ratio() for k, w in enumerate(words))
            score -= 0.001 * len(ancestors(b, parents))  # the higher bone of equals (a chain's first segment)
            if score > best_score:
                best, best_score = b, score
        if best is not None and best_score >= 0.75:
            out[joint] = best
    return out


def _side_by_x(head) -> str | None:
    x = float(head[0])
    return None if abs(x) < 1e-4 else ("L" if x > 0 else "R")


def _past_zero_length(joint_names, joint_parents, bones: dict, found: dict) -> dict[str, str | None]:
    """A joint on a bone of no length (its head on the head of the bone above: CMU's ``Neck`` on ``Spine1``,
    its ``LeftShoulder``) gives the model a bone of no direction: take the next bone down the chain that
    has one, or leave an optional joint unmapped (its bone's motion then counts in the chain below)."""
    out = dict(found)
    parents = {b: v[0] for b, v in bones.items()}
    children: dict = {}
    for b, p in parents.items():
        children.setdefault(p, []).append(b)
    size = max((float(np.linalg.norm(np.subtract(v[1], bones[v[0]][1]))) for v in bones.values()
                if v[0] in bones), default=1.0)
    for j, joint in enumerate(joint_names):
        b, above = out.get(joint), _mapped_parent(j, joint_parents, out, joint_names)
        if not b or not above or _dist(bones[b][1], bones[above][1]) > 1e-6 * size:
            continue
        below = _below(j, joint_parents, out, joint_names)
        nxt = b
        while nxt is not None and _dist(bones[nxt][1], bones[above][1]) <= 1e-6 * size:
            kids = [k for k in children.get(nxt, ()) if k not in out.values()
                    and all(x == k or k in ancestors(x, parents) for x in below)]
            nxt = kids[0] if len(kids) == 1 else None
        if nxt is not None:
            out[joint] = nxt
        elif joint in OPTIONAL:
            out[joint] = None
    return out


def _dist(a, b) -> float:
    return float(np.linalg.norm(np.subtract(a, b)))


def detect(joint_names, joint_parents, bones: dict, posed: dict | None = None) -> BoneMap:
    """The best preset for the rig (most joints found), completed by the fallback.

    ``bones``: ``{name: (parent name or None, head xyz, tail xyz)}`` in armature space; ``posed``: ``{name:
    heads [F, 3]}`` on frames of the motion, where the structure reads left and right when names do not."""
    parents = {b: v[0] for b, v in bones.items()}
    best_name, best = "Custom", {j: None for j in joint_names}
    best_n = 0
    found = {}
    for name, preset in PRESETS.items():
        m = _preset_map(preset, joint_names, joint_parents, parents)
        n = sum(1 for v in m.values() if v)
        found[name] = n
        if n > best_n:
            best_name, best, best_n = name, m, n
    if best_name == "Mixamo" and found["BVH / CMU"] == best_n and not any(
            strip_namespace(b) != b for b in best.values() if b):  # Mixamo's names without its namespace
        best_name = "BVH / CMU"
    full = _past_zero_length(joint_names, joint_parents, bones, _fallback(joint_names, joint_parents, bones, best))
    reasons = {j: "preset" if best.get(j) == b else "name and position" for j, b in full.items() if b}
    if best_n == 0:
        best_name = "Custom"
    if not _usable(joint_names, joint_parents, parents, full):  # names misled or said too little: the structure
        st = structure.find(joint_names, bones, posed)
        if st is not None:
            full = _past_zero_length(joint_names, joint_parents, bones, {j: st[0].get(j) for j in joint_names})
            reasons = {j: st[1].get(j, "structure") for j, b in full.items() if b}
            best_name = "Structure"
    spaces = sorted({b.split(":")[0] for b in full.values() if b and ":" in b})
    if spaces:
        best_name += f" ({', '.join(s + ':' for s in spaces)})"
    score = sum(1 for v in full.values() if v) / max(len(joint_names), 1)
    return BoneMap(full, best_name, score, reasons)


def _usable(joint_names, joint_parents, parents: dict, bones: dict) -> bool:
    """Every required joint on its own bone, each under its parent joint's."""
    missing, absent, misplaced = problems(joint_names, joint_parents, parents, bones)
    used = [b for b in bones.values() if b]
    return not (missing or absent or misplaced) and len(used) == len(set(used))


def problems(joint_names, joint_parents, bone_parents: dict, bones: dict) -> tuple[list[str], list[str], list[str]]:
    """(missing required joints, joints whose bone does not exist, joints whose bone is not under the
    bone of their parent joint) for a map ``bones`` (joint -> bone or None)."""
    known = set(joint_names)
    missing = [j for j in joint_names if not bones.get(j) and j not in OPTIONAL]
    for group in ONE_OF:
        if all(g in known for g in group) and not any(bones.get(g) for g in group):
            missing.append(" or ".join(group))
    absent = [j for j in joint_names if bones.get(j) and bones[j] not in bone_parents]
    valid = {j: b for j, b in bones.items() if b and b in bone_parents}
    misplaced = []
    for j, joint in enumerate(joint_names):
        if joint in valid:
            above = _mapped_parent(j, joint_parents, valid, joint_names)
            if not _fits(valid[joint], above, bone_parents):
                misplaced.append(f"{joint} ({valid[joint]} is not under {above})")
    return missing, absent, misplaced


PANEL_HINT = "map them in the Bone Map panel of the Splinetween tab, or import a bone map preset"


def check(joint_names, joint_parents, bone_parents: dict, bones: dict, hint: str = PANEL_HINT) -> list[str]:
    """The bone for each joint (None where unmapped), or a BoneMapError naming what is missing and how to map it."""
    missing, absent, misplaced = problems(joint_names, joint_parents, bone_parents, bones)
    parts = []
    used: dict[str, list[str]] = {}
    for j in joint_names:
        if bones.get(j):
            used.setdefault(bones[j], []).append(j)
    twice = {b: js for b, js in used.items() if len(js) > 1}
    if twice:
        parts.append("one bone for two joints: " + ", ".join(f"{b} ({' and '.join(js)})" for b, js in twice.items()))
    if missing:
        parts.append(f"no bone for {', '.join(missing)}")
    if absent:
        parts.append(f"bones not in the armature: {', '.join(f'{j} -> {bones[j]}' for j in absent)}")
    if misplaced:
        parts.append(f"a joint's bone must be a descendant of its parent joint's bone: {', '.join(misplaced)}")
    if parts:
        raise BoneMapError("; ".join(parts) + f" ({hint})")
    return [bones.get(j) or None for j in joint_names]


MAX_FILE = 1 << 20  # a bone map file of every joint is a few kB
MAX_NAME = 63  # Blender's longest bone name (bytes); a preset's name gets the same


def from_json(text: str | bytes, joint_names=None) -> BoneMap:
    """A preset's map from its text (a file is read by ``io.bone_map.read_file``, with its limits);
    a BoneMapError names what is wrong."""
    if len(text) > MAX_FILE:
        raise BoneMapError(f"not a bone map file ({len(text):,} bytes; one is a few kB)")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:  # RecursionError: nested too deep
        raise BoneMapError(f"not a bone map file (not JSON: {str(e)[:200] or type(e).__name__})") from None
    return from_doc(data, joint_names)


def from_doc(data, joint_names=None) -> BoneMap:
    """A preset file's parsed JSON -> its map; a BoneMapError names what is wrong with a bad file."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BoneMapError(f'not a bone map file (no "format": "{FORMAT}"; export one from the Bone Map panel)')
    version = data.get("version")
    if type(version) is not int or version != VERSION:  # (JSON true and 1.0 equal 1 in Python: neither is a version)
        raise BoneMapError(_version_problem(version))
    preset = data.get("preset", "Custom")
    if not isinstance(preset, str) or len(preset.encode("utf-8")) > MAX_NAME:
        raise BoneMapError(f'the bone map\'s "preset" must be a name of at most {MAX_NAME} bytes (it is '
                           f'{_size(preset)}); shorten it or remove it')
    bones = data.get("bones")
    if not isinstance(bones, dict) or not all(isinstance(k, str) and (v is None or isinstance(v, str))
                                              for k, v in bones.items()):
        raise BoneMapError('the bone map\'s "bones" must be an object of joint name -> bone name or null')
    long = [v for v in list(bones) + list(bones.values()) if v and len(v.encode("utf-8")) > MAX_NAME]
    if long:
        raise BoneMapError(f"the bone map holds a name of {_size(long[0])}; joint and bone names have at most "
                           f"{MAX_NAME} bytes in Blender (shorten it)")
    if joint_names is not None:
        unknown = sorted(set(bones) - set(joint_names))
        if unknown:
            raise BoneMapError(f"the bone map names joints the model does not have: {', '.join(unknown[:6])} "
                               f"(the model's joints: {', '.join(joint_names)})")
    return BoneMap({k: (v or None) for k, v in bones.items()}, preset)


def _size(value) -> str:
    return f"{len(value.encode('utf-8')):,} bytes" if isinstance(value, str) else f"a {type(value).__name__}"


def _version_problem(version) -> str:
    """What is wrong with a bone map's "version", and the fix."""
    if version is None:
        return f'the bone map has no "version" (this add-on reads version {VERSION}: add "version": {VERSION})'
    if isinstance(version, str) and version.strip().isdecimal() and len(version.strip()) < 10:
        return (f'the bone map\'s "version" is the text "{version[:20]}", not the number {int(version)}: write '
                f'"version": {int(version)} without quotes')
    if isinstance(version, bool):
        return (f'the bone map\'s "version" is {str(version).lower()}, not a whole number: write "version": {VERSION} '
                "(or export the map again from the Bone Map panel)")
    if isinstance(version, float):
        return (f'the bone map\'s "version" is {version!r}, not a whole number: write "version": {VERSION} '
                "(or export the map again from the Bone Map panel)")
    if isinstance(version, int) and version > VERSION:
        return (f"bone map version {version} was written by a newer Splinetween; this add-on reads version "
                f"{VERSION} (update the add-on, or export the map again from this one's Bone Map panel)")
    return (f"bone map version {str(version)[:40]!r} is not one this add-on reads (it reads version {VERSION}; "
            "export the map again from the Bone Map panel)")
