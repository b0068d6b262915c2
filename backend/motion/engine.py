"""The inference API: load a checkpoint once, then encode clips to control points and back.

Long clips are cut into segments of at most the training window that share their end
frames; decoded values at a shared frame are averaged, so seams stay continuous.
"""
from __future__ import annotations

from typing import overload

import numpy as np

from ..maths import timebase
from ..maths.splines import ease_weights
from ..runtime.checkpoint import DEFAULT_DIR
from ..runtime.engine_base import EngineBase, EngineError
from . import units
from .controls import Controls, group_by_length, segment_bounds
from .features_np import FeatureLayout, poses_from_features, sequence_origin, to_features
from .inbetween.fill import decode_inbetween, guard_weight, inbetween, keys_clip, still_as_trained
from .inbetween.guard import MAX_HIDDEN_GAP
from .mirror import Mirror
from .skeleton import Clip, Skeleton

DEFAULT_CHECKPOINT = DEFAULT_DIR / "motion_autoencoder.json"
DEFAULT_INBETWEEN = DEFAULT_DIR / "inbetween.json"


class Engine(EngineBase):
    WRONG_KIND = ("{name} is a mesh-sequence checkpoint; armatures and BVH need a motion checkpoint (mesh "
                  "checkpoints are used through backend.mesh.engine.MeshEngine)")

    def __init__(self, checkpoint=None, device: str = "auto", runtime: str = "torch"):
        super().__init__(checkpoint, DEFAULT_CHECKPOINT, device, runtime)
        layout, skeleton = self.ckpt.layout, self.ckpt.skeleton
        if layout is None or skeleton is None:  # (a mesh checkpoint, refused by the base)
            raise EngineError(self.WRONG_KIND.format(name=self.path.name))
        self.layout: FeatureLayout = layout
        self.skeleton: Skeleton = skeleton
        self.frame_time = timebase.model_frame_time(self.ckpt.info)  # clips at other rates are resampled to it
        # In-betweening: blend the model with the curves by how well it predicts hidden keys
        # (backend.motion.inbetween.guard); the weights of recent key sets are kept for slider re-decodes.
        self.guard = True
        self.guard_limit = MAX_HIDDEN_GAP  # longest doubled gap the guard hides keys in (frames)
        self.guard_cache: dict = {}  # key set -> the guard's weights per gap, the mirror correction
        # In-betweening: also fill the mirrored keys and average (backend.motion.mirror), where the checkpoint
        # trained with mirroring and stores its left/right map.
        self.mirror = Mirror.from_info(self.ckpt.info.get("mirror"), self.skeleton.parents)
        self.symmetric = self.mirror is not None
        # In-betweening: hold the feet the keys (or the fill) plant on the ground (backend.motion.inbetween.contacts).
        self.contacts = True

    # -- checks -------------------------------------------------------------------------
    def check_clip(self, clip: Clip, keys: list[int] | None = None):
        """Skeleton, length and finiteness; with ``keys`` only the key frames are looked at."""
        if not self.skeleton.same_hierarchy(clip.skeleton):
            raise EngineError(f"{clip.name}: skeleton does not match the checkpoint "
                              f"{self.path.name} ({self.skeleton.describe_mismatch(clip.skeleton)})")
        if keys is None and clip.num_frames < self.min_frames:
            raise EngineError(f"{clip.name}: {clip.num_frames} frames; the model needs at least "
                              f"{self.min_frames} (use a longer range)")
        frames = slice(None) if keys is None else keys
        bad = ~(np.isfinite(clip.rotations[frames]).all((-1, -2)) & np.isfinite(clip.positions[frames]).all((-1, -2)))
        if bad.any():
            where = np.arange(clip.num_frames)[frames][bad]
            raise EngineError(f"{clip.name}: NaN or infinite values in frame(s) {where[:5].tolist()}"
                              + (" (key poses)" if keys is not None else ""))

    @staticmethod
    def guard_key(keys, key_rotations, key_positions) -> bytes:
        """The key set's fingerprint in ``guard_cache`` (the guard's weight, the mirror correction)."""
        import hashlib
        h = hashlib.sha1(np.asarray(keys, dtype=np.int64).tobytes())
        for a in (key_rotations, key_positions):
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        return h.digest()

    def remember_guard(self, keys, clip: Clip, weights):
        if len(self.guard_cache) > 256:
            self.guard_cache.clear()
        self.guard_cache[self.guard_key(keys, clip.rotations[keys], clip.positions[keys])] = weights

    def guard_for(self, controls: "Controls", skeleton):
        """The guard's alpha for in-betweened ``controls``: what the fill used, recomputed
        from the stored key poses when this engine has not seen them (e.g. after a reload)."""
        if controls.keys is None:
            raise EngineError(f"{controls.name}: the guard is for in-betweened controls; these have no keys")
        key = self.guard_key(controls.keys, controls.key_rotations, controls.key_positions)
        if key not in self.guard_cache:
            self.guard_cache[key] = guard_weight(self, keys_clip(controls, skeleton), list(controls.keys))
        return self.guard_cache[key]

    def require(self, task: str):
        if self.task != task:
            raise EngineError(f"{self.path.name} is an {self.task} checkpoint; this needs an {task} checkpoint "
                              f"(pass --checkpoint with one)")

    # -- encode / decode ----------------------------------------------------------------
    def inbetween(self, clips, key_frames):
        """Fill every frame between keys: ``(clip, keys)`` -> ``(clip, controls)``; lists are batched."""
        self.require("inbetween")
        if isinstance(clips, Clip):
            return inbetween(self, [clips], [key_frames])[0]
        return inbetween(self, list(clips), list(key_frames))

    @overload
    def encode(self, clips: Clip) -> Controls: ...
    @overload
    def encode(self, clips: list[Clip]) -> list[Controls]: ...

    def encode(self, clips: Clip | list[Clip]) -> Controls | list[Controls]:
        self.require("autoencoder")
        single = isinstance(clips, Clip)
        given = [clips] if isinstance(clips, Clip) else list(clips)
        for c in given:
            self.check_clip(c)
        clips_cm = [units.in_centimetres(c, self.skeleton.offsets)[0] for c in given]  # controls: the model's cm
        jobs = []  # (clip index, segment index, start, end)
        segs = [segment_bounds(c.num_frames, self.ckpt.window) for c in clips_cm]
        for ci, s in enumerate(segs):
            jobs += [(ci, si, a, b) for si, (a, b) in enumerate(s)]
        points = {}
        origins = {}
        for _n, group in group_by_length(jobs).items():
            rot = np.stack([clips_cm[ci].rotations[a:b + 1] for ci, _, a, b in group]).astype(np.float32)
            pos = np.stack([clips_cm[ci].positions[a:b + 1] for ci, _, a, b in group]).astype(np.float32)
            origin = sequence_origin(pos, self.layout)
            cp = self.model.encode(self.norm(to_features(rot, pos, self.layout, origin)))
            for k, (ci, si, _, _) in enumerate(group):
                points[ci, si] = cp[k]
                origins[ci, si] = origin[k]
        out = [Controls(np.stack([points[ci, si] for si in range(len(s))]),
                        np.stack([origins[ci, si] for si in range(len(s))]), s,
                        clips_cm[ci].positions[0].copy(), clips_cm[ci].frame_time, clips_cm[ci].name)
               for ci, s in enumerate(segs)]
        return out[0] if single else out

    def decode_segments(self, points: np.ndarray, origins: np.ndarray, lengths: list[int],
                        scale: float = 1.0, timing: float = 0.0) -> list[tuple[np.ndarray, np.ndarray]]:
        """Decode segment control points to (features [m_i, D], origin [3]); ``scale`` > 1 super-samples
        (times ``scale`` frames), ``timing`` re-times where along the segment the motion happens (see
        ``edits.warp_times``).  The same pass as :meth:`decode_features` (one model call whatever the
        lengths), so a segment decodes to the same numbers here and through the service."""
        plans = [(n, int(round((n - 1) * scale)) + 1, timing) for n in lengths]
        if not plans:
            return []
        feats = np.split(self.decode_features(points, plans), np.cumsum([m for _, m, _ in plans])[:-1])
        return [(f, np.asarray(origins[i], dtype=np.float32)) for i, f in enumerate(feats)]

    def decode_features(self, points: np.ndarray, plans: list[tuple[int, int, float]]) -> np.ndarray:
        """The service's ``decode``: control points ``[B, K, d]`` -> the segments' features laid end to end
        ``[sum m_i, D]``, with ``plans[i] = (source frames, m_i, timing)`` (a slider change's segments of 31
        and 30 frames in one pass): each segment gets the numbers it gets alone (``TorchModel`` and
        ``runtime.OnnxModel`` both promise it)."""
        feat = self.model.decode_features(np.asarray(points, dtype=np.float32), plans)
        return still_as_trained(self, feat)

    def decode(self, controls: Controls, scale: float = 1.0, like: Clip | None = None, timing: float = 0.0,
               points: np.ndarray | None = None) -> Clip:
        """Control points -> a clip (of ``(F-1)*scale + 1`` frames); ``like`` lends skeleton and Euler hints.

        ``points`` replaces ``controls.points`` (edited control points); ``timing`` re-times.
        """
        if controls.keys is not None:
            return decode_inbetween(self, controls, points, int(round(scale)), timing, like)
        lengths = [b - a + 1 for a, b in controls.segments]
        pts = controls.points if points is None else points
        feats = self.decode_segments(pts, controls.origins, lengths, scale, timing)
        parts = [poses_from_features(feat, self.layout, origin, np.asarray(controls.template, dtype=np.float32),
                                     self.skeleton.num_joints) for feat, origin in feats]
        rot, pos = _join_segments(parts)
        skel = like.skeleton if like is not None else self.skeleton
        pos = pos / units.cm_per_unit(skel.offsets, self.skeleton.offsets)  # in ``like``'s units
        meta = {}
        if like is not None and scale == 1.0 and points is None and timing == 0.0 and "source_channels" in like.meta:
            meta["source_channels"] = like.meta["source_channels"]
        return Clip(skel, rot, pos, controls.frame_time / scale, controls.name, meta)

    def reconstruct(self, clips: list[Clip]) -> list[Clip]:
        """Encode and decode, each clip at the model's rate (``backend.maths.timebase``) and back on its own frames."""
        work = [timebase.to_model_rate(c, self.frame_time) for c in clips]
        return [timebase.to_clip_rate(self.decode(c, like=w), clip)
                for c, w, clip in zip(self.encode(work), work, clips, strict=True)]

    def styles(self):
        """The checkpoint's styles (``backend.runtime.checkpoint.StyleSet``: names, descriptions, directions), or None."""
        return self.ckpt.styles()

    def _described(self) -> dict:
        return {"joints": list(self.skeleton.names), "features": self.layout.to_json()}


def _join_segments(parts):
    """Concatenate decoded segments that share their end frames.

    The two sides of a seam rarely agree exactly; rather than stepping into their average at
    the shared frame, each side eases into it over a quarter of its length (smoothstep), so
    the seam has no jump in position or rotation.
    """
    from ..maths import quat_np
    rot = [r.copy() for r, _ in parts]
    pos = [p.copy() for _, p in parts]
    for i in range(len(parts) - 1):
        a_r, a_p, b_r, b_p = rot[i], pos[i], rot[i + 1], pos[i + 1]
        target_r = quat_np.slerp(a_r[-1], b_r[0], 0.5)
        target_p = 0.5 * (a_p[-1] + b_p[0])
        for r, p, end in ((a_r, a_p, -1), (b_r, b_p, 0)):
            n = max(1, len(r) // 4)
            w = ease_weights(n)  # 0 -> 1 towards the seam
            idx = np.arange(len(r) - n, len(r)) if end == -1 else np.arange(n)[::-1]
            delta_r = quat_np.mul(target_r, quat_np.inv(r[end]))  # rotation that takes this side's end onto the target
            delta_p = target_p - p[end]
            ident = np.broadcast_to(np.array([1.0, 0.0, 0.0, 0.0]), delta_r.shape)
            for k, f in enumerate(idx):
                r[f] = quat_np.mul(quat_np.slerp(ident, delta_r, w[k]), r[f])
                p[f] = p[f] + w[k] * delta_p
    out_r = [rot[0]] + [r[1:] for r in rot[1:]]
    out_p = [pos[0]] + [p[1:] for p in pos[1:]]
    return quat_np.fix_hemisphere(np.concatenate(out_r)), np.concatenate(out_p)
