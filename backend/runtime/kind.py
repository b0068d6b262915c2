"""Which kind a checkpoint is (motion or mesh, in-betweener or autoencoder) and which of the
add-on's operators uses that kind (standard library only: the add-on reaches it through
``bridge.numpy_module``), so a checkpoint chosen in the wrong place is named for what
it is: "walk.json is a mesh autoencoder checkpoint (used by Encode Mesh, Preferences > Mesh
Autoencoder); Inbetween needs a motion in-betweening checkpoint (Preferences > Checkpoint)"."""
from __future__ import annotations

# kind -> (its name, the operators that use it, the preference that chooses it)
KINDS = {
    ("motion", "inbetween"): ("a motion in-betweening", "Inbetween", "Checkpoint"),
    ("motion", "autoencoder"): ("a motion autoencoder", "Encode and Inbetween (Editable)", "Autoencoder"),
    ("mesh", "inbetween"): ("a mesh in-betweening", "Inbetween Mesh", "Mesh Inbetween"),
    ("mesh", "autoencoder"): ("a mesh autoencoder", "Encode Mesh", "Mesh Autoencoder"),
}


def kind_of(doc) -> tuple[str, str] | None:
    """A checkpoint JSON document's (asset, task), None when it is not a Splinetween checkpoint."""
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        return None
    asset = "mesh" if (doc.get("asset") or {}).get("kind") == "mesh" else \
        "motion" if isinstance(doc.get("skeleton"), dict) else None
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    family = doc["model"].get("family", doc["model"].get("kind"))  # ("kind" in checkpoints made before the rename)
    task = info.get("task") or ("inbetween" if family == "keyframe" else None)
    if asset is None or (asset, task) not in KINDS:
        return None
    return asset, task


def refusal(name: str, have: tuple[str, str] | None, wanted: tuple[str, str], operator: str) -> str:
    """The refusal for checkpoint ``name`` of kind ``have`` (``kind_of``; None: not a checkpoint) chosen
    where ``wanted`` is needed by ``operator`` ("" when it is of the wanted kind)."""
    if have == wanted:
        return ""
    need, _, pref = KINDS[wanted]
    fix = f"choose {need} checkpoint in Preferences > Add-ons > Splinetween > {pref}"
    if have is None:
        return f"{name} is not a Splinetween checkpoint (no model, skeleton or mesh asset in it); {fix}"
    what, used_by, where = KINDS[have]
    return (f"{name} is {what} checkpoint (used by {used_by}, Preferences > {where}); {operator} needs "
            f"{need} one: {fix}")


def not_motion(name: str, doc) -> str:
    """The refusal for a checkpoint that is not a motion one where an armature's model is read ("" when
    it is a motion checkpoint)."""
    have = kind_of(doc)
    if have is not None and have[0] == "motion":
        return ""
    fix = ("an armature needs a motion checkpoint: Preferences > Add-ons > Splinetween > Checkpoint (Inbetween) "
           "or Autoencoder (Encode)")
    if have is None:
        return f"{name} is not a Splinetween checkpoint (no model, skeleton or mesh asset in it); {fix}"
    what, used_by, where = KINDS[have]
    return f"{name} is {what} checkpoint (used by {used_by}, Preferences > {where}); {fix}"
