#!/usr/bin/env bash
# session_gpu.sh PART COMMIT: a session's GPU work in device calls of under 10 minutes each (run
# from the repository root on the GPU machine, with the carry of bench/prepare_carry.sh:
# .cache/bench/carry, buildslim, .data).
#   PART suite   every gpu test (bench/gpu_suite.py): tune_gpu, lowbit-mnist-gpu,
#                codegen_e2e_gpu (the stem models of 59ba488), the kernel suites
#   PART models  the bench models exported here (this machine's torch), then
#                bench/run_models.py --resident-only --tune: each model's resident time with the
#                cost model's tiles and with --tune=BATCH, against PyTorch fp16, in one table.
#                ONLY (default xnorresnet18,birealnet18) picks the models: about 2 minutes each.
#   PART verify  after a change to the generated kernels: the gpu tests TESTS names (default
#                codegen_e2e_gpu,w1a2-resnet-gpu,runtime_gpu,tune_gpu), then the ONLY models
#                (default w1a2resnet18,birealnet18) untuned against PyTorch fp16, then `ncu`
#                (clocks left alone) on the float stem conv of each at batch 64: its pipes and
#                issue slots, for docs/perf.md's bounds.
#   PART compare the blobs BLOBS names (paths in the checkout, e.g. the same model compiled at
#                two commits, carried in an ignored folder), timed in this one call so that
#                their times compare: `bnnrun --bench 50 --resident` at batches 256, 8 and 1,
#                the GPU outputs equal to the CPU path's at batch 8, `--profile 20` of each at
#                batch 256. Inputs: random normal of shape SHAPE (default 3,224,224) a item.
#   PART lowbit  bench/lowbit_planes_bench.sh: low-bit MLPs (4 x 4096, 2 x 8192) through
#                model.bin, planes and int8 (and OLD, another bnncc's planes, where set)
#                against PyTorch fp16 and int8 in one run; about 5 minutes.
# Logs under $OUT (default /tmp/session_gpu); the summary prints last.
set -uo pipefail
part=${1:?PART: suite, models, verify, compare or lowbit} commit=${2:-?}
OUT=${OUT:-/tmp/session_gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
m=/tmp/session_models
# The bench models named in $1 exported here (this machine's torch), into $m.
export_models() {
    mkdir -p "$m"
    local torch_models
    torch_models=$(echo "$1" | tr , '\n' | grep -v '^w1a2resnet18$' | paste -sd, -)
    [ -z "$torch_models" ] || python3 bench/models.py "$m" --only "$torch_models" > "$OUT/export.log" 2>&1
    case ",$1," in *,w1a2resnet18,*) python3 bench/qonnx_resnet.py "$m" --only w1a2resnet18 >> "$OUT/export.log" 2>&1 ;; esac
}
# The gpu tests (bench/gpu_suite.py) within $1 seconds, more of its options after; their table.
gpu_tests() {
    timeout "$1" python3 bench/gpu_suite.py --build buildslim --shared .data/shared "${@:2}" > "$OUT/gpu_suite.log" 2>&1
    echo "gpu_suite exit $?"
    sed -n '/^| test | result/,$p' "$OUT/gpu_suite.log"
}
case "$part" in
suite)
    gpu_tests 540
    ;;
models)
    only=${ONLY:-xnorresnet18,birealnet18}
    export_models "$only"
    timeout 540 python3 bench/run_models.py --bin .cache/bench/carry --models "$m" --out "$OUT" --resident-only \
        --tune --only "$only" --commit "$commit" > "$OUT/run_models.log" 2>&1
    echo "run_models exit $?"
    grep -E "tuned blob vs untuned|WRONG|FAILED|layers on another configuration" "$OUT/run_models.log" | head -20
    tail -20 "$OUT/run_models.log"
    ;;
verify)
    tests=${TESTS:-codegen_e2e_gpu,w1a2-resnet-gpu,runtime_gpu,tune_gpu}
    only=${ONLY:-w1a2resnet18,birealnet18}
    gpu_tests 240 --only "$tests"
    export_models "$only"
    timeout 300 python3 bench/run_models.py --bin .cache/bench/carry --models "$m" --out "$OUT" --resident-only \
        --only "$only" --commit "$commit" > "$OUT/run_models.log" 2>&1
    echo "run_models exit $?"
    grep -E "WRONG|FAILED" "$OUT/run_models.log" | head -20
    tail -12 "$OUT/run_models.log"
    python3 -c "import numpy as np; np.save('/tmp/x64.npy', np.random.default_rng(1).standard_normal((64, 3, 224, 224)).astype(np.float32))"
    for name in $(echo "$only" | tr , ' '); do
        .cache/bench/carry/bnncc "$m/$name.onnx" -O3 -o "/tmp/$name.bin" 2>/dev/null || continue
        timeout 120 ncu --clock-control none --kernel-name s0_conv2d --launch-count 1 \
            --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \
            --section Occupancy --section InstructionStats \
            .cache/bench/carry/bnnrun "/tmp/$name.bin" --device gpu --input /tmp/x64.npy --batch 64 --profile 1 \
            > "$OUT/ncu_$name.log" 2>&1
        echo "ncu $name exit $?"
        grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Executed Ipc Active|Issue Slots Busy|Issued Warp|No Eligible|Achieved Occupancy|Registers Per|Executed Instructions  |SM Busy" \
            "$OUT/ncu_$name.log" | head -16
    done
    ;;
compare)
    bnnrun=.cache/bench/carry/bnnrun
    python3 -c "
import numpy as np
shape = tuple(int(d) for d in '${SHAPE:-3,224,224}'.split(','))
r = np.random.default_rng(1)
for b in (1, 8, 256):
    np.save(f'/tmp/compare_x{b}.npy', r.standard_normal((b,) + shape).astype(np.float32))
" || exit 1
    for blob in ${BLOBS:?BLOBS: the blobs to compare}; do
        for b in 256 8 1; do
            echo "$blob batch $b: $($bnnrun "$blob" --device gpu --input /tmp/compare_x$b.npy --batch $b --bench 50 --resident 2>&1 | tail -1)"
        done
        $bnnrun "$blob" --device gpu --input /tmp/compare_x8.npy --batch 8 --output /tmp/compare_g.npy > /dev/null &&
            $bnnrun "$blob" --device cpu --input /tmp/compare_x8.npy --batch 8 --output /tmp/compare_c.npy > /dev/null &&
            python3 -c "
import numpy as np
g, c = np.load('/tmp/compare_g.npy'), np.load('/tmp/compare_c.npy')
print('$blob: GPU vs CPU path at batch 8:', 'equal' if np.array_equal(g, c) else 'DIFFER, max |diff| %g' % abs(g - c).max())"
        $bnnrun "$blob" --device gpu --input /tmp/compare_x256.npy --batch 256 --profile 20 \
            > "$OUT/profile_$(basename "$blob").log" 2>&1
    done
    for blob in $BLOBS; do echo "== $blob"; sed -n '3,$p' "$OUT/profile_$(basename "$blob").log" | cut -c1-60; done
    ;;
lowbit)
    timeout 570 bash bench/lowbit_planes_bench.sh .cache/bench/carry ${OLD:-} 2>&1 | tail -70
    ;;
*)
    echo "session_gpu.sh: PART is suite, models, verify, compare or lowbit, not '$part'" >&2
    exit 2
    ;;
esac
