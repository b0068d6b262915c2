"""Mesh sequences as data: a per-asset linear basis, projections, errors, checks.

A mesh sequence is ``[F, V, 3]`` vertex positions of one mesh (fixed vertex count and order).
The model never sees vertices: each frame is reduced to ``K`` coefficients of a PCA basis
fitted on the asset's training frames (mean shape + orthonormal rows), as in the paper's
face experiment which encodes flattened vertex sequences.  Pure numpy functions.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class MeshError(ValueError):
    """A mesh sequence that cannot be used; the message names the problem and the fix."""


@dataclass
class MeshBasis:
    mean: np.ndarray  # [V, 3] float32, the mean shape of the training frames
    components: np.ndarray  # [K, V*3] float32, orthonormal rows, strongest first
    variance: np.ndarray  # [K] variance of each coefficient on the training frames

    @property
    def num_vertices(self) -> int:
        return self.mean.shape[0]

    @property
    def size(self) -> int:
        return self.components.shape[0]

    def truncated(self, k: int) -> "MeshBasis":
        """The first ``k`` components (PCA with fewer coefficients per frame)."""
        return MeshBasis(self.mean, self.components[:k], self.variance[:k])


def fit_basis(frames: np.ndarray, k: int, max_frames: int = 4000, seed: int = 0) -> MeshBasis:
    """PCA of the frames' vertex positions: ``k`` components (randomised SVD).

    At most ``max_frames`` frames (drawn evenly at random) enter the fit: the basis of a
    cloth asset converges long before the data set runs out, and the SVD stays seconds long.
    """
    frames = np.asarray(frames, dtype=np.float32)
    n = frames.shape[0]
    if n < 2:
        raise MeshError("fitting a basis needs at least 2 frames")
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(n, size=min(n, max_frames), replace=False))
    x = frames[pick].reshape(len(pick), -1).astype(np.float64)
    mean = x.mean(0)
    x -= mean
    k = min(k, x.shape[0] - 1, x.shape[1])
    # Randomised range finder with power iterations (Halko et al.): exact enough for k << min(n, 3V).
    q = k + 16
    y = x @ rng.standard_normal((x.shape[1], q))
    for _ in range(4):
        y, _ = np.linalg.qr(y)
        y = x @ (x.T @ y)
    y, _ = np.linalg.qr(y)
    _, s, vt = np.linalg.svd(y.T @ x, full_matrices=False)
    comps = vt[:k]
    # A sign convention, so refits on the same data give the same basis.
    comps *= np.sign(comps[np.arange(k), np.abs(comps).argmax(1)])[:, None]
    var = (s[:k] ** 2) / max(1, x.shape[0] - 1)
    return MeshBasis(mean.reshape(-1, 3).astype(np.float32), comps.astype(np.float32), var.astype(np.float32))


def project(frames: np.ndarray, basis: MeshBasis) -> np.ndarray:
    """[F, V, 3] -> coefficients [F, K]."""
    f = np.asarray(frames, dtype=np.float32).reshape(len(frames), -1) - basis.mean.reshape(1, -1)
    return f @ basis.components.T


def reconstruct(coeffs: np.ndarray, basis: MeshBasis) -> np.ndarray:
    """Coefficients [F, K] -> vertex positions [F, V, 3] (float32)."""
    flat = np.asarray(coeffs, dtype=np.float32) @ basis.components[:coeffs.shape[-1]] + basis.mean.reshape(1, -1)
    return flat.reshape(len(coeffs), -1, 3)


def bbox_diagonal(frames: np.ndarray) -> float:
    """Diagonal of the axis-aligned box around every vertex of every frame (the error scale)."""
    f = np.asarray(frames).reshape(-1, 3)
    return float(np.linalg.norm(f.max(0) - f.min(0)))


def vertex_errors(pred: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Euclidean distance per frame and vertex: [F, V]."""
    return np.linalg.norm(np.asarray(pred, np.float64) - np.asarray(true, np.float64), axis=-1)


def mean_vertex_error(pred: np.ndarray, true: np.ndarray, frames=None) -> float:
    """Mean Euclidean vertex error over all (or the given) frames, in scene units."""
    err = vertex_errors(pred, true)
    return float(err[frames].mean() if frames is not None else err.mean())


def linear_interpolation(frames: np.ndarray, keys) -> np.ndarray:
    """The baseline: vertex positions blended linearly between neighbouring keys.

    Only key frames of ``frames`` are read.  frames [F, V, 3], keys sorted, first and last included.
    """
    keys = np.asarray(keys, dtype=np.int64)
    f = np.arange(frames.shape[0])
    nxt = np.clip(np.searchsorted(keys, f, side="left"), 1, len(keys) - 1)
    a, b = keys[nxt - 1], keys[nxt]
    t = ((f - a) / np.maximum(b - a, 1)).astype(np.float32)[:, None, None]
    return frames[a] * (1 - t) + frames[b] * t


def check_sequence(frames, num_vertices: int | None = None, name: str = "mesh sequence",
                   min_frames: int = 1, frames_to_check=None) -> np.ndarray:
    """Shape, length, vertex count and finiteness; returns the array as float32 [F, V, 3]."""
    arr = np.asarray(frames)
    if arr.ndim != 3 or arr.shape[-1] != 3:
        raise MeshError(f"{name}: expected vertex positions [frames, vertices, 3], got shape {arr.shape}")
    if arr.shape[0] == 0:
        raise MeshError(f"{name}: the frame range is empty (choose a range with at least {max(min_frames, 1)} "
                        "frames)")
    if arr.shape[0] < min_frames:
        raise MeshError(f"{name}: {arr.shape[0]} frames; the model needs at least {min_frames} "
                        "(use a longer range)")
    if num_vertices is not None and arr.shape[1] != num_vertices:
        raise MeshError(f"{name}: {arr.shape[1]} vertices, but the checkpoint was trained on a mesh of "
                        f"{num_vertices} (a mesh model is per asset: use this asset's checkpoint, or train "
                        "one on it)")
    sub = arr if frames_to_check is None else arr[np.asarray(frames_to_check, dtype=np.int64)]
    bad = ~np.isfinite(sub).all((1, 2))
    if bad.any():
        idx = np.arange(arr.shape[0]) if frames_to_check is None else np.asarray(frames_to_check)
        raise MeshError(f"{name}: NaN or infinite vertex positions in frame(s) {idx[bad][:5].tolist()}")
    return arr.astype(np.float32, copy=False)


def join_frames(parts: list[np.ndarray], seams: bool = True) -> np.ndarray:
    """Decoded segments ``[m, V, 3]`` that share end frames -> one sequence.

    With ``seams`` (encoded sequences) each side of a shared frame eases into the mean of both over a
    quarter of its length (smoothstep), so a seam has no jump; without (in-betweened sequences, whose
    segments meet on a key) they are simply concatenated.  Numpy only: the add-on joins with it too.
    """
    from ..maths.splines import ease_weights
    parts = [np.array(p, copy=True) for p in parts]
    for i in range(len(parts) - 1 if seams else 0):
        a, b = parts[i], parts[i + 1]
        target = 0.5 * (a[-1] + b[0])
        for p, end in ((a, -1), (b, 0)):
            n = max(1, len(p) // 4)
            w = ease_weights(n).astype(p.dtype)[:, None, None]
            idx = np.arange(len(p) - n, len(p)) if end == -1 else np.arange(n)[::-1]
            p[idx] += w * (target - p[end])
    return np.concatenate([parts[0]] + [p[1:] for p in parts[1:]])
