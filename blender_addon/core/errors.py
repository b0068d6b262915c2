"""The one refusal type the add-on shows its users, and the one way operators report it.

A ``Refusal`` says why nothing was done and what to do instead; it is raised before the first
write, so the scene is unchanged.  Operators run their work through ``run_reported``: the
message of success as INFO, a refusal as ERROR named by the operator's label.
"""
from __future__ import annotations


class Refusal(Exception):
    """Why nothing was done, for ``self.report({'ERROR'}, ...)`` or the panel's status line."""


def run_reported(op, work) -> set[str]:
    """Run ``work()`` for operator ``op``: report its message, or its refusal as an error."""
    try:
        message = work()
    except Refusal as e:
        op.report({"ERROR"}, f"{op.bl_label}: {e}")
        return {"CANCELLED"}
    op.report({"INFO"}, message)
    return {"FINISHED"}
