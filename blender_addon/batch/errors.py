"""The batch's one error: a file that cannot be processed (its own module, so the job modules and
the dispatcher in ``jobs`` need not import each other)."""
from __future__ import annotations


class JobError(Exception):
    """This file cannot be processed; the message says why (reported, the batch goes on)."""
