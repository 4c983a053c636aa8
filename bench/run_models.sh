#!/usr/bin/env bash
# run_models.sh [DIR]: issue 6's model benchmark on a GPU machine, in one go (run from the
# repository root). DIR (default .cache/bench/carry) holds what the GPU machine cannot build
# (no Meson there): bnncc, bnnrun and capi_bench from a release build, and the models from
# bench/models.py, gzipped. Prepare it where Meson and torch 1.13 are:
#   meson setup build-bench -Dbuildtype=release && ninja -C build-bench
#   python3 bench/models.py .cache/bench     (torch; w1a2resnet18 needs only numpy and onnx:
#   python3 bench/qonnx_resnet.py .cache/bench --only w1a2resnet18)
#   cc -std=c11 -O2 -Wall -Wextra -Iruntime bench/capi_bench.c build-bench/runtime/libbnnrt.a \
#      -ldl -lm -o .cache/bench/capi_bench
#   mkdir -p .cache/bench/carry && cp build-bench/compiler/bnncc build-bench/runtime/bnnrun \
#      .cache/bench/capi_bench .cache/bench/carry/ && for m in birealnet18 xnorresnet18 vggsmall tfc w1a2resnet18;
#      do gzip -1 -c .cache/bench/$m.onnx > .cache/bench/carry/$m.onnx.gz; done
# Logs and models.md under $OUT; the table prints last. Env: COMMIT (for the record), ONLY.
set -uo pipefail
dir=${1:-.cache/bench/carry}
OUT=${OUT:-/tmp/bnn_models}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
python3 bench/run_models.py --bin "$dir" --models "$dir" --out "$OUT" --commit "${COMMIT:-?}" \
    ${ONLY:+--only "$ONLY"} 2>&1 | tee "$OUT/run_models.log"
