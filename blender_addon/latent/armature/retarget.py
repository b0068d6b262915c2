"""The latent layer on a rig that is not the data set's skeleton (bones in between, another rest pose,
unmapped optional joints), through the bone map's conversion (``humanoid.retarget``), as Inbetween does.

A native rig (one bone per joint, the data set's rest posture) keeps the cached 4x4 maps of
``slider_math``.  Any other rig takes this straightforward path: the original is read in the model's
convention through the conversion (the driven channels from the layer's original values, every other
bone the conversion reads, bones in between and above, from its curves), moved there by
decode(edited) - decode(encoded) (``layer_math.compose``), and converted back with the conversion's
inverse, the bones in between at their own animation.  Unmapped joints have no bone: nothing is written
for them.  A range keeps its joint -> bone map (``joint_bones``, "" where unmapped).
"""
from __future__ import annotations

import hashlib

import numpy as np

from ... import bridge
from ...core import layer_math, slider_math
from ...core.errors import Refusal
from ...humanoid import retarget
from ...io import bone_map as bone_map_io
from ...io import keys as keys_io
from ...io import latent as latent_io
from ...io import scene as scene_io
from .. import state


def is_mapped(st) -> bool:
    """Whether the range was encoded through a conversion other than the native one."""
    return "joint_bones" in st


def conversion(obj, st, path) -> retarget.Retarget:
    """The conversion of the range's stored joint -> bone map (cached by ``io.bone_map.conversion``)."""
    try:
        info = bridge.describe(bridge.BackendSettings(checkpoint=str(path)))
    except bridge.BridgeError as e:
        raise Refusal(str(e)) from None
    joint_bones = [b or None for b in st["joint_bones"]]
    if len(joint_bones) != len(info.names):
        raise Refusal(f"{path.name} has {len(info.names)} joints, the range was encoded with {len(joint_bones)}; "
                      "Bake or Remove the latent controls")
    return bone_map_io.conversion(obj, info, joint_bones)


def model_pose(obj, bag, rt: retarget.Retarget, channels, bones, values, frames, groups=None):
    """The rig at scene ``frames`` in the model's convention: ``(rot [F, J, 4], pos [F, J, 3], basis, loc)``
    with ``basis``/``loc [F, B, ...]`` every bone the conversion reads; the driven channels (``channels``
    of ``bones``) take ``values [F, C]``, the other bones their curves."""
    groups = groups or latent_io.channel_groups(channels, bones)
    basis, loc = scene_io.read_pose(obj, bag, rt.bones, np.asarray(frames, dtype=np.float64))
    j_basis, j_loc = latent_io.values_to_pose(channels, bones, values, groups)
    at = {b: i for i, b in enumerate(rt.bones)}
    for is_loc, _, joints, _ in groups:
        idx = [at[bones[j]] for j in joints]
        if is_loc:
            loc[:, idx] = j_loc[:, joints]
        else:
            basis[:, idx] = j_basis[:, joints]
    rot, pos = rt.to_model(basis, loc)
    return rot, pos, basis, loc


def _others(obj, rt, channels) -> bytes:
    """A fingerprint of the curves the conversion reads besides the layer's own channels (bones in
    between and above, other channels of the mapped bones, their rotation modes): their curves edited
    after Encode count at the next slider change (an unmapped root's turn turns the hips' displacement)."""
    own = {(scene_io.bone_path(b, p), i) for b, p, i, _ in channels}
    read = set(rt.bones)
    digest = hashlib.blake2b(repr([obj.pose.bones[b].rotation_mode for b in rt.bones]).encode(), digest_size=16)
    bag = scene_io.channelbag(obj)
    for fc in bag.fcurves:
        path = fc.data_path
        if path.startswith('pose.bones["') and path.split('"')[1] in read and (path, fc.array_index) not in own:
            co = keys_io.read(fc, ("co",))["co"]
            for part in (path.encode(), bytes([fc.array_index % 256]), co.tobytes()):
                digest.update(part)
    return digest.digest()


def _view(obj, st, rt, channels, base):
    key = (st.base_version, st.frames, tuple(c[3] for c in channels), id(rt), _others(obj, rt, channels))

    def make():  # the original in the model's convention (``state``, per range)
        bones = list(st["bones"])
        groups = latent_io.channel_groups(channels, bones)
        frames = st.frame_start + np.arange(st.frames)
        rot, pos, basis, loc = model_pose(obj, scene_io.channelbag(obj), rt, channels, bones, base, frames, groups)
        joint = {b: j for j, b in enumerate(st["joint_bones"]) if b}
        return groups, [joint[b] for b in bones], rot, pos, basis, loc
    return state.of(st).memo("retarget view", key, make)


def layer_values(obj, st, path, channels, base, order, e_rot, e_pos, n_rot, n_pos) -> np.ndarray:
    """Channel values ``[n, C]`` at the relative frames ``order``: the original moved by the edit in the
    model's convention (``e``: the edited decode, ``n``: the encoded one, ``[n, J, ...]``), back on the rig."""
    rt = conversion(obj, st, path)
    groups, joint_of, o_rot, o_pos, basis, loc = _view(obj, st, rt, channels, base)
    rot, pos = layer_math.compose(o_rot[order], o_pos[order], n_rot, n_pos, e_rot, e_pos)
    inner = bool(rt.inner_bones())
    r_basis, r_loc = rt.to_rig(rot, pos, basis[order] if inner else None, loc[order] if inner else None)
    ref = base[order]
    out = np.empty_like(ref)
    for is_loc, mode, joints, cols in groups:
        js = [joint_of[j] for j in joints]
        if is_loc:
            out[:, cols] = r_loc[:, js]
        else:
            out[:, cols] = slider_math.channels_near(r_basis[:, js], mode, ref[:, cols])
    return out
