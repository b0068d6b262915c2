"""ASF/AMC takes in training: ``training.data`` reads HDM05's layout (``asf/`` beside ``amc/``, in a folder and in
a .tar.xz), picks each take's skeleton by its name and converts it to the model's skeleton and rate.  Fixture:
20 frames of HDM05 (tests/fixtures/hdm05, CC BY-SA 3.0)."""
import json
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest

from backend.formats.asf import read_asf_amc, skeletons_named
from backend.maths import quat_np as Q
from backend.motion.skeleton import Skeleton
from training.data import DataError, Selection, load_split

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests/fixtures/hdm05"
TAKE = "HDM_tr_kickLFront1Reps_027_120"


def _hdm05_tree(root: Path) -> Path:
    (root / "asf").mkdir(parents=True)
    (root / "amc").mkdir()
    shutil.copy(FIX / "HDM_tr.asf", root / "asf")
    shutil.copy(FIX / f"{TAKE}.amc", root / "amc")
    return root


def test_a_take_names_its_skeleton_by_the_longest_whole_word():
    assert skeletons_named("HDM_tr_kick_120", ["HDM_tr", "HDM_bd", "HDM"]) == ["HDM_tr"]
    assert skeletons_named("01_02", ["01", "010", "02"]) == ["01"]
    assert skeletons_named("HDM_trx_kick", ["HDM_tr"]) == []


@pytest.mark.parametrize("packed", [False, True], ids=["folder", "tar.xz"])
def test_amc_takes_read_as_their_own_skeleton(tmp_path, packed):
    tree = _hdm05_tree(tmp_path / "hdm05-part")
    data = tree
    if packed:
        data = tmp_path / "hdm05-part.tar.xz"
        with tarfile.open(data, "w:xz") as tar:
            tar.add(tree, arcname="hdm05-part")
    ms = load_split(str(data), Selection(("val",)), None, verbose=False)  # performer tr is validation
    ref = read_asf_amc(FIX / "HDM_tr.asf", FIX / f"{TAKE}.amc")
    assert ms.names == [TAKE] and not ms.skipped
    assert ms.skeleton.names == ref.skeleton.names
    g, g_ref = Q.fk(ms.rotations.astype(np.float64), ms.positions.astype(np.float64), ms.skeleton.parents)[1], \
        Q.fk(ref.rotations, ref.positions, ref.skeleton.parents)[1]
    n = len(g)  # a leading calibration frame may be dropped; the rest is the take, in its own units
    assert np.allclose(g - g[:, :1], (g_ref - g_ref[:, :1])[-n:], atol=1e-3)


def test_amc_takes_convert_to_the_model_skeleton_at_30_fps(tmp_path):
    ref = Skeleton.from_json(json.loads((ROOT / "backend/checkpoints/inbetween.json").read_text())["skeleton"])
    ms = load_split(str(_hdm05_tree(tmp_path / "h")), Selection(("val",)), None, verbose=False, skeleton=ref)
    assert ms.skeleton.same_hierarchy(ref) and ms.converted.all()
    assert abs(ms.frame_time - 1 / 30) < 1e-12 and len(ms.rotations) in (5, 6, 7)  # 20 frames at 120 fps
    g = Q.fk(ms.rotations.astype(np.float64), ms.positions.astype(np.float64), ref.parents)[1]
    head, feet = g[:, ref.index("Head"), 1], g[:, [ref.index("Toes_L"), ref.index("Toes_R")], 1].min(1)
    assert 120 < np.median(head - feet) < 200  # a person, in centimetres, upright (Y up)


def test_a_take_without_its_skeleton_is_skipped_with_the_reason(tmp_path):
    tree = _hdm05_tree(tmp_path / "h")
    (tree / "asf" / "HDM_tr.asf").rename(tree / "asf" / "HDM_bd.asf")
    with pytest.raises(DataError, match=r"no \.asf in the data names this take"):
        load_split(str(tree), Selection(("val",)), None, verbose=False)
