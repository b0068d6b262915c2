import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLES = sorted((ROOT / "examples" / "bvh").glob("*.bvh"))
TEST_CLIP = ROOT / "tests" / "fixtures" / "dataset-2_walk_normal_005.bvh"
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def example_clips():
    from backend.bvh import read_bvh
    return [read_bvh(p) for p in EXAMPLES]


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, example_clips):
    """A small untrained-but-real checkpoint (random weights, real statistics) for I/O tests."""
    from backend import checkpoint as ck
    from backend.features import Normalizer, detect_layout, to_features
    from backend.model import ModelConfig, SplineTransformer
    clip = example_clips[0]
    layout = detect_layout(clip.positions.std(0).max(-1), clip.skeleton.channels)
    feat, _ = to_features(torch.from_numpy(clip.rotations).float(), torch.from_numpy(clip.positions).float(), layout)
    cfg = ModelConfig(input_dim=layout.dim, output_dim=layout.dim, width=32, heads=4, layers=1, latent=8)
    torch.manual_seed(0)
    model = SplineTransformer(cfg)
    path = tmp_path_factory.mktemp("ckpt") / "tiny"
    c = ck.Checkpoint(cfg, clip.skeleton, layout, Normalizer.fit(feat), {}, {"task": "autoencoder",
                      "config": {"min_window": 8}}, window=16)
    return ck.save(path, c, model)


def shipped_checkpoint():
    from backend.engine import DEFAULT_CHECKPOINT
    return DEFAULT_CHECKPOINT if DEFAULT_CHECKPOINT.exists() else None
