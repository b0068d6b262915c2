"""The service's mesh requests (mesh_encode, mesh_inbetween, mesh_decode): the same numbers in-process,
over the framed protocol and through a backend process; edits as in backend.motion.edits; refusals as messages."""
from __future__ import annotations

import io
import sys

import numpy as np
import pytest

from addon_helpers import ROOT
from backend import service
from blender_addon import bridge
from mesh_addon_helpers import MESH_AUTOENCODER, MESH_INBETWEEN, flag

MOTION = ROOT / "backend" / "checkpoints" / "motion_autoencoder.json"


@pytest.fixture(scope="module")
def frames():
    return flag()["frames"]


def framed(header, arrays):
    req, res = io.BytesIO(), io.BytesIO()
    service.write_message(req, header, arrays)
    req.seek(0)
    service.serve(req, res)
    res.seek(0)
    return service.read_message(res)


def encode_request(frames, path=MESH_AUTOENCODER, decode=True):
    return ({"op": "mesh_encode", "checkpoint": str(path), "device": "cpu", "name": "flag", "decode": decode},
            {"frames": frames})


def decode_request(reply, out, amplify=1.0, timing=0.0, principal=(), scale=1, keys=None, key_frames=None,
               path=MESH_AUTOENCODER):
    segs = reply["segments"]
    header = {"op": "mesh_decode", "checkpoint": str(path), "device": "cpu",
              "task": "inbetween" if keys else "autoencoder", "segments": segs,
              "lengths": [(b - a) * scale + 1 for a, b in segs], "amplify": [amplify] * len(segs),
              "timing": [timing] * len(segs), "principal": [list(principal)] * len(segs), "keys": keys}
    arrays = {"points": out["points"]}
    if keys:
        arrays["key_frames"] = key_frames
    return header, arrays


def test_encode_decode_in_process_equals_framed_and_the_engine(frames):
    from backend.mesh.engine import MeshControls, MeshEngine
    reply, out = service.handle(*encode_request(frames))
    assert reply["ok"] and reply["num_vertices"] == 5041 and out["points"].shape[:2] == (2, 4)  # 60 frames: 2 segments of <= 31
    # each segment's neutral decode, laid one after the other (segments share their end frames)
    assert out["vertices"].dtype == np.float32 and out["vertices"].shape == (61,) + frames.shape[1:]
    f_reply, f_out = framed(*encode_request(frames))
    for k in out:
        assert np.array_equal(out[k], f_out[k])
    engine = MeshEngine(MESH_AUTOENCODER, "cpu")
    controls = engine.encode(frames)
    first = MeshControls(controls.points[:1], [(0, 30)])
    np.testing.assert_allclose(out["vertices"][:31], engine.decode(first), atol=1e-5)
    _, dec = service.handle(*decode_request(reply, out))
    assert np.array_equal(dec["vertices"], out["vertices"])  # neutral decode: the same numbers as encode's
    _, twice = service.handle(*decode_request(reply, out, scale=2))
    assert twice["vertices"].shape == (2 * 30 + 1 + 2 * 29 + 1, 5041, 3)  # each segment super-sampled


def test_decode_applies_the_edits_of_backend_edits(frames):
    from backend.mesh.engine import MeshEngine
    from backend.motion.edits import edit_points
    engine = MeshEngine(MESH_AUTOENCODER, "cpu")
    reply, out = service.handle(*encode_request(frames, decode=False))
    m = len(reply["principal_names"])
    amounts = [0.5] + [0.0] * (m - 1) if m else []
    pts = edit_points(out["points"].astype(np.float64), amplify_by=1.6, principal=engine.principal(), amounts=amounts)
    _, edited = service.handle(*decode_request(reply, out, 1.6, 0.3, amounts))
    _, direct = service.handle(*decode_request(reply, {"points": pts}, 1.0, 0.3))
    np.testing.assert_allclose(edited["vertices"], direct["vertices"], atol=1e-6)


def test_inbetween_keeps_keys_and_decode_reproduces_it(frames):
    keys = [0, 5, 10, 30, 59]
    header = {"op": "mesh_inbetween", "checkpoint": str(MESH_INBETWEEN), "device": "cpu", "keys": keys}
    reply, out = service.handle(header, {"key_frames": frames[keys]})
    assert out["vertices"].shape == frames.shape and np.array_equal(out["vertices"][keys], frames[keys])
    _, dec = service.handle(*decode_request(reply, out, keys=keys, key_frames=frames[keys], path=MESH_INBETWEEN))
    np.testing.assert_allclose(dec["vertices"], out["vertices"], atol=1e-5)
    assert np.array_equal(dec["vertices"][keys], frames[keys])
    with pytest.raises(ValueError, match="stretches only by whole factors"):
        h, a = decode_request(reply, out, keys=keys, key_frames=frames[keys], path=MESH_INBETWEEN)
        service.handle(dict(h, lengths=[n + 1 for n in h["lengths"]]), a)


def test_refusals_are_messages(frames):
    with pytest.raises(ValueError, match="is a motion .*checkpoint; mesh sequences need a mesh checkpoint"):
        service.handle(*encode_request(frames, MOTION))
    with pytest.raises(ValueError, match="this is a mesh inbetween checkpoint; Encode Mesh needs a mesh autoencoder"):
        service.handle(*encode_request(frames, MESH_INBETWEEN))
    with pytest.raises(ValueError, match="100 vertices, but the checkpoint was trained on a mesh of 5041"):
        service.handle(*encode_request(frames[:, :100]))
    with pytest.raises(ValueError, match="keys must start at frame 0"):
        service.handle({"op": "mesh_inbetween", "checkpoint": str(MESH_INBETWEEN), "device": "cpu", "keys": [3, 9]},
                       {"key_frames": frames[[3, 9]]})
    reply, _ = framed(*encode_request(frames, MESH_INBETWEEN))
    assert not reply["ok"] and "needs a mesh autoencoder one" in reply["error"]


def test_bridge_in_process_equals_the_backend_process(frames):
    process = bridge.BackendSettings(mode="SUBPROCESS", interpreter=sys.executable, timeout=120.0)
    here = bridge.BackendSettings(mode="IN_PROCESS", device="cpu")
    try:
        r1, o1 = bridge.request(here, *encode_request(frames))
        r2, o2 = bridge.request(process, *encode_request(frames))
        assert r1["segments"] == r2["segments"]
        np.testing.assert_allclose(o1["points"], o2["points"], atol=1e-5)  # thread counts differ: float order
        np.testing.assert_allclose(o1["vertices"], o2["vertices"], atol=1e-5)
        with pytest.raises(bridge.BridgeError, match="needs a mesh autoencoder one"):
            bridge.request(process, *encode_request(frames, MESH_INBETWEEN))
        assert bridge.backend_process().alive()
    finally:
        bridge.shutdown()
