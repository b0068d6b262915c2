"""Training runs end to end on the committed example clips: determinism, exact resume after a
kill, DDP == one process, and bad input refused (one line naming the file or key) before training.

The example clips (ids 001/002/003) are all in the train split, so each test builds a data
folder with renamed copies (ids ending in 8) as the validation split.

Longer than 300 lines: the end-to-end runs share their fixtures (data folders, trained runs).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples" / "bvh").glob("*.bvh"))
TORCHRUN = Path(sys.executable).parent / "torchrun"

TINY = ["--width=32", "--heads=4", "--layers=1", "--latent=8", "--window=16", "--min_window=8",
        "--batch_size=8", "--val_windows=8", "--threads=1", "--warmup=5", "--log_every=5"]


def env():
    e = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def make_data(folder: Path, val=True) -> Path:
    """The four example clips (train) plus two renamed copies whose ids end in 8 (val)."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in EXAMPLES:
        shutil.copy(f, folder / f.name)
    if val:
        shutil.copy(ROOT / "examples/bvh/dataset-2_walk_normal_001.bvh", folder / "val_walk_008.bvh")
        shutil.copy(ROOT / "examples/bvh/dataset-2_run_normal_002.bvh", folder / "val_run_018.bvh")
    return folder


def train_cmd(data, out, *extra, config=None):
    return ([sys.executable, "-m", "training.train"] + ([str(config)] if config else [])
            + [f"--data={data}", f"--out={out}", *TINY, *extra])


def run(cmd, timeout=300):
    return subprocess.run(cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=timeout)


def train_ok(data, out, *extra):
    r = run(train_cmd(data, out, *extra))
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def weights(run_dir: Path, name="final") -> dict:
    return load_file(str(run_dir / f"{name}.safetensors"))


def max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float(np.abs(a[k].astype(np.float64) - b[k]).max()) for k in a)


def identical(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_data(tmp_path_factory.mktemp("data"))


# One uninterrupted reference run, shared by the determinism and resume tests.
RESUME_ARGS = ["--steps=80", "--ckpt_every=5", "--val_every=20", "--seed=0"]


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "run"
    train_ok(data, out, *RESUME_ARGS)
    return out


# -- determinism ------------------------------------------------------------------------

def test_same_seed_same_weights_other_seed_differs(data, reference, tmp_path):
    train_ok(data, tmp_path / "a", *RESUME_ARGS)
    train_ok(data, tmp_path / "b", *RESUME_ARGS[:-1], "--seed=1")
    ref, a, b = weights(reference), weights(tmp_path / "a"), weights(tmp_path / "b")
    assert identical(ref, a), f"same seed, max abs diff {max_diff(ref, a)}"
    assert not identical(ref, b)
    assert max_diff(ref, b) > 1e-3
    # the recorded curves agree too (wall-clock throughput aside)
    strip = lambda h: [{k: v for k, v in e.items() if k != "windows_per_s"} for e in h]
    h_ref = json.loads((reference / "history.json").read_text())
    h_a = json.loads((tmp_path / "a" / "history.json").read_text())
    assert strip(h_ref) == strip(h_a)


# -- resume -----------------------------------------------------------------------------

def test_resume_after_kill_matches_uninterrupted(data, reference, tmp_path):
    out = tmp_path / "run"
    cmd = train_cmd(data, out, *RESUME_ARGS)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.time() + 120
        while not (out / "last.json").exists():
            assert proc.poll() is None, f"the run ended before its first state save:\n{proc.stderr.read()}"
            assert time.time() < deadline, "no last.json after 120 s"
            time.sleep(0.005)
        assert proc.poll() is None, "the run finished before it could be interrupted"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "final.json").exists()

    r = run(cmd)
    assert r.returncode == 0, r.stderr[-3000:]
    resumed = [line for line in r.stderr.splitlines() if "resuming" in line]
    assert resumed, r.stderr[-2000:]
    step = int(resumed[0].split("at step")[1].split()[0])
    assert 5 <= step < 80 and step % 5 == 0, resumed[0]

    ref, got = weights(reference), weights(out)
    assert identical(ref, got), f"resumed run differs from the uninterrupted one: max abs diff {max_diff(ref, got)}"
    # the state file is self-consistent and at the end
    info = json.loads((out / "final.json").read_text())["info"]
    assert info["steps"] == 80
    h_ref = json.loads((reference / "history.json").read_text())
    h_got = json.loads((out / "history.json").read_text())
    assert [e["step"] for e in h_ref] == [e["step"] for e in h_got]
    assert [e.get("loss") for e in h_ref] == [e.get("loss") for e in h_got]


def test_state_survives_a_kill_between_the_two_renames(tmp_path, monkeypatch):
    """The tensors and the document of one save always come back together."""
    import torch

    from training import state as st
    path = tmp_path / "last"
    st.save_state(path, {"step": 5, "w": torch.full((3,), 5.0), "gen": torch.zeros(4, dtype=torch.uint8)})
    real = os.replace
    calls = []

    def dying_replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:  # the process dies after the weights were renamed, before the JSON
            raise KeyboardInterrupt
        real(src, dst)

    monkeypatch.setattr(os, "replace", dying_replace)  # the one os.replace, in backend.formats.atomic
    with pytest.raises(KeyboardInterrupt):
        st.save_state(path, {"step": 10, "w": torch.full((3,), 10.0), "gen": torch.ones(4, dtype=torch.uint8)})
    monkeypatch.undo()
    assert ["step", 5] in json.loads(path.with_suffix(".json").read_text())["$d"]  # the stale document is left
    got = st.load_state(path)
    assert got["step"] == 10 and torch.equal(got["w"], torch.full((3,), 10.0))
    assert torch.equal(got["gen"], torch.ones(4, dtype=torch.uint8))


def test_resume_of_a_finished_run_is_a_no_op(data, tmp_path):
    out = tmp_path / "run"
    train_ok(data, out, "--steps=6", "--ckpt_every=3", "--val_every=3")
    before = weights(out)
    r = train_ok(data, out, "--steps=6", "--ckpt_every=3", "--val_every=3")
    assert "resuming" in r.stderr
    assert identical(before, weights(out))


# -- DDP ---------------------------------------------------------------------------------

@pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun not installed next to the interpreter")
def test_ddp_two_processes_match_one(data, tmp_path):
    # a high LR and a low clipping threshold: clipping acts on every step, so a per-rank
    # (rather than global) gradient norm would show
    args = ["--steps=12", "--ckpt_every=6", "--val_every=6", "--batch_size=8", "--seed=3", "--lr=1e-3",
            "--clip_grad=0.1"]
    single = tmp_path / "single"
    train_ok(data, single, *args)
    ddp = tmp_path / "ddp"
    cmd = [str(TORCHRUN), "--standalone", "--nproc_per_node=2", "-m", "training.train",
           f"--data={data}", f"--out={ddp}", *TINY, *args]
    r = run(cmd)
    assert r.returncode == 0, r.stderr[-4000:]
    a, b = weights(single), weights(ddp)
    diff = max_diff(a, b)
    assert diff < 1e-4, f"DDP and single-process weights differ by {diff}"
    info = json.loads((ddp / "final.json").read_text())["info"]
    assert info["processes"] == 2
    # the logged loss is the whole batch's, not rank 0's half
    h1 = [e for e in json.loads((single / "history.json").read_text()) if "loss" in e]
    h2 = [e for e in json.loads((ddp / "history.json").read_text()) if "loss" in e]
    assert [e["step"] for e in h1] == [e["step"] for e in h2]
    np.testing.assert_allclose([e["loss"] for e in h2], [e["loss"] for e in h1], rtol=1e-3)


# -- bad input ---------------------------------------------------------------------------

def error_line(r) -> str:
    """The run must fail with exactly one non-empty stderr line."""
    assert r.returncode != 0
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr[-3000:]
    assert "Traceback" not in r.stderr
    return lines[0]


def test_no_bvh_in_data_folder(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no motion here")
    r = run(train_cmd(empty, tmp_path / "out", "--steps=5"))
    line = error_line(r)
    assert str(empty) in line and "no BVH" in line
    assert not (tmp_path / "out" / "last.json").exists()


def test_unknown_key_in_config_file(data, tmp_path):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"steps": 5, "learning_rate": 0.1}))
    r = run(train_cmd(data, tmp_path / "out", config=cfg))
    line = error_line(r)
    assert str(cfg) in line and "learning_rate" in line
    assert not (tmp_path / "out").exists()


def test_unknown_key_as_override(data, tmp_path):
    r = run(train_cmd(data, tmp_path / "out", "--stepz=5"))
    line = error_line(r)
    assert "--stepz" in line and "unknown config key" in line
    assert not (tmp_path / "out").exists()


def test_bad_value_as_override(data, tmp_path):
    line = error_line(run(train_cmd(data, tmp_path / "out", "--steps=many")))
    assert "--steps=many" in line


def test_unwritable_run_folder(data, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    out = blocker / "run"
    line = error_line(run(train_cmd(data, out, "--steps=5")))
    assert str(out) in line and "cannot write the run folder" in line


def test_all_clips_shorter_than_the_window(data, tmp_path):
    r = run(train_cmd(data, tmp_path / "out", "--steps=5", "--window=400", "--min_window=8"))
    line = error_line(r)
    assert "--window=400" in line and "273" in line  # the longest train clip has 273 frames
    assert not (tmp_path / "out" / "last.json").exists()


def test_val_clips_shorter_than_the_window(tmp_path):
    folder = make_data(tmp_path / "data", val=False)
    shutil.copy(ROOT / "examples/bvh/dataset-2_run_normal_002.bvh", folder / "short_008.bvh")  # 70 frames
    r = run(train_cmd(folder, tmp_path / "out", "--steps=5", "--window=100", "--min_window=8"))
    line = error_line(r)
    assert "val" in line and "--window=100" in line
    assert not (tmp_path / "out" / "last.json").exists()


def test_data_without_val_split(tmp_path):
    folder = make_data(tmp_path / "data", val=False)
    line = error_line(run(train_cmd(folder, tmp_path / "out", "--steps=5")))
    assert str(folder) in line and "'val'" in line


def odd_skeleton(src: Path, dst: Path):
    """A copy of ``src`` whose skeleton differs (one joint renamed)."""
    text = src.read_text()
    assert "JOINT Neck\n" in text
    dst.write_text(text.replace("JOINT Neck\n", "JOINT Neck_other\n", 1))


@pytest.mark.parametrize("where", ["train", "val"])
def test_clip_with_another_skeleton_is_converted_or_skipped(tmp_path, where):
    """Another humanoid skeleton is read through the conversion (backend.humanoid, as CMU's clips); a
    skeleton that is no humanoid is skipped with the conversion's reason."""
    folder = make_data(tmp_path / "data")
    # sorts first, so a "first clip decides" rule would take the odd one as the reference
    odd = folder / ("aaa_odd_001.bvh" if where == "train" else "aaa_odd_008.bvh")
    odd_skeleton(EXAMPLES[0], odd)
    stick = folder / ("aab_stick_001.bvh" if where == "train" else "aab_stick_008.bvh")
    stick.write_text(STICK_BVH)
    out = tmp_path / "out"
    r = run(train_cmd(folder, out, "--steps=6", "--val_every=3", "--ckpt_every=3"))
    assert r.returncode == 0, r.stderr[-3000:]
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning")]
    assert len(warnings) == 1 and stick.name in warnings[0] and "not converted" in warnings[0], r.stderr
    assert odd.name not in warnings[0]
    info = json.loads((out / "final.json").read_text())["info"]
    assert info["train_clips"] == (5 if where == "train" else 4)
    assert info["skipped_clips" if where == "train" else "skipped_val_clips"] == 1


def test_the_model_family_is_also_read_under_its_old_name_kind(tmp_path):
    from training.config import ConfigError, load_config
    assert load_config(None, ["--family=alibi"]).family == "alibi"
    assert load_config(None, ["--kind=alibi_cat"]).family == "alibi_cat"  # (older commands)
    old = tmp_path / "config.json"
    old.write_text(json.dumps({"kind": "alibi"}))  # a run folder's config from before the rename
    assert load_config(str(old), []).family == "alibi"
    with pytest.raises(ConfigError, match="family='linear'"):
        load_config(None, ["--kind=linear"])


STICK_BVH = ("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation "
             "Yrotation\n  JOINT Bone1\n  {\n    OFFSET 0 10 0\n    CHANNELS 3 Zrotation Xrotation Yrotation\n"
             "    End Site\n    {\n      OFFSET 0 10 0\n    }\n  }\n}\nMOTION\nFrames: 70\nFrame Time: 0.0333333\n"
             + "0 90 0 0 0 0 0 0 0\n" * 70)


# -- the normaliser's floor (issue 28) ------------------------------------------------------

def test_norm_floor_bounds_every_spread_and_a_fine_tune_raises_only_the_low_ones(data, reference, tmp_path):
    """No feature is read in units smaller than the floor: another studio's few degrees about an axis one
    studio never turns about stay a few spreads.  A fine-tune (--init) keeps the spreads its weights
    were trained with, raising only those under its floor."""
    low = weights(reference)["stats.std"]
    assert low.min() < 0.05  # the example clips have channels that never move (else the test says nothing)
    out = tmp_path / "floor"
    train_ok(data, out, "--steps=3", "--norm_floor=0.05")
    assert weights(out)["stats.std"].min() >= np.float32(0.05)
    tuned = tmp_path / "tuned"
    train_ok(data, tuned, "--steps=3", "--norm_floor=0.2", f"--init={reference / 'final.json'}")
    std = weights(tuned)["stats.std"]
    np.testing.assert_array_equal(std, np.maximum(low, np.float32(0.2)))
    r = run(train_cmd(data, tmp_path / "bad", "--steps=3", "--norm_floor=0"))
    assert r.returncode != 0 and "norm_floor" in r.stderr
