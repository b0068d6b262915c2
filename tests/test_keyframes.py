"""Interpolation between keys: SLERP base, C1 Hermite base, snapping decoded frames onto keys."""
import numpy as np
import torch

from training.keyframes import bracket, every_k, hermite_base, interpolate, key_mask, snap_to_keys


def _mask(n, keys):
    return torch.from_numpy(key_mask(n, keys))[None]


def test_every_k_and_bracket():
    assert every_k(61, 15) == [0, 15, 30, 45, 60] and every_k(62, 15)[-1] == 61 and every_k(5, 10) == [0, 4]
    prev, nxt, alpha = bracket(_mask(11, [0, 4, 10]))
    assert prev[0].tolist() == [0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 10]
    assert nxt[0].tolist() == [0, 4, 4, 4, 4, 10, 10, 10, 10, 10, 10]
    assert np.isclose(alpha[0, 2].item(), 0.5) and alpha[0, 4].item() == 0


def test_hermite_passes_through_keys_reproduces_lines_and_is_c1():
    n = 41
    t = torch.arange(n, dtype=torch.float64)
    keys = [0, 3, 11, 25, 26, 40]
    mask = _mask(n, keys)
    line = torch.stack([t, -2 * t + 1], -1)[None]
    assert torch.allclose(hermite_base(line, mask), line, atol=1e-5)
    curve = torch.stack([torch.sin(t / 6), torch.cos(t / 9)], -1)[None]
    h = hermite_base(curve, mask)
    assert torch.equal(h[0, keys], curve[0, keys])
    # at an inner key the one-sided slopes nearly agree (C1); linear chords jump there
    left, right = h[0, 11] - h[0, 10], h[0, 12] - h[0, 11]
    chord_jump = (curve[0, 25] - curve[0, 11]) / 14 - (curve[0, 11] - curve[0, 3]) / 8
    assert (left - right).abs().max() < 0.3 * chord_jump.abs().max()
    # non-key values are never read
    garbage = curve.clone()
    garbage[0, ~mask[0]] = float("nan")
    assert torch.equal(hermite_base(garbage, mask), h)


def test_slerp_base_reads_keys_only():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(1, 20, 3, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    rot, pos = torch.from_numpy(q), torch.from_numpy(rng.normal(size=(1, 20, 3, 3)))
    mask = _mask(20, [0, 7, 19])
    r, p = interpolate(rot, pos, mask)
    assert torch.allclose(r[0, [0, 7, 19]].abs(), rot[0, [0, 7, 19]].abs())
    rot2 = rot.clone()
    rot2[0, 3] = 0.5
    assert torch.equal(interpolate(rot2, pos, mask)[0], r)


def test_snap_to_keys_hits_keys_with_no_new_slope():
    n = 31
    mask = _mask(n, [0, 10, 30])
    keys = torch.randn(1, n, 4, dtype=torch.float64)
    decoded = keys + 0.1 * torch.randn(1, n, 4, dtype=torch.float64)
    snapped = snap_to_keys(decoded, keys, mask)
    assert torch.allclose(snapped[0, [0, 10, 30]], keys[0, [0, 10, 30]])
    corr = snapped - decoded
    # the correction is flat at the keys (smoothstep), so it adds no velocity jump there
    assert (corr[0, 11] - corr[0, 10]).abs().max() < 0.2 * (corr[0, 10] - corr[0, 20]).abs().max() + 1e-12
    assert torch.equal(snap_to_keys(keys, keys, mask), keys)
