"""Resumable training state as data: safetensors for tensors, JSON for everything else."""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from backend.formats.atomic import replacing, write_text


def _split(obj, prefix, tensors):
    """Replace tensors in a nested dict/list by {"$t": key} and collect them."""
    if isinstance(obj, torch.Tensor):
        key = prefix.strip(".")
        tensors[key] = obj.detach().cpu().contiguous()
        return {"$t": key}
    if isinstance(obj, dict):
        return {"$d": [[_split(k, f"{prefix}k{i}.", tensors), _split(v, f"{prefix}{i}.", tensors)]
                       for i, (k, v) in enumerate(obj.items())]}
    if isinstance(obj, (list, tuple)):
        return [_split(v, f"{prefix}{i}.", tensors) for i, v in enumerate(obj)]
    return obj


def join_tensors(obj, tensors):
    if isinstance(obj, dict) and "$t" in obj:
        return tensors[obj["$t"]]
    if isinstance(obj, dict) and "$d" in obj:
        return {join_tensors(k, tensors): join_tensors(v, tensors) for k, v in obj["$d"]}
    if isinstance(obj, list):
        return [join_tensors(v, tensors) for v in obj]
    return obj


def save_state(path: Path, state: dict):
    """``path``.safetensors holds the tensors *and* the JSON document (in its metadata), so the
    state is one atomic file: a kill between two renames cannot pair tensors of one step with
    the JSON of another.  ``path``.json is the same document, for reading by eye."""
    tensors = {}
    doc = json.dumps(_split(state, "", tensors))
    with replacing(path.with_suffix(".safetensors"), path.with_suffix(".safetensors.tmp")) as tmp:
        save_file(tensors, str(tmp), metadata={"state": doc})
    write_text(path.with_suffix(".json"), doc, path.with_suffix(".json.tmp"))


def load_state(path: Path) -> dict | None:
    j, w = path.with_suffix(".json"), path.with_suffix(".safetensors")
    if not w.exists():
        return None
    with safe_open(str(w), framework="pt") as f:
        doc = (f.metadata() or {}).get("state")
    if doc is None:  # written before the document moved into the weights file
        if not j.exists():
            return None
        doc = j.read_text()
    return join_tensors(json.loads(doc), load_file(str(w)))
