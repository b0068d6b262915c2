"""Any humanoid skeleton -> the model's: found by structure (names a hint), converted through
world-space bone directions.  numpy only (no torch, no bpy: an import contract in pyproject.toml),
so the add-on (through ``blender_addon.bridge.numpy_module``), the batch and training share it.

* ``bone_map``: model joint -> bone, presets by name, then the structure (``structure``).
* ``rest_pose``: the rest-pose difference of a rig against the model's standing reference.
* ``retarget``: rig channels <-> the model's local rotations and positions through a map.
* ``bvh_rig``: a BVH skeleton as a rig, and a whole clip converted (``to_model``).
"""
