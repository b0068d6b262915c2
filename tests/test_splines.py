"""Spline bases: the curves a user edits pass where they should and sample consistently."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for plain `pytest`

from backend.maths.splines import (
    bezier_basis,
    bspline_basis,
    composite_basis,
    evaluate,
    uniform_times,
)

T_DENSE = np.concatenate([np.linspace(0.0, 1.0, 257), [1e-12, 0.5 - 1e-12, 1.0 - 1e-12]])

BASES = {
    "bezier3": (4, lambda t: bezier_basis(3, t)),
    "bezier6": (7, lambda t: bezier_basis(6, t)),
    "bspline8x3": (8, lambda t: bspline_basis(8, 3, t)),
    "bspline5x2": (5, lambda t: bspline_basis(5, 2, t)),
    "composite4": (13, lambda t: composite_basis(4, t)),
    "composite3q": (7, lambda t: composite_basis(3, t, degree=2)),
}


def controls(k, d=3, batch=(), seed=0):
    return np.random.default_rng(seed).normal(size=batch + (k, d))


@pytest.mark.parametrize("degree", range(1, 8))
def test_bezier_passes_through_its_end_control_points(degree):
    p = controls(degree + 1)
    ends = evaluate(p, bezier_basis(degree, [0.0, 1.0]))
    np.testing.assert_allclose(ends, p[[0, -1]], atol=1e-12)


@pytest.mark.parametrize("name", sorted(BASES))
def test_curve_starts_and_ends_on_the_first_and_last_control(name):
    k, basis = BASES[name]
    p = controls(k)
    np.testing.assert_allclose(evaluate(p, basis(np.array([0.0, 1.0]))), p[[0, -1]], atol=1e-12)


@pytest.mark.parametrize("name", sorted(BASES))
def test_basis_is_a_partition_of_unity(name):
    k, basis = BASES[name]
    b = basis(T_DENSE)
    assert b.shape == (T_DENSE.size, k)
    np.testing.assert_allclose(b.sum(axis=1), 1.0, atol=1e-12)
    assert b.min() >= -1e-15  # convex weights: the curve stays inside the control polygon's hull
    # so translating every control point translates the curve by the same amount
    p = controls(k)
    shift = np.array([3.0, -1.0, 0.5])
    np.testing.assert_allclose(evaluate(p + shift, b), evaluate(p, b) + shift, atol=1e-12)


@pytest.mark.parametrize("num_ctrl,degree", [(2, 1), (4, 1), (4, 3), (9, 3), (6, 5), (12, 4)])
def test_bspline_partition_of_unity_over_many_shapes(num_ctrl, degree):
    np.testing.assert_allclose(bspline_basis(num_ctrl, degree, T_DENSE).sum(1), 1.0, atol=1e-12)


@pytest.mark.parametrize("degree", range(1, 6))
def test_bspline_with_degree_plus_one_controls_is_bezier(degree):
    np.testing.assert_allclose(bspline_basis(degree + 1, degree, T_DENSE), bezier_basis(degree, T_DENSE),
                               atol=1e-12)


def test_bspline_needs_more_controls_than_its_degree():
    with pytest.raises(ValueError, match="control points"):
        bspline_basis(3, 3, uniform_times(5))


def test_uniform_times():
    np.testing.assert_array_equal(uniform_times(1), [0.0])
    t = uniform_times(31)
    assert (t[0], t[-1]) == (0.0, 1.0)
    np.testing.assert_allclose(np.diff(t), 1 / 30, atol=1e-15)


@pytest.mark.parametrize("name", sorted(BASES))
@pytest.mark.parametrize("n", [2, 7, 30, 61])
def test_super_sampling_agrees_with_the_frames_it_shares(name, n):
    # N frames at t_i = i/(N-1); M = 4(N-1)+1 samples put every 4th sample exactly on a frame
    k, basis = BASES[name]
    m = 4 * (n - 1) + 1
    t_n, t_m = uniform_times(n), uniform_times(m)
    np.testing.assert_allclose(t_m[::4], t_n, atol=1e-15)
    p = controls(k, batch=(2,), seed=n)
    coarse, fine = evaluate(p, basis(t_n)), evaluate(p, basis(t_m))
    assert coarse.shape == (2, n, 3) and fine.shape == (2, m, 3)
    np.testing.assert_allclose(fine[:, ::4], coarse, atol=1e-12)
    # the in-between samples stay inside the controls' bounding box (no overshoot)
    assert np.all(fine >= p.min(axis=-2, keepdims=True) - 1e-12)
    assert np.all(fine <= p.max(axis=-2, keepdims=True) + 1e-12)


@pytest.mark.parametrize("segments,degree", [(2, 3), (4, 3), (5, 3), (3, 2)])
def test_composite_is_continuous_at_the_seams(segments, degree):
    p = controls(degree * segments + 1, seed=segments)
    for s in range(1, segments):
        seam = s / segments
        eps = 1e-9
        left, at, right = evaluate(p, composite_basis(segments, [seam - eps, seam, seam + eps], degree))
        np.testing.assert_allclose(at, p[degree * s], atol=1e-12)  # seams sit on the shared control point
        np.testing.assert_allclose(left, at, atol=1e-6)
        np.testing.assert_allclose(right, at, atol=1e-6)
        # and the jump across the seam shrinks with the gap: continuity, not just closeness
        far_l, far_r = evaluate(p, composite_basis(segments, [seam - 1e-3, seam + 1e-3], degree))
        assert np.abs(right - left).max() < 1e-4 * np.abs(far_r - far_l).max() + 1e-12


def test_composite_segment_uses_only_its_own_controls():
    b = composite_basis(4, np.linspace(0.26, 0.49, 20))  # inside segment 1 (t in [0.25, 0.5])
    assert np.all(b[:, :3] == 0) and np.all(b[:, 7:] == 0)
    np.testing.assert_allclose(b[:, 3:7], bezier_basis(3, np.linspace(0.26, 0.49, 20) * 4 - 1), atol=1e-12)


def test_evaluate_broadcasts_over_batch_dimensions():
    p = controls(5, d=4, batch=(3, 2))
    b = bspline_basis(5, 3, uniform_times(9))
    out = evaluate(p, b)
    assert out.shape == (3, 2, 9, 4)
    np.testing.assert_allclose(out[1, 0], b @ p[1, 0], atol=1e-12)
