#!/usr/bin/env bash
# The generalisation protocol's numbers for docs/results.md (In-betweening, Autoencoder): every checkpoint in the familiar
# and unfamiliar columns (training.evaluate), each report next to its baselines from the same run.
#   scripts/eval_generalisation.sh [SPLIT]        (test by default; val to choose designs)
# Needs the two archives (DATA: BVH folders or .tar.xz, comma-separated) and writes docs/eval/*.
# LEAVE_OUT_IB / LEAVE_OUT_AE: checkpoints trained with --leave_out=protocol (runs/fs2_lo: scripts/train_inbetween.sh with --leave_out=protocol; runs/ae_lo).
set -euo pipefail
cd "$(dirname "$0")/.."
split=${1:-test}
py=${PYTHON:-.venv/bin/python}
data=${DATA:-../shared/data/bandai-namco-2.tar.xz,../shared/data/bandai-namco-1-part.tar.xz}
cache=${CACHE:-.cache}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} BLENDER_USER_RESOURCES=${BLENDER_USER_RESOURCES:-$(mktemp -d)}
ev() {  # NAME CHECKPOINT [extra args]
  local name=$1 ckpt=$2
  shift 2
  [ -e "$ckpt" ] || { echo "skip $name: $ckpt missing" >&2; return 0; }
  $py -m training.evaluate "$ckpt" --data "$data" --cache "$cache" --split "$split" --device cpu \
    --out "docs/eval/$name" "$@" > /dev/null
  echo "docs/eval/$name/eval-$split.md" >&2
}
ev inbetween-leave-out "${LEAVE_OUT_IB:-runs/fs2_lo/best.json}" --blender-baseline
ev inbetween backend/checkpoints/inbetween.json --blender-baseline
ev motion_autoencoder-leave-out "${LEAVE_OUT_AE:-runs/ae_lo/best.json}"
ev motion_autoencoder-linear-code "${LINEAR_CODE:-runs/ae_linear/final.json}"
ev motion_autoencoder backend/checkpoints/motion_autoencoder.json
# the checkpoints shipped before this protocol (dataset-2 only, no augmentation, absolute loss), if kept
ev inbetween-previous "${PREVIOUS_IB:-runs/previous/inbetween.json}"
ev motion_autoencoder-previous "${PREVIOUS_AE:-runs/previous/motion_autoencoder.json}"
