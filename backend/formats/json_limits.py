"""The one way the add-on reads a JSON file a user chose (bone maps, checkpoints, batch reports and
markers, training runs): a size limit checked before anything is read, UTF-8, UTF-16 or UTF-32
text (with or without a byte-order mark, as JSON allows), and a nesting limit, so a hostile or
broken file ends in a ``JsonLimitError`` that names the problem, never in a ``RecursionError`` or
gigabytes of memory.  Standard library only: the add-on reaches it through ``bridge.numpy_module`` (bone maps,
checkpoints, the batch's markers, training runs).
"""
from __future__ import annotations

import errno
import json
import os
import stat

MAX_DEPTH = 64  # the add-on's own files nest at most 6 deep
MAX_BYTES = 256 << 20  # a checkpoint's JSON holds its skeleton and a few statistics, not weights


class JsonLimitError(ValueError):
    """Not readable as the JSON the add-on expects: ``"<what> is <problem>"``; ``problem`` alone
    reads after "is" (for callers that name the file their own way)."""

    def __init__(self, what: str, problem: str):
        super().__init__(f"{what} is {problem}")
        self.problem = problem


def _depth_ok(doc, max_depth: int) -> bool:
    """Whether no container nests deeper than ``max_depth`` (a walk with its own stack, no recursion)."""
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if items is None:
            continue
        if depth > max_depth:
            return False
        stack.extend((v, depth + 1) for v in items if isinstance(v, (dict, list)))
    return True


def loads(data: bytes | str, what: str = "the file", max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH):
    """``data`` (bytes in any of JSON's encodings, or text) -> the parsed document, within the limits."""
    if len(data) > max_bytes:
        raise JsonLimitError(what, f"{len(data):,} bytes, more than the {max_bytes:,} this reads")
    try:
        doc = json.loads(data)  # (bytes: UTF-8, -16 or -32 detected, with or without a byte-order mark)
    except RecursionError:
        raise JsonLimitError(what, f"nested deeper than {max_depth} levels") from None
    except UnicodeDecodeError as e:
        raise JsonLimitError(what, f"not UTF-8, UTF-16 or UTF-32 text ({e.reason} at byte {e.start}); "
                             "save it as UTF-8") from None
    except ValueError as e:
        raise JsonLimitError(what, f"not JSON ({e})") from None
    if not _depth_ok(doc, max_depth):
        raise JsonLimitError(what, f"nested deeper than {max_depth} levels")
    return doc


def read(path, what: str | None = None, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH):
    """The JSON file at ``path`` within the limits (its size checked before it is read); an
    ``OSError`` when it cannot be read at all (missing, a folder, no permission)."""
    path = os.fspath(path)
    what = what or os.path.basename(path)
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "a folder, not a file", path)
    if not stat.S_ISREG(mode):  # a FIFO would block the reader until someone writes to it
        raise JsonLimitError(what, "not a regular file (a pipe, device or socket); choose a .json file")
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise JsonLimitError(what, f"{size:,} bytes, more than the {max_bytes:,} this reads")
        data = f.read(max_bytes + 1)
    return loads(data, what, max_bytes, max_depth)
