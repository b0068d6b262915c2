"""Bone names as hints: namespaces, side spellings, the words each joint part goes by.

Pure Python.  ``bone_map`` (presets and the name fallback) and ``structure`` (names inside a chain)
read names only through this module.
"""
from __future__ import annotations

import re

_NAMESPACE = re.compile(r"^[^:]*:")  # "mixamorig:Hips", "Character1:Hips"

# Fallback: side-less, lower-case words per joint part, best first.
SYNONYMS = {
    "Root": ["root", "jointroot"], "Hips": ["hips", "pelvis", "hip"], "Spine": ["spine", "spine1", "spine01", "abdomen",
                                                                         "lowerback", "waist"],
    "Chest": ["chest", "spine2", "spine3", "spine02", "spine03", "upperchest", "thorax"], "Neck": ["neck", "neck1", "neck01"],
    "Head": ["head"], "Shoulder": ["shoulder", "clavicle", "collar", "collarbone"],
    "UpperArm": ["upperarm", "arm", "uparm", "humerus", "shldr"], "LowerArm": ["lowerarm", "forearm", "loarm", "elbow",
                                                                                   "radius"],
    "Hand": ["hand", "wrist"], "UpperLeg": ["upperleg", "upleg", "thigh", "femur"],
    "LowerLeg": ["lowerleg", "leg", "shin", "calf", "knee", "tibia"],
    "Foot": ["foot", "ankle"], "Toes": ["toes", "toe", "toebase", "ball", "toes01"],
}


def strip_namespace(name: str) -> str:
    return _NAMESPACE.sub("", name)


# ASF's leading side letter (``lfemur``, ``rhumerus``): only before the words ASF uses, so ``leg`` is no side.
_ASF = r"^([lr])(?=(?:hipjoint|femur|tibia|foot|toes|clavicle|humerus|radius|wrist|hand|fingers|thumb)$)"


def normalise(name: str) -> tuple[str, str | None]:
    """Bone name -> (lower-case letters and digits without side, side from the name or None)."""
    n = strip_namespace(name)
    side = None
    for pat in (r"(?:[._\-\s]|^)([LlRr])$", r"^([LlRr])[._\-]", r"(Left|Right)",
                r"(left|right)", r"[._\-]([LlRr])[._\-]", r"^([lr])(?=[A-Z])", _ASF):
        m = re.search(pat, n)
        if m:
            side = "L" if m.group(1)[0] in "Ll" else "R"
            n = n[:m.start(1)] + n[m.end(1):]
            break
    return re.sub(r"[^a-z0-9]", "", n.lower()), side


# Rig machinery a fallback never takes for a joint (constraint-driven helpers, widgets, IK targets and poles).
MACHINERY = re.compile(r"^(MCH|ORG|VIS|WGT|DEF)[-_]|^tweak|(^|[._\-])(ik|IK|pole|target)([._\-]|$)")


def parts_named(bone: str) -> set[str]:
    """The joint parts (``SYNONYMS``' keys) a bone's name says: a synonym whole, or one of four letters or
    more inside it (``CC_Base_L_Upperarm``, ``lThighBend``, ``upperneck``); the machinery of a rig says none."""
    if MACHINERY.search(strip_namespace(bone)):
        return set()
    core = normalise(bone)[0]
    return {part for part, words in SYNONYMS.items()
            if any(core == w or core.rstrip("0123456789") == w or (len(w) >= 4 and w in core) for w in words)}
