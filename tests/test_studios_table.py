"""``training.studies.studios``: several models' evaluation reports side by side, per column and spacing."""
import json

from training.studies import studios


def _report(split, l2q, mpjpe):
    res = {"model": {"l2q": l2q, "mpjpe_cm": mpjpe, "foot_cm_s": 3.0},
           "lerp_slerp": {"l2q": 2 * l2q, "mpjpe_cm": 2.0, "foot_cm_s": 9.0},
           "blender_bezier": {"l2q": 1.0, "mpjpe_cm": 4.0, "foot_cm_s": 12.0}, "capture_foot_cm_s": 1.5}
    col = {"inbetween": {"5": res, "15": res}}
    return {"split": split, "columns": {"familiar": col, "other studio: mean": col}}


def test_each_model_is_a_row_beside_the_baselines_of_the_same_run(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_report("val", 0.5, 1.0)))
    b.write_text(json.dumps(_report("val", 0.25, 2.0)))
    assert studios.main([f"old={a}", f"new={b}", "--out", str(tmp_path / "t.md")]) == 0
    text = (tmp_path / "t.md").read_text()
    assert text.count("### ") == 2 and "| old | 0.50 · 0.25 · 3.0 | 0.50 · 0.25 · 3.0 |" in text
    assert "| new | 0.50 · 0.50 · 3.0 |" in text and "| SLERP | 1.00 · 0.50 · 9.0" in text
    assert "| the capture's own feet | 1.5 | 1.5 |" in text


def test_reports_of_two_splits_are_refused(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_report("val", 0.5, 1.0)))
    b.write_text(json.dumps(_report("test", 0.5, 1.0)))
    assert studios.main([f"a={a}", f"b={b}"]) == 2
    assert "different splits" in capsys.readouterr().err
