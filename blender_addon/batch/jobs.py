"""One file's work in a worker: dispatch by file type and command, publish the output safely, mark it done.

A file succeeds or fails as a whole: its output is written only when every chosen object went
through (objects that cannot take part -- another rig, no animation, nothing selected -- are
skipped with a warning), first to a temporary file that is renamed into place, then the done
marker.  The per-file entry returned here is what the JSON report lists.
"""
from __future__ import annotations

import os
import time
import traceback
from pathlib import Path

from .. import bridge
from . import safe_io
from .errors import JobError

ADDON = __package__.rsplit(".", 1)[0]  # "blender_addon" (source tree) or the extension's folder name


class State:
    """What a worker keeps between files.  The add-on is enabled in the worker (its operators'
    code, the latent-controls properties and handlers, its preferences), and its preferences are
    set from the command line, so every file goes through exactly the code behind the buttons;
    the models stay loaded in the backend's own caches (``backend.service`` in-process, or the
    warm backend process)."""

    def __init__(self, settings: dict):
        import addon_utils
        import bpy
        self.settings = settings
        if ADDON not in bpy.context.preferences.addons:
            addon_utils.enable(ADDON, default_set=True)
        prefs = bpy.context.preferences.addons[ADDON].preferences
        prefs.backend_mode = settings.get("mode", "AUTO")
        prefs.device = settings.get("device", "auto")
        prefs.interpreter = settings.get("interpreter", "")
        prefs.timeout = min(3600.0, float(settings.get("timeout", 600.0)))
        command = settings.get("command")
        chosen = {"encode": "autoencoder", "edit": "autoencoder", "mesh-inbetween": "mesh_inbetween",
                  "mesh-encode": "mesh_autoencoder"}.get(command, "checkpoint")
        for name in ("checkpoint", "autoencoder", "mesh_inbetween", "mesh_autoencoder"):
            setattr(prefs, name, settings.get("checkpoint", "") if name == chosen else "")
        self.prefs = prefs
        from .. import preferences
        self.backend = preferences.settings()  # in-betweening checkpoint, device, backend mode
        self.autoencoder = preferences.autoencoder_path()  # encode and edit


def in_process(state: State) -> bool:
    """Whether the model runs in this worker's Python (else in a backend process)."""
    try:
        return bridge.resolve_mode(state.backend) == "IN_PROCESS"
    except bridge.BridgeError:
        return False


def preload(state: State, which: str | None) -> str:
    """Load the model the command needs now, so that every file finds it warm; -> a status line (an
    error here is only reported: each file then fails with its own message)."""
    try:
        if which == "inbetween":
            return bridge.check(state.backend)
        if which == "autoencoder":
            from . import backend_direct
            return backend_direct.preload(state)
        if which in ("mesh_inbetween", "mesh_autoencoder"):
            from . import job_mesh
            return job_mesh.preload(state, which[len("mesh_"):])
    except (bridge.BridgeError, JobError, ValueError, OSError) as e:
        return f"not loaded: {e}"
    return "no model needed"


def new_entry(job: dict) -> dict:
    return {"input": job["source"], "output": job.get("output"), "file_type": job["file_type"], "status": "running",
            "objects": [], "gaps": 0, "frames_written": 0, "seconds": 0.0, "warnings": [], "errors": []}


def failed_entry(job: dict, error: str) -> dict:
    entry = new_entry(job)
    entry.update(status="failed", errors=[error], output=None)
    return entry


def _handler(file_type: str, command: str):
    if command.startswith("mesh-"):
        if file_type != "blend":
            raise JobError(f"a .{file_type} file holds no mesh: the mesh commands take .blend files")
        from . import job_mesh
        return getattr(job_mesh, command[len("mesh-"):])
    if file_type == "blend":
        from . import job_blend as mod
    else:
        from . import job_bvh as mod
    return getattr(mod, command)


def run(job: dict, state: State, progress) -> dict:
    t0 = time.perf_counter()
    entry = new_entry(job)
    source = Path(job["source"])
    try:
        input_stamp = safe_io.stamp(source)
        writer = _handler(job["file_type"], job["command"])(job, state, entry, progress)
        if writer is not None and not entry["errors"]:
            _publish(job, writer, entry)
    except JobError as e:
        entry["errors"].append(str(e))
    except bridge.BridgeError as e:
        entry["errors"].append(f"the backend failed: {e}")
    except OSError as e:
        entry["errors"].append(f"{e.filename or source}: {e.strerror or e}")
    except Exception as e:  # a bug or an unforeseen file: this file fails, the batch goes on
        traceback.print_exc()
        entry["errors"].append(f"unexpected {type(e).__name__}: {e}")
    entry["status"] = "failed" if entry["errors"] else "ok"
    if entry["errors"] or not job.get("output") or not Path(job["output"]).exists():
        entry["output"] = None
    done = [o for o in entry["objects"] if o.get("status") == "ok"] if entry["output"] else []
    entry["frames_written"] = sum(o.get("frames_written", 0) for o in done)  # what the output file holds
    entry["gaps"] = sum(o.get("gaps", 0) for o in done)
    entry["seconds"] = round(time.perf_counter() - t0, 3)
    entry["worker"] = os.getpid()
    if entry["status"] == "ok" and entry["output"]:
        try:
            safe_io.write_marker(Path(entry["output"]), None if job.get("in_place") else input_stamp,
                                 job["digest"], entry)
        except OSError as e:
            entry["warnings"].append(f"the done marker could not be written ({e.strerror}); a re-run redoes this file")
    return entry


def _publish(job: dict, writer, entry: dict) -> None:
    dest = Path(job["output"])
    safe_io.remove_stale_temps(dest)
    if job.get("in_place") and dest == Path(job["source"]) and dest.exists():
        backup, made = safe_io.make_backup(dest)
        entry["backup"] = str(backup)
        if backup != safe_io.backup_path(dest):
            entry["warnings"].append(f"{safe_io.backup_path(dest)} already held another version of the file (kept as "
                                     f"it is); this run's backup of it is {backup}")
        elif not made:
            entry["warnings"].append(f"{backup} already held this very file (an earlier run stopped after copying "
                                     "it); it is the backup")
    with safe_io.atomic_target(dest) as tmp:
        writer(tmp)
