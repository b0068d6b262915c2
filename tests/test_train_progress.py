"""Progress as data: ``python -m training.train mesh --events PATH`` writes JSON-lines events, and the
add-on's training job follows a run through them (blender_addon.train.events), here on the real
event stream of short runs (a fresh one, its resumption, a refused one)."""
from __future__ import annotations

import json

import pytest

from blender_addon.train.events import EventReader, last_line
from tests.mesh_helpers import write_ripples
from training import progress
from training import train as train_cli

TINY = ["--components=8", "--latent=8", "--width=32", "--layers=1", "--heads=4", "--window=31", "--min_window=16",
        "--batch_size=8", "--val_every=10", "--ckpt_every=10", "--val_windows=8", "--threads=1", "--principal=0"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_ripples(tmp_path_factory.mktemp("ripples"), 20)


def events(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def follow(text: str, cut: int):
    reader, seen = EventReader(), []
    for i in range(0, len(text), cut):
        p = reader.feed(text[i:i + cut])
        seen.append(p.step)
    assert seen == sorted(seen)  # never goes backwards, however the file is cut
    return p


def test_a_run_and_its_resumption_are_followed_through_their_events(data, tmp_path):
    out, path = tmp_path / "run", tmp_path / "events.jsonl"
    assert train_cli.main(["mesh", f"--data={data}", f"--out={out}", "--steps=30", f"--events={path}", *TINY]) == 0
    first = events(path)
    phases = [e["name"] for e in first if e["event"] == "phase"]  # the work before the first step, named
    assert phases[:2] == ["reading the data", "fitting the vertex basis"]
    kinds = [e["event"] for e in first if e["event"] != "phase"]
    assert kinds[0] == "start" and kinds[-1] == "done" and kinds.count("validation") == 3
    assert all(isinstance(e["time"], float) for e in first)
    steps = [e for e in first if e["event"] == "step"]
    assert steps and steps[-1]["step"] == 30 and steps[-1]["eta_s"] == 0.0
    done, vals = first[-1], [e for e in first if e["event"] == "validation"]
    assert done["checkpoint"] == str(out / "best.json") and done["value"] == min(v["value"] for v in vals)
    text = path.read_text()
    for cut in (1, 7, 64, len(text)):
        p = follow(text, cut)
        assert (p.step, p.total, p.val_step, p.resumed_from) == (30, 30, 30, None)
        assert p.val_error == done["value"] and p.done_path == str(out / "best.json") and p.error == ""
        assert p.loss == steps[-1]["loss"] > 0 and p.eta == "0:00"

    size = path.stat().st_size  # the same run goes on: its events are appended
    assert train_cli.main(["mesh", f"--data={data}", f"--out={out}", "--steps=40", f"--events={path}", *TINY]) == 0
    p = follow(path.read_text()[size:], 5)
    assert (p.resumed_from, p.step, p.total, p.val_step) == (30, 40, 40, 40) and p.done_path


def test_a_refused_run_sends_the_clis_message(data, tmp_path, capsys):
    path = tmp_path / "events.jsonl"
    assert train_cli.main(["mesh", f"--data={data}", f"--out={tmp_path / 'o'}", f"--events={path}", "--steps=5",
                           *TINY, "--width=32", "--heads=5"]) == 2
    err = capsys.readouterr().err
    (event,) = events(path)
    assert event["event"] == "error" and f"error: {event['message']}" in err
    assert EventReader().feed(path.read_text()).error == "width=32 must be divisible by heads=5"


def test_events_to_standard_output_and_nothing_without_them(data, tmp_path, capsys):
    assert train_cli.main(["mesh", f"--data={data}", f"--out={tmp_path / 'a'}", "--steps=2", "--events=-", *TINY]) == 0
    out = capsys.readouterr()
    lines = [e for e in map(json.loads, out.out.splitlines()) if e["event"] != "phase"]
    assert lines[0]["event"] == "start" and lines[-1]["event"] == "done"
    assert "done: " in out.err  # the human lines stay on stderr
    assert not progress.enabled()  # closed when the CLI returns
    assert train_cli.main(["mesh", f"--data={data}", f"--out={tmp_path / 'b'}", "--steps=2", *TINY]) == 0
    assert capsys.readouterr().out == ""


def test_the_log_gives_only_a_crash_s_last_line():
    log = ("1 train sequences\n\r[#####...] 45/200 loss 1.2 lr 3e-04 410 win/s eta 0:07"
           "\nTraceback (most recent call last):\n  File x\nRuntimeError: boom\n\r[######..] 50/200")
    assert last_line(log) == "RuntimeError: boom"
    assert last_line("\r[###...] 1/2", "before") == "before"
