"""The skeleton reading and conversion the add-on shares with the batch and training: ``backend.humanoid``
(numpy only), reached through the bridge (the bundled copy or the checkout's), so a rig and a file get one
answer (docs/architecture.md, *One conversion*).  Not in ``core/``: core leans on no door.

``bone_map`` (model joint -> bone: presets, names, structure), ``rest_pose`` (rest-pose differences),
``retarget`` (any rig <-> the model's convention in world space), ``hinges`` (knees and elbows on the model's
axes), ``axes`` (Blender's axes, units).
"""
from . import bridge

bone_map = bridge.numpy_module("humanoid.bone_map")
rest_pose = bridge.numpy_module("humanoid.rest_pose")
retarget = bridge.numpy_module("humanoid.retarget")
axes = bridge.numpy_module("humanoid.axes")
hinges = bridge.numpy_module("humanoid.hinges")
