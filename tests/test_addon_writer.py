"""The Inbetween writer and the pose reader against their reference (tests/fixtures/writer_keys.npz,
made by tests/fixtures/make_writer_keys.py with the per-key writer before issue 19).

On the rig of tests/writer_cases.py (every rotation mode, Euler keys turns away from the principal
angles, model output spinning through several turns, dense keys in the gaps, a missing gap-end key,
a locked curve, a Noise modifier, a bone without location curves, random key attributes) and for
both key modes with Blend 1 and below 1, today's writer must write the keys the reference wrote:
every attribute of every key (values, handles, handle types, interpolation, key types, easing,
back / amplitude / period, selection) on every F-curve; the enums, selections and key counts exactly,
the float values within ULPS units in the last place of the curve's largest value.

Why not bit for bit: the reference was stored on one CPU, and numpy's trigonometric functions take
other SIMD paths on others (AVX-512 or not), which moves a float32 key by one ulp now and then
(a handle of 1.5530900955 on one machine is 1.5530899763 on another).  Held to numpy's AVX2 paths
(NPY_DISABLE_CPU_FEATURES, as .ci/run does in its older-ISA run) this file checks that case here.
"""
from __future__ import annotations

import numpy as np
import pytest

import writer_cases
from addon_helpers import disable_addon

pytestmark = pytest.mark.blender
ULPS = 4  # float rounding only: one CPU's SIMD math against another's, a few ulps at most (1 seen)


@pytest.fixture(scope="module")
def ref():
    data = dict(np.load(writer_cases.FIXTURE))
    yield data
    disable_addon()


def close(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Per element: equal, or (floats) within ULPS ulps of the largest magnitude in its column of ``want``."""
    if not np.issubdtype(want.dtype, np.floating):
        return got == want
    scale = np.abs(want).reshape(len(want), -1).max(0).reshape(want.shape[1:])
    return np.abs(got - want) <= ULPS * np.spacing(scale.astype(want.dtype))


def assert_same_curves(got: dict, want: dict, what: str) -> None:
    assert sorted(got) == sorted(want), f"{what}: other F-curves"
    for key in sorted(want):
        g, w = got[key], want[key]
        assert len(g["co"]) == len(w["co"]), f"{what}: {key} has {len(g['co'])} keys, the reference {len(w['co'])}"
        for attr in w:
            bad = np.flatnonzero(~np.all(close(g[attr], w[attr]).reshape(len(w["co"]), -1), -1))
            assert not bad.size, (f"{what}: {key} {attr} differs at frames {w['co'][bad, 0][:5]}: "
                                  f"{g[attr][bad][:3].tolist()} instead of {w[attr][bad][:3].tolist()}")


def test_the_rig_is_rebuilt_exactly(ref):
    """The starting point: the stored keys come back bit for bit (else nothing below would mean much)."""
    obj = writer_cases.build_rig(writer_cases.unpack(ref, "base"))
    got, want = writer_cases.curves_of(obj), writer_cases.unpack(ref, "base")
    assert sorted(got) == sorted(want)
    for key in want:  # set by foreach_set, read by foreach_get: no arithmetic, so exactly
        assert all(np.array_equal(got[key][a], want[key][a]) for a in want[key]), key
    assert [pb.rotation_mode for pb in (obj.pose.bones[b] for b in writer_cases.BONES)] == writer_cases.MODES


@pytest.mark.parametrize("scenario", list(writer_cases.SCENARIOS))
def test_the_writer_writes_the_reference_keys(ref, scenario):
    obj = writer_cases.build_rig(writer_cases.unpack(ref, "base"))
    written, skipped = writer_cases.run_scenario(obj, scenario, ref["out_basis"], ref["out_loc"])
    assert written == int(ref[f"{scenario}/written"])
    assert skipped == ref[f"{scenario}/skipped"].tolist()
    got, want = writer_cases.curves_of(obj), writer_cases.unpack(ref, scenario)
    assert_same_curves(got, want, scenario)
    base = writer_cases.unpack(ref, "base")
    changed = [k for k in want if k not in base or len(want[k]["co"]) != len(base[k]["co"])]
    assert len(changed) >= 30  # (the reference did write: every bone, its rotation and the position bones)


def test_the_reader_reads_the_reference_poses(ref):
    """read_pose on key frames (key values), on every frame and between frames (the curves evaluated)."""
    from blender_addon.io import scene as scene_io
    obj = writer_cases.build_rig(writer_cases.unpack(ref, "base"))
    bag = scene_io.channelbag(obj)
    dense = np.arange(1, writer_cases.FRAMES + 1)
    for name, frames in (("keys", writer_cases.KEYS), ("dense", dense), ("between", [1.5, 20.25, 40.75])):
        basis, loc = scene_io.read_pose(obj, bag, writer_cases.BONES, frames)
        assert np.all(close(basis.reshape(len(basis), -1), ref[f"read/{name}/basis"].reshape(len(basis), -1))), name
        assert np.all(close(loc.reshape(len(loc), -1), ref[f"read/{name}/loc"].reshape(len(loc), -1))), name
