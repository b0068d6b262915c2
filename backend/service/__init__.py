"""``python -m backend.service``: the backend as a long-lived process, for the Blender add-on.

Blender's own Python usually has no PyTorch, so the add-on starts this module with an
interpreter that has it and talks to it over the process's stdin/stdout (no network port,
no pickle).  Every message, in both directions, is one frame::

    b"STW1" | header length (uint32, little-endian) | header (UTF-8 JSON) | raw array bytes

The header's ``"arrays"`` lists ``[name, dtype, shape]`` in the order the arrays' bytes follow
(C order, little-endian; dtypes float32, float64, int32, int64).  Requests carry ``"op"``:

* ``hello`` -> ``{"ok": true, "protocol", "version", "pid", "python", "torch"}``
* ``load`` ``{"checkpoint", "device"}`` -> ``{"ok": true, "device", "seconds"}`` (warm-up)
* ``inbetween`` ``{"checkpoint", "device", "keys", "frame_time"}`` + arrays ``offsets [J, 3]``,
  ``key_rotations [K, J, 4]``, ``key_positions [K, J, 3]`` -> arrays ``rotations [F, J, 4]``,
  ``positions [F, J, 3]`` with ``F = keys[-1] + 1`` (keys are 0-based and start at 0)
  and the latent spline: header ``segments``, arrays ``points [S, 4, d]``, ``origins [S, 3]``,
  ``template [J, 3]`` (the keys' frames and poses are the request's).  ``frame_time`` is the keys'
  seconds per frame: at another rate than the model's the keys are filled on the model's grid and read
  back on theirs (``backend.maths.timebase``), ``segments`` are in the request's frames and the header adds
  ``model_segments`` and ``model_keys`` (the same on the model's grid, for ``decode``)
* ``encode`` ``{"checkpoint", "device", "frame_time"}`` + arrays ``offsets [J, 3]``,
  ``rotations [F, J, 4]``, ``positions [F, J, 3]`` (an autoencoder checkpoint) -> header
  ``segments`` (inclusive, sharing end frames), ``principal_names``, ``principal_descriptions``
  (one sentence per direction; [] when the checkpoint has none), ``min_frames``; arrays
  ``points [S, 4, d]``, ``origins [S, 3]``, ``template [J, 3]``; at another ``frame_time`` than the
  model's the clip is encoded on the model's grid, ``segments`` are the request's frames and
  ``model_segments`` the model's
* ``decode`` ``{"checkpoint", "device", "task", "segments", "lengths", "amplify", "timing",
  "principal", "keys"}`` + arrays ``points [P, 4, d]``, ``origins [P, 3]``, ``template [J, 3]``
  (and ``key_rotations [K, J, 4]``, ``key_positions [K, J, 3]`` when ``keys`` is not null):
  each listed segment decoded on its own (``lengths``: output frames, more or fewer than the
  segment's to re-time it; edits as in ``backend.motion.edits``; with ``model_segments`` (and ``model_keys`` for
  in-betweened ones), as ``encode`` / ``inbetween`` answered them, each is decoded on the model's grid and
  read back over its ``lengths``) -> arrays ``rotations [sum, J, 4]``,
  ``positions [sum, J, 3]``, the parts one after the other
* ``mesh_encode``, ``mesh_inbetween``, ``mesh_decode``: mesh sequences (vertices ``[F, V, 3]``
  float32), described in backend/service/mesh.py
* ``shutdown`` -> ``{"ok": true}``, then the process exits

A failure is answered ``{"ok": false, "error": message, "type": exception class}`` and the
process keeps serving (a frame it cannot follow is answered, then the process ends).  Models are
loaded once per (checkpoint, device) and kept warm.  Only numpy is imported at module level;
torch comes with the first model.

The package: ``protocol`` (frames), ``engines`` (the engine cache), ``motion`` and ``mesh`` (the
work per kind), ``handlers`` (the dispatch table), ``process`` (the serving loop and ``main``).
"""
from __future__ import annotations

from .engines import get_engine, request_threads
from .handlers import HANDLERS, handle
from .motion import decode_parts, encode_clip, inbetween_keys, inbetween_with_controls
from .process import main, serve
from .protocol import MAGIC, PROTOCOL, ArraySpecError, ProtocolError, read_message, write_message

__all__ = ["HANDLERS", "MAGIC", "PROTOCOL", "ArraySpecError", "ProtocolError", "decode_parts", "encode_clip",
           "get_engine", "handle", "inbetween_keys", "inbetween_with_controls", "main", "read_message",
           "request_threads", "serve", "write_message"]
