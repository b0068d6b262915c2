"""Model cards name the data a checkpoint was trained on and the terms that follow from it."""
import json
from pathlib import Path

from training import model_card

ROOT = Path(__file__).resolve().parents[1]
ALL = ("../shared/data/bandai-namco-2.tar.xz,/d/bandai-namco-1-part/bvh,/d/cmu-mocap-part/bvh,/d/cmu-mocap-daz/bvh,"
       "/d/reactidle,/d/hdm05-part")
OPEN = "/d/cmu-mocap-part/bvh,/d/cmu-mocap-daz.tar.xz,/d/reactidle"


def test_every_archive_is_named_once_and_the_most_specific_name_wins():
    assert [k for k, *_ in model_card.sources(ALL)] == [
        "bandai-namco-2", "bandai-namco-1", "cmu-mocap-daz", "cmu-mocap", "hdm05", "reactidle"]
    assert [k for k, *_ in model_card.sources("/d/cmu-mocap-daz/bvh")] == ["cmu-mocap-daz"]


def test_the_strictest_terms_decide_the_licence():
    nc = "\n".join(model_card.licence(model_card.sources(ALL)))
    assert "non-commercial use only" in nc and "CC BY-SA 3.0" in nc and "Kobayashi" in nc
    open_ = "\n".join(model_card.licence(model_card.sources(OPEN)))
    assert "may be used in a commercial production" in open_ and "non-commercial" not in open_
    assert "BY-SA" not in open_ and "| ReActIdle" in open_ and "MIT" in open_
    with_hdm = "\n".join(model_card.licence(model_card.sources(OPEN + ",/d/hdm05-part")))
    assert "commercial production" in with_hdm and "same terms" in with_hdm


def test_the_card_names_its_data_and_licence():
    doc = json.loads((ROOT / "backend/checkpoints/inbetween.json").read_text())
    doc["info"]["config"]["data"] = OPEN
    text = model_card.card(doc, {}, "python -m training.train ...", "inbetween_open")
    assert "- **Data**: CMU's takes in a DAZ-style conversion" in text and "Bandai" not in text
    assert "## Licence" in text and "commercial production" in text
