#!/usr/bin/env bash
# run_models.sh [DIR [MODELS]]: issue 6's model benchmark on a GPU machine, in one go (run from
# the repository root). DIR (default .cache/bench/carry) holds what the GPU machine cannot build
# (no Meson there): bnncc, bnnrun and capi_bench from a release build; MODELS (default
# .cache/bench/models) the models from bench/models.py, gzipped. Prepare both where Meson and
# torch 1.13 are: bash bench/prepare_carry.sh
# Logs and models.md under $OUT; the table prints last. Env: COMMIT (for the record), ONLY.
set -uo pipefail
dir=${1:-.cache/bench/carry}
models=${2:-.cache/bench/models}
OUT=${OUT:-/tmp/bnn_models}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
python3 bench/run_models.py --bin "$dir" --models "$models" --out "$OUT" --commit "${COMMIT:-?}" \
    ${ONLY:+--only "$ONLY"} 2>&1 | tee "$OUT/run_models.log"
