"""Checkpoints are data: save -> load gives identical outputs; bad files are refused by name."""
import json
import pickle
import shutil
from pathlib import Path

import pytest
import torch

from backend.models.spline_transformer import ModelConfig, SplineTransformer
from backend.runtime import checkpoint

SHIPPED = Path(__file__).resolve().parents[1] / "backend" / "checkpoints"


def _copy(src_json, dst_dir, name="c"):
    j, w = checkpoint.paths_for(src_json)
    shutil.copy(j, dst_dir / f"{name}.json")
    shutil.copy(w, dst_dir / f"{name}.safetensors")
    doc = json.loads((dst_dir / f"{name}.json").read_text())
    doc["weights"] = f"{name}.safetensors"
    (dst_dir / f"{name}.json").write_text(json.dumps(doc))
    return dst_dir / f"{name}.json"


def test_save_load_identical_outputs(tiny_checkpoint, tmp_path):
    c = checkpoint.load(tiny_checkpoint)
    m1 = c.build_model().eval()
    x = torch.randn(2, 16, c.config.input_dim)
    path = checkpoint.save(tmp_path / "again", c, m1)
    m2 = checkpoint.load(path).build_model().eval()
    with torch.no_grad():
        assert torch.equal(m1(x), m2(x))
    assert torch.equal(checkpoint.load(path).normalizer.std, c.normalizer.std)


@pytest.mark.parametrize("family", ["spline", "alibi", "alibi_cat"])
def test_model_shapes(family):
    m = SplineTransformer(ModelConfig(input_dim=10, output_dim=7, family=family, width=32, heads=4, layers=2, latent=8))
    x = torch.randn(3, 21, 10)
    cp = m.encode(x)
    assert cp.shape == (3, 4 if family == "spline" else 1, 8)
    assert m(x).shape == (3, 21, 7)
    assert m.decode(cp, 81, positions=torch.linspace(0, 20, 81)).shape == (3, 81, 7)


def test_refuses_pickle_without_running_it(tiny_checkpoint, tmp_path):
    j = _copy(tiny_checkpoint, tmp_path)
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (tmp_path / "c.safetensors").write_bytes(pickle.dumps({"w": Evil()}))
    with pytest.raises(checkpoint.CheckpointError, match="pickle") as e:
        checkpoint.load(j)
    assert "c.safetensors" in str(e.value)
    assert not marker.exists()
    torch.save({"w": torch.zeros(2)}, tmp_path / "c.safetensors")
    with pytest.raises(checkpoint.CheckpointError, match="pickle"):
        checkpoint.load(j)


def test_refuses_unknown_format_version(tiny_checkpoint, tmp_path):
    j = _copy(tiny_checkpoint, tmp_path)
    doc = json.loads(j.read_text())
    doc["format_version"] = 99
    j.write_text(json.dumps(doc))
    with pytest.raises(checkpoint.CheckpointError, match="unknown format version 99") as e:
        checkpoint.load(j)
    assert str(j) in str(e.value)


def test_a_shallower_decoder_is_saved_and_loaded_and_older_configs_mean_as_deep_as_the_encoder(tiny_checkpoint, tmp_path):
    c = checkpoint.load(tiny_checkpoint)
    assert c.config.decoder_layers == 0 and len(c.build_model().dec.blocks) == c.config.layers
    doc = json.loads(Path(tiny_checkpoint).read_text())
    doc["model"].pop("decoder_layers", None)  # a checkpoint from before the field: loads as before
    old = tmp_path / "old.json"
    shutil.copy(checkpoint.paths_for(tiny_checkpoint)[1], tmp_path / "old.safetensors")
    doc["weights"] = "old.safetensors"
    old.write_text(json.dumps(doc))
    assert checkpoint.load(old).config.decoder_layers == 0
    from dataclasses import replace
    shallow = replace(c.config, layers=2, decoder_layers=1)
    m = SplineTransformer(shallow).eval()
    assert len(m.enc.blocks) == 2 and len(m.dec.blocks) == 1
    path = checkpoint.save(tmp_path / "shallow", replace(c, config=shallow), m)
    again = checkpoint.load(path)
    assert again.config.decoder_layers == 1
    x = torch.randn(1, 16, shallow.input_dim)
    with torch.no_grad():
        assert torch.equal(m(x), again.build_model().eval()(x))
    for bad in (-1, 65, 1.5):
        d = json.loads(path.read_text())
        d["model"]["decoder_layers"] = bad
        path.write_text(json.dumps(d))
        with pytest.raises(checkpoint.CheckpointError, match="decoder_layers"):
            checkpoint.load(path)


def test_the_model_family_is_read_under_its_old_name_kind_and_both_names_at_once_are_refused(tiny_checkpoint, tmp_path):
    from backend.runtime import kind as checkpoint_kind
    doc = json.loads(Path(tiny_checkpoint).read_text())
    assert doc["model"]["family"] == "spline" and "kind" not in doc["model"]  # written under today's name
    old = tmp_path / "old.json"
    shutil.copy(checkpoint.paths_for(tiny_checkpoint)[1], tmp_path / "old.safetensors")
    doc["weights"] = "old.safetensors"
    doc["model"]["kind"] = doc["model"].pop("family")  # as checkpoints before the rename hold it
    old.write_text(json.dumps(doc))
    assert checkpoint.load(old).config == checkpoint.load(tiny_checkpoint).config
    shipped = json.loads((SHIPPED / "inbetween.json").read_text())
    assert checkpoint.load(SHIPPED / "inbetween.json").config.family == "keyframe"
    family = shipped["model"].get("family", shipped["model"].get("kind"))
    assert family == "keyframe"
    # no task stated: the keyframe family says in-betweener, under either name
    for name in ("kind", "family"):
        model = {k: v for k, v in shipped["model"].items() if k not in ("kind", "family")}
        untold = {**shipped, "info": {}, "model": {**model, name: family}}
        assert checkpoint_kind.kind_of(untold) == ("motion", "inbetween")
    doc["model"]["family"] = "alibi"
    old.write_text(json.dumps(doc))
    with pytest.raises(checkpoint.CheckpointError, match="both 'kind' and 'family'"):
        checkpoint.load(old)


def test_refuses_config_that_does_not_match_weights(tiny_checkpoint, tmp_path):
    j = _copy(tiny_checkpoint, tmp_path)
    doc = json.loads(j.read_text())
    doc["model"]["width"] = 64
    j.write_text(json.dumps(doc))
    with pytest.raises(checkpoint.CheckpointError, match="do not match the model config"):
        checkpoint.load(j)
    doc["model"]["width"] = 32
    doc["model"]["bogus"] = 1
    j.write_text(json.dumps(doc))
    with pytest.raises(checkpoint.CheckpointError, match="bogus"):
        checkpoint.load(j)


@pytest.mark.parametrize("keep", [4, 100, -50])
def test_refuses_truncated_weights(tiny_checkpoint, tmp_path, keep):
    j = _copy(tiny_checkpoint, tmp_path)
    w = tmp_path / "c.safetensors"
    data = w.read_bytes()
    w.write_bytes(data[:keep] if keep > 0 else data[:keep])
    with pytest.raises(checkpoint.CheckpointError, match="truncated") as e:
        checkpoint.load(j)
    assert "c.safetensors" in str(e.value)


def test_refuses_missing_or_foreign_files(tmp_path):
    with pytest.raises(checkpoint.CheckpointError, match="not found"):
        checkpoint.load(tmp_path / "nothing.json")
    (tmp_path / "x.json").write_text('{"hello": 1}')
    with pytest.raises(checkpoint.CheckpointError, match="not a Splinetween checkpoint"):
        checkpoint.load(tmp_path / "x.json")
    (tmp_path / "y.json").write_text("{not json")
    with pytest.raises(checkpoint.CheckpointError, match="not valid JSON"):
        checkpoint.load(tmp_path / "y.json")


def test_a_safetensors_header_length_starting_with_0x80_is_not_taken_for_a_pickle(tmp_path):
    # Found in training: a header of 0x..80 bytes made a real checkpoint look like a pickle.
    import struct

    import torch
    from safetensors.torch import save_file
    for pad in range(400):
        path = tmp_path / f"w{pad}.safetensors"
        save_file({"x": torch.zeros(3)}, str(path), metadata={"pad": "p" * pad})
        if path.read_bytes()[0] == 0x80:
            break
    else:
        pytest.skip("no padding gave a 0x80 first byte")
    assert struct.unpack("<Q", path.read_bytes()[:8])[0] % 256 == 0x80
    checkpoint._check_safetensors(path)  # no refusal


@pytest.mark.parametrize("name", ["inbetween", "motion_autoencoder", "cloth_inbetween", "cloth_autoencoder"])
def test_shape_check_builds_the_models_shapes_without_random_init(name):
    """The check builds random parameters as empty meta tensors: the same names and shapes as a
    plain meta build of the shipped checkpoints' models, every tensor on the meta device."""
    from backend.models.registry import build_model
    from backend.runtime import checks as checkpoint_checks
    config = checkpoint.load(SHIPPED / f"{name}.json").config
    with torch.device("meta"):
        plain = {k: tuple(v.shape) for k, v in build_model(config).state_dict().items()}
    with torch.device("meta"), checkpoint_checks._random_as_empty():
        state = build_model(config).state_dict()
    assert {k: tuple(v.shape) for k, v in state.items()} == plain
    assert {v.device.type for v in state.values()} == {"meta"}


def test_loading_a_checkpoint_does_not_import_sympy():
    """Meta randn would run PyTorch's Python reference kernels, whose checks import sympy (0.3-0.7 s of
    every engine load, every worker of the batch); the shape check avoids them."""
    import subprocess
    import sys
    code = ("import sys, torch; before = 'sympy' in sys.modules; from backend.runtime import checkpoint; "
            f"checkpoint.load({str(SHIPPED / 'cloth_inbetween.json')!r}); "
            f"checkpoint.load({str(SHIPPED / 'inbetween.json')!r}); print(before, 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=SHIPPED.parents[1]).stdout.split()
    if out[0] == "True":
        pytest.skip("this PyTorch imports sympy on import torch")
    assert out[1] == "False"
