"""Starting the backend process from a button without freezing Blender.

An operator that asks the backend mixes in :class:`StartsBackend`: clicked in the UI while the request
would first have to start the backend process (mode Backend Process, or Auto without exported graphs),
it starts the process on a thread, shows the seconds waited in the status bar, lets Esc cancel, and
runs its ``execute`` once the process has answered its handshake.  Run without a window (scripts, the
batch), ``execute`` starts the process itself, bounded by the same Start-up Allowance.
"""
from __future__ import annotations

import threading

import bpy

from . import bridge, preferences
from .core.errors import Refusal


class _Start:
    """The backend process's start on a thread: ``elapsed`` for the clock, ``cancel`` for Esc, ``error``
    (the message) when it failed.  The thread never touches bpy."""

    def __init__(self, settings: bridge.BackendSettings):
        self.elapsed = 0.0
        self.error = ""
        self.cancelled = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(settings,), daemon=True,
                                       name="splinetween-backend-start")
        self.thread.start()

    def _run(self, settings: bridge.BackendSettings) -> None:
        try:
            bridge.start(settings, self._waiting)
        except bridge.BridgeError as e:
            self.error = str(e)

    def _waiting(self, elapsed: float) -> None:
        self.elapsed = elapsed
        if self.cancelled.is_set():
            raise bridge.StartCancelled(f"the start was cancelled after {elapsed:.0f} s")

    def done(self) -> bool:
        return not self.thread.is_alive()


def status_line(elapsed: float, allowance: float) -> str:
    return (f"Splinetween: starting the backend process... {elapsed:.0f} s of {allowance:.0f} s "
            "(Esc to cancel)")


class StartsBackend:
    """Mixin for an operator whose ``execute`` sends a request (see the module's docstring)."""

    def backend_checkpoint(self, context: bpy.types.Context):
        """The checkpoint the request names (it decides the mode under Auto); None: the in-betweening one."""
        return None

    def invoke(self, context: bpy.types.Context, event) -> set[str]:
        return self.start_backend_then_execute(context)

    def start_backend_then_execute(self, context: bpy.types.Context) -> set[str]:
        if getattr(context, "window", None) is None:  # no window (a script, the batch): execute waits itself
            return self.execute(context)
        settings = preferences.settings(context)
        try:
            needed = bridge.needs_start(settings, self.backend_checkpoint(context))
        except (Refusal, ValueError, OSError):
            needed = False  # execute reports what is wrong with the settings or the checkpoint
        if not needed:
            return self.execute(context)
        self._backend_start = _Start(settings)
        self._allowance = bridge.startup_allowance(settings)
        wm = context.window_manager
        self._backend_timer = wm.event_timer_add(bridge.WAIT_SLICE, window=context.window)
        wm.modal_handler_add(self)
        context.workspace.status_text_set(status_line(0.0, self._allowance))
        return {"RUNNING_MODAL"}

    def modal(self, context: bpy.types.Context, event) -> set[str]:
        start = self._backend_start
        if event.type == "ESC" and event.value == "PRESS":
            start.cancelled.set()
            return {"RUNNING_MODAL"}
        if not start.done():
            if event.type == "TIMER":
                context.workspace.status_text_set(status_line(start.elapsed, self._allowance))
            return {"PASS_THROUGH"}
        context.window_manager.event_timer_remove(self._backend_timer)
        context.workspace.status_text_set(None)
        if start.error:
            self.report({"WARNING"} if start.cancelled.is_set() else {"ERROR"}, f"Splinetween: {start.error}")
            return {"CANCELLED"}
        return self.execute(context)
