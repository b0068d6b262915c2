"""A batch run whose files each take at least DELAY seconds, for the tests that stop or race a run
part-way (tests/test_batch_resume.py, tests/test_batch_concurrency.py):
``python tests/slow_batch.py DELAY <the batch's arguments>``.

The coordinator is the real one (``blender_addon.batch.main``); it starts its workers through this
file (``--worker DELAY``), and each is the real worker (``batch.worker.main``) that sleeps DELAY seconds
before each file it is given.  The product has no test hook: the sleep is here.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parents[1]


def command(delay: float, *args) -> list[str]:
    """The command line of a batch run (``python -m blender_addon.batch`` ``args``) whose files each
    take at least ``delay`` seconds; run it in the repository's folder."""
    return [sys.executable, str(SCRIPT), str(delay), *map(str, args)]


def _worker(delay: float) -> int:
    from blender_addon.batch import jobs, worker
    run = jobs.run

    def slow_run(job, state, progress):
        time.sleep(delay)
        return run(job, state, progress)

    jobs.run = slow_run
    return worker.main()


def _coordinator(delay: float, argv: list[str]) -> int:
    from blender_addon import batch
    from blender_addon.batch import pool

    def slow_workers() -> list[str]:
        return [sys.executable, str(SCRIPT), "--worker", str(delay)]

    pool.worker_command = slow_workers
    return batch.main(argv)


if __name__ == "__main__":
    sys.path[0] = str(ROOT)  # the repository, not tests/: as ``-m`` in its folder has it
    if sys.argv[1] == "--worker":
        sys.exit(_worker(float(sys.argv[2])))
    sys.exit(_coordinator(float(sys.argv[1]), sys.argv[2:]))
