"""The one refusal type the add-on shows its users, and the one way operators report it.

A ``Refusal`` says why nothing was done and what to do instead; it is raised before the first
write, so the scene is unchanged.  Operators run their work through ``run_reported``: the
message of success as INFO, a refusal as ERROR named by the operator's label, and anything
unforeseen (a bug, a file no check foresaw) as ERROR too, with its type and the place it was raised
(the full traceback goes to the system console): never a traceback dialog into the UI.
"""
from __future__ import annotations

import sys
import traceback


class Refusal(Exception):
    """Why nothing was done, for ``self.report({'ERROR'}, ...)`` or the panel's status line."""


def run_reported(op, work) -> set[str]:
    """Run ``work()`` for operator ``op``: report its message, or its refusal as an error."""
    try:
        message = work()
    except Refusal as e:
        op.report({"ERROR"}, f"{op.bl_label}: {e}")
        return {"CANCELLED"}
    except Exception as e:  # a bug or an unforeseen input: a message, and the details on the console
        traceback.print_exc(file=sys.stderr)
        op.report({"ERROR"}, unexpected(op.bl_label, e))
        return {"CANCELLED"}
    op.report({"INFO"}, message)
    return {"FINISHED"}


def unexpected(label: str, e: BaseException) -> str:
    """The message for an error no check foresaw: what it is, where it was raised, what to do."""
    where = traceback.extract_tb(e.__traceback__)[-1:] if e.__traceback__ else []
    at = f" (in {where[0].name}, {where[0].filename.replace(chr(92), '/').rsplit('/', 1)[-1]}:{where[0].lineno})" \
        if where else ""
    text = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
    return (f"{label}: unexpected {type(e).__name__}{': ' + text if text else ''}{at}; if anything was changed, "
            "Undo (Ctrl+Z) restores it; please report this with the console's output")
