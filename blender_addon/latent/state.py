"""What the add-on keeps in memory for each latent range between changes: one object per range (by its
token), forgotten in one step (``forget``, called when the controls go).

Everything here is a cache: made again from the object when missing (a reload, an undo, another
range's turn), never the truth, which is ``Object.splinetween_latent``.  A value is kept with the key it
was made for (``memo``: the original's version, the range's length, the bones' rotation modes ...), so a
change of any of those makes it afresh; ``table`` holds the few caches with several live entries (seam
joins, per-segment maps), each bounded.
"""
from __future__ import annotations

from collections import OrderedDict

from . import decode

RANGES_MAX = 64  # ranges remembered at once (the least recently used goes first)


class Range:
    """One range's memory: per name the last value made and its key, plus bounded tables."""

    def __init__(self):
        self._memo: dict = {}
        self._tables: dict = {}
        self.seen = None  # ``armature.carry``: the driven curves as the layer last left them
        self.last_plan = None  # ``core.plan``: (raw, edits, bounds, signatures) of the last change

    def memo(self, name: str, key, make):
        """The value made for ``key`` under ``name``; ``make()`` when there is none or it was made for another key."""
        got = self._memo.get(name)
        if got is None or got[0] != key:
            got = self._memo[name] = (key, make())
        return got[1]

    def drop(self, name: str) -> None:
        self._memo.pop(name, None)

    def table(self, name: str, limit: int) -> "Table":
        got = self._tables.get(name)
        if got is None:
            got = self._tables[name] = Table(limit)
        return got


class Table(OrderedDict):
    """A dict that forgets its oldest entries past ``limit``."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        while len(self) > self.limit:
            self.popitem(last=False)


_ranges: OrderedDict = OrderedDict()


def of(st) -> Range:
    """The memory of the range ``st`` (a ``SplinetweenLatent``), made when missing."""
    got = _ranges.get(st.token)
    if got is None:
        got = _ranges[st.token] = Range()
        while len(_ranges) > RANGES_MAX:
            _ranges.popitem(last=False)
    return got


def forget(token: str) -> None:
    """Everything kept for the range ``token``: its memory and its decoded segments."""
    _ranges.pop(token, None)
    decode.forget(token)
