"""ASF/AMC (backend/formats/asf.py): the joints a take puts in the world equal an Acclaim forward kinematics
written here from the spec (4x4 matrices, no quaternions), the AMC written back reads as the same take,
an HDM05 skeleton goes through the one humanoid conversion, and a file that is no ASF/AMC (or does not
fit its skeleton) is refused naming the file, the line and the problem."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from backend.formats import asf
from backend.formats.bvh import read_bvh
from backend.humanoid import bvh_rig
from backend.maths import quat_np

ROOT = Path(__file__).resolve().parent.parent
HDM = ROOT / "tests" / "fixtures" / "hdm05"
ASF, AMC = HDM / "HDM_tr.asf", HDM / "HDM_tr_kickLFront1Reps_027_120.amc"
MODEL = read_bvh(ROOT / "tests" / "fixtures" / "dataset-2_walk_normal_005.bvh").skeleton

# A small skeleton with what HDM05 does not use: a turned root with another axis order, radians, an axis
# order other than XYZ, dofs out of x-y-z order, one and two dofs, a bone translation.
SMALL_ASF = """# a test skeleton
:version 1.10
:name small
:units
  mass 1.0
  length 0.5
  angle rad
:root
   order RZ TX TY TZ RX RY
   axis ZYX
   position 0 0 0
   orientation 0.3 -0.2 0.5
:bonedata
  begin
     id 1
     name spine
     direction 0 1 0
     length 3
     axis 0.1 0.2 0.3 ZXY
    dof rz rx ry
    limits (-1 1)
           (-1 1)
           (-1 1)
  end
  begin
     id 2
     name lfemur
     direction 0.3 -0.9 0.1
     length 4
     axis 0 0 0.35 XYZ
    dof rz rx
  end
  begin
     id 3
     name ltibia
     direction 0 -1 0
     length 4
     axis -0.2 0 0.35 YZX
    dof rx tx ty
  end
  begin
     id 4
     name head
     direction 0 0.8 0.6
     length 1
     axis 0 0 0 XYZ
  end
:hierarchy
  begin
    root spine lfemur
    lfemur ltibia
    spine head
  end
"""


def small_amc(frames=6, seed=3, degrees=False) -> str:
    """Random frames for SMALL_ASF, angles in radians (the ASF's unit) or, saying so, in degrees."""
    rng = np.random.default_rng(seed)
    ang = (lambda v: np.degrees(v)) if degrees else (lambda v: v)
    out = [":FULLY-SPECIFIED"] + ([":DEGREES"] if degrees else [])
    for f in range(1, frames + 1):
        r, t = ang(rng.uniform(-2.5, 2.5, 5)), rng.uniform(-5, 5, 3)
        out += [str(f), f"root {r[0]} {t[0]} {t[1]} {t[2]} {r[1]} {r[2]}",
                f"spine {' '.join(map(str, ang(rng.uniform(-1.4, 1.4, 3))))}",
                f"lfemur {' '.join(map(str, ang(rng.uniform(-2.0, 2.0, 2))))}",
                f"ltibia {ang(rng.uniform(-2.5, 2.5))} {rng.uniform(-1, 1)} {rng.uniform(-1, 1)}"]
    return "\n".join(out) + "\n"


# --- an independent reference: the Acclaim spec's matrices ---------------------------------------------

def axis_matrix(axis: str, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    m = np.eye(4)
    i, j = {"x": (1, 2), "y": (2, 0), "z": (0, 1)}[axis.lower()]
    m[i, i], m[i, j], m[j, i], m[j, j] = c, -s, s, c
    return m


def rotations(axes, angles) -> np.ndarray:
    """The rotations applied in the order given (the first first): later ones multiply on the left."""
    m = np.eye(4)
    for a, v in zip(axes, angles, strict=False):
        m = axis_matrix(a, v) @ m
    return m


def translation(v) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = v
    return m


def reference_world(a: asf.Asf, motion: asf.Motion, f: int) -> dict:
    """{joint: (start, end)} in the world at frame ``f``: F_root = T(t) C_root M_root, and for a bone c of a
    parent p, F_c = F_p T(C_p^-1 d_p l_p) C_p^-1 C_c T(t_c) M_c; a bone's end is F_c (C_c^-1 d_c l_c)."""
    unit = 1.0 if motion.degrees else np.degrees(1.0)
    rad = np.radians(1.0)  # Asf holds its axes in degrees, whatever the file's unit

    def dof_matrix(name, dofs):
        vals = dict(zip(dofs, motion.values[name][f], strict=False)) if dofs else {}
        r = [d for d in dofs if d.startswith("r")]
        t = [vals.get(k, 0.0) for k in ("tx", "ty", "tz")]
        return t, rotations([d[1] for d in r], [np.radians(vals[d] * unit) for d in r])

    def axis_rotation(order, xyz):  # ``axis a_x a_y a_z ORDER``: the angles by letter, applied in ORDER
        return rotations(order, [xyz["XYZ".index(k)] * rad for k in order])

    c_root = axis_rotation(a.root_axis, a.root_orientation)
    t, m = dof_matrix("root", a.root_order)
    frames = {"root": translation(t) @ c_root @ m}
    c = {"root": c_root}
    world = {"root": (frames["root"][:3, 3], frames["root"][:3, 3])}
    for parent in a.joints():
        for child in a.children.get(parent, []):
            b = a.bones[child]
            c[child] = axis_rotation(b.axis_order, b.axis)
            d_p = np.zeros(3) if parent == "root" else np.asarray(a.bones[parent].direction) * a.bones[parent].length
            t, m = dof_matrix(child, b.dof)
            along = np.linalg.inv(c[parent])[:3, :3] @ d_p
            frames[child] = (frames[parent] @ translation(along) @ np.linalg.inv(c[parent]) @ c[child]
                             @ translation(t) @ m)
            end = np.linalg.inv(c[child])[:3, :3] @ (np.asarray(b.direction) * b.length)
            world[child] = (frames[child][:3, 3], (frames[child] @ np.append(end, 1.0))[:3])
    return world


def clip_world(clip):
    grot, gpos = quat_np.fk(clip.rotations, clip.positions, clip.skeleton.parents)
    return grot, gpos


def check_against_reference(a, motion, clip):
    grot, gpos = clip_world(clip)
    names = clip.skeleton.names
    for f in range(clip.num_frames):
        ref = reference_world(a, motion, f)
        for j, n in enumerate(names):
            np.testing.assert_allclose(gpos[f, j], ref[n][0], atol=1e-9, err_msg=f"{n} frame {f}")
            # where the bone points (its end, or its first child's start) as the spec puts it
            if n != "root":
                end = gpos[f, j] + quat_np.rotate(grot[f, j], np.asarray(a.bones[n].direction) * a.bones[n].length)
                np.testing.assert_allclose(end, ref[n][1], atol=1e-9, err_msg=f"{n}'s end, frame {f}")


# --- the tests ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hdm():
    return asf.read_asf_amc(ASF, AMC)


def test_hdm05_frames_put_every_joint_where_acclaims_matrices_do(hdm):
    a = asf.read_asf(ASF)
    assert a.length_unit == 0.45 and not a.radians and a.root_order == ("tx", "ty", "tz", "rx", "ry", "rz")
    assert a.bones["lfemur"].dof == ("rx", "ry", "rz") and a.bones["lfemur"].axis == (0.0, 0.0, 20.0)
    assert a.bones["lfemur"].limits[0] == (-160.0, 20.0) and a.bones["lclavicle"].dof == ("ry", "rz")
    motion = asf.read_amc(AMC, a)
    assert list(motion.frames) == list(range(121, 141)) and hdm.num_frames == 20
    assert hdm.frame_time == pytest.approx(1 / 120) and hdm.skeleton.names[0] == "root"
    check_against_reference(a, motion, hdm)


def test_every_acclaim_option_matches_the_reference():
    a = asf.parse_asf(SMALL_ASF, "small.asf")
    assert a.radians and a.root_axis == "ZYX" and a.bones["ltibia"].axis_order == "YZX"
    motion = asf.parse_amc(small_amc(), a, "small.amc")
    assert not motion.degrees  # the ASF's radians, the AMC saying no :DEGREES
    clip = asf.to_clip(a, motion)
    check_against_reference(a, motion, clip)
    # the same angles in degrees, the AMC saying so, are the same take
    clip_deg = asf.to_clip(a, asf.parse_amc(small_amc(degrees=True), a, "small.amc"))
    np.testing.assert_allclose(clip_world(clip_deg)[1], clip_world(clip)[1], atol=1e-9)


def test_units_give_metres_per_unit(hdm):
    assert hdm.meta["unit_m"] == pytest.approx(0.0254 / 0.45)  # CMU's and HDM05's 5.6 cm
    _, x = clip_world(hdm)
    names = hdm.skeleton.names
    height = (x[:, names.index("head"), 1] - x[:, [names.index("lfoot"), names.index("rfoot")], 1].min(-1)).max()
    assert 1.3 < height * hdm.meta["unit_m"] < 1.9  # a performer's head over the feet, in metres


def test_amc_written_back_reads_as_the_same_take(hdm, tmp_path):
    a = hdm.meta["asf"]
    out = tmp_path / "back.amc"
    asf.write_amc(out, hdm, a)
    again = asf.read_amc(out, a)
    first = asf.read_amc(AMC, a)
    assert list(again.frames) == list(first.frames) and again.order == first.order
    for n, v in first.values.items():
        np.testing.assert_allclose(again.values[n], v, atol=1e-6, err_msg=n)  # degrees, the file's own angles
    # without the values it was read with (a clip made elsewhere), the same rotations come back
    bare = asf.read_asf_amc(a, out)
    bare.meta.pop("amc_channels")
    asf.write_amc(out, bare, a)
    third = asf.read_asf_amc(a, out)
    dots = np.abs((third.rotations * hdm.rotations).sum(-1))
    assert np.degrees(2 * np.arccos(np.clip(dots, -1, 1))).max() < 1e-5
    np.testing.assert_allclose(third.positions, hdm.positions, atol=1e-6)


def test_small_skeleton_round_trip():
    a = asf.parse_asf(SMALL_ASF, "small.asf")
    clip = asf.to_clip(a, asf.parse_amc(small_amc(), a, "small.amc"))
    back = asf.to_clip(a, asf.parse_amc(asf.format_amc(clip, a, precision=9), a, "back.amc"))
    dots = np.abs((back.rotations * clip.rotations).sum(-1))
    assert np.degrees(2 * np.arccos(np.clip(dots, -1, 1))).max() < 1e-5
    np.testing.assert_allclose(back.positions, clip.positions, atol=1e-6)


def test_hdm05_skeleton_converts_through_the_one_humanoid_conversion(hdm):
    out = bvh_rig.to_model(hdm, MODEL)
    m = out.meta["bone_map"]
    assert [m[j] for j in ("UpperLeg_L", "LowerLeg_L", "Foot_L", "Toes_L")] == ["lfemur", "ltibia", "lfoot", "ltoes"]
    assert [m[j] for j in ("UpperArm_R", "LowerArm_R", "Hand_R")] == ["rhumerus", "rradius", "rwrist"]
    assert (m["Hips"], m["Chest"], m["Head"], m["Shoulder_L"]) == ("root", "thorax", "head", "lclavicle")
    assert m["Spine"] in ("lowerback", "upperback") and m["Neck"] in ("lowerneck", "upperneck")
    _, x = clip_world(out)
    n = MODEL.names
    head_over_feet = x[:, n.index("Head"), 1] - x[:, [n.index("Foot_L"), n.index("Foot_R")], 1].min(-1)
    assert 100 < head_over_feet.min() and head_over_feet.max() < 190  # the model's centimetres, standing
    # the kick: the left thigh comes forward (along the body's facing) as the file's does
    _, xf = clip_world(hdm)
    fn = hdm.skeleton.names
    def knee_forward(x, knee, hip, toe):
        facing = x[:, toe] - x[:, hip]
        facing[:, 1] = 0
        return ((x[:, knee] - x[:, hip]) * facing).sum(-1) / np.linalg.norm(facing, axis=-1)
    file_fwd = knee_forward(xf, fn.index("ltibia"), fn.index("lfemur"), fn.index("rtoes"))
    model_fwd = knee_forward(x, n.index("LowerLeg_L"), n.index("UpperLeg_L"), n.index("Toes_R"))
    assert np.corrcoef(file_fwd, model_fwd)[0, 1] > 0.95


# --- refusals ------------------------------------------------------------------------------------------------

BVH_TEXT = (ROOT / "tests" / "fixtures" / "dataset-2_walk_normal_005.bvh").read_text()


@pytest.mark.parametrize("text, words", [
    (BVH_TEXT, ["line 1", "not an ASF file", "HIERARCHY"]),
    (SMALL_ASF.replace("    lfemur ltibia\n", "    lfemur ltibia knee\n"), ["'knee'", "does not define"]),
    (SMALL_ASF.replace("    dof rz rx\n", "    dof rz rq\n"), ["line 31", "lfemur", "rq"]),
    (SMALL_ASF.replace("     length 4\n", "     length four\n", 1), ["line 29", "lfemur", "length", "four"]),
    (SMALL_ASF.replace("  angle rad", "  angle grad"), ["line 7", "grad"]),
    (SMALL_ASF.replace("    root spine lfemur\n", "    root spine\n"), ["lfemur", "ltibia", "not reached"]),
])
def test_not_an_asf_is_refused_naming_file_line_and_problem(text, words):
    with pytest.raises(asf.ASFError) as e:
        asf.parse_asf(text, "take.asf")
    assert isinstance(e.value, ValueError) and str(e.value).startswith("take.asf")
    for w in words:
        assert w in str(e.value), str(e.value)


@pytest.mark.parametrize("text, words", [
    (BVH_TEXT, ["line 1", "not an AMC file", "frame number"]),
    (small_amc().replace("spine ", "neck ", 1), ["line 4", "'neck'", "not in the ASF small.asf"]),
    (small_amc().replace("spine ", "head ", 1), ["line 4", "'head'", "no dof"]),
    (small_amc().replace("lfemur ", "lfemur 0.5 ", 1), ["line 5", "lfemur", "3 values", "(rz rx) needs 2"]),
    (small_amc().replace("lfemur ", "lfemur x", 1), ["line 5", "not numeric"]),
    ("\n".join(small_amc().splitlines()[:10] + small_amc().splitlines()[11:]),  # frame 2 without ltibia
     ["line 11", "frame 2", "ltibia", "FULLY-SPECIFIED"]),
    (":FULLY-SPECIFIED\n:DEGREES\n", ["no frames"]),
])
def test_not_an_amc_or_another_skeletons_is_refused(text, words):
    a = asf.parse_asf(SMALL_ASF, "small.asf")
    with pytest.raises(asf.AMCError) as e:
        asf.parse_amc(text, a, "take.amc")
    assert isinstance(e.value, ValueError) and str(e.value).startswith("take.amc")
    for w in words:
        assert w in str(e.value), str(e.value)


def test_missing_files_are_named(tmp_path):
    with pytest.raises(asf.ASFError, match="nothing.asf: cannot read"):
        asf.read_asf(tmp_path / "nothing.asf")
    with pytest.raises(asf.AMCError, match="nothing.amc: cannot read"):
        asf.read_asf_amc(ASF, tmp_path / "nothing.amc")


def test_a_takes_skeleton_is_the_asf_its_name_begins_with(tmp_path):
    for n in ("01.asf", "010.asf", "02.asf"):
        (tmp_path / n).write_text(SMALL_ASF)
    take = tmp_path / "01_02.amc"
    assert asf.skeleton_for(take) == tmp_path / "01.asf"  # not 010.asf, nor 02.asf
    assert asf.skeleton_for(tmp_path / "010_01.amc") == tmp_path / "010.asf"
    with pytest.raises(asf.AMCError, match=r"03_01.amc: which skeleton\? 3 .asf files .* give --asf FILE"):
        asf.skeleton_for(tmp_path / "03_01.amc")
    assert asf.skeleton_for(tmp_path / "03_01.amc", tmp_path / "02.asf") == tmp_path / "02.asf"
    with pytest.raises(asf.ASFError, match="nothing.asf: no such file"):
        asf.skeleton_for(take, tmp_path / "nothing.asf")
    alone = tmp_path / "alone"
    alone.mkdir()
    with pytest.raises(asf.AMCError, match="kick.amc: no skeleton: no .asf in"):
        asf.skeleton_for(alone / "kick.amc")
    (alone / "performer.asf").write_text(SMALL_ASF)
    assert asf.skeleton_for(alone / "kick.amc") == alone / "performer.asf"  # the one beside it
