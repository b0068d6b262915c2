"""The batch's commands on Acclaim takes (.amc, tests/fixtures/hdm05): each take finds its skeleton (the .asf
its name begins with, else the one beside it, or --asf), is in-betweened through the one humanoid conversion
and written back beside the others as an .amc of its own skeleton, keys exactly as in the file; a take
without a skeleton, or with several to choose from, fails naming the fix."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from backend.formats import asf
from backend.maths import quat_np, timebase
from backend.motion.skeleton import Clip
from batch_helpers import load_report, run_batch

pytestmark = pytest.mark.blender
HDM = Path(__file__).resolve().parent / "fixtures" / "hdm05"
ASF, AMC = HDM / "HDM_tr.asf", HDM / "HDM_tr_kickLFront1Reps_027_120.amc"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """takes/ (found by name), beside/ (the one .asf, another name), two/ (two .asf: which?), none/."""
    root = tmp_path_factory.mktemp("amc")
    for name in ("takes", "beside", "two", "none"):
        (root / name).mkdir()
    shutil.copy2(ASF, root / "takes" / ASF.name)
    shutil.copy2(AMC, root / "takes" / AMC.name)
    shutil.copy2(ASF, root / "beside" / "performer.asf")
    shutil.copy2(AMC, root / "beside" / "kick.amc")
    for n in ("a.asf", "b.asf"):
        shutil.copy2(ASF, root / "two" / n)
    shutil.copy2(AMC, root / "two" / "kick.amc")
    shutil.copy2(AMC, root / "none" / "kick.amc")
    return root


def by_stem(out, command):
    return {Path(f["input"]).parent.name + "/" + Path(f["input"]).stem: f for f in load_report(out, command)["files"]}


def test_inbetween_takes_each_on_its_own_skeleton(folders, tmp_path):
    r = run_batch("inbetween", folders, "--every", 5, "--out-dir", tmp_path, "--jobs", 1, "--device", "cpu")
    assert r.returncode == 1, r.stdout + r.stderr  # two takes cannot say their skeleton
    files = by_stem(tmp_path, "inbetween")
    assert "which skeleton?" in files["two/kick"]["errors"][0] and "--asf FILE" in files["two/kick"]["errors"][0]
    assert "no skeleton" in files["none/kick"]["errors"][0] and "--asf FILE" in files["none/kick"]["errors"][0]
    assert not (tmp_path / "two" / "kick.amc").exists() and not (tmp_path / "none" / "kick.amc").exists()
    skeleton = asf.read_asf(ASF)
    for rel in (f"takes/{AMC.name}", "beside/kick.amc"):
        entry = files[rel[:-4]]
        assert entry["status"] == "ok", entry["errors"]
        obj = entry["objects"][0]
        assert obj["keys"] == [0, 5, 10, 15, 19] and obj["bone_map"]["UpperLeg_L"] == "lfemur"
        src = asf.read_amc(AMC, skeleton)
        out = asf.read_amc(tmp_path / rel, skeleton)  # an .amc of the take's own skeleton, beside the others
        assert list(out.frames) == list(src.frames) and out.order == src.order
        for n, v in src.values.items():  # the keys as the file has them, in its own angles
            np.testing.assert_allclose(out.values[n][obj["keys"]], v[obj["keys"]], atol=1e-5, err_msg=n)
        a, b = asf.to_clip(skeleton, src), asf.to_clip(skeleton, out)
        _, xa = quat_np.fk(a.rotations, a.positions, a.skeleton.parents)
        _, xb = quat_np.fk(b.rotations, b.positions, b.skeleton.parents)
        foot = a.skeleton.index("lfoot")
        assert np.isfinite(xb).all()
        gap = [f for f in range(20) if f not in obj["keys"]]
        moved = np.linalg.norm(xb[gap, foot] - xa[gap, foot], axis=-1)
        assert moved.max() > 1e-3  # the gaps were filled ...
        assert moved.max() * skeleton.unit_m < 0.15  # ... with the kick, not somewhere else (metres)


def test_asf_given_and_asf_as_input(folders, tmp_path):
    r = run_batch("inbetween", folders / "two" / "kick.amc", folders / "takes" / ASF.name, "--asf", ASF,
                  "--every", 5, "--out-dir", tmp_path, "--jobs", 1, "--device", "cpu")
    files = by_stem(tmp_path, "inbetween")
    assert files["two/kick"]["status"] == "ok", files["two/kick"]["errors"]
    assert "an .asf holds a skeleton, no motion" in files["takes/HDM_tr"]["errors"][0]
    assert r.returncode == 1
    bad = run_batch("inbetween", folders / "two" / "kick.amc", "--asf", AMC, "--every", 5, "--out-dir", tmp_path / "x")
    assert bad.returncode == 2 and "--asf" in bad.stderr and "not an ASF file" in bad.stderr, bad.stderr
    assert not (tmp_path / "x").exists() or not any((tmp_path / "x").iterdir())


def longer_take(folder: Path, frames: int = 120) -> Path:
    """The fixture's kick spread over ``frames`` frames (slow motion at 120 fps): long enough for the
    autoencoder's 16 frames at 30 fps."""
    skeleton = asf.read_asf(ASF)
    clip = asf.read_asf_amc(skeleton, AMC)
    rot, pos = timebase.resample_uniform(quat_np.fix_hemisphere(clip.rotations), clip.positions, frames)
    slow = Clip(clip.skeleton, rot, pos, clip.frame_time, "slow", {"asf": skeleton, "amc_order": clip.meta["amc_order"]})
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ASF, folder / ASF.name)
    asf.write_amc(folder / "HDM_tr_slow.amc", slow, skeleton)
    return folder / "HDM_tr_slow.amc"


@pytest.mark.torch  # (encode and edit of a file run the model in the worker's Python)
def test_encode_and_edit_of_a_take(tmp_path):
    take = longer_take(tmp_path / "in")
    r = run_batch("encode", take, "--out-dir", tmp_path / "enc", "--jobs", 1, "--device", "cpu")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "enc" / "HDM_tr_slow.amc.controls.json").read_text())
    assert doc["clips"]
    r = run_batch("edit", take, "--amplify", 1.5, "--out-dir", tmp_path / "edit", "--jobs", 1, "--device", "cpu")
    assert r.returncode == 0, r.stdout + r.stderr
    skeleton = asf.read_asf(ASF)
    src = asf.read_asf_amc(skeleton, take)
    out = asf.read_asf_amc(skeleton, tmp_path / "edit" / "HDM_tr_slow.amc")
    assert out.num_frames == src.num_frames and out.skeleton.names == src.skeleton.names
    thumb = src.skeleton.index("lthumb")  # no joint of the model's: the take's own motion, kept
    dots = np.abs((out.rotations[:, thumb] * src.rotations[:, thumb]).sum(-1))
    assert np.degrees(2 * np.arccos(np.clip(dots, -1, 1))).max() < 1e-3
    assert not np.allclose(out.rotations, src.rotations, atol=1e-3)  # amplified
