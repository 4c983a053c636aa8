#!/bin/sh
# device_run.sh COMMIT: what one call on a Hopper GPU machine does for the bit-GEMM work, in
# one go: the GPU's state, the SASS of both pre-tiled kernels (BMMA / BGMMA present, no local
# memory), the exactness suite test_tiled_gpu --bench, bench/bgemm_bench.py, then
# compute-sanitizer memcheck over the suite's small cases with the time left. The suite is
# built where Meson is (`ninja -C build-perf && mkdir -p .cache/perf &&
# cp build-perf/tests/codegen/test_tiled_gpu .cache/perf/`) and carried in .cache/perf, since
# the GPU machine has no Meson. Logs under $OUT; the benchmark's table prints last.
# Env: BENCH_ARGS (extra bgemm_bench.py options, e.g. "--configs 8x4,4x8").
set -u
OUT=${OUT:-/tmp/bgemm_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PATH="$PATH:/usr/local/cuda/bin"
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
K=codegen/cuda/kernels
for f in bgemm_tiled bgemm_wgmma; do
    nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -cubin -DBT_N=8192 -DBT_K=8192 -DBW_N=8192 -DBW_K=8192 \
        -DBT_EPI=2 -DBW_EPI=2 -o "$OUT/$f.cubin" "$K/$f.cu" &&
        cuobjdump -sass "$OUT/$f.cubin" > "$OUT/$f.sass" &&
        printf '%s: %s BMMA, %s BGMMA, %s UBLKCP, %s LDL/STL\n' $f "$(grep -c 'BMMA' "$OUT/$f.sass")" \
            "$(grep -c 'BGMMA' "$OUT/$f.sass")" "$(grep -c 'UBLKCP' "$OUT/$f.sass")" "$(grep -cE 'LDL|STL' "$OUT/$f.sass")"
    rm -f "$OUT/$f.cubin"
done
TEST=.cache/perf/test_tiled_gpu
timeout 90 $TEST --bench > "$OUT/test_tiled_gpu.log" 2>&1
echo "test_tiled_gpu exit $?"
grep -E "CHECK failed|checks passed|checks failed|8192x8192|NO " "$OUT/test_tiled_gpu.log" | head -30
timeout 150 python3 bench/bgemm_bench.py --commit "${1:-?}" --md "$OUT/bgemm.md" ${BENCH_ARGS:-} > "$OUT/bench.log" 2>&1
echo "bgemm_bench exit $?"
left=$((270 - ($(date +%s) - start)))
if [ $left -gt 30 ]; then
    timeout $left compute-sanitizer --tool memcheck --print-limit 5 $TEST --small > "$OUT/memcheck.log" 2>&1
    echo "memcheck (--small, ${left}s budget) exit $?: $(grep -E 'ERROR SUMMARY|checks passed|checks failed' "$OUT/memcheck.log" | tr '\n' ' ')"
fi
tail -100 "$OUT/bench.log"
