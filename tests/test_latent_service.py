"""The service's latent requests ("encode", "decode", and the control points "inbetween" returns):
the same numbers in-process, over the framed protocol and through a backend process; edits as in
backend.motion.edits; refusals as messages."""
from __future__ import annotations

import io
import sys

import numpy as np
import pytest
import torch

from addon_helpers import ROOT, TEST_CLIP
from backend import service
from blender_addon import bridge

INBETWEEN = ROOT / "backend" / "checkpoints" / "inbetween.json"


@pytest.fixture(scope="module")
def clip():
    from backend.formats.bvh import read_bvh
    return read_bvh(TEST_CLIP)


@pytest.fixture(scope="module")
def pca_checkpoint(tiny_checkpoint, tmp_path_factory):
    """The tiny autoencoder with made-up principal directions (orthonormal rows)."""
    from backend.runtime import checkpoint
    c = checkpoint.load(tiny_checkpoint)
    k = 4 * c.config.latent
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(k, 3)))
    c.extra.update({"pca.components": torch.tensor(q.T, dtype=torch.float32),
                    "pca.std": torch.tensor([3.0, 2.0, 1.0]), "pca.mean": torch.zeros(k)})
    c.info["principal_names"] = ["legs", "arms", "root travel"]
    c.info["principal_descriptions"] = ["Moves the legs.", "Moves the arms.", "Carries the body."]
    return checkpoint.save(tmp_path_factory.mktemp("pca") / "tiny_pca", c)


def _encode_request(path, clip, frames=40):
    return ({"op": "encode", "checkpoint": str(path), "device": "cpu", "frame_time": clip.frame_time},
            {"offsets": clip.skeleton.offsets, "rotations": clip.rotations[:frames],
             "positions": clip.positions[:frames]})


def _decode_request(path, reply, out, amplify=1.0, timing=0.0, principal=(), scale=1):
    segs = reply["segments"]
    return ({"op": "decode", "checkpoint": str(path), "device": "cpu", "task": "autoencoder", "segments": segs,
             "lengths": [(b - a) * scale + 1 for a, b in segs], "amplify": [amplify] * len(segs),
             "timing": [timing] * len(segs), "principal": [list(principal)] * len(segs), "keys": None},
            {"points": out["points"], "origins": out["origins"], "template": out["template"]})


def _framed(header, arrays):
    req, res = io.BytesIO(), io.BytesIO()
    service.write_message(req, header, arrays)
    req.seek(0)
    service.serve(req, res)
    res.seek(0)
    return service.read_message(res)


def test_encode_and_decode_in_process_equal_framed(pca_checkpoint, clip):
    reply, out = service.handle(*_encode_request(pca_checkpoint, clip))
    assert reply["ok"] and reply["principal_names"] == ["legs", "arms", "root travel"] and reply["min_frames"] == 8
    assert reply["principal_descriptions"] == ["Moves the legs.", "Moves the arms.", "Carries the body."]
    assert [tuple(s) for s in reply["segments"]] == [(0, 13), (13, 26), (26, 39)]
    framed_reply, framed = _framed(*_encode_request(pca_checkpoint, clip))
    for k in out:
        assert np.array_equal(out[k], framed[k])
    req = _decode_request(pca_checkpoint, reply, out, amplify=1.5, timing=0.3, principal=(1.0, 0.0, -2.0))
    _, dec = service.handle(*req)
    _, dec_framed = _framed(*req)
    assert dec["rotations"].shape == (42, 22, 4)
    for k in dec:
        assert np.array_equal(dec[k], dec_framed[k])


def test_decode_applies_the_edits_of_backend_edits(pca_checkpoint, clip):
    from backend.motion.edits import edit_points
    from backend.motion.engine import Controls, Engine
    engine = Engine(pca_checkpoint, "cpu")
    reply, out = service.handle(*_encode_request(pca_checkpoint, clip))
    segs = [tuple(s) for s in reply["segments"]]
    controls = Controls(out["points"], out["origins"], segs, out["template"], clip.frame_time)
    _, neutral = service.handle(*_decode_request(pca_checkpoint, reply, out))
    from backend.maths import quat_np
    from backend.motion.engine import _join_segments
    at = np.cumsum([0] + [b - a + 1 for a, b in segs])
    rot, pos = _join_segments([(neutral["rotations"][at[s]:at[s + 1]], neutral["positions"][at[s]:at[s + 1]])
                               for s in range(3)])
    ref = engine.decode(controls)  # batched by length and joined by the engine: the same motion
    assert np.degrees(quat_np.angle_between(rot, ref.rotations)).max() < 1e-3
    assert np.abs(pos - ref.positions).max() < 1e-3
    pts = edit_points(out["points"].astype(np.float64), amplify_by=2.0, principal=engine.principal(),
                      amounts=[0.5, -1.0, 0.0])
    _, edited = service.handle(*_decode_request(pca_checkpoint, reply, out, 2.0, 0.0, (0.5, -1.0, 0.0)))
    _, direct = service.handle(*_decode_request(pca_checkpoint, reply, {**out, "points": pts}))
    np.testing.assert_allclose(edited["rotations"], direct["rotations"], atol=1e-6)
    _, twice = service.handle(*_decode_request(pca_checkpoint, reply, out, scale=2))
    assert len(twice["rotations"]) == 2 * 42 - 3  # each segment twice as dense


def test_segments_decoded_together_are_each_decoded_alone(clip):
    """A slider change over two segments decodes them in one model call; each gets the very numbers it
    gets alone, so the add-on's per-segment cache of decodes stays valid whatever was asked with it."""
    from backend.motion.engine import DEFAULT_CHECKPOINT
    reply, out = service.handle(*_encode_request(DEFAULT_CHECKPOINT, clip, frames=91))
    req = _decode_request(DEFAULT_CHECKPOINT, reply, out, amplify=1.5)
    _, together = service.handle(*req)
    header, arrays = req
    at = 0
    for i, (_a, _b) in enumerate(header["segments"]):
        one = ({**header, **{k: header[k][i:i + 1] for k in ("segments", "lengths", "amplify", "timing", "principal")}},
               {**arrays, "points": arrays["points"][i:i + 1], "origins": arrays["origins"][i:i + 1]})
        _, alone = service.handle(*one)
        n = len(alone["rotations"])
        assert np.array_equal(together["rotations"][at:at + n], alone["rotations"])
        assert np.array_equal(together["positions"][at:at + n], alone["positions"])
        at += n
    assert at == len(together["rotations"]) and len(header["segments"]) >= 3


def test_refusals_are_messages(pca_checkpoint, tiny_checkpoint, clip):
    reply, out = service.handle(*_encode_request(pca_checkpoint, clip))
    h, a = _decode_request(tiny_checkpoint, reply, out, principal=(1.0,))
    with pytest.raises(ValueError, match="has no principal directions; set the principal sliders to 0"):
        service.handle(h, a)
    h, a = _decode_request(pca_checkpoint, reply, out)
    with pytest.raises(ValueError, match="differ in count"):
        service.handle(dict(h, lengths=h["lengths"][:1]), a)
    with pytest.raises(ValueError, match="needs a motion autoencoder one"):
        service.handle(*_encode_request(INBETWEEN, clip))
    with pytest.raises(ValueError, match="needs at least 8"):
        service.handle(*_encode_request(pca_checkpoint, clip, frames=5))
    reply_f, _ = _framed(*_encode_request(INBETWEEN, clip))
    assert not reply_f["ok"] and "needs a motion autoencoder one" in reply_f["error"]


def test_inbetween_returns_its_controls_and_decode_reproduces_it(clip):
    keys = [0, 15, 30, 45, 60]
    header = {"op": "inbetween", "checkpoint": str(INBETWEEN), "device": "cpu", "keys": keys,
              "frame_time": clip.frame_time}
    arrays = {"offsets": clip.skeleton.offsets, "key_rotations": clip.rotations[keys],
              "key_positions": clip.positions[keys]}
    reply, out = service.handle(header, arrays)
    segs = reply["segments"]
    assert segs[0][0] == 0 and segs[-1][1] == 60 and out["points"].shape[:2] == (len(segs), 4)
    dec_header = {"op": "decode", "checkpoint": str(INBETWEEN), "device": "cpu", "task": "inbetween",
                  "segments": segs, "lengths": [b - a + 1 for a, b in segs], "amplify": [1.0] * len(segs),
                  "timing": [0.0] * len(segs), "principal": [[]] * len(segs), "keys": keys}
    dec_arrays = {"points": out["points"], "origins": out["origins"], "template": out["template"],
                  "key_rotations": arrays["key_rotations"], "key_positions": arrays["key_positions"]}
    _, dec = service.handle(dec_header, dec_arrays)
    at = np.cumsum([0] + [b - a + 1 for a, b in segs])
    for s, (a, b) in enumerate(segs):
        np.testing.assert_allclose(np.abs(np.sum(dec["rotations"][at[s]:at[s + 1]] * out["rotations"][a:b + 1], -1)),
                                   1.0, atol=1e-5)
    assert np.array_equal(dec["rotations"][0], arrays["key_rotations"][0])  # keys exactly as given
    with pytest.raises(ValueError, match="stretches only by whole factors"):
        service.handle(dict(dec_header, lengths=[(b - a) * 2 + 2 for a, b in segs]), dec_arrays)


def test_bridge_request_in_process_equals_the_backend_process(pca_checkpoint, clip):
    settings = bridge.BackendSettings(mode="SUBPROCESS", interpreter=sys.executable, timeout=120.0)
    here = bridge.BackendSettings(mode="IN_PROCESS", device="cpu")
    try:
        header, arrays = _encode_request(pca_checkpoint, clip)
        r1, o1 = bridge.request(here, header, arrays)
        r2, o2 = bridge.request(settings, header, arrays)
        assert r1["segments"] == r2["segments"]
        for k in o1:
            np.testing.assert_array_equal(o1[k], o2[k])
        dh, da = _decode_request(pca_checkpoint, r1, o1, amplify=0.5, principal=(0.0, 1.0, 0.0))
        _, d1 = bridge.request(here, dh, da)
        _, d2 = bridge.request(settings, dh, da)
        for k in d1:
            np.testing.assert_array_equal(d1[k], d2[k])
        with pytest.raises(bridge.BridgeError, match="needs a motion autoencoder one"):
            bridge.request(settings, *_encode_request(INBETWEEN, clip))
        assert bridge.backend_process().alive()
    finally:
        bridge.shutdown()


def test_inbetween_decode_without_the_guard_is_the_models_own_edit(clip):
    """The latent layer asks in-betweened segments without the guard ("guard": false): the edit a slider
    makes is the model's own, not scaled by the guard's trust in the fill; the engine keeps its guard."""
    from backend.service.engines import get_engine
    keys = list(range(0, 61, 5))
    header = {"op": "inbetween", "checkpoint": str(INBETWEEN), "device": "cpu", "keys": keys,
              "frame_time": clip.frame_time}
    arrays = {"offsets": clip.skeleton.offsets, "key_rotations": clip.rotations[keys],
              "key_positions": clip.positions[keys]}
    reply, out = service.handle(header, arrays)
    segs = reply["segments"]
    dec = {"op": "decode", "checkpoint": str(INBETWEEN), "device": "cpu", "task": "inbetween", "segments": segs,
           "lengths": [b - a + 1 for a, b in segs], "amplify": [1.8] * len(segs), "timing": [0.0] * len(segs),
           "principal": [[]] * len(segs), "keys": keys}
    dec_arrays = {"points": out["points"], "origins": out["origins"], "template": out["template"],
                  "key_rotations": arrays["key_rotations"], "key_positions": arrays["key_positions"]}
    engine = get_engine(str(INBETWEEN), "cpu", "inbetween")
    _, free = service.handle(dict(dec, guard=False), dec_arrays)
    assert engine.guard
    _, guarded = service.handle(dec, dec_arrays)
    engine.guard = False
    try:
        _, own = service.handle(dec, dec_arrays)
    finally:
        engine.guard = True
    for k in free:
        np.testing.assert_array_equal(free[k], own[k])
    from backend.motion.controls import Controls
    alphas = engine.guard_for(Controls(out["points"], out["origins"], [tuple(s) for s in segs], out["template"],
                                      clip.frame_time, keys=keys, key_rotations=arrays["key_rotations"],
                                      key_positions=arrays["key_positions"]), engine.skeleton)
    if (alphas < 1.0).any():  # the guarded decode is pulled towards the curves through the keys
        assert not np.array_equal(free["rotations"], guarded["rotations"])
