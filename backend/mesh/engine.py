"""The inference API for mesh sequences: vertices -> basis coefficients -> latent splines -> vertices.

One checkpoint per mesh asset (same vertex count and order).  An autoencoder checkpoint
encodes a sequence into control points per segment (segments of at most the training
window, sharing end frames, eased together as for armatures) and decodes (edited) control
points back.  An in-between checkpoint encodes only key frames and decodes every frame as a
residual over the cubic-spline interpolation of the keys' coefficients; that correction is added
to the same spline through the key *vertices*, so keys come out exactly and what the basis misses
still moves smoothly between them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..motion.controls import group_by_length, segment_bounds
from ..motion.edits import warp_times
from ..motion.keyframes_np import compose_inbetween, interpolation_base, segments_on_keys, validate_keys
from ..runtime import checkpoint as ckpt_io
from ..runtime.engine_base import EngineBase, EngineError
from .sequences import MeshBasis, check_sequence, join_frames, project

DEFAULT_MESH = ckpt_io.DEFAULT_DIR / "cloth_autoencoder.json"
DEFAULT_MESH_INBETWEEN = ckpt_io.DEFAULT_DIR / "cloth_inbetween.json"


@dataclass
class MeshControls:
    """A mesh sequence's latent spline: control points per segment plus what decoding needs."""
    points: np.ndarray  # [S, K, d]
    segments: list[tuple[int, int]]  # inclusive frame ranges sharing end frames
    name: str = ""
    keys: list[int] | None = None  # in-betweening: key frames (sequence-relative) ...
    key_frames: np.ndarray | None = None  # ... and their vertices [len(keys), V, 3]

    @property
    def num_frames(self) -> int:
        return self.segments[-1][1] + 1


def basis_from(ex: dict) -> MeshBasis:
    """The basis from a checkpoint's extra tensors (components may be stored in half precision)."""
    def f32(x):
        return np.array(x, dtype=np.float32)
    return MeshBasis(f32(ex["basis.mean"]), f32(ex["basis.components"]),
                     f32(ex["basis.variance"]) if "basis.variance" in ex
                     else np.ones(ex["basis.components"].shape[0], np.float32))


class MeshEngine(EngineBase):
    MESH = True
    WRONG_KIND = ("{name} is a motion (armature) checkpoint; mesh sequences need a mesh checkpoint (train one "
                  "with python -m training.train mesh)")

    def __init__(self, checkpoint=None, device: str = "auto", runtime: str = "torch"):
        super().__init__(checkpoint, DEFAULT_MESH, device, runtime)
        self.basis = basis_from(self.ckpt.extra)
        self._comps = np.ascontiguousarray(self.basis.components, dtype=np.float32)
        self._mean = self.basis.mean.reshape(-1).astype(np.float32)

    @property
    def num_vertices(self) -> int:
        return self.basis.num_vertices

    def require(self, task: str):
        if self.task != task:
            raise EngineError(f"{self.path.name} is a mesh {self.task} checkpoint; this needs a mesh {task} "
                              "checkpoint")

    def _vertices(self, coeffs: np.ndarray) -> np.ndarray:
        """Coefficients [G, m, K] -> flattened vertices [G, m, 3V], one product per segment: a segment's
        vertices are the same numbers whatever segments are beside it (numpy's BLAS rounds a row by the
        rows around it; the add-on caches decodes per segment)."""
        return np.stack([c @ self._comps + self._mean for c in np.asarray(coeffs, dtype=np.float32)])

    # -- autoencoder ----------------------------------------------------------------------
    def encode(self, frames: np.ndarray, name: str = "") -> MeshControls:
        self.require("autoencoder")
        frames = check_sequence(frames, self.num_vertices, name or "mesh sequence", self.min_frames)
        coeffs = np.asarray(project(frames, self.basis), dtype=np.float32)
        segs = segment_bounds(len(frames), self.window)
        points: dict[int, np.ndarray] = {}  # segment -> its control points
        for _, group in group_by_length([(i, i, a, b) for i, (a, b) in enumerate(segs)]).items():
            x = np.stack([coeffs[a:b + 1] for _, _, a, b in group])
            cp = self.model.encode(self.norm(x))
            for k, (i, _, _, _) in enumerate(group):
                points[i] = cp[k]
        return MeshControls(np.stack([points[i] for i in range(len(segs))]), segs, name)

    def decode(self, controls: MeshControls, scale: float = 1.0, timing: float = 0.0,
               points: np.ndarray | None = None, amplify: float = 1.0, segment: int | None = None) -> np.ndarray:
        """(Edited) control points -> vertices [(F-1)*scale + 1, V, 3] float32.

        ``scale`` super-samples (the in-between model takes whole factors), ``timing`` re-times
        the latent spline (see ``edits.warp_times``), ``points`` replaces ``controls.points``.
        In-between controls only: ``amplify`` also scales the linear path's correction (the learned
        motion between the keys departs that much more or less from the spline; the points carry the
        transformer's part), and ``segment`` decodes that segment alone (its frames only) while the
        spline and the linear path still see every key.
        """
        pts = controls.points if points is None else np.asarray(points)
        if controls.keys is not None:
            return self._decode_keyed(controls, pts, max(1, int(round(scale))), timing, amplify, segment)
        self.require("autoencoder")
        return join_frames(self.segment_frames(pts, [b - a + 1 for a, b in controls.segments], scale, timing))

    def segment_frames(self, points: np.ndarray, lengths: list[int], scale: float = 1.0,
                       timing: float = 0.0) -> list[np.ndarray]:
        """Each segment's own decode ``[m_i, V, 3]`` (before the seams are joined): control points
        ``[S, K, d]`` of segments of ``lengths`` source frames, ``m_i = (n_i - 1) * scale + 1`` frames.
        Segments of one source length and one output length are batched; the ALiBi distances are in
        the segment's own source frames (two lengths may shrink to one output length)."""
        parts: dict[int, np.ndarray] = {}  # segment -> its frames
        alike: dict = {}  # (source frames, output frames) -> segment indices
        for i, n in enumerate(lengths):
            alike.setdefault((n, int(round((n - 1) * scale)) + 1), []).append(i)
        for (n, m), idx in alike.items():
            feat = self.model.decode_features(np.asarray(points)[idx], [(n, m, timing)] * len(idx))
            flat = self._vertices(feat.reshape(len(idx), m, -1))
            for k, i in enumerate(idx):
                parts[i] = flat[k].reshape(m, -1, 3)
        return [parts[i] for i in range(len(lengths))]

    def reconstruct(self, frames: np.ndarray) -> np.ndarray:
        return self.decode(self.encode(frames))

    # -- in-betweening --------------------------------------------------------------------
    def inbetween(self, frames: np.ndarray, keys, name: str = "") -> tuple[np.ndarray, MeshControls]:
        """Fill every frame between ``keys`` (only key frames of ``frames`` are read) -> (vertices, controls)."""
        self.require("inbetween")
        label = name or "mesh sequence"
        arr = np.asarray(frames)
        if arr.ndim == 3 and arr.shape[0] == 0:
            check_sequence(arr, self.num_vertices, label)
        try:
            keys = validate_keys(keys, arr.shape[0] if arr.ndim == 3 else 0, self.window - 1)
        except ValueError as e:
            raise EngineError(f"{label}: {e}") from None
        arr = check_sequence(arr, self.num_vertices, label, frames_to_check=keys)
        segs = segments_on_keys(keys, self.window)
        key_frames = arr[keys].copy()
        key_coeffs = project(key_frames, self.basis)
        pos_of = {k: i for i, k in enumerate(keys)}
        points: dict[int, np.ndarray] = {}  # segment -> its control points
        for _m, group in group_by_length([(i, i, a, b) for i, (a, b) in enumerate(segs)]).items():
            mask, keyed = self._keyed_inputs([(a, b) for _, _, a, b in group], keys, key_coeffs, pos_of, 1)
            cp = self.model.encode_keys(self.norm(keyed), mask)
            for k, (i, _, _, _) in enumerate(group):
                points[i] = cp[k]
        controls = MeshControls(np.stack([points[i] for i in range(len(segs))]), segs, name, list(keys), key_frames)
        decoded = self._decode_keyed(controls, controls.points, 1, 0.0)
        out = arr.astype(np.float32)  # frames before the first key and after the last: as they went in
        out[keys[0]:keys[-1] + 1] = decoded[keys[0]:]
        return out, controls

    def _keyed_inputs(self, spans, keys, key_coeffs, pos_of, s):
        """Masks [B, m] and key coefficients on the (s-times denser) frame grid [B, m, K]."""
        m = (spans[0][1] - spans[0][0]) * s + 1
        mask = np.zeros((len(spans), m), dtype=bool)
        keyed = np.zeros((len(spans), m, key_coeffs.shape[-1]), dtype=np.float32)
        for g, (a, b) in enumerate(spans):
            inside = [k for k in keys if a <= k <= b]
            at = [(k - a) * s for k in inside]
            mask[g, at] = True
            keyed[g, at] = key_coeffs[[pos_of[k] for k in inside]]
        return mask, keyed

    def _decode_keyed(self, controls: MeshControls, pts: np.ndarray, s: int, timing: float, amplify: float = 1.0,
                      segment: int | None = None) -> np.ndarray:
        """The one decoder for in-between controls: base + correction -> vertices, snapped onto the keys.

        The interpolation base (of the key coefficients and of the key vertices) and the model's
        linear path run over the whole sequence at once, so the gaps next to a segment's ends see
        the keys beyond it; the transformer adds its residual segment by segment.
        """
        self.require("inbetween")
        key_frames = controls.key_frames
        if controls.keys is None or key_frames is None:
            raise EngineError(f"{controls.name or 'mesh sequence'}: these controls are not in-between controls "
                              "(no keys)")
        keys = list(controls.keys)
        last = controls.num_frames - 1
        key_coeffs = project(key_frames, self.basis)
        pos_of = {k: i for i, k in enumerate(keys)}
        interp = interpolation_base(self.ckpt.config.base)
        mask_all, keyed_all = self._keyed_inputs([(0, last)], keys, key_coeffs, pos_of, s)
        base_all = self.norm(interp(keyed_all, mask_all))[0]
        key_v = np.zeros((1, last * s + 1, self._mean.shape[0]), dtype=np.float32)
        key_v[0, [k * s for k in keys]] = key_frames.reshape(len(keys), -1)
        base_v = interp(key_v, mask_all)[0]  # the same spline through the key vertices
        corr_all = None
        if self.ckpt.config.linear_path:
            corr_all = amplify * self.model.regression(self.norm(keyed_all), base_all[None], mask_all,
                                                       np.arange(last * s + 1, dtype=np.float32) / s)[0]
        out = np.empty((last * s + 1, self.num_vertices, 3), np.float32)
        out[:keys[0] * s] = key_frames[0]  # before the first key no segment decodes: its pose held
        chosen = range(len(controls.segments)) if segment is None else [segment]
        for m, group in group_by_length([(i, i, a * s, b * s) for i, (a, b) in enumerate(controls.segments)
                                    if i in chosen]).items():
            rows = [slice(a * s, b * s + 1) for a, b in (controls.segments[i] for i, _, _, _ in group)]
            base_n = np.stack([base_all[r] for r in rows])
            mask = np.stack([mask_all[0, r] for r in rows])
            uniform = np.linspace(0.0, 1.0, m) if m > 1 else np.zeros(1)
            times = warp_times(uniform, timing).astype(np.float32)
            positions = (uniform * (m - 1) / s).astype(np.float32)
            cp = np.asarray(pts[[i for i, _, _, _ in group]], dtype=np.float32)
            pred = self.model.decode_keys(cp, base_n, mask, times, positions,
                                          correction=None if corr_all is None else np.stack([corr_all[r] for r in rows]))
            flat = compose_inbetween(self._vertices(self.norm.inverse(pred)), self._vertices(self.norm.inverse(base_n)),
                                     np.stack([key_v[0, r] for r in rows]), mask,
                                     base_v=np.stack([base_v[r] for r in rows]))
            for g, r in enumerate(rows):
                out[r] = flat[g].reshape(m, -1, 3)
        out[[k * s for k in keys]] = key_frames  # keys bit for bit as given
        if segment is not None:
            a, b = controls.segments[segment]
            return out[a * s:b * s + 1]
        return out

    def _described(self) -> dict:
        return {"asset": self.ckpt.asset}
