#!/usr/bin/env bash
# The shipped in-betweener's recipe, stage by stage (each stage resumes where it stopped; a
# finished stage is skipped). Every stage picks its best checkpoint on the validation split.
#   scripts/train_inbetween.sh PREFIX [extra --key=value ...]
# e.g. scripts/train_inbetween.sh runs/lo --leave_out=protocol   (the leave-out twin)
# Stages 1-4 are the recipe shipped in session 4; stage 5 (longer, higher rate) was added in session 5.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$1; shift
py=${PYTHON:-.venv/bin/python}
data=${DATA:-../shared/data/bandai-namco-2.tar.xz,../shared/data/bandai-namco-1-part.tar.xz}
export OMP_NUM_THREADS=1
common=(--data="$data" --cache="${CACHE:-.cache}" --task=inbetween --base=hermite --min_window=8 --threads=1
        --val_every=500 --ckpt_every=250 "$@")
all_aug=(--augment_mirror=0.5 --augment_reverse=0.25 --augment_speed=0.5 --augment_mix=0.2)
stage() {  # NAME INIT args...
  local name=$1 init=$2; shift 2
  [ -e "${prefix}_$name/final.json" ] && return 0
  $py -m training.train --out="${prefix}_$name" ${init:+--init=$init} "${common[@]}" "$@"
}
stage 1 "" --steps=5000 --warmup=300 "${all_aug[@]}" --loss=relative
stage 2 "${prefix}_1/best.json" --steps=2000 --warmup=100 --lr=1e-4 "${all_aug[@]}" --loss=absolute
stage 3 "${prefix}_2/best.json" --steps=3000 --warmup=100 --lr=1e-4 --augment_mirror=0.5 --loss=absolute
stage 4 "${prefix}_3/best.json" --steps=4000 --warmup=100 --lr=7e-5 --augment_mirror=0.5 --loss=absolute
stage 5 "${prefix}_4/best.json" --steps=${STAGE5_STEPS:-12000} --warmup=200 --lr=2e-4 --augment_mirror=0.5 --loss=absolute
