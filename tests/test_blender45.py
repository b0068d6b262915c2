"""The add-on's Blender tests again under Blender 4.5 LTS (tests/blender45.py: its own .venv45, made
on the first run; the model in the backend process of this Python).  SPLINETWEEN_NO_BLENDER45=1
leaves it out of a quick local run.  It starts when collection ends and runs beside the rest of the suite
(tests/conftest.py); this test, put last, waits for it."""
from __future__ import annotations

import os
import re

import pytest

pytestmark = [pytest.mark.blender, pytest.mark.slow]


@pytest.mark.skipif(bool(os.environ.get("SPLINETWEEN_NO_BLENDER45")), reason="SPLINETWEEN_NO_BLENDER45 is set")
def test_the_addon_tests_pass_under_blender_4_5(blender45_run):
    code, out = blender45_run.wait(timeout=1800)
    tail = out[-12000:]
    assert code == 0, tail
    summary = [line for line in out.splitlines() if re.search(r"\d+ passed", line)]
    assert summary and not re.search(r"failed|error|skipped", summary[-1]), tail  # every selected test ran
