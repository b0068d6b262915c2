"""python -m blender_addon.batch with the third round of bad inputs (issue 32): usage errors are a
sentence and exit 2 with nothing created; a named pipe among the inputs is refused at once; a .blend
saved by a newer Blender is refused when it would be saved back (named in ``info``); and an output
cut short by a full disk (here a file-size limit on the run, as a full disk does it: Blender's save
says done) is read back, found broken, removed and its input marked failed."""
from __future__ import annotations

import os
import resource
import shutil

import pytest

from addon_helpers import bpy
from batch_helpers import EXAMPLES, build_blends, load_report, run_batch

bpy = bpy()
pytestmark = pytest.mark.blender


@pytest.fixture(scope="module")
def walk(tmp_path_factory):
    return build_blends(tmp_path_factory.mktemp("shots"), clips=[EXAMPLES[2]])["walk"]


def test_out_dir_or_report_that_is_not_where_a_file_can_go(walk, tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    for out, message in ((a_file, "is a file, not a folder; choose a folder"),
                         (a_file / "sub", f"cannot be created: {a_file} is a file, not a folder")):
        r = run_batch("inbetween", walk["path"], "--out-dir", out)
        assert r.returncode == 2 and f"--out-dir {out}: {message}" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    r = run_batch("info", walk["path"], "--report", tmp_path)
    assert r.returncode == 2 and "is a folder; give a file name" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # nothing was created


def _unwritable(tmp_path):
    """A folder this user cannot write to: a read-only one (as non-root), else /sys (even for root)."""
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    return "/sys/splinetween-out" if os.path.isdir("/sys") and not os.access("/sys", os.W_OK) or \
        _probe_fails("/sys") else None


def _probe_fails(folder) -> bool:
    try:
        with open(os.path.join(folder, ".splinetween-probe"), "wb"):
            pass
    except OSError:
        return True
    os.unlink(os.path.join(folder, ".splinetween-probe"))
    return False


def test_out_dir_that_cannot_be_written(walk, tmp_path):
    out = _unwritable(tmp_path)
    if out is None:
        pytest.skip("no unwritable folder on this machine")
    r = run_batch("inbetween", walk["path"], "--out-dir", out)
    assert r.returncode == 2 and f"--out-dir {out}: cannot write" in r.stderr and "choose a folder you can write to" \
        in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX named pipes")
def test_a_named_pipe_among_the_inputs_is_refused_at_once(walk, tmp_path):
    shots = tmp_path / "shots"
    shots.mkdir()
    shutil.copy(walk["path"], shots / "walk.blend")
    os.mkfifo(shots / "pipe.blend")  # opening it would block its worker until --timeout (an hour)
    r = run_batch("info", shots, "--out-dir", tmp_path / "out", "--timeout", "3600", timeout=600)
    assert r.returncode == 1, r.stderr
    rep = load_report(tmp_path / "out", "info")
    by = {os.path.basename(e["input"]): e for e in rep["files"]}
    assert by["pipe.blend"]["status"] == "failed"
    assert "is a named pipe (FIFO), not a regular file: it was not opened" in by["pipe.blend"]["errors"][0]
    assert by["walk.blend"]["status"] == "ok"


def _newer(src, dest):
    """``src`` saved uncompressed with its header's version set to 9.99 (a file from a future Blender)."""
    bpy.ops.wm.open_mainfile(filepath=str(src), load_ui=False)
    bpy.ops.wm.save_as_mainfile(filepath=str(dest), compress=False, copy=True, check_existing=False)
    bpy.ops.wm.read_homefile(use_empty=True)
    data = dest.read_bytes()
    here = "%d%02d" % bpy.app.version[:2]
    tag = b"v0" + here.encode() if data[:17].endswith(b"v0" + here.encode()) else b"v" + here.encode()
    i = data.index(tag, 0, 24)
    dest.write_bytes(data[:i] + tag[:len(tag) - 3] + b"999" + data[i + len(tag):])
    return dest


def test_a_file_from_a_newer_blender_is_refused_not_saved_back(walk, tmp_path):
    (tmp_path / "in").mkdir()
    newer = _newer(walk["path"], tmp_path / "in" / "future.blend")
    r = run_batch("info", newer, "--out-dir", tmp_path / "info", timeout=600)
    entry = load_report(tmp_path / "info", "info")["files"][0]
    assert entry["status"] == "ok"
    assert any("saved by Blender 9.99, newer than this Blender" in w and "expect loss of data!" in w
               for w in entry["warnings"]), entry["warnings"]
    r = run_batch("inbetween", newer, "--out-dir", tmp_path / "out", timeout=600)
    assert r.returncode == 1, r.stderr
    entry = load_report(tmp_path / "out")["files"][0]
    assert entry["status"] == "failed" and "saving it in this version would lose what the newer one added" in \
        entry["errors"][0]
    assert not (tmp_path / "out" / "future.blend").exists()


def _capped(walk, tmp_path, compress: bool):
    """The batch on ``walk`` saved ``compress``-ed, under a file-size limit of half its size (as a full disk:
    the output's save stops halfway) -> (the run, its report entry, the out folder)."""
    src = tmp_path / "in" / "walk.blend"
    src.parent.mkdir()
    bpy.ops.wm.open_mainfile(filepath=str(walk["path"]), load_ui=False)
    bpy.ops.wm.save_as_mainfile(filepath=str(src), compress=compress, copy=True, check_existing=False)
    bpy.ops.wm.read_homefile(use_empty=True)
    limit = src.stat().st_size // 2

    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    out = tmp_path / "out"
    r = run_batch("inbetween", src, "--out-dir", out, "--jobs", "1", preexec_fn=cap, timeout=600)
    entry = load_report(out)["files"][0]
    assert r.returncode == 1, r.stdout + r.stderr
    assert entry["status"] == "failed" and entry["output"] is None
    left = [p.name for p in out.iterdir() if not p.name.startswith("splinetween-inbetween-")]
    assert left == [], left  # no output, no temporary file, no done marker
    return src, entry, out


def test_an_uncompressed_output_cut_short_is_not_kept(walk, tmp_path):
    src, entry, out = _capped(walk, tmp_path, compress=False)
    assert entry["errors"][0].startswith("Blender could not save the file (") or \
        "cannot be read back by Blender (Missing DNA block); it was not kept" in entry["errors"][0], entry
    r = run_batch("inbetween", src, "--out-dir", out, timeout=600)  # with room: done
    assert r.returncode == 0 and (out / "walk.blend").exists(), r.stderr


def test_a_saved_file_that_blender_cannot_open_is_found(walk, tmp_path):
    """What a full disk left while Blender's save said FINISHED: the file read back with Blender's
    reader is refused, naming Blender's own reason."""
    from blender_addon.batch import blend_file
    from blender_addon.batch.errors import JobError
    bpy.ops.wm.open_mainfile(filepath=str(walk["path"]), load_ui=False)
    full = tmp_path / "full.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(full), compress=False, copy=True, check_existing=False)
    blend_file.verify_blend(full)  # a whole file passes
    data = full.read_bytes()
    cut = tmp_path / "cut.blend"
    cut.write_bytes(data[:len(data) // 2])
    with pytest.raises(JobError, match=r"the saved file \([\d,]+ bytes\) cannot be read back by Blender \(Missing "
                                       r"DNA block\); it was not kept"):
        blend_file.verify_blend(cut)
    bpy.ops.wm.read_homefile(use_empty=True)


def test_an_output_whose_save_fails_is_a_message(walk, tmp_path):
    """A compressed save reports the failed write: a sentence, not an unexpected RuntimeError."""
    _, entry, _ = _capped(walk, tmp_path, compress=True)
    assert entry["errors"][0].startswith("Blender could not save the file (File too large); no output was "
                                         "written (is the disk full?)"), entry


def test_an_armature_animated_only_in_nla_strips_is_explained(walk, tmp_path):
    bpy.ops.wm.open_mainfile(filepath=str(walk["path"]), load_ui=False)
    rig = bpy.data.objects[walk["object"]]
    ad = rig.animation_data
    track = ad.nla_tracks.new()
    track.name = "Walk track"
    track.strips.new("Walk", 1, ad.action)
    ad.action = None
    src = tmp_path / "nla.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(src), copy=True, check_existing=False)
    bpy.ops.wm.read_homefile(use_empty=True)
    r = run_batch("inbetween", src, "--out-dir", tmp_path / "out", timeout=600)
    assert r.returncode == 1, r.stderr
    entry = load_report(tmp_path / "out")["files"][0]
    assert f"{walk['object']}: the animation of {walk['object']} is in NLA strips (Walk track: Walk), not in an " \
        "active action: enter tweak mode" in entry["errors"][0], entry["errors"]


def test_a_bone_map_nested_deep_is_a_usage_error(walk, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    r = run_batch("inbetween", walk["path"], "--out-dir", tmp_path / "out", "--bone-map", deep)
    assert r.returncode == 2 and f"--bone-map {deep}: not a bone map file (nested deeper than 8 levels)" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()
    utf16 = tmp_path / "utf16.json"
    utf16.write_text('{"format": "splinetween-bone-map", "version": "1", "bones": {}}', encoding="utf-16")
    r = run_batch("inbetween", walk["path"], "--out-dir", tmp_path / "out", "--bone-map", utf16)
    assert r.returncode == 2 and 'the bone map\'s "version" is the text "1", not the number 1' in r.stderr
