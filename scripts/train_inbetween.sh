#!/usr/bin/env bash
# The shipped in-betweener's recipe (session 5), stage by stage; each stage resumes where it stopped
# and a finished stage is skipped. Every stage picks its best checkpoint on the validation split.
#   scripts/train_inbetween.sh PREFIX [extra --key=value ...]
# e.g. scripts/train_inbetween.sh runs/lo --leave_out=protocol   (the leave-out twin)
# Stage 1: from scratch, absolute loss, mirroring, 16000 steps at 3e-4 (about 1.5 h on one CPU thread);
# stage 2: 6000 steps at 1e-4 on windows of 32-61 frames. Runs store their mirror map (info.mirror),
# which turns on the in-betweener's mirror average.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$1; shift
py=${PYTHON:-.venv/bin/python}
data=${DATA:-../shared/data/bandai-namco-2.tar.xz,../shared/data/bandai-namco-1-part.tar.xz}
export OMP_NUM_THREADS=1
common=(--data="$data" --cache="${CACHE:-.cache}" --task=inbetween --base=hermite --threads=1
        --val_every=500 --ckpt_every=250 --augment_mirror=0.5 --loss=absolute "$@")
stage() {  # NAME INIT args...
  local name=$1 init=$2; shift 2
  [ -e "${prefix}_$name/final.json" ] && return 0
  $py -m training.train --out="${prefix}_$name" ${init:+--init=$init} "${common[@]}" "$@"
}
stage 1 "" --steps=16000 --warmup=500 --lr=3e-4 --min_window=8
stage 2 "${prefix}_1/best.json" --steps=6000 --warmup=100 --lr=1e-4 --min_window=32
