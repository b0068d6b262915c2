"""PC2/MDD caches: exact round trips, the header as specified, and clear refusals."""
from __future__ import annotations

import os
import struct

import numpy as np
import pytest

from backend.formats.pc2 import CacheError, read_cache, read_mdd, read_pc2, write_mdd, write_pc2


@pytest.fixture
def frames():
    rng = np.random.default_rng(0)
    return rng.normal(size=(5, 7, 3)).astype(np.float32)


def test_pc2_round_trip_is_bit_exact(tmp_path, frames):
    path = write_pc2(tmp_path / "a.pc2", frames, start=1.0, rate=0.5)
    out, start, rate = read_pc2(path)
    assert out.dtype == np.float32 and out.shape == (5, 7, 3)
    assert out.tobytes() == frames.tobytes()
    assert (start, rate) == (1.0, 0.5)
    assert sorted(tmp_path.iterdir()) == [path], "no temporary file left behind"


def test_pc2_header_bytes(tmp_path, frames):
    data = write_pc2(tmp_path / "a.pc2", frames, start=3.0, rate=2.0).read_bytes()
    assert data[:12] == b"POINTCACHE2\0"
    assert struct.unpack("<iiffi", data[12:32]) == (1, 7, 3.0, 2.0, 5)
    assert len(data) == 32 + 5 * 7 * 12
    assert data[32:36] == struct.pack("<f", frames[0, 0, 0])


def test_pc2_float64_input_is_stored_as_float32(tmp_path, frames):
    out, _, _ = read_pc2(write_pc2(tmp_path / "a.pc2", frames.astype(np.float64)))
    assert out.tobytes() == frames.tobytes()


def test_truncated_pc2_says_how_many_bytes(tmp_path, frames):
    path = write_pc2(tmp_path / "a.pc2", frames)
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(CacheError, match=f"needs {32 + 5 * 7 * 12} bytes") as e:
        read_pc2(path)
    assert "a.pc2" in str(e.value)


def test_wrong_signature_and_version(tmp_path, frames):
    data = write_pc2(tmp_path / "a.pc2", frames).read_bytes()
    bad = tmp_path / "b.pc2"
    bad.write_bytes(b"POINTCACHE3\0" + data[12:])
    with pytest.raises(CacheError, match="signature"):
        read_pc2(bad)
    bad.write_bytes(data[:12] + struct.pack("<i", 2) + data[16:])
    with pytest.raises(CacheError, match="version 2"):
        read_pc2(bad)


def test_garbage_and_missing_files(tmp_path):
    junk = tmp_path / "junk.pc2"
    junk.write_bytes(b"hello")
    with pytest.raises(CacheError, match="shorter than"):
        read_pc2(junk)
    junk.write_bytes(os.urandom(200))
    with pytest.raises(CacheError):
        read_pc2(junk)
    with pytest.raises(CacheError, match="no such file"):
        read_pc2(tmp_path / "missing.pc2")


def test_nan_is_refused_and_leaves_no_file(tmp_path, frames):
    frames[3, 2, 1] = np.nan
    path = tmp_path / "a.pc2"
    with pytest.raises(CacheError, match="frame 3"):
        write_pc2(path, frames)
    assert list(tmp_path.iterdir()) == []
    frames[3, 2, 1] = np.inf
    with pytest.raises(CacheError, match="frame 3"):
        write_mdd(tmp_path / "a.mdd", frames)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("shape", [(0, 4, 3), (3, 0, 3), (4, 3), (2, 4, 2)])
def test_bad_shapes_are_refused(tmp_path, shape):
    with pytest.raises(CacheError, match="frames|empty"):
        write_pc2(tmp_path / "a.pc2", np.zeros(shape, np.float32))
    assert list(tmp_path.iterdir()) == []


def test_unwritable_folder_is_named(tmp_path, frames):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as root: a read-only folder is still writable")
        with pytest.raises(CacheError, match="choose a writable folder") as e:
            write_pc2(folder / "a.pc2", frames)
        assert str(folder) in str(e.value)
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


def test_missing_folder_is_named(tmp_path, frames):
    with pytest.raises(CacheError, match="does not exist"):
        write_pc2(tmp_path / "nope" / "a.pc2", frames)


def test_mdd_round_trip_is_big_endian(tmp_path, frames):
    path = write_mdd(tmp_path / "a.mdd", frames, fps=25.0)
    data = path.read_bytes()
    assert struct.unpack(">ii", data[:8]) == (5, 7)
    assert struct.unpack(">f", data[12:16])[0] == pytest.approx(1 / 25)
    out, times = read_mdd(path)
    assert out.tobytes() == frames.tobytes()
    np.testing.assert_allclose(times, np.arange(5) / 25.0, rtol=1e-6)


def test_truncated_mdd(tmp_path, frames):
    path = write_mdd(tmp_path / "a.mdd", frames)
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(CacheError, match="truncated"):
        read_mdd(path)


def test_read_cache_dispatches_on_suffix(tmp_path, frames):
    assert read_cache(write_pc2(tmp_path / "a.PC2", frames)).tobytes() == frames.tobytes()
    assert read_cache(write_mdd(tmp_path / "a.Mdd", frames)).tobytes() == frames.tobytes()
    other = tmp_path / "a.abc"
    other.write_bytes(b"")
    with pytest.raises(CacheError, match=r"\.pc2, \.mdd"):
        read_cache(other)


def test_failed_write_leaves_no_file(tmp_path, frames):
    from backend.formats.atomic import temp_name
    temp_name(tmp_path / "a.pc2").mkdir()  # this process's temporary file cannot be opened, even as root
    with pytest.raises(CacheError, match="could not write"):
        write_pc2(tmp_path / "a.pc2", frames)
    assert not (tmp_path / "a.pc2").exists()


def test_read_header_reads_only_the_header(tmp_path):
    from backend.formats.pc2 import CacheError, read_header, write_mdd
    frames = np.zeros((7, 5, 3), np.float32)
    assert read_header(write_pc2(tmp_path / "a.PC2", frames)) == (7, 5)
    assert read_header(write_mdd(tmp_path / "a.mdd", frames)) == (7, 5)
    (tmp_path / "b.pc2").write_bytes(b"POINTCACHE3\0" + bytes(20))
    with pytest.raises(CacheError, match="not a PC2 file: signature"):
        read_header(tmp_path / "b.pc2")
    (tmp_path / "c.mdd").write_bytes(b"\0\0")
    with pytest.raises(CacheError, match="not an MDD file"):
        read_header(tmp_path / "c.mdd")


def test_two_processes_writing_one_cache_never_leave_half_of_one(tmp_path):
    """Two Blenders decoding into one PC2 at once (a shared cache folder): each write goes through its own
    temporary file, so every read sees one writer's whole cache and neither run fails."""
    import subprocess
    import sys
    path = tmp_path / "shared.pc2"
    code = ("import sys, numpy as np; from backend.formats.pc2 import write_pc2\n"
            "v = float(sys.argv[1])\n"
            "for _ in range(150): write_pc2(sys.argv[2], np.full((30, 500, 3), v, np.float32))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(v), str(path)], stderr=subprocess.PIPE)
             for v in (1.0, 2.0)]
    reads = 0
    while any(p.poll() is None for p in procs):
        if path.exists():
            frames, _, _ = read_pc2(path)
            assert frames.shape == (30, 500, 3) and len(np.unique(frames)) == 1, "a read saw two writers mixed"
            reads += 1
    assert [p.wait() for p in procs] == [0, 0], [p.stderr.read().decode() for p in procs]
    frames, _, _ = read_pc2(path)
    assert np.unique(frames).tolist() in ([1.0], [2.0])
    assert sorted(tmp_path.iterdir()) == [path], "a writer's temporary file was left behind"
