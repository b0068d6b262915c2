"""Style as a latent edit: a checkpoint's style directions added to the control points, content kept.

A style's direction (``training.style``: per content, the style's mean encoded control points minus
*normal*'s, averaged over contents) is added ``strength`` times to every segment's points: 0 is the
motion as it is, bit for bit; 1 the style as performed in the data; beyond 1 exaggerates, negative moves
away; several styles add up.  A style changes how, not what, so the styled decode keeps the source's:

* **root path** (``pin_root``, on by default): the pelvis's ground-plane path is the unstyled decode's
  (its height is the style's: an elderly walk is lower); off, the style may change the speed;
* **foot contacts** (``contacts``): the frames where the unstyled decode has a foot planted are held
  planted in the styled one (``inbetween.contacts.plant_feet``, two-bone leg IK), so the steps land when
  and where the source's do.

numpy only; ``engine`` is a ``backend.motion.engine.Engine`` (anything with ``decode``, ``skeleton``,
``layout`` and ``styles``); a style set is ``backend.runtime.checkpoint.StyleSet``.
"""
from __future__ import annotations

import numpy as np

from ..maths import quat_np
from .inbetween import contacts as contact_pass


class StyleError(ValueError):
    pass


def no_styles_message(checkpoint_name: str) -> str:
    return (f"{checkpoint_name} has no style directions; compute them with python -m training.style --checkpoint "
            f"{checkpoint_name} --data <bandai-namco-2/bvh>, or use a checkpoint that has them (the shipped "
            f"motion_autoencoder.json does)")


def checked_strengths(styles, strengths: dict, checkpoint_name: str = "the checkpoint") -> dict:
    """``{name: strength}`` checked against the checkpoint's styles: an unknown name is refused naming the
    known ones; a checkpoint without styles is refused saying so (even at strength 0: the request is wrong)."""
    if not strengths:
        return {}
    if styles is None:
        raise StyleError(no_styles_message(checkpoint_name))
    out: dict[str, float] = {}
    for name, s in strengths.items():
        if name not in styles.names:
            raise StyleError(f"unknown style {name!r}; {checkpoint_name} knows: {', '.join(styles.names)}")
        s = float(s)
        if not np.isfinite(s):
            raise StyleError(f"style {name!r}: the strength must be a finite number (0 = as it is, 1 = the style), "
                             f"got {s}")
        out[name] = out.get(name, 0.0) + s
    return out


def style_points(points: np.ndarray, styles, strengths: dict) -> np.ndarray:
    """Control points ``[..., K, d]`` plus each style's direction times its strength; every strength 0 (or
    none): a copy of the input, exactly."""
    strengths = {k: v for k, v in strengths.items() if v != 0.0}
    if not strengths:
        return np.array(points, copy=True)
    delta = sum(float(s) * styles.directions[styles.names.index(n)] for n, s in strengths.items())
    return points + delta.astype(np.asarray(points).dtype, copy=False)


def pin_root(positions: np.ndarray, source: np.ndarray, joint: int, up: int) -> np.ndarray:
    """``positions [F, J, 3]`` with ``joint``'s ground-plane coordinates (every axis but ``up``) taken from
    ``source``: the same path over the ground, the style's own height."""
    out = np.array(positions, copy=True)
    ground = [a for a in range(3) if a != up]
    out[:, joint, ground] = source[:, joint, ground]
    return out


def source_contacts(skeleton, rot, pos, frame_time: float) -> np.ndarray | None:
    """[F, N] bool over ``contacts.foot_joints``: where the motion has a foot joint planted (the capture's
    reading, ``contacts.CAPTURE``), or None when the skeleton has no legs."""
    legs = contact_pass.find_legs(skeleton.names, skeleton.parents)
    if not legs:
        return None
    return contact_pass.capture_contacts(skeleton.parents, legs, rot, pos, [0, len(rot) - 1], frame_time)


def keep_contacts(skeleton, rot, pos, down: np.ndarray | None, frame_time: float) -> np.ndarray:
    """The styled rotations with the feet planted where ``down`` says (the source's contacts)."""
    if down is None or len(rot) < 3 or not down.any():
        return rot
    return contact_pass.plant_feet(skeleton.parents, skeleton.names, rot, pos, [0, len(rot) - 1], frame_time,
                                   down=down)


def styled_decode(engine, controls, points: np.ndarray, strengths: dict, *, scale: float = 1.0, timing: float = 0.0,
                  like=None, pin: bool = True, contacts: bool = True, styles=None):
    """Decode ``points`` (the controls' points after any other edit) with ``strengths`` of style added.
    No style (every strength 0): ``engine.decode`` of ``points`` as it is, bit for bit.  Otherwise the
    unstyled decode is the source whose root path (``pin``) and foot contacts (``contacts``) are kept.
    ``styles``: a ``StyleSet`` other than the checkpoint's (``training.studies.style_eval`` measures candidates)."""
    styles = engine.styles() if styles is None else styles
    strengths = checked_strengths(styles, strengths, engine.path.name)
    if not any(strengths.values()):
        return engine.decode(controls, scale=scale, like=like, timing=timing, points=points)
    styled_pts = style_points(points, styles, strengths)
    source = engine.decode(controls, scale=scale, like=like, timing=timing, points=points)
    out = engine.decode(controls, scale=scale, like=like, timing=timing, points=styled_pts)
    pos = out.positions
    if pin:
        for j in engine.layout.position_joints:
            pos = pin_root(pos, source.positions, int(j), engine.layout.up_axis)
    rot = out.rotations
    if contacts:
        down = source_contacts(out.skeleton, quat_np.normalize(source.rotations), source.positions, out.frame_time)
        rot = keep_contacts(out.skeleton, quat_np.normalize(rot), pos, down, out.frame_time)
    out.rotations, out.positions = rot, pos
    return out
