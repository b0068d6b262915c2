"""Acclaim ASF (skeleton) and AMC (motion) reading and writing: CMU's and HDM05's own format.

The result is the project's :class:`Clip`, the type ``read_bvh`` returns, so a take goes through the one
conversion (``backend.humanoid``) as a BVH of another skeleton does.  Every joint's rest frame is the
file's axes, as in a BVH: a bone's local rotation in its parent's frame is ``L = C M C^-1`` (``C`` the
bone's ``axis`` rotation, ``M`` the AMC's dof rotation in dof order), the root's ``C`` its ``orientation``,
and a joint's rest offset its parent bone's ``direction * length`` (the root's children start on it).
Lengths stay in the ASF's units (``clip.meta["unit_m"]``: metres per unit, from ``:units length``).

The AMC writer is the reader's inverse for the same skeleton: ``M = C^-1 L C`` back to the dof angles,
each triple nearest the values the take was read with (``clip.meta["amc_channels"]``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..maths import quat_np
from ..motion.skeleton import Clip, Skeleton
from .atomic import write_text
from .bvh import unwrap_euler

AMC_FPS = 120.0  # CMU's and HDM05's capture rate: an AMC does not say its own
INCH_M = 0.0254  # ``:units length`` is the length of one file unit in inches' inverse (CMU: 0.45)
_ROTATIONS = ("rx", "ry", "rz")
_TRANSLATIONS = ("tx", "ty", "tz")
_KEYWORDS = (":version", ":name", ":units", ":documentation", ":root", ":bonedata", ":hierarchy", ":skin")


class ASFError(ValueError):
    """An ASF file that cannot be read; the message names the file, the line and the problem."""

    def __init__(self, path, problem: str, line: int | None = None):
        where = f"{path}" + (f", line {line}" if line else "")
        super().__init__(f"{where}: {problem}")
        self.path, self.problem, self.line = str(path), problem, line


class AMCError(ASFError):
    """An AMC file that cannot be read (or does not fit its ASF); names the file, the line and the problem."""


@dataclass(frozen=True)
class Bone:
    name: str
    direction: tuple[float, float, float]  # unit vector in the file's axes
    length: float  # file units
    axis: tuple[float, float, float]  # degrees
    axis_order: str  # "XYZ": the X rotation applied first
    dof: tuple[str, ...] = ()  # "rx", "ry", "rz", "tx", "ty", "tz", in the AMC's column order
    limits: tuple[tuple[float, float], ...] = ()  # degrees (lengths for a translation dof)


@dataclass(frozen=True)
class Asf:
    """An ASF skeleton as the file gives it (angles in degrees, lengths in file units)."""
    name: str
    bones: dict  # name -> Bone, file order
    children: dict  # name -> [child names], "root" included
    root_order: tuple[str, ...] = ("tx", "ty", "tz", "rx", "ry", "rz")
    root_axis: str = "XYZ"
    root_position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    root_orientation: tuple[float, float, float] = (0.0, 0.0, 0.0)  # degrees
    mass: float = 1.0
    length_unit: float = 1.0  # ``:units length``
    radians: bool = False  # ``:units angle rad`` (the file's; held here in degrees): the AMC's too, unless :DEGREES
    path: str = "<string>"

    @property
    def unit_m(self) -> float:
        """Metres per file unit (CMU's 0.45: about 5.6 cm)."""
        return INCH_M / self.length_unit

    def joints(self) -> list[str]:
        """``root`` and every bone, parents before their children (depth first, in the hierarchy's order)."""
        out, stack = [], ["root"]
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(reversed(self.children.get(n, [])))
        return out

    def dof_of(self, joint: str) -> tuple[str, ...]:
        return self.root_order if joint == "root" else self.bones[joint].dof


def _floats(tok, path, line, what, n=None):
    try:
        vals = tuple(float(v) for v in tok)
    except ValueError:
        raise ASFError(path, f"{what} is not numeric: {' '.join(tok)}", line) from None
    if n is not None and len(vals) != n:
        raise ASFError(path, f"{what} needs {n} numbers, found {len(vals)}: {' '.join(tok)}", line)
    if not np.isfinite(vals).all():
        raise ASFError(path, f"{what} {' '.join(tok)} is not finite (write finite numbers)", line)
    return vals


def _order(text, path, line, what) -> str:
    order = text.upper()
    if sorted(order) != ["X", "Y", "Z"]:
        raise ASFError(path, f"{what} order {text!r} is not a rotation order (write one of XYZ, XZY, YXZ, "
                             "YZX, ZXY, ZYX)", line)
    return order


def _dofs(tok, path, line, what, allowed) -> tuple[str, ...]:
    dof = tuple(t.lower() for t in tok)
    bad = [d for d in dof if d not in allowed]
    if bad:
        raise ASFError(path, f"{what} has {' '.join(bad)}: supported are {' '.join(allowed)}"
                             + (" (the length dof 'l' is not)" if "l" in bad else ""), line)
    if len(set(dof)) != len(dof):
        raise ASFError(path, f"{what} names a dof twice: {' '.join(tok)}", line)
    return dof


def parse_asf(text: str, path="<string>") -> Asf:
    """Parse ASF text (``:units``, ``:root``, ``:bonedata``, ``:hierarchy``; ``:skin`` and comments skipped)."""
    lines = text.removeprefix("\ufeff").splitlines()
    section, units, root, bones, children = None, {}, {}, {}, {}
    name, bone, seen_keyword, in_hierarchy, last_key = "", None, False, False, None
    for i, raw in enumerate(lines, 1):
        tok = raw.split("#", 1)[0].split()
        if not tok:
            continue
        head = tok[0].lower()
        if head.startswith(":"):
            if head in (":fully-specified", ":degrees", ":radians"):
                raise ASFError(path, f"not an ASF file: {tok[0]} is an AMC's (motion) line; give the skeleton's "
                                     ".asf", i)
            if head not in _KEYWORDS:
                raise ASFError(path, f"{'not an ASF file: ' if not seen_keyword else ''}unknown section "
                                     f"{tok[0]!r} (an ASF has ':units', ':root', ':bonedata', ':hierarchy')", i)
            if bone is not None:
                raise ASFError(path, f"bone {bone.get('name', '?')!r} has no 'end' before {tok[0]}", i)
            section, seen_keyword, last_key = head, True, None
            if head == ":name":
                name = " ".join(tok[1:])
            continue
        if not seen_keyword:
            raise ASFError(path, f"not an ASF file: it starts with {raw.strip()[:40]!r} (an ASF starts with "
                                 "sections such as ':version', ':units', ':root', ':bonedata'; give the "
                                 "skeleton's .asf file)", i)
        if section == ":units":
            if len(tok) != 2:
                raise ASFError(path, f"a unit is 'name value', found {raw.strip()!r}", i)
            units[head] = (tok[1], i)
        elif section == ":root":
            root[head] = (tok[1:], i)
        elif section == ":bonedata":
            if head == "begin":
                if bone is not None:
                    raise ASFError(path, "'begin' inside a bone (a bone ends with 'end')", i)
                bone = {"line": i}
            elif head == "end":
                if bone is None:
                    raise ASFError(path, "'end' without 'begin'", i)
                b = _bone(bone, path)
                if b.name in bones or b.name == "root":
                    raise ASFError(path, f"bone {b.name!r} is defined twice", bone["line"])
                bones[b.name] = b
                bone = None
            elif bone is None:
                raise ASFError(path, f"{tok[0]!r} outside a bone's begin ... end", i)
            elif head == "limits" or (head.startswith("(") and last_key == "limits"):
                bone.setdefault("limits", []).append((tok[1:] if head == "limits" else tok, i))
                last_key = "limits"
                continue
            else:
                bone[head] = (tok[1:], i)
            last_key = head
        elif section == ":hierarchy":
            if head == "begin":
                in_hierarchy = True
            elif head == "end":
                in_hierarchy = False
            elif not in_hierarchy:
                raise ASFError(path, f"{tok[0]!r} outside the hierarchy's begin ... end", i)
            else:
                for child in tok[1:]:
                    children.setdefault(tok[0], []).append(child)
        # :version, :name's extra lines, :documentation and :skin: free text
    if bone is not None:
        raise ASFError(path, f"bone {bone.get('name', '?')!r} has no 'end' (the file is truncated)", bone["line"])
    if not seen_keyword:
        raise ASFError(path, "not an ASF file: no ':root' or ':bonedata' section (give the skeleton's .asf)")
    if not bones:
        raise ASFError(path, "no ':bonedata' bones: not an ASF skeleton (give the skeleton's .asf)")
    if not children:
        raise ASFError(path, "no ':hierarchy' (each line 'parent child child ...' between begin and end)")
    asf = Asf(name, bones, children, **_root(root, path), **_units(units, path), path=str(path))
    _check_hierarchy(asf, path)
    return _in_degrees(asf) if asf.radians else asf


def _in_degrees(asf: Asf) -> Asf:
    """An ``angle rad`` ASF's axes, orientation and rotation limits in degrees (what ``Asf`` holds)."""
    deg = np.degrees

    def limits(b):
        return tuple((float(deg(lo)), float(deg(hi))) if d in _ROTATIONS else (lo, hi)
                     for d, (lo, hi) in zip(b.dof, b.limits, strict=False))
    bones = {n: replace(b, axis=tuple(float(v) for v in deg(b.axis)), limits=limits(b)) for n, b in asf.bones.items()}
    return replace(asf, bones=bones, root_orientation=tuple(float(v) for v in deg(asf.root_orientation)))


def _units(units, path) -> dict:
    out = {}
    if "mass" in units:
        out["mass"] = _floats([units["mass"][0]], path, units["mass"][1], "mass")[0]
    if "length" in units:
        v = _floats([units["length"][0]], path, units["length"][1], "length unit")[0]
        if v <= 0:
            raise ASFError(path, f"length unit {v} must be positive (CMU writes 0.45)", units["length"][1])
        out["length_unit"] = v
    if "angle" in units:
        a, line = units["angle"]
        if a.lower() not in ("deg", "rad"):
            raise ASFError(path, f"angle unit {a!r} is neither 'deg' nor 'rad'", line)
        out["radians"] = a.lower() == "rad"
    return out


def _root(root, path) -> dict:
    out = {}
    if "order" in root:
        tok, line = root["order"]
        order = _dofs(tok, path, line, "the root's order", _TRANSLATIONS + _ROTATIONS)
        out["root_order"] = order
    if "axis" in root:
        tok, line = root["axis"]
        out["root_axis"] = _order(tok[0] if tok else "", path, line, "the root's axis")
    for key, attr in (("position", "root_position"), ("orientation", "root_orientation")):
        if key in root:
            tok, line = root[key]
            out[attr] = _floats(tok, path, line, f"the root's {key}", 3)
    return out


def _bone(b, path) -> Bone:
    line = b["line"]
    for key in ("name", "direction", "length"):
        if key not in b:
            raise ASFError(path, f"a bone without '{key}'", line)
    name = " ".join(b["name"][0])
    d = np.asarray(_floats(b["direction"][0], path, b["direction"][1], f"bone {name!r}'s direction", 3))
    length = _floats(b["length"][0], path, b["length"][1], f"bone {name!r}'s length", 1)[0]
    axis, order = (0.0, 0.0, 0.0), "XYZ"
    if "axis" in b:
        tok, at = b["axis"]
        axis = _floats(tok[:3], path, at, f"bone {name!r}'s axis", 3)
        order = _order(tok[3] if len(tok) > 3 else "XYZ", path, at, f"bone {name!r}'s axis")
    dof = ()
    if "dof" in b:
        dof = _dofs(b["dof"][0], path, b["dof"][1], f"bone {name!r}'s dof", _ROTATIONS + _TRANSLATIONS)
    limits = []
    for tok, at in b.get("limits", []):
        nums = re.findall(r"[^\s()]+", " ".join(tok))
        try:
            lo, hi = (float(v) for v in nums)
        except ValueError:
            raise ASFError(path, f"bone {name!r}'s limits {' '.join(tok)} is not '(low high)'", at) from None
        limits.append((lo, hi))
    if limits and len(limits) != len(dof):
        raise ASFError(path, f"bone {name!r} has {len(limits)} limits for {len(dof)} dof (one '(low high)' each)",
                       b["limits"][0][1])
    norm = float(np.linalg.norm(d))
    if norm == 0.0 and length != 0.0:
        raise ASFError(path, f"bone {name!r}'s direction is zero (write a unit vector)", b["direction"][1])
    return Bone(name, tuple(d / norm) if norm else (0.0, 0.0, 0.0), length, axis, order, dof, tuple(limits))


def _check_hierarchy(asf: Asf, path) -> None:
    known = set(asf.bones) | {"root"}
    for parent, kids in asf.children.items():
        for n in [parent, *kids]:
            if n not in known:
                raise ASFError(path, f"the hierarchy names {n!r}, which ':bonedata' does not define")
    reached = asf.joints()
    if len(reached) != len(set(reached)):
        dup = sorted({n for n in reached if reached.count(n) > 1})
        raise ASFError(path, f"the hierarchy gives {', '.join(dup)} more than one parent (or a cycle)")
    lost = [n for n in asf.bones if n not in set(reached)]
    if lost:
        raise ASFError(path, f"bones not reached from root in the hierarchy: {', '.join(lost)}")


def read_asf(path) -> Asf:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise ASFError(path, f"cannot read the file ({e.strerror})") from None
    return parse_asf(text, path)


def skeletons_named(take: str, skeletons) -> list[str]:
    """The names among ``skeletons`` (``.asf`` stems) that the take's name ``take`` begins with, as a whole
    word (``01`` for ``01_02``, ``HDM_tr`` for ``HDM_tr_kick_120``; case ignored); only the longest such names."""
    t = take.lower()
    named = [s for s in skeletons if t == s.lower() or (t.startswith(s.lower()) and t[len(s)] in "_-. ")]
    longest = max(map(len, named), default=0)
    return [s for s in named if len(s) == longest]


def skeleton_for(amc, given=None) -> Path:
    """The ``.asf`` of the take ``amc``: ``given`` (``--asf``), else the one in its folder whose name the take's
    begins with (CMU: ``01.asf`` for ``01_02.amc``; HDM05: ``HDM_tr.asf`` for ``HDM_tr_kick..._120.amc``; the
    longest such name), else the only ``.asf`` in its folder.  Raises ``AMCError`` when none or several fit."""
    amc = Path(amc)
    if given:
        given = Path(given).expanduser()
        if not given.is_file():
            raise ASFError(given, "no such file (--asf names the skeleton .asf of the takes)")
        return given
    folder = amc.parent
    try:
        found = sorted(p for p in folder.iterdir() if p.suffix.lower() == ".asf" and p.is_file())
    except OSError as e:
        raise AMCError(amc, f"cannot list its folder for the skeleton .asf ({e.strerror}); give --asf FILE") from None
    named = skeletons_named(amc.stem, [p.stem for p in found])
    if len(named) == 1:
        return next(p for p in found if p.stem == named[0])
    if len(named) > 1:
        raise AMCError(amc, f"which skeleton? {', '.join(n + '.asf' for n in named)} all name this take; "
                            "give --asf FILE")
    if len(found) == 1:
        return found[0]
    if not found:
        raise AMCError(amc, f"no skeleton: no .asf in {folder} (an AMC holds only angles; put its .asf beside it, "
                            "named as the take begins, like 01.asf for 01_02.amc, or give --asf FILE)")
    shown = ", ".join(p.name for p in found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
    raise AMCError(amc, f"which skeleton? {len(found)} .asf files in {folder} ({shown}) and the take's name begins "
                        "with none of their names; give --asf FILE")


# --- AMC -------------------------------------------------------------------------------------------------

@dataclass
class Motion:
    """An AMC's values per joint ``{joint: [F, dofs]}`` in the ASF's dof order (the file's angle unit)."""
    frames: np.ndarray  # [F] the frame numbers the file gives
    values: dict = field(default_factory=dict)
    degrees: bool = True
    order: tuple[str, ...] = ()  # the joints in the order a frame lists them


def parse_amc(text: str, asf: Asf, path="<string>") -> Motion:
    """Parse AMC text for the skeleton ``asf`` (``:FULLY-SPECIFIED``: every joint with dofs in every frame)."""
    lines = text.removeprefix("\ufeff").splitlines()
    widths = {n: len(asf.dof_of(n)) for n in asf.joints() if asf.dof_of(n)}
    degrees, frames, rows, order, current, started = not asf.radians, [], {n: [] for n in widths}, [], None, False
    for i, raw in enumerate(lines, 1):
        s = raw.split("#", 1)[0].strip()
        if not s:
            continue
        if s.startswith(":"):
            key = s.split()[0].upper()
            if key == ":DEGREES":
                degrees = True
            elif key == ":RADIANS":
                degrees = False
            continue
        tok = s.split()
        if len(tok) == 1 and re.fullmatch(r"[+-]?\d+", tok[0]):
            if current is not None:
                _frame_done(current, widths, frames[-1], path, i, rows)
            frames.append(int(tok[0]))
            current, started = {}, True
            continue
        if not started:
            raise AMCError(path, f"not an AMC file: {s[:40]!r} where a frame number was expected (an AMC has "
                                 "':FULLY-SPECIFIED', ':DEGREES', then a frame number line and 'bone v v v' "
                                 "lines; give the take's .amc file)", i)
        joint = tok[0]
        if joint not in widths:
            why = ("has no dof in the ASF" if joint in asf.bones else f"is not in the ASF {Path(asf.path).name}")
            raise AMCError(path, f"bone {joint!r} {why} (is this take of another skeleton? give its own .asf)", i)
        if joint in current:
            raise AMCError(path, f"bone {joint!r} appears twice in frame {frames[-1]}", i)
        if len(tok) - 1 != widths[joint]:
            raise AMCError(path, f"bone {joint!r} has {len(tok) - 1} values, its dof "
                                 f"({' '.join(asf.dof_of(joint))}) needs {widths[joint]}", i)
        try:
            vals = [float(v) for v in tok[1:]]
        except ValueError:
            raise AMCError(path, f"bone {joint!r}'s values are not numeric: {' '.join(tok[1:])}", i) from None
        if not np.isfinite(vals).all():
            raise AMCError(path, f"bone {joint!r}'s values {' '.join(tok[1:])} are not finite", i)
        current[joint] = vals
        if len(frames) == 1:
            order.append(joint)
    if current is None:
        raise AMCError(path, "no frames (not an AMC file, or a truncated one: give the take's .amc file)")
    _frame_done(current, widths, frames[-1], path, len(lines), rows)
    values = {n: np.asarray(r, dtype=np.float64).reshape(len(frames), widths[n]) for n, r in rows.items()}
    return Motion(np.asarray(frames, dtype=np.int64), values, degrees, tuple(order))


def _frame_done(current, widths, frame, path, line, rows):
    missing = [n for n in widths if n not in current]
    if missing:
        raise AMCError(path, f"frame {frame} has no values for {', '.join(missing)} (an AMC lists every bone "
                             "with dofs in every frame: :FULLY-SPECIFIED)", line)
    for n, v in current.items():
        rows[n].append(v)


def read_amc(path, asf: Asf) -> Motion:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise AMCError(path, f"cannot read the file ({e.strerror})") from None
    return parse_amc(text, asf, path)


# --- ASF + AMC <-> Clip ------------------------------------------------------------------------------------

def _axis_rotation(angles_deg, order: str) -> np.ndarray:
    """``C`` for ``axis a b c ORDER``: the rotations applied in ``ORDER`` (the first letter first)."""
    a = dict(zip("XYZ", np.radians(np.asarray(angles_deg, dtype=np.float64)), strict=False))
    return quat_np.from_euler(np.array([a[order[2]], a[order[1]], a[order[0]]]), order[::-1])


def _euler_layout(dof) -> tuple[str, list[int]]:
    """The ``from_euler`` order (the last-applied axis first) for a joint's rotation dofs, and for each of its
    three angles the dof column (-1: an axis the joint does not rotate about, kept zero).  A missing axis goes
    in the middle, so a 1- or 2-dof joint's angles come back with it zero."""
    rot = [d[1].upper() for d in dof if d in _ROTATIONS]
    col = {d[1].upper(): k for k, d in enumerate(dof) if d in _ROTATIONS}
    missing = [a for a in "XYZ" if a not in rot]
    if len(rot) == 3:
        order = rot[::-1]
    elif len(rot) == 2:
        order = [rot[1], missing[0], rot[0]]
    elif len(rot) == 1:
        order = [rot[0], *missing]
    else:
        return "ZYX", [-1, -1, -1]
    return "".join(order), [col.get(a, -1) if a in rot else -1 for a in order]


def to_clip(asf: Asf, motion: Motion, frame_time: float = 1.0 / AMC_FPS, name: str = "") -> Clip:
    """The take as a :class:`Clip` on the ASF's joints (``root`` first), lengths in ASF units."""
    joints = asf.joints()
    index = {n: j for j, n in enumerate(joints)}
    parents = np.array([-1] + [index[p] for n in joints[1:] for p, kids in asf.children.items() if n in kids])
    offsets = np.zeros((len(joints), 3))
    offsets[0] = asf.root_position
    bone_vec = {n: np.asarray(b.direction) * b.length for n, b in asf.bones.items()}
    for j, _n in enumerate(joints[1:], 1):
        p = joints[parents[j]]
        if p != "root":
            offsets[j] = bone_vec[p]
    ends = tuple(tuple(bone_vec[n]) if n != "root" and not asf.children.get(n) else None for n in joints)
    f = len(motion.frames)
    to_deg = 1.0 if motion.degrees else np.degrees(1.0)
    rot = np.zeros((f, len(joints), 4))
    rot[..., 0] = 1.0
    pos = np.broadcast_to(offsets, (f, len(joints), 3)).copy()
    for j, n in enumerate(joints):
        dof = asf.dof_of(n)
        if not dof:
            continue
        v = motion.values[n] * np.array([1.0 if d in _TRANSLATIONS else to_deg for d in dof])
        axis, order = ((asf.root_orientation, asf.root_axis) if n == "root" else (asf.bones[n].axis,
                                                                                    asf.bones[n].axis_order))
        c = _axis_rotation(axis, order)
        euler_order, cols = _euler_layout(dof)
        angles = np.stack([v[:, k] if k >= 0 else np.zeros(f) for k in cols], axis=-1)
        m = quat_np.from_euler(np.radians(angles), euler_order)
        rot[:, j] = quat_np.mul(quat_np.mul(c, m), quat_np.inv(c))
        for k, d in enumerate(dof):
            if d in _TRANSLATIONS:  # the root's translation is absolute; a bone's is along its own axes
                pos[:, j, "xyz".index(d[1])] = v[:, k] if n == "root" else pos[:, j, "xyz".index(d[1])]
        moves = [k for k, d in enumerate(dof) if d in _TRANSLATIONS]
        if n != "root" and moves:
            t = np.zeros((f, 3))
            for k in moves:
                t[:, "xyz".index(dof[k][1])] = v[:, k]
            pos[:, j] += quat_np.rotate(np.broadcast_to(c, (f, 4)), t)
    channels = tuple(("Xposition", "Yposition", "Zposition", "Zrotation", "Yrotation", "Xrotation") if n == "root"
                     else ("Zrotation", "Yrotation", "Xrotation") for n in joints)
    skel = Skeleton(tuple(joints), parents.astype(np.int64), offsets, channels, ends)
    layout = [(n, k) for n in motion.order for k in range(len(asf.dof_of(n)))]
    source = np.stack([motion.values[n][:, k] for n, k in layout], axis=-1) if layout else np.zeros((f, 0))
    meta = {"asf": asf, "unit_m": asf.unit_m, "frame_numbers": motion.frames, "amc_order": motion.order,
            "amc_channels": source, "amc_degrees": motion.degrees}
    return Clip(skel, rot, pos, frame_time, name, meta)


def read_asf_amc(asf_path, amc_path, fps: float = AMC_FPS, name: str | None = None) -> Clip:
    """An AMC take on its ASF skeleton as a :class:`Clip` (``fps``: an AMC does not store its rate)."""
    if not (np.isfinite(fps) and fps > 0):
        raise AMCError(amc_path, f"frame rate {fps} must be a positive number of frames per second (CMU: 120)")
    asf = asf_path if isinstance(asf_path, Asf) else read_asf(asf_path)
    return to_clip(asf, read_amc(amc_path, asf), 1.0 / fps, name or Path(str(amc_path)).stem)


def amc_values(clip: Clip, asf: Asf) -> dict:
    """The clip (on ``asf``'s joints) as AMC values ``{joint: [F, dofs]}`` in degrees: ``M = C^-1 L C`` in dof
    order, each triple nearest the values it was read with (``meta["amc_channels"]``) or the previous frame."""
    joints = asf.joints()
    if tuple(joints) != tuple(clip.skeleton.names):
        extra = [n for n in clip.skeleton.names if n not in joints]
        missing = [n for n in joints if n not in clip.skeleton.names]
        raise AMCError(asf.path, "the motion is not on this ASF's skeleton ("
                       + "; ".join(filter(None, [missing and "missing: " + ", ".join(missing),
                                                  extra and "not in the ASF: " + ", ".join(extra)]))
                       + (")" if missing or extra else "its joints in another order)"))
    ref = _reference(clip)
    out = {}
    f = clip.num_frames
    for j, n in enumerate(joints):
        dof = asf.dof_of(n)
        if not dof:
            continue
        axis, order = ((asf.root_orientation, asf.root_axis) if n == "root" else (asf.bones[n].axis,
                                                                                    asf.bones[n].axis_order))
        c = _axis_rotation(axis, order)
        m = quat_np.mul(quat_np.mul(quat_np.inv(c), clip.rotations[:, j]), c)
        euler_order, cols = _euler_layout(dof)
        e = quat_np.to_euler(m, euler_order)
        r = ref.get(n)
        if r is not None:
            r = np.radians(np.stack([r[:, k] if k >= 0 else np.zeros(f) for k in cols], axis=-1))
        e = np.degrees(unwrap_euler(e, r))
        v = np.zeros((f, len(dof)))
        for a, k in enumerate(cols):
            if k >= 0:
                v[:, k] = e[:, a]
        local = clip.positions[:, j] - clip.skeleton.offsets[j]
        if n != "root":
            local = quat_np.rotate(np.broadcast_to(quat_np.inv(c), (f, 4)), local)
        for k, d in enumerate(dof):
            if d in _TRANSLATIONS:
                v[:, k] = clip.positions[:, j, "xyz".index(d[1])] if n == "root" else local[:, "xyz".index(d[1])]
        out[n] = v
    return out


def _reference(clip: Clip) -> dict:
    """``{joint: [F, dofs]}`` degrees the take was read with, when the clip still has its frames."""
    src, order, asf = (clip.meta.get(k) for k in ("amc_channels", "amc_order", "asf"))
    if src is None or order is None or asf is None or src.shape[0] != clip.num_frames:
        return {}
    scale = 1.0 if clip.meta.get("amc_degrees", True) else np.degrees(1.0)
    out, col = {}, 0
    for n in order:
        w = len(asf.dof_of(n))
        out[n] = src[:, col:col + w] * scale
        col += w
    return out


def format_amc(clip: Clip, asf: Asf, precision: int = 6, first_frame: int | None = None) -> str:
    """AMC text (``:FULLY-SPECIFIED``, ``:DEGREES``), the joints in the order the take listed them."""
    values = amc_values(clip, asf)
    order = [n for n in clip.meta.get("amc_order") or asf.joints() if n in values]
    order += [n for n in values if n not in order]
    if first_frame is None:
        numbers = clip.meta.get("frame_numbers")
        first_frame = int(numbers[0]) if numbers is not None and len(numbers) else 1
    out = [f"# written by Splinetween for {Path(asf.path).name}", ":FULLY-SPECIFIED", ":DEGREES"]
    fmt = f"%.{precision}f"
    text = {n: np.char.mod(fmt, values[n]) for n in order}
    for f in range(clip.num_frames):
        out.append(str(first_frame + f))
        out.extend(f"{n} {' '.join(text[n][f])}" for n in order)
    return "\n".join(out) + "\n"


def write_amc(path, clip: Clip, asf: Asf, precision: int = 6) -> None:
    """Write atomically (backend.formats.atomic): no half-written AMC is ever left."""
    write_text(path, format_amc(clip, asf, precision))
