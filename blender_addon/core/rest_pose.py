"""The backend's ``humanoid.rest_pose`` under its add-on name: one skeleton reading and conversion for the
add-on, the batch and training (docs/architecture.md, *One conversion*).  numpy only, reached
through the bridge (the bundled copy or the checkout's), so this name is that very module.
"""
import sys

from .. import bridge

sys.modules[__name__] = bridge.numpy_module("humanoid.rest_pose")
