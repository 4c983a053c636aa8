#!/usr/bin/env bash
# session_gpu.sh PART COMMIT: the GPU work docs/perf.md lists as "Not yet run on a GPU", in
# device calls of under 10 minutes each (run from the repository root on the GPU machine, with
# the carry of bench/prepare_carry.sh: .cache/bench/carry, buildslim, .data).
#   PART suite   every gpu test (bench/gpu_suite.py): tune_gpu, lowbit-mnist-gpu,
#                codegen_e2e_gpu (the stem models of 59ba488), the kernel suites
#   PART models  the bench models exported here (this machine's torch), then
#                bench/run_models.py --resident-only --tune: each model's resident time with the
#                cost model's tiles and with --tune=BATCH, against PyTorch fp16, in one table.
#                ONLY (default xnorresnet18,birealnet18) picks the models: about 2 minutes each.
# Logs under $OUT (default /tmp/session_gpu); the summary prints last.
set -uo pipefail
part=${1:?PART: suite or models} commit=${2:-?}
OUT=${OUT:-/tmp/session_gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
case "$part" in
suite)
    timeout 540 python3 bench/gpu_suite.py --build buildslim --shared .data/shared > "$OUT/gpu_suite.log" 2>&1
    echo "gpu_suite exit $?"
    sed -n '/^| test | result/,$p' "$OUT/gpu_suite.log"
    ;;
models)
    only=${ONLY:-xnorresnet18,birealnet18}
    m=/tmp/session_models
    mkdir -p "$m"
    torch_models=$(echo "$only" | tr , '\n' | grep -v '^w1a2resnet18$' | paste -sd, -)
    [ -z "$torch_models" ] || python3 bench/models.py "$m" --only "$torch_models" > "$OUT/export.log" 2>&1
    case ",$only," in *,w1a2resnet18,*) python3 bench/qonnx_resnet.py "$m" --only w1a2resnet18 >> "$OUT/export.log" 2>&1 ;; esac
    timeout 540 python3 bench/run_models.py --bin .cache/bench/carry --models "$m" --out "$OUT" --resident-only \
        --tune --only "$only" --commit "$commit" > "$OUT/run_models.log" 2>&1
    echo "run_models exit $?"
    grep -E "tuned blob vs untuned|WRONG|FAILED|layers on another configuration" "$OUT/run_models.log" | head -20
    tail -20 "$OUT/run_models.log"
    ;;
*)
    echo "session_gpu.sh: PART is suite or models, not '$part'" >&2
    exit 2
    ;;
esac
