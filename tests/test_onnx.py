"""The built-in backend's model: ONNX Runtime answers every call of every shipped model as torch does.

``python -m backend export`` writes each checkpoint's graphs, their weights pointing into its own
safetensors; ``backend.runtime.onnx_runner`` runs them with numpy around them (``features_np``, ``keyframes_np``:
the torch twins' numbers).  Agreement is within 1e-5 of the values' scale (float32 rounding: the
graphs sum in another order than torch's kernels).

Longer than 300 lines: every call of every shipped model against torch, on shared fixtures.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from backend.formats import safetensors_np
from backend.maths import quat_np
from backend.maths.splines import uniform_times
from backend.motion import features, features_np, keyframes_np
from backend.runtime import checkpoint as ck
from backend.runtime import onnx_runner as runtime
from training import features as training_features
from training import keyframes

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
    from backend.motion.edits import warp_times
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
    from backend.runtime.torch_runner import TorchModel
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
    rot = quat_np.normalize(rng.standard_normal((3, 21, j, 4))).astype(np.float32)
    pos = (50 * rng.standard_normal((3, 21, j, 3))).astype(np.float32)
    norm_np = features_np.ArrayNormalizer(c.normalizer.mean.numpy(), c.normalizer.std.numpy())
    t = torch.from_numpy
    want = keyframes.inbetween_inputs(t(rot), t(pos), t(mask), c.layout, c.normalizer, "hermite")
    got = keyframes_np.inbetween_inputs(rot, pos, mask, c.layout, norm_np, "hermite")
    for g, w in zip(got, want, strict=True):
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
          training_features.to_features(t(rot), t(pos), c.layout, t(origin))[0].numpy())
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


NO_TORCH = """
import builtins, sys
real = builtins.__import__
def guarded(name, *args, **kw):
    if name.split(".")[0] in ("torch", "safetensors"):
        raise ImportError(f"the built-in path imported {name}")
    return real(name, *args, **kw)
builtins.__import__ = guarded
import numpy as np
from backend import service
from backend.formats.bvh import read_bvh
clip = read_bvh(sys.argv[1])
keys = [0, 20, 40, 60]
base = {"frame_time": clip.frame_time, "device": "auto", "runtime": "onnx"}
_, a = service.handle(dict(base, op="inbetween", keys=keys), {"offsets": clip.skeleton.offsets,
                      "key_rotations": clip.rotations[keys], "key_positions": clip.positions[keys]})
_, b = service.handle(dict(base, op="encode", decode=True), {"offsets": clip.skeleton.offsets,
                      "rotations": clip.rotations[:91], "positions": clip.positions[:91]})
frames = np.zeros((11, 5041, 3), np.float32)
_, c = service.handle(dict(base, op="mesh_inbetween", keys=[0, 5, 10]), {"key_frames": frames[[0, 5, 10]]})
print(a["rotations"].shape, b["points"].shape, c["vertices"].shape)
"""


def test_the_built_in_path_imports_no_torch():
    """Inbetween, Encode (with its decode) and Inbetween Mesh answered on ONNX Runtime in a Python where
    importing torch or safetensors fails: the add-on's built-in path needs neither."""
    from tests.conftest import TEST_CLIP
    out = subprocess.run([sys.executable, "-c", NO_TORCH, str(TEST_CLIP)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["(61,", "22,", "4)", "(3,", "4,", "96)", "(11,", "5041,", "3)"]


# -- the paths that call the models: ONNX Runtime's engine as torch's ---------------------------------
@pytest.fixture(scope="module")
def engines():
    from backend.mesh.engine import MeshEngine
    from backend.motion.engine import Engine
    out = {}
    for name, factory in (("inbetween", Engine), ("motion_autoencoder", Engine), ("cloth_inbetween", MeshEngine),
                          ("cloth_autoencoder", MeshEngine)):
        out[name] = tuple(factory(SHIPPED / f"{name}.json", "cpu", runtime) for runtime in ("torch", "onnx"))
    return out


@pytest.fixture(scope="module")
def walk():
    from backend.formats.bvh import read_bvh
    from tests.conftest import TEST_CLIP
    return read_bvh(TEST_CLIP)


def _clip(clip, frames):
    return type(clip)(clip.skeleton, clip.rotations[:frames], clip.positions[:frames], clip.frame_time, clip.name)


@pytest.mark.parametrize("keys", [[0, 15, 30, 45, 60], [0, 8, 40, 41, 90, 120], [0, 60]])
def test_inbetween_and_its_slider_redecode_agree(engines, walk, keys):
    """Inbetween (guard, mirror average where the guard hides no key) and the re-decode of its edited,
    re-timed and super-sampled control points: the same motion from both runtimes."""
    torch_e, onnx_e = engines["inbetween"]
    clip = _clip(walk, keys[-1] + 1)
    (a, ca), (b, cb) = torch_e.inbetween(clip, keys), onnx_e.inbetween(clip, keys)
    close(b.rotations, a.rotations)
    close(b.positions, a.positions)
    close(cb.points, ca.points)
    edited = ca.points * 1.3
    for scale, timing in ((1, 0.0), (2, 0.3)):
        da = torch_e.decode(ca, scale, points=edited, timing=timing)
        db = onnx_e.decode(ca, scale, points=edited, timing=timing)
        close(db.rotations, da.rotations)
        close(db.positions, da.positions)


def test_encode_slider_and_resample_agree(engines, walk):
    """Encode (three segments), a slider's re-decode of edited points, Resample (super-sampled, re-timed)."""
    torch_e, onnx_e = engines["motion_autoencoder"]
    clip = _clip(walk, 121)
    ca, cb = torch_e.encode(clip), onnx_e.encode(clip)
    close(cb.points, ca.points)
    close(cb.origins, ca.origins)
    pts = ca.points + np.random.default_rng(0).normal(scale=0.3, size=ca.points.shape).astype(np.float32)
    for scale, timing in ((1.0, 0.0), (2.0, -0.4), (0.5, 0.2)):
        da = torch_e.decode(ca, scale, points=pts, timing=timing)
        db = onnx_e.decode(ca, scale, points=pts, timing=timing)
        close(db.rotations, da.rotations)
        close(db.positions, da.positions)


def _cloth_frames(engine, frames=70):
    """A smooth mesh sequence in the model's own basis (its mean plus slowly varying leading components)."""
    t = np.linspace(0, 2 * np.pi, frames)[:, None]
    k = np.arange(8)[None]
    coeffs = np.zeros((frames, engine.basis.size), np.float32)
    coeffs[:, :8] = 3.0 * np.sin(t * (1 + k) / 2 + k) / (1 + k)
    return (engine.basis.mean.reshape(-1) + coeffs @ engine.basis.components).reshape(frames, -1, 3)


def test_mesh_inbetween_and_decode_agree(engines):
    torch_e, onnx_e = engines["cloth_inbetween"]
    frames = _cloth_frames(torch_e)
    keys = [0, 10, 25, 40, 69]
    (va, ca), (vb, cb) = torch_e.inbetween(frames, keys), onnx_e.inbetween(frames, keys)
    close(vb, va)
    close(cb.points, ca.points)
    close(onnx_e.decode(ca, 2.0, 0.3, amplify=1.5), torch_e.decode(ca, 2.0, 0.3, amplify=1.5))
    torch_a, onnx_a = engines["cloth_autoencoder"]
    ea, eb = torch_a.encode(frames), onnx_a.encode(frames)
    close(eb.points, ea.points)
    close(onnx_a.decode(ea, 2.0, -0.3, points=ea.points * 1.2), torch_a.decode(ea, 2.0, -0.3, points=ea.points * 1.2))


def test_the_service_answers_built_in_as_with_torch(engines, walk):
    """The add-on's requests (the service's dispatcher, as bridge.request calls it): runtime "onnx" gives
    torch's numbers for an in-between request."""
    from backend import service
    clip = _clip(walk, 61)
    keys = [0, 20, 40, 60]
    header = {"op": "inbetween", "keys": keys, "frame_time": clip.frame_time, "device": "cpu"}
    arrays = {"offsets": clip.skeleton.offsets, "key_rotations": clip.rotations[keys],
              "key_positions": clip.positions[keys]}
    ra, a = service.handle(header, arrays)
    rb, b = service.handle(dict(header, runtime="onnx"), arrays)
    assert rb["device"] == "cpu" and ra["segments"] == rb["segments"]
    close(b["rotations"], a["rotations"])
    close(b["positions"], a["positions"])
