"""``python -m blender_addon.batch mesh-inbetween|mesh-encode`` on the example flag with the shipped cloth
checkpoints (real bpy, worker processes): a PC2 per object beside the output .blend, read by the
modifier there; key frames bit for bit; refusals per file; inputs untouched; scripts never run;
resumable."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from addon_helpers import bpy, disable_addon, fresh_scene_with_addon
from batch_helpers import ROOT, by_name, load_report, run_batch, sha256
from mesh_addon_helpers import FLAG_BLEND, evaluated, flag, flag_blend_copy

bpy = bpy()

pytestmark = pytest.mark.blender


def _variant(path, build):
    """A .blend made from the factory scene by ``build()`` (run in this process), saved to ``path``."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    build()
    bpy.ops.wm.save_as_mainfile(filepath=str(path), check_existing=False)
    return path


def _trap_flag(path, marker_dir):
    """The flag plus code that would write marker files if it ran: a text block registered to run on load,
    and a Python driver on a custom property of the cloth (evaluated with the mesh, were scripts on)."""
    bpy.ops.wm.open_mainfile(filepath=str(FLAG_BLEND), load_ui=False, use_scripts=False)
    text = bpy.data.texts.new("autorun.py")
    text.write(f"open({str(marker_dir / 'text-block-ran')!r}, 'w').write('ran')\n")
    text.use_module = True
    obj = bpy.data.objects["cloth"]
    obj["trap"] = 0.0
    fc = obj.driver_add('["trap"]')
    fc.driver.type = "SCRIPTED"
    fc.driver.expression = f"__import__('pathlib').Path({str(marker_dir / 'driver-ran')!r}).write_text('ran') and 0"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), check_existing=False)
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    sim = flag()  # the flag simulated here, frames 1-60, as the reference
    src = tmp_path_factory.mktemp("in")
    marks = tmp_path_factory.mktemp("marks")
    flag_blend_copy(src / "flag_a.blend")
    _trap_flag(src / "flag_b.blend", marks)
    _variant(src / "nomesh.blend", lambda: bpy.ops.object.empty_add())
    _variant(src / "cube.blend", lambda: bpy.ops.mesh.primitive_cube_add())
    shutil.copy2(ROOT / "tests" / "fixtures" / "dataset-2_walk_normal_005.bvh", src / "walk.bvh")  # not collected
    digests = {p.name: sha256(p) for p in src.iterdir()}
    fresh_scene_with_addon()  # its properties, to read the outputs
    yield {"src": src, "marks": marks, "digests": digests, "frames": sim["frames"]}
    disable_addon()


@pytest.fixture(scope="module")
def inbetweened(inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    res = run_batch("mesh-inbetween", inputs["src"], "--every", 5, "--out-dir", out, "--jobs", 2, "--device", "cpu")
    return {"out": out, "res": res, "report": load_report(out, "mesh-inbetween")}


def test_mesh_inbetween_writes_a_pc2_beside_each_output(inputs, inbetweened):
    res, rep, out = inbetweened["res"], inbetweened["report"], inbetweened["out"]
    assert res.returncode == 1, res.stdout + res.stderr  # two files cannot take part
    files = by_name(rep)
    assert sorted(files) == ["cube.blend", "flag_a.blend", "flag_b.blend", "nomesh.blend"]  # the folder's .blend files
    keys = list(range(1, 60, 5)) + [60]
    from backend.formats.pc2 import read_pc2
    samples = {}
    for name in ("flag_a.blend", "flag_b.blend"):
        f = files[name]
        assert f["status"] == "ok", f
        (o,) = f["objects"]
        assert (o["name"], o["status"], o["vertices"], o["frames"], o["keys"]) == ("cloth", "ok", 5041, [1, 60], keys)
        assert f["frames_written"] == 60 and f["gaps"] == len(keys) - 1
        pc2 = out / "splinetween" / f"{name[:-6]}_cloth_inbetween.pc2"
        assert o["cache"] == str(pc2) and f["caches"] == [str(pc2)] and pc2.exists()
        got = samples[name] = read_pc2(pc2)[0]
        assert got.shape == (60, 5041, 3)
        np.testing.assert_array_equal(got[np.array(keys) - 1], inputs["frames"][np.array(keys) - 1])  # keys kept
        assert np.abs(got - inputs["frames"]).max() < 0.5  # and the rest is near the simulation
    assert all(w["model"].startswith("cloth_inbetween.json on ") and w["model_s"] > 0 for w in rep["workers"]), \
        rep["workers"]  # loaded while the first file was read, and reported
    # the output .blend reads its PC2 through a path relative to itself: scene frame f shows sample f - 1
    bpy.ops.wm.open_mainfile(filepath=str(out / "flag_a.blend"), load_ui=False, use_scripts=False)
    obj = bpy.data.objects["cloth"]
    mod = obj.modifiers[-1]
    assert (mod.type, mod.name, mod.filepath, mod.frame_start) == ("MESH_CACHE", "Splinetween",
                                                                     "//splinetween/flag_a_cloth_inbetween.pc2", 1)
    assert obj.splinetween_latent.active and obj.splinetween_latent.task == "INBETWEEN"
    np.testing.assert_allclose(evaluated(obj, 23), samples["flag_a.blend"][22], atol=1e-6)


def test_mesh_refusals_are_per_file(inbetweened):
    files = by_name(inbetweened["report"])
    assert files["nomesh.blend"]["status"] == "failed"
    assert files["nomesh.blend"]["errors"] == ["no mesh was in-betweened (the file has no mesh object)"]
    (err,) = files["cube.blend"]["errors"]
    assert err.startswith("no mesh was in-betweened (Cube: Cube has 8 vertices, but the mesh checkpoint "
                          "cloth_inbetween.json was trained on a mesh of 5041"), err
    assert not files["cube.blend"]["output"] and not (inbetweened["out"] / "cube.blend").exists()


def test_inputs_untouched_and_scripts_never_run(inputs, inbetweened):
    assert {p.name: sha256(p) for p in inputs["src"].iterdir()} == inputs["digests"]  # no folder beside them
    assert not list(inputs["marks"].iterdir())
    b = by_name(inbetweened["report"])["flag_b.blend"]
    assert b["scripts"] == {"text_blocks": 1, "registered": ["autorun.py"], "python_drivers": 1}
    assert any("none was run" in w for w in b["warnings"])


def test_a_rerun_skips_what_is_done(inputs, inbetweened):
    out = inbetweened["out"]
    res = run_batch("mesh-inbetween", inputs["src"], "--every", 5, "--out-dir", out, "--jobs", 2, "--device", "cpu")
    files = by_name(load_report(out, "mesh-inbetween"))
    assert files["flag_a.blend"]["status"] == files["flag_b.blend"]["status"] == "skipped", res.stdout + res.stderr
    assert files["cube.blend"]["status"] == "failed"  # failures are tried again


def test_mesh_encode_and_frames_out_of_range(inputs, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    flag_blend_copy(src / "flag.blend")
    out = tmp_path / "out"
    res = run_batch("mesh-encode", src, "--range", "1:90", "--out-dir", out, "--jobs", 1, "--device", "cpu")
    assert res.returncode == 1
    (f,) = load_report(out, "mesh-encode")["files"]
    assert f["errors"] == ["frames 1-90 reach outside the scene's frame range 1-60 (scene Scene): choose frames "
                           "inside it (--range, --keys)"], f
    res = run_batch("mesh-encode", src, "--range", "1:40", "--object", "cl*", "--out-dir", out, "--jobs", 1,
                      "--device", "cpu")
    assert res.returncode == 0, res.stdout + res.stderr
    (f,) = load_report(out, "mesh-encode")["files"]
    (o,) = f["objects"]
    assert (o["name"], o["frames"], o["frames_written"]) == ("cloth", [1, 40], 40)
    fit = o["fidelity"]  # the panel's readout: the model's decode against the frames read, per segment
    assert len(fit["percent_of_size"]) == 2 and fit["warning"] is None and 0 < min(fit["percent_of_size"]) < 2
    pc2 = out / "splinetween" / "flag_cloth_encoded.pc2"
    assert o["cache"] == str(pc2) and pc2.exists()
    bpy.ops.wm.open_mainfile(filepath=str(out / "flag.blend"), load_ui=False, use_scripts=False)
    st = bpy.data.objects["cloth"].splinetween_latent
    assert st.active and st.task == "AUTOENCODER" and (st.frame_start, st.frame_end) == (1, 40)
    assert bpy.data.objects["cloth"].modifiers[-1].filepath == "//splinetween/flag_cloth_encoded.pc2"
