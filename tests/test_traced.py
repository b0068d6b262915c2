"""The decoder's traced trunk (backend.traced) gives the eager module's numbers bit for bit, at every
batch size and segment length a decode uses, so the sliders' caches and the layer's neutral (decoded
once eagerly or traced) agree exactly."""
import numpy as np
import pytest
import torch

from backend.engine import DEFAULT_CHECKPOINT, Engine
from backend.traced import trace_trunk


@pytest.fixture(scope="module")
def engine():
    return Engine(DEFAULT_CHECKPOINT, device="cpu")


@pytest.mark.parametrize("batch,frames", [(1, 2), (1, 31), (2, 31), (5, 17), (3, 121)])
def test_trace_equals_eager(engine, batch, frames):
    traced = trace_trunk(engine.model, engine.device)
    assert traced is not None
    g = torch.Generator().manual_seed(batch * 1000 + frames)
    lat = torch.randn(batch, frames, engine.model.from_latent.in_features, generator=g)
    pos = torch.linspace(0, 1, frames) * (frames - 1) * 1.5  # (super-sampled spacing, as a Resample)
    with torch.inference_mode():
        assert torch.equal(traced(lat, pos), engine.model.trunk(lat, pos))


def test_engine_decodes_with_the_trace(engine):
    """Engine.decode_segments uses the trace, and its features are the eager decode's."""
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(2, 4, engine.model.cfg.latent)).astype(np.float32)
    got = engine.decode_segments(pts, np.zeros((2, 3)), [31, 31])
    assert engine.trunk() is not None
    eager = Engine.__new__(Engine)
    eager.__dict__.update(engine.__dict__)
    eager._trunk = None  # (the eager path)
    want = eager.decode_segments(pts, np.zeros((2, 3)), [31, 31])
    for (f, o), (g, p) in zip(got, want):
        assert torch.equal(f, g) and torch.equal(o, p)
