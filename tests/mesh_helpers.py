"""Small analytic mesh sequences for backend and training tests (a rippling grid)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from backend.formats.pc2 import write_pc2


def ripple(index: int, frames: int = 70, n: int = 10) -> np.ndarray:
    """[frames, n*n, 3]: a grid whose height is a travelling wave; its shape, speed and phase vary by index."""
    rng = np.random.default_rng(index)
    g = np.stack(np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n)), -1).reshape(-1, 2)
    a, w, ph = rng.uniform(0.05, 0.2), rng.uniform(0.5, 1.5), rng.uniform(0, 6)
    t = np.arange(frames)[:, None] / 30.0
    k, axis = 3 + index % 5, index % 2  # wave number and direction vary too: the data set is not low-rank
    z = a * np.sin(w * 2 * np.pi * t + k * g[None, :, axis] + ph) * g[None, :, axis]
    return np.concatenate([np.broadcast_to(g, (frames,) + g.shape), z[..., None]], -1).astype(np.float32)


def write_ripples(folder, count: int = 20, frames: int = 70, n: int = 10):
    """``count`` PC2 files named ripple_XXXX.pc2 (id % 10: 8 val, 9 test, else train)."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        write_pc2(f"{folder}/ripple_{i:04d}.pc2", ripple(i, frames, n))
    return folder
