"""The built-in backend's model: ONNX Runtime answers every call of every shipped model as torch does.

``python -m backend export`` writes each checkpoint's graphs, their weights pointing into its own
safetensors; ``backend.runtime`` runs them with numpy around them (``features_np``, ``keyframes_np``:
the torch twins' numbers).  Agreement is within 1e-5 of the values' scale (float32 rounding: the
graphs sum in another order than torch's kernels).
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from backend import checkpoint as ck
from backend import features, features_np, keyframes, keyframes_np, model, runtime, safetensors_np
from backend import quat_np as Q
from backend.splines import uniform_times

SHIPPED = Path(__file__).resolve().parents[1] / "backend" / "checkpoints"
MODELS = ["inbetween", "motion_autoencoder", "cloth_inbetween", "cloth_autoencoder"]
TOL = 1e-5


def close(got, want):
    """Within TOL of the reference's scale (at least 1)."""
    want = np.asarray(want)
    err = float(np.abs(np.asarray(got) - want).max())
    assert err <= TOL * max(1.0, float(np.abs(want).max())), err


@pytest.fixture(scope="module")
def pairs():
    out = {}
    for name in MODELS:
        c = ck.load(SHIPPED / f"{name}.json")
        out[name] = (c, c.build_model().eval(), runtime.OnnxModel(SHIPPED / f"{name}.json"))
    return out


def _mask(b, n, rng):
    m = np.zeros((b, n), dtype=bool)
    m[:, 0] = m[:, -1] = True
    for i in range(b):
        m[i, rng.choice(np.arange(1, n - 1), size=min(i, n - 2), replace=False)] = True
    return m


@pytest.mark.parametrize("name", MODELS)
def test_the_shipped_graphs_are_exported_from_the_shipped_weights(name):
    assert runtime.stale(SHIPPED / f"{name}.json") == ""


@pytest.mark.parametrize("name", ["motion_autoencoder", "cloth_autoencoder"])
@pytest.mark.parametrize("n", [2, 7, 31, 61])
def test_the_autoencoders_encode_and_decode_as_torch(pairs, name, n):
    c, m, o = pairs[name]
    x = np.random.default_rng(n).standard_normal((3, n, c.config.input_dim)).astype(np.float32)
    with torch.inference_mode():
        want = m.encode(torch.from_numpy(x)).numpy()
    got = o.encode(x)
    close(got, want)
    # the decode the engine makes: a re-timed and a super-sampled grid, ALiBi in source frames
    from backend.edits import warp_times
    for m_out, timing in ((n, 0.0), (2 * n - 1, 0.3)):
        uniform = uniform_times(m_out)
        times, pos = warp_times(uniform, timing).astype(np.float32), (uniform * (n - 1)).astype(np.float32)
        with torch.inference_mode():
            want_d = c.normalizer.inverse(m.decode(torch.from_numpy(want), times=torch.from_numpy(times),
                                                   positions=torch.from_numpy(pos))).numpy()
        close(o.decode(want, times, pos), want_d)  # (the graph ends with the normaliser's inverse: features)


@pytest.mark.parametrize("name", ["motion_autoencoder", "cloth_autoencoder"])
def test_a_sliders_ragged_decode_gives_each_segment_its_numbers_alone(pairs, name):
    """decode_features of segments of several lengths, re-timed and super-sampled: ONNX Runtime as torch's
    one-pass decode, and each segment bit for bit what it decodes to alone (the add-on's decode cache)."""
    from backend.torch_model import TorchModel
    c, m, o = pairs[name]
    plans = [(31, 31, 0.0), (30, 30, 0.0), (2, 2, 0.0), (31, 61, 0.4), (31, 31, 0.0)]
    cp = np.random.default_rng(2).normal(size=(5, c.config.controls, c.config.latent)).astype(np.float32)
    together = o.decode_features(cp, plans)
    close(together, TorchModel(m, c.normalizer, torch.device("cpu")).decode_features(cp, plans))
    at = np.cumsum([0] + [n for _, n, _ in plans])
    for k, plan in enumerate(plans):
        assert np.array_equal(together[at[k]:at[k + 1]], o.decode_features(cp[k:k + 1], [plan]))


@pytest.mark.parametrize("name", ["inbetween", "cloth_inbetween"])
@pytest.mark.parametrize("n", [3, 11, 31, 61])
def test_the_inbetweeners_encode_and_decode_as_torch(pairs, name, n):
    """Keys anywhere, any count (the graph hides the frames that are not keys; torch leaves them out)."""
    c, m, o = pairs[name]
    rng = np.random.default_rng(n)
    mask = _mask(4, n, rng)
    keys_n = rng.standard_normal((4, n, c.config.input_dim)).astype(np.float32)
    base_n = rng.standard_normal((4, n, c.config.input_dim)).astype(np.float32)
    times = uniform_times(n).astype(np.float32)
    pos = np.arange(n, dtype=np.float32)
    with torch.inference_mode():
        ctrl = m.encode(torch.from_numpy(keys_n), torch.from_numpy(mask))
        want = m.decode(ctrl, torch.from_numpy(base_n), torch.from_numpy(mask), times=torch.from_numpy(times),
                        positions=torch.from_numpy(pos), keys_n=torch.from_numpy(keys_n)).numpy()
    close(o.encode_keys(keys_n, mask), ctrl.numpy())
    close(o.decode_keys(ctrl.numpy(), base_n, mask, times, pos, keys_n=keys_n), want)


def test_the_numpy_twins_give_the_torch_twins_numbers():
    """The maths around the model (features, bases, snap, normaliser) in numpy and in torch."""
    c = ck.load(SHIPPED / "inbetween.json")
    rng = np.random.default_rng(0)
    j = c.skeleton.num_joints
    mask = _mask(3, 21, rng)
    rot = Q.normalize(rng.standard_normal((3, 21, j, 4))).astype(np.float32)
    pos = (50 * rng.standard_normal((3, 21, j, 3))).astype(np.float32)
    norm_np = features_np.ArrayNormalizer(c.normalizer.mean.numpy(), c.normalizer.std.numpy())
    t = torch.from_numpy
    want = keyframes.inbetween_inputs(t(rot), t(pos), t(mask), c.layout, c.normalizer, "hermite")
    got = keyframes_np.inbetween_inputs(rot, pos, mask, c.layout, norm_np, "hermite")
    for g, w in zip(got, want):
        close(g, w.numpy())
    feat = rng.standard_normal((3, 21, 7)).astype(np.float32)
    kf = rng.standard_normal((3, 21, 7)).astype(np.float32)
    for f in ("hermite_base", "spline_base"):
        close(getattr(keyframes_np, f)(kf, mask), getattr(keyframes, f)(t(kf), t(mask)).numpy())
    close(keyframes_np.snap_to_keys(feat, kf, mask), keyframes.snap_to_keys(t(feat), t(kf), t(mask)).numpy())
    br, bp = keyframes.interpolate(t(rot), t(pos), t(mask))
    gr, gp = keyframes_np.interpolate(rot, pos, mask)
    close(gr, br.numpy())
    close(gp, bp.numpy())
    origin = keyframes_np.key_origin(pos, mask, c.layout)
    close(features_np.to_features(rot, pos, c.layout, origin),
          features.to_features(t(rot), t(pos), c.layout, t(origin))[0].numpy())
    rotated = features.Normalizer(c.normalizer.mean, c.normalizer.std, torch.linalg.qr(torch.randn(135, 135))[0])
    rot_np = features_np.ArrayNormalizer(*(x.numpy() for x in (rotated.mean, rotated.std, rotated.rotation)))
    x = rng.standard_normal((5, 135)).astype(np.float32)
    close(rot_np(x), rotated(t(x)).numpy())
    close(rot_np.inverse(x), rotated.inverse(t(x)).numpy())


def test_the_numpy_reader_reads_what_safetensors_reads():
    from safetensors.torch import load_file
    for path in SHIPPED.glob("*.safetensors"):
        want = load_file(str(path))
        got = safetensors_np.read(path)
        assert set(got) == set(want)
        for k in want:
            assert np.array_equal(got[k], want[k].numpy()), (path.name, k)


def test_export_writes_graphs_that_point_into_the_weights(tmp_path):
    """A checkpoint copied and exported: its graphs hold no weights of their own, load, and answer; when
    its weights change the graphs are refused by name until exported again."""
    for suffix in (".json", ".safetensors"):
        shutil.copy(SHIPPED / f"motion_autoencoder{suffix}", tmp_path / f"m{suffix}")
    doc = json.loads((tmp_path / "m.json").read_text())
    doc["weights"] = "m.safetensors"
    (tmp_path / "m.json").write_text(json.dumps(doc))
    assert "no exported model" in runtime.stale(tmp_path / "m.json")
    out = subprocess.run([sys.executable, "-m", "backend", "export", str(tmp_path / "m.json")], capture_output=True,
                         text=True, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    graphs = sorted(tmp_path.glob("m.*.onnx"))
    assert [g.name for g in graphs] == ["m.decode.onnx", "m.encode.onnx"]
    weights = (tmp_path / "m.safetensors").stat().st_size
    assert sum(g.stat().st_size for g in graphs) < weights / 10  # the weights are not copied
    assert runtime.stale(tmp_path / "m.json") == ""
    x = np.random.default_rng(0).standard_normal((1, 9, 135)).astype(np.float32)
    close(runtime.OnnxModel(tmp_path / "m.json").encode(x), runtime.OnnxModel(SHIPPED / "motion_autoencoder.json").encode(x))
    raw = bytearray((tmp_path / "m.safetensors").read_bytes())
    raw[-4:] = b"\0\0\0\0"
    (tmp_path / "m.safetensors").write_bytes(bytes(raw))
    why = runtime.stale(tmp_path / "m.json")
    assert "exported from other weights" in why and "python -m backend export" in why
    with pytest.raises(runtime.RuntimeModelError, match="export it again"):
        runtime.OnnxModel(tmp_path / "m.json")


def test_the_runtime_imports_no_torch():
    """The built-in path's modules load and run a model in a Python where torch cannot be imported."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "import numpy as np\n"
            "from backend import runtime, keyframes_np, features_np\n"
            "m = runtime.OnnxModel('backend/checkpoints/cloth_inbetween.json')\n"
            "mask = np.zeros((1, 9), bool); mask[0, [0, 4, 8]] = True\n"
            "x = np.zeros((1, 9, 96), np.float32)\n"
            "c = m.encode_keys(x, mask)\n"
            "print(m.decode_keys(c, x, mask, np.linspace(0, 1, 9), np.arange(9.0), keys_n=x).shape)\n"
            "assert 'torch' not in [k for k, v in sys.modules.items() if v is not None]\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(1, 9, 96)"
