import os
import sys
from pathlib import Path

# The tests compare this process's numbers with the batch's and the CLI's, which run their maths on one
# thread (tests/batch_helpers.py): numpy's BLAS here too, whatever OMP_NUM_THREADS the caller set (.ci/run
# sets 2; a threaded matrix product sums in another order, and a written BVH then differs in its 6th decimal)
os.environ["OPENBLAS_NUM_THREADS"] = "1"

import pytest

try:
    import torch
except ImportError:  # the Blender 4.5 run (tests/blender45.py): bpy without PyTorch, the model in a backend process
    torch = None

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
EXAMPLES = sorted((ROOT / "examples" / "bvh").glob("*.bvh"))
TEST_CLIP = ROOT / "tests" / "fixtures" / "dataset-2_walk_normal_005.bvh"
if torch is not None:
    torch.set_num_threads(1)


# The Blender 4.5 run (tests/test_blender45.py) takes minutes in a process of its own: it starts when collection
# ends and runs beside the rest of the suite; its test goes last and waits for it.
BLENDER45_TEST = "tests/test_blender45.py::"
_blender45 = {}


def _blender45_wanted(items) -> bool:
    return (torch is not None and not os.environ.get("SPLINETWEEN_NO_BLENDER45")
            and any(i.nodeid.startswith(BLENDER45_TEST) for i in items))


def pytest_collection_modifyitems(config, items):
    last = [i for i in items if i.nodeid.startswith(BLENDER45_TEST)]
    if last:
        items[:] = [i for i in items if not i.nodeid.startswith(BLENDER45_TEST)] + last


def _blender45_started():
    """The background Blender 4.5 run, started on the first call."""
    if "run" not in _blender45:
        import blender45
        _blender45["run"] = blender45.Background(["-q"])
    return _blender45["run"]


def pytest_collection_finish(session):
    if _blender45_wanted(session.items) and not session.config.option.collectonly:
        _blender45_started()


def pytest_sessionfinish(session, exitstatus):
    run = _blender45.pop("run", None)
    if run is not None:
        run.stop()  # (a run no test waited for: -x stopped the suite first)


@pytest.fixture(scope="session")
def blender45_run():
    """The background Blender 4.5 run (started here if collection did not start it)."""
    return _blender45_started()


@pytest.fixture(scope="session")
def example_clips():
    from backend.formats.bvh import read_bvh
    return [read_bvh(p) for p in EXAMPLES]


def _tiny(tmp_path_factory, clip, family, task):
    from backend.models.registry import build_model
    from backend.models.spline_transformer import ModelConfig
    from backend.motion.features import Normalizer, detect_layout
    from backend.runtime import checkpoint
    from training.features import to_features
    layout = detect_layout(clip.positions.std(0).max(-1), clip.skeleton.channels)
    feat, _ = to_features(torch.from_numpy(clip.rotations).float(), torch.from_numpy(clip.positions).float(), layout)
    cfg = ModelConfig(input_dim=layout.dim, output_dim=layout.dim, family=family, width=32, heads=4, layers=1, latent=8)
    torch.manual_seed(0)
    model = build_model(cfg)
    path = tmp_path_factory.mktemp("ckpt") / f"tiny_{task}"
    c = checkpoint.Checkpoint(cfg, clip.skeleton, layout, Normalizer.fit(feat), {}, {"task": task,
                      "config": {"min_window": 8}}, window=16)
    return checkpoint.save(path, c, model)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, example_clips):
    """A small untrained-but-real autoencoder checkpoint (random weights, real statistics) for I/O tests."""
    return _tiny(tmp_path_factory, example_clips[0], "spline", "autoencoder")


@pytest.fixture(scope="session")
def tiny_inbetween(tmp_path_factory, example_clips):
    """A small keyframe-model checkpoint (random weights): exercises keys, segments and errors."""
    return _tiny(tmp_path_factory, example_clips[0], "keyframe", "inbetween")


def shipped_checkpoint():
    from backend.motion.engine import DEFAULT_CHECKPOINT
    return DEFAULT_CHECKPOINT if DEFAULT_CHECKPOINT.exists() else None
