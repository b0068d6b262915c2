"""Where a checkpoint's files are: the one resolver (standard library only, so the add-on reaches it
through ``bridge.numpy_module`` and the ONNX path imports no torch).

A checkpoint is ``NAME.json``, the weights its ``"weights"`` names (``NAME.safetensors`` when it names
none), the graphs ``NAME.<call>.onnx`` (``python -m backend export``) and, for a mesh asset, the shared
basis its ``"asset.basis"`` names.  A set copied under a new name (``my_walks.*``) still names the old
weights; when that file is not there and ``my_walks.safetensors`` is, that one is taken (the graphs'
digest, ``onnx_runner.inspect``, then says whether it holds the weights they were exported from).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CALLS = ("encode", "decode")  # the model's calls, one exported graph each


@dataclass(frozen=True)
class CheckpointFiles:
    config: Path
    weights: Path  # the file that exists, or the name the JSON gives when none does
    graphs: dict  # call -> NAME.<call>.onnx
    basis: Path | None = None  # a mesh asset's shared vertex basis
    named: str = ""  # the weights' name in the JSON (differs from ``weights.name`` for a renamed set)

    def all(self) -> tuple[Path, ...]:
        """Every file of the checkpoint, the config first (cache keys, what to copy along)."""
        return (self.config, self.weights) + ((self.basis,) if self.basis else ()) + tuple(self.graphs.values())

    def missing_weights(self) -> str:
        """What is wrong when the weights are not there ("" when they are), to follow their path: the
        names looked for and the fix."""
        if self.weights.is_file():
            return ""
        own = self.config.with_suffix(".safetensors").name
        nor = f", nor {own}" if own != self.named else ""
        return (f'weights file not found next to the config {self.config.name} (its "weights" names {self.named}'
                f'{nor}): copy it along, or write the name of its weights file in "weights"')


def resolve(json_path, doc: dict) -> CheckpointFiles:
    """The files of the checkpoint whose config is ``json_path`` (parsed: ``doc``); only names and stats."""
    jpath = Path(json_path).with_suffix(".json")
    own = jpath.with_suffix(".safetensors")
    named = doc.get("weights") if isinstance(doc, dict) else None
    named = Path(named).name if isinstance(named, str) and named else own.name  # (a name, never a path)
    weights = jpath.with_name(named)
    if not weights.is_file() and own.is_file():  # a set copied under the JSON's new name
        weights = own
    asset = doc.get("asset") if isinstance(doc, dict) else None
    basis = asset.get("basis") if isinstance(asset, dict) else None
    return CheckpointFiles(jpath, weights, {c: jpath.with_name(f"{jpath.stem}.{c}.onnx") for c in CALLS},
                           jpath.with_name(Path(basis).name) if isinstance(basis, str) and basis else None, named)
