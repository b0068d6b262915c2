#!/usr/bin/env bash
# Turn a finished training run into a shipped checkpoint: copy best.{json,safetensors} into
# backend/checkpoints/NAME, add principal directions (autoencoders), evaluate on the test
# split, write the model card NAME.md.
#   scripts/ship_checkpoint.sh RUN_DIR NAME DATA CACHE "exact training command"
set -euo pipefail
run=$1 name=$2 data=$3 cache=$4 command=$5
dst=backend/checkpoints/$name
py=${PYTHON:-.venv/bin/python}
cp "$run/best.safetensors" "$dst.safetensors"
$py - "$run/best.json" "$dst.json" "$name.safetensors" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1])); doc["weights"] = sys.argv[3]
json.dump(doc, open(sys.argv[2], "w"), indent=1)
PY
task=$($py -c "import json,sys; print(json.load(open('$dst.json'))['info']['task'])")
extra=()
if [ "$task" = autoencoder ]; then
  $py -m training.principal "$dst.json" --data "$data" --cache "$cache"
else
  extra=(--blender-baseline)
fi
BLENDER_USER_RESOURCES=$(mktemp -d) $py -m training.evaluate "$dst.json" --data "$data" --split test \
  --cache "$cache" --out "$run/eval" --device cpu "${extra[@]}"
twin=()
[ -n "${TWIN:-}" ] && twin=(--twin "$TWIN")  # TWIN=eval-test.json of the leave-out twin
$py -m training.model_card "$dst.json" "$run/eval/eval-test.json" --command "$command" "${twin[@]}"
$py -m training.plots curves "$run" --out "docs/$name-training.png" || true
