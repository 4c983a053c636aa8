#!/bin/sh
# bconv_bench.sh [DIR]: the binary-convolution check and benchmark on a GPU machine, in one go
# (run from the repository root). DIR (default .cache/bconv) holds what the GPU machine cannot
# build (no Meson there), prepared where Meson is:
#   ninja -C build && mkdir -p .cache/bconv && cp build/tests/codegen/test_kernels_gpu \
#       build/runtime/bnnrun bench/bconv_bench.sh .cache/bconv/
#   optionally models compiled with this bnncc, DIR/NAME.bin (e.g. from bench/models.py's
#   birealnet18.onnx: build/compiler/bnncc birealnet18.onnx -O3 --target=sm_90a -o DIR/birealnet18.bin)
# Steps, logs under $OUT:
#   1. test_kernels_gpu: every bgemm / bconv case, the halo-tile kernel's included, exact
#      against the C reference (the "gpu" suite's kernels_gpu test);
#   2. (after 3) each DIR/*.bin: bnnrun on the GPU and on the CPU path at batch 2 (random input),
#      outputs compared byte for byte, then bnnrun --bench at batch 1 and 256 on the GPU;
#   3. test_kernels_gpu --bconv-bench: the layers of binary ResNet-18 and VGG-small at batch 1,
#      8 and 256, old kernel against the halo kernel's variants (each run checked exactly);
#   4. with the time left of BUDGET_S (default 280 s), compute-sanitizer memcheck over the
#      halo-kernel cases (test_kernels_gpu --halo-only); then the bench's table prints last.
set -u
D=${1:-.cache/bconv}
OUT=${OUT:-/tmp/bconv_out}
mkdir -p "$OUT"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
date -u
start=$(date +%s)
timeout 150 "$D/test_kernels_gpu" > "$OUT/test.log" 2>&1
echo "test_kernels_gpu exit $?: $(grep -E 'checks passed|checks failed' "$OUT/test.log")"
grep -E "CHECK|got 0x| NO " "$OUT/test.log" | head -10
timeout 200 "$D/test_kernels_gpu" --bconv-bench > "$OUT/bench.log" 2>&1
echo "bconv bench exit $?: $(grep -E 'checks passed|checks failed' "$OUT/bench.log")"
grep -E "CHECK|got 0x" "$OUT/bench.log" | head -5
for bin in "$D"/*.bin; do
    [ -f "$bin" ] || continue
    m=$(basename "$bin" .bin)
    shape=$(case $m in vgg*) echo "3,32,32" ;; *) echo "3,224,224" ;; esac)
    for b in 2 1 256; do
        python3 -c "import numpy as np; np.random.seed($b); np.save('$OUT/$m.in$b.npy', np.random.randn($b,$shape).astype(np.float32))"
    done
    "$D/bnnrun" "$bin" --input "$OUT/$m.in2.npy" --output "$OUT/$m.gpu.npy" --device gpu > "$OUT/$m.run.log" 2>&1
    g=$?
    timeout 120 "$D/bnnrun" "$bin" --input "$OUT/$m.in2.npy" --output "$OUT/$m.cpu.npy" --device cpu >> "$OUT/$m.run.log" 2>&1
    c=$?
    if [ $g = 0 ] && [ $c = 0 ] && cmp -s "$OUT/$m.gpu.npy" "$OUT/$m.cpu.npy"; then same=identical; else same="DIFFERENT (gpu $g, cpu $c)"; fi
    echo "$m batch 2: GPU and CPU outputs $same"
    for b in 1 256; do
        n=$([ $b = 1 ] && echo 200 || echo 20)
        echo "$m batch $b: $("$D/bnnrun" "$bin" --input "$OUT/$m.in$b.npy" --output "$OUT/$m.b.npy" --device gpu --bench $n --resident 2>&1 | tail -1)"
    done
    rm -f "$OUT"/$m.in*.npy "$OUT"/$m.*.npy
done
left=$((${BUDGET_S:-280} - ($(date +%s) - start)))
if [ $left -gt 20 ]; then
    timeout $left compute-sanitizer --tool memcheck --print-limit 5 "$D/test_kernels_gpu" --halo-only > "$OUT/memcheck.log" 2>&1
    echo "memcheck --halo-only (${left}s budget) exit $?: $(grep -E 'ERROR SUMMARY|checks passed|checks failed' "$OUT/memcheck.log" | tr '\n' ' ')"
fi
sed -n '/^bconv layers/,$p' "$OUT/bench.log" | sed '/^$/q'
