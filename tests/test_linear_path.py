"""The mesh models' linear paths: what an untrained model returns, where the key regression reads."""
from __future__ import annotations

import pytest
import torch

from backend.maths.splines import bezier_basis, uniform_times
from backend.models.keyframe import KeyRegression, gap_features
from backend.models.registry import build_model
from backend.models.spline_transformer import ModelConfig


def test_untrained_autoencoder_is_the_least_squares_bezier_of_the_leading_components():
    torch.manual_seed(0)
    model = build_model(ModelConfig(12, 12, "spline", 32, 5, 1, 4, 1, 4, linear_path=True)).eval()
    t = torch.linspace(0, 1, 23)
    # leading dimensions on a cubic in time come back exactly; the rest (no latent room) come back as zero
    x = torch.stack([t ** 3 * (i + 1) - t * i for i in range(12)], -1)[None]
    with torch.no_grad():
        y = model(x)
    assert torch.allclose(y[0, :, :5], x[0, :, :5], atol=1e-5)
    assert torch.equal(y[0, :, 5:], torch.zeros(23, 7))
    # on anything else it is the best cubic fit: the residual is orthogonal to the Bernstein basis
    wave = torch.sin(7 * t)[None, :, None].expand(1, 23, 12).contiguous()
    with torch.no_grad():
        fit = model(wave)[0, :, 0]
    basis = torch.as_tensor(bezier_basis(3, uniform_times(23)), dtype=torch.float32)
    assert basis.T @ (wave[0, :, 0] - fit) == pytest.approx(torch.zeros(4), abs=1e-4)
    assert (wave[0, :, 0] - fit).abs().max() > 0.05  # and not the input itself


def test_a_latent_wider_than_the_input_maps_what_it_can():
    model = build_model(ModelConfig(3, 3, "spline", 32, 8, 1, 4, 1, 4, linear_path=True)).eval()
    x = torch.linspace(0, 1, 9)[None, :, None].expand(1, 9, 3) * torch.tensor([1.0, -2.0, 0.5])
    with torch.no_grad():
        cp = model.encode(x)
        assert torch.allclose(model.decode(cp, 9), x, atol=1e-5)  # lines are cubics: exact
    assert torch.equal(cp[0, :, 3:], torch.zeros(4, 5))  # the latent's spare dimensions start empty


def test_linear_path_is_refused_for_the_alibi_baselines():
    with pytest.raises(ValueError, match="not alibi"):
        ModelConfig(12, 12, "alibi", 32, 8, linear_path=True)


def test_gap_features_name_the_nearest_keys_and_place_each_frame_in_its_gap():
    mask = torch.zeros(1, 21, dtype=torch.bool)
    mask[0, [0, 4, 10, 20]] = True
    near, u, g = gap_features(mask)
    assert near[0, 6].tolist() == [0, 4, 10, 20]  # frame 6: two keys before its gap's end, two from it
    assert near[0, 1].tolist() == [0, 0, 4, 10]  # clamped at the window's start
    assert near[0, 15].tolist() == [4, 10, 20, 20]  # and at its end
    assert g[0, 6].item() == 6 and u[0, 7].item() == pytest.approx(0.5)
    assert u[0, 10].item() == 0.0  # a key starts its gap
    # a grid super-sampled 2x measures gaps in source frames, as the engine's positions do
    dense = torch.zeros(1, 41, dtype=torch.bool)
    dense[0, [0, 8, 20, 40]] = True
    _, u2, g2 = gap_features(dense, positions=torch.arange(41) / 2.0)
    assert g2[0, 13].item() == 6 and u2[0, 14].item() == pytest.approx(0.5)


def test_key_regression_is_zero_on_keys_whatever_its_weights():
    torch.manual_seed(1)
    reg = KeyRegression(6)
    torch.nn.init.normal_(reg.linear.weight)
    mask = torch.zeros(2, 31, dtype=torch.bool)
    mask[:, ::10] = True
    keys, base = torch.randn(2, 31, 6), torch.randn(2, 31, 6)
    out = reg(keys, base, mask)
    assert torch.equal(out[mask], torch.zeros_like(out[mask]))
    assert out[~mask].abs().mean() > 0.1
    # the gap-length weights are a partition of unity: short and long gaps blend between nodes
    w = reg.weights(torch.full((5,), 0.5), torch.tensor([2.0, 4.5, 10.0, 23.0, 45.0]))
    assert w.reshape(5, 3, -1)[:, 0].sum(-1) == pytest.approx(torch.full((5,), 0.25))
