"""The add-on tests under Blender 4.5 LTS, as well as 5.0.1 (the main suite runs this through
tests/test_blender45.py; to run it alone):

    .venv/bin/python tests/blender45.py [PYTEST ARGS]     # e.g. -x, or tests/test_batch_mesh.py

The first run makes ``.venv45`` at the repository root: bpy 4.5, numpy and pytest, pinned in
tests/blender45-requirements.txt, and no PyTorch -- as in Blender 4.5's own Python.  The tests that
touch the Blender API (extension install, Inbetween, latent controls, mesh sequences, batch) then
run there with the model in the backend process of the Python that runs this script (this
repository's .venv, which has PyTorch), passed on as SPLINETWEEN_PYTHON.  Tests marked ``torch``
(they call the backend in the test's own Python) are left out.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv45"
REQUIREMENTS = ROOT / "tests" / "blender45-requirements.txt"
SELECT = "blender and not torch"
FILES = [f"tests/test_{name}.py" for name in (
    "build",
    "addon_operator", "addon_refusals", "addon_scene_io", "addon_ui", "addon_writer", "addon_keys",
    "addon_fps", "addon_constraints", "addon_contacts",
    "latent_encode", "latent_inbetween", "latent_lifecycle", "latent_refusals", "latent_ui", "latent_hand_edits",
    "addon_mesh_cloth", "addon_mesh_inbetween", "addon_mesh_io", "addon_mesh_latent", "addon_mesh_reader",
    "addon_mesh_refusals", "addon_mesh_ui",
    "batch", "batch_commands", "batch_resume", "batch_security", "batch_mesh", "batch_fps",
    "rig_inbetween", "rig_rest_pose", "rig_latent", "bone_map_ui", "batch_bone_map", "addon_skeleton_families",
    "batch_families", "import_acclaim",  # (not rig_other_tools: with bpy 4.5 a
    # Python that generated a Rigify rig never exits; the test passes there)
)]


def python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv() -> Path:
    """``.venv45`` with the pinned packages; made (or brought up to date) only when the pins changed."""
    stamp = VENV / "requirements.txt"
    wanted = REQUIREMENTS.read_text()
    if python().exists() and stamp.exists() and stamp.read_text() == wanted:
        return python()
    if not python().exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(python()), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)], check=True)
    stamp.write_text(wanted)
    return python()


def command(args=()) -> list[str]:
    """pytest on FILES, or on the test files and ids given in ``args``."""
    named = any(a.startswith("tests/") or a.endswith(".py") or "::" in a for a in args)
    files = [] if named else FILES
    return [str(ensure_venv()), "-m", "pytest", "-m", SELECT, "-p", "no:cacheprovider", *files, *args]


def environment(home: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.setdefault("OMP_NUM_THREADS", "1")
    env["BLENDER_USER_RESOURCES"] = home  # Blender 4.5's own configuration: not 5.0's, not the user's
    env["SPLINETWEEN_PYTHON"] = sys.executable  # the backend process: this Python, which has PyTorch
    return env


class Background:
    """This script run in a process of its own beside the rest of the suite (``tests/conftest.py`` starts it
    when collection ends and puts its test last): its output in a temporary file, read by :meth:`wait`."""

    def __init__(self, args=()):
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *args], cwd=ROOT,
                                     stdout=self.log, stderr=subprocess.STDOUT, text=True, start_new_session=True)

    def wait(self, timeout: float) -> tuple[int, str]:
        """(exit status, everything it printed); stopped and TimeoutExpired after ``timeout`` seconds."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        self.log.seek(0)
        return code, self.log.read()

    def stop(self) -> None:
        """Ends the run and whatever it started (pytest, Blender, backend processes) if still going."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)


def run(args=(), **kw) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="splinetween-blender45-") as home:
        return subprocess.run(command(args), cwd=ROOT, env=environment(home), **kw)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]).returncode)
