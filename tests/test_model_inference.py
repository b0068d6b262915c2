"""The model's inference shortcuts (``backend.models.spline_transformer.FAST_INFERENCE``: oneDNN's linear with the GELU
fused, attention as two batched products) give the plain modules' numbers, keep a sequence's numbers
independent of its batch, and leave training (autograd) on the plain modules."""
import numpy as np
import pytest
import torch

import backend.models.spline_transformer
from backend.motion.engine import Engine
from backend.motion.keyframes_np import every_k
from tests.conftest import ROOT, TEST_CLIP

SHIPPED = ROOT / "backend" / "checkpoints"


@pytest.fixture
def plain():
    """Run a block with the shortcuts off; they are back on afterwards."""
    def run(fn):
        backend.models.spline_transformer.FAST_INFERENCE = False
        try:
            return fn()
        finally:
            backend.models.spline_transformer.FAST_INFERENCE = True
    return run


def _decode(model, cp, m=31):
    with torch.inference_mode():
        t = torch.linspace(0, 1, m)
        return model.decode(cp, m, times=t, positions=t * (m - 1))


def test_fast_decode_and_encode_give_the_plain_numbers(plain):
    model = Engine(SHIPPED / "motion_autoencoder.json").model.module
    torch.manual_seed(0)
    cp, x = torch.randn(3, 4, model.cfg.latent), torch.randn(2, 31, model.cfg.input_dim)
    with torch.inference_mode():
        fast = (_decode(model, cp), model.encode(x))
        slow = plain(lambda: (_decode(model, cp), model.encode(x)))
    for f, s in zip(fast, slow, strict=True):
        assert f.shape == s.shape
        assert float((f - s).abs().max()) <= 1e-5 * max(1.0, float(s.abs().max()))


def test_the_engine_decodes_features_with_the_plain_numbers(plain):
    # the whole decode: the model, then the normaliser's inverse (principal axes, scale and mean)
    engine = Engine(SHIPPED / "motion_autoencoder.json")
    assert engine.norm.rotation is not None
    cp = np.random.default_rng(0).normal(size=(2, 4, engine.model.cfg.latent)).astype(np.float32)
    fast = engine.decode_features(cp, [(31, 31, 0.0)] * 2)
    slow = plain(lambda: engine.decode_features(cp, [(31, 31, 0.0)] * 2))
    assert np.abs(fast - slow).max() <= 1e-5 * max(1.0, np.abs(slow).max())


def test_a_segment_decodes_to_the_same_numbers_alone_and_in_a_batch():
    model = Engine(SHIPPED / "motion_autoencoder.json").model.module
    torch.manual_seed(1)
    cp = torch.randn(4, 4, model.cfg.latent)
    both = _decode(model, cp)
    for k in range(4):
        assert torch.equal(_decode(model, cp[k:k + 1])[0], both[k])


def test_segments_of_different_lengths_decode_in_one_pass_to_their_numbers_alone(plain):
    # a slider change's segments (31 and 30 frames, re-timed, a 2-frame one): one pass through the model,
    # each segment bit for bit what it decodes to alone (the add-on caches decodes per segment)
    engine = Engine(SHIPPED / "motion_autoencoder.json")
    cp = np.random.default_rng(2).normal(size=(5, 4, engine.model.cfg.latent)).astype(np.float32)
    plans = [(31, 31, 0.0), (30, 30, 0.0), (2, 2, 0.0), (31, 61, 0.4), (31, 31, 0.0)]  # (the last batched with the first)
    together = engine.decode_features(cp, plans)
    assert together.shape == (sum(m for _, m, _ in plans), engine.model.cfg.output_dim)
    at = np.cumsum([0] + [m for _, m, _ in plans])
    for k, plan in enumerate(plans):
        alone = engine.decode_features(cp[k:k + 1], [plan])
        assert np.array_equal(together[at[k]:at[k + 1]], alone)
    slow = plain(lambda: engine.decode_features(cp, plans))  # (one plain decode per segment)
    assert np.abs(together - slow).max() <= 1e-5 * max(1.0, np.abs(slow).max())


def test_the_whole_clip_decode_gives_each_segment_the_services_numbers(plain):
    # the CLI's decode (Engine.decode_segments, super-sampled and re-timed) takes the service's pass: a
    # segment of a clip decodes to the numbers a slider's decode request gets for it, whatever its length
    engine = Engine(SHIPPED / "motion_autoencoder.json")
    cp = np.random.default_rng(3).normal(size=(3, 4, engine.model.cfg.latent)).astype(np.float32)
    origins = np.zeros((3, 3), np.float32)
    lengths = [31, 30, 2]
    got = engine.decode_segments(cp, origins, lengths, scale=2.0, timing=0.3)
    assert [tuple(f.shape) for f, _ in got] == [(2 * n - 1, engine.model.cfg.output_dim) for n in lengths]
    for k, n in enumerate(lengths):
        assert np.array_equal(got[k][0], engine.decode_features(cp[k:k + 1], [(n, 2 * n - 1, 0.3)]))
    slow = plain(lambda: engine.decode_segments(cp, origins, lengths, scale=2.0, timing=0.3))  # (batched per length)
    for (f, _), (s, _) in zip(got, slow, strict=True):
        assert float(np.abs(f - s).max()) <= 1e-5 * max(1.0, float(np.abs(s).max()))


def test_the_inbetween_model_fills_the_same_motion_with_and_without_the_shortcuts(plain):
    from backend.formats.bvh import read_bvh
    engine = Engine(SHIPPED / "inbetween.json")
    clip = read_bvh(TEST_CLIP)
    clip = type(clip)(clip.skeleton, clip.rotations[:61], clip.positions[:61], clip.frame_time, clip.name)
    keys = every_k(61, 15)
    fast, _ = engine.inbetween(clip, keys)
    slow, _ = plain(lambda: engine.inbetween(clip, keys))
    np.testing.assert_allclose(np.abs(fast.rotations), np.abs(slow.rotations), atol=1e-5)
    np.testing.assert_allclose(fast.positions, slow.positions, atol=1e-4)


def test_training_keeps_the_plain_modules_and_their_gradients():
    cfg = backend.models.spline_transformer.ModelConfig(input_dim=12, output_dim=12, width=32, latent=8, layers=1, heads=4)
    model = backend.models.spline_transformer.SplineTransformer(cfg)
    x = torch.randn(2, 9, 12)
    y = model(x)
    assert y.requires_grad
    y.square().mean().backward()
    assert all(p.grad is not None for p in model.dec.parameters())


def test_linear_through_onednn_matches_torch_linear():
    layer = torch.nn.Linear(128, 384)
    x = torch.randn(2, 31, 128)
    with torch.inference_mode():
        fast, gelu = backend.models.spline_transformer.linear(layer, x), backend.models.spline_transformer.linear(layer, x, gelu=True)
        ref = torch.nn.functional.linear(x, layer.weight, layer.bias)
    torch.testing.assert_close(fast, ref, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(gelu, torch.nn.functional.gelu(ref), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("onednn", [True, False])
def test_a_row_of_a_product_gets_the_same_numbers_whatever_rows_are_beside_it(monkeypatch, onednn):
    """Both products the inference path may take (oneDNN's where AVX-512 runs, MKL's elsewhere): a token's
    output does not depend on how many rows are multiplied with it, or where they start in memory."""
    if onednn and backend.models.spline_transformer._ONEDNN_LINEAR is None:
        pytest.skip("this torch has no oneDNN")
    monkeypatch.setattr(backend.models.spline_transformer, "_USE_ONEDNN", onednn)
    torch.manual_seed(3)
    layer = torch.nn.Linear(137, 128)
    x = torch.randn(70, 137)
    with torch.inference_mode():
        whole = backend.models.spline_transformer.linear(layer, x, gelu=True)
        for n in (1, 2, 3, 4, 5, 7, 31, 61):
            for start in (0, 1, 9):
                part = backend.models.spline_transformer.linear(layer, x[start:start + n], gelu=True)
                assert torch.equal(part, whole[start:start + n]), (n, start)
        batched = backend.models.spline_transformer.linear(layer, x[:61].reshape(1, 61, 137).expand(3, 61, 137).contiguous())
        assert torch.equal(batched[2], backend.models.spline_transformer.linear(layer, x[:61]))


def test_hidden_tokens_with_nothing_left_to_attend_to_give_the_fused_kernels_numbers(plain):
    """A row whose every key is hidden (the in-betweening encoder's padding) must come out as the fused
    kernel makes it (zeros), not NaN: the batched products are not used there."""
    block = backend.models.spline_transformer.Transformer(32, 4, 2, 1, 0.0).eval()
    x, pos = torch.randn(2, 6, 32), torch.arange(6.0)
    hidden = torch.zeros(2, 6, dtype=torch.bool)
    hidden[1] = True  # the second sequence: nothing any token may attend to
    with torch.inference_mode():
        fast = block(x, pos, hidden)
        slow = plain(lambda: block(x, pos, hidden))
    assert torch.isfinite(fast).all()
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-5)


def test_a_request_runs_on_one_math_thread_unless_told_and_puts_the_count_back(monkeypatch):
    from backend.service import request_threads
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        monkeypatch.delenv("SPLINETWEEN_THREADS", raising=False)
        with request_threads():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        monkeypatch.setenv("SPLINETWEEN_THREADS", "3")
        with request_threads():
            assert torch.get_num_threads() == 3
        monkeypatch.setenv("SPLINETWEEN_THREADS", "0")  # torch's own default: left as it is
        with request_threads():
            assert torch.get_num_threads() == 2
        monkeypatch.setenv("SPLINETWEEN_THREADS", "many")  # not a number: the default
        with request_threads():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_no_segments_decode_to_no_rows():
    engine = Engine(SHIPPED / "motion_autoencoder.json")
    got = engine.decode_features(np.zeros((0, 4, engine.model.cfg.latent), np.float32), [])
    assert got.shape == (0, engine.model.cfg.output_dim)


def test_the_row_product_packs_each_weight_it_is_given():
    # a weight made, used and freed, then another of the same shape (a checkpoint loaded again): the
    # allocator hands the new one the old one's memory, and the product must still be of the new one
    x = torch.randn(7, 135)
    for _ in range(6):
        w = torch.randn(135, 135)  # (made as a checkpoint's tensors are: outside inference mode)
        with torch.inference_mode():
            assert torch.allclose(backend.models.spline_transformer.rows_product(x, w), x @ w.T, atol=1e-4)
        del w
