"""One decode job and one decode cache for both kinds of latent range (armatures and meshes).

A layer decodes each segment it needs twice: with the segment's inputs now (raw points and sliders)
and with the encoded ones (the neutral); the difference is the edit.  ``jobs`` makes those from the
plan's edits (the sliders read once per change, ``core.plan``), ``decoded`` answers them from the
cache (by range, segment and signature: a slider moved back decodes to the very same numbers) and one
backend request for the rest, through a kind's ``Request`` (its op, header fields and arrays, and how
its answer splits per segment).
"""
from __future__ import annotations

import itertools
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import bridge
from ..core.errors import Refusal

BYTES_MAX = 512 << 20  # decoded segments kept, all ranges together (a mesh segment is megabytes)


@dataclass(frozen=True)
class Job:
    """One segment decoded at one set of inputs; ``signature`` fingerprints them (``latent_math.signature``)."""
    segment: int
    signature: str
    points: np.ndarray  # [4, d]
    amplify: float
    timing: float
    principal: tuple
    frames: int  # output length
    style: tuple = ()  # ((name, strength),) or ()


@dataclass(frozen=True)
class Request:
    """How an object kind asks the backend: ``ask(st, jobs) -> (header, arrays)`` for the jobs to decode, and
    ``split(st, out, lengths) -> one value per job`` (refusing an unusable answer)."""
    ask: Callable
    split: Callable


_cache: OrderedDict = OrderedDict()  # (token, segment, signature) -> the object kind's decoded value (arrays)
_bytes = [0]


def _size(value) -> int:
    return sum(a.nbytes for a in value) if isinstance(value, tuple) else value.nbytes


def keep(token: str, segment: int, signature: str, value) -> None:
    key = (token, segment, signature)
    if key in _cache:
        _bytes[0] -= _size(_cache[key])
    _cache[key] = value
    _cache.move_to_end(key)
    _bytes[0] += _size(value)
    while _bytes[0] > BYTES_MAX and len(_cache) > 1:
        _, old = _cache.popitem(last=False)
        _bytes[0] -= _size(old)


def forget(token: str) -> None:
    for k in [k for k in _cache if k[0] == token]:
        _bytes[0] -= _size(_cache.pop(k))


def jobs(raw: np.ndarray, encoded: np.ndarray, bounds, sigs, nsigs, edits, need) -> list[Job]:
    """Each needed segment's two decodes: its inputs now (``raw``, the plan's ``edits``) and the encoded
    ones at neutral sliders."""
    out = []
    for s in sorted(need):
        amplify, timing, principal, style = edits[s]
        length = bounds[s][1] - bounds[s][0] + 1
        out.append(Job(s, sigs[s], raw[s], amplify, timing, tuple(principal), length, style))
        out.append(Job(s, nsigs[s], encoded[s], 1.0, 0.0, (0.0,) * len(principal), length))
    return out


def decoded(st, path, settings, todo_jobs: list[Job], request: Request) -> dict:
    """``{(segment, signature): value}`` for every job: from the cache, the rest in one backend request."""
    token = st.token
    todo = list({(j.segment, j.signature): j for j in todo_jobs
                 if (token, j.segment, j.signature) not in _cache}.values())
    if todo:
        header, arrays = request.ask(st, todo)
        header.update({"checkpoint": str(path), "segments": [[st.segments[j.segment].start, st.segments[j.segment].end]
                                                              for j in todo],
                       "lengths": [j.frames for j in todo], "amplify": [j.amplify for j in todo],
                       "timing": [j.timing for j in todo], "principal": [list(j.principal) for j in todo]})
        if any(j.style for j in todo):  # (one {name: strength} per segment; the backend keeps the root path and feet)
            header["style"] = [dict(j.style) for j in todo]
        arrays["points"] = np.stack([j.points for j in todo])
        try:
            _, out = bridge.request(settings, header, arrays)
        except bridge.BridgeError as e:
            raise Refusal(f"the backend failed, nothing was changed: {e}") from None
        for j, value in zip(todo, request.split(st, out, header["lengths"]), strict=True):
            keep(token, j.segment, j.signature, value)
    out = {}
    for j in todo_jobs:
        key = (token, j.segment, j.signature)
        _cache.move_to_end(key)
        out[j.segment, j.signature] = _cache[key]
    return out


def pieces(lengths) -> list[slice]:
    """Each job's rows in an answer that lays the segments one after the other."""
    at = list(itertools.accumulate(lengths, initial=0))
    return [slice(a, b) for a, b in zip(at, at[1:], strict=False)]
