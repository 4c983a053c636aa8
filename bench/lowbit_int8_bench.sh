#!/bin/sh
# lowbit_int8_bench.sh prepare|run [DIR]: low-bit dense layers as bit-planes against int8 MMA
# (bnncc --lowbit, docs/codegen.md "Bit-planes or int8").
#   prepare (here, where Meson is; from the repository root): DIR (default .cache/int8) gets
#       release bnncc and bnnrun (build-bench) as DIR/build/{compiler,runtime} and kwsmlp_w3a3.
#   run (on the GPU machine, from the repository root, DIR carried; python3 with numpy + onnx):
#       1. tests/lowbit/test_lowbit_int8.py --device gpu (GPU against the reference and the CPU);
#       2. a w4a4 and a w8a8 MLP of 4 layers of 4096 (bench/lowbit_mlp.py; the slow lowbit pass
#          runs once, --emit=ir, then the IR compiles both ways for sm_90a), each timed with
#          bnnrun --bench 50 --resident at batch 1024 and 1, planes and int8, outputs compared
#          (planes = int8 on the GPU at batch 1024, = the CPU path at batch 3);
#       3. kwsmlp_w3a3 at batch 1 and 1024 both ways (it stays float in lowbit: same plan).
set -eu
MODE=${1:-run}
D=${2:-.cache/int8}
if [ "$MODE" = prepare ]; then
    [ -d build-bench ] || meson setup build-bench -Dbuildtype=release >/dev/null
    ninja -C build-bench >/dev/null
    mkdir -p "$D/build/compiler" "$D/build/runtime" "$D/shared/models/qonnx"
    cp build-bench/compiler/bnncc "$D/build/compiler/"
    cp build-bench/runtime/bnnrun "$D/build/runtime/"
    cp ../shared/models/qonnx/kwsmlp_w3a3.onnx "$D/shared/models/qonnx/"
    du -sh "$D"
    exit 0
fi
B=$D/build
W=${OUT:-/tmp/int8_out}
mkdir -p "$W"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
status=0
echo "== tests/lowbit/test_lowbit_int8.py --device gpu"
BNN_BUILD_ROOT=$B BNN_SHARED=$D/shared python3 tests/lowbit/test_lowbit_int8.py --device gpu || status=1
python3 -c "
import numpy as np, sys
rng = np.random.default_rng(1)
x = rng.uniform(-1, 4, size=(1024, 4096)).astype(np.float32)
for b in (1024, 3, 1): np.save(f'{sys.argv[1]}/x{b}.npy', x[:b])
k = rng.uniform(-110, 110, size=(1024, 1, 10, 49)).astype(np.float32)
for b in (1024, 1): np.save(f'{sys.argv[1]}/k{b}.npy', k[:b])
" "$W"
for wa in "4 4" "8 8"; do
    set -- $wa
    m=w$1a$2
    echo "== $m: 4 layers of 4096"
    python3 bench/lowbit_mlp.py "$W/$m.onnx" 4096 4 "$1" "$2"
    "$B/compiler/bnncc" -O3 --emit=ir "$W/$m.onnx" -o "$W/$m.bnn"
    rm -f "$W/$m.onnx"
    for mode in planes int8; do
        "$B/compiler/bnncc" -O3 --lowbit=$mode --target=sm_90a --report "$W/$m.bnn" -o "$W/${m}_$mode.bin" 2>&1 | grep "low-bit dense" || status=1
        "$B/compiler/bnncc" -O3 --lowbit=$mode --target=cpu "$W/$m.bnn" -o "$W/${m}_${mode}_cpu.bin" || status=1
        for b in 1024 1; do
            echo "-- $m --lowbit=$mode batch $b"
            "$B/runtime/bnnrun" "$W/${m}_$mode.bin" --device gpu --input "$W/x$b.npy" --output "$W/${m}_${mode}_$b.npy" --bench 50 --resident || status=1
        done
        "$B/runtime/bnnrun" "$W/${m}_$mode.bin" --device gpu --input "$W/x3.npy" --output "$W/${m}_${mode}_g3.npy" || status=1
        "$B/runtime/bnnrun" "$W/${m}_${mode}_cpu.bin" --device cpu --input "$W/x3.npy" --output "$W/${m}_${mode}_c3.npy" || status=1
        cmp "$W/${m}_${mode}_g3.npy" "$W/${m}_${mode}_c3.npy" && echo "$m $mode: GPU = CPU at batch 3" || { echo "DIFFER: $m $mode GPU vs CPU"; status=1; }
    done
    cmp "$W/${m}_planes_1024.npy" "$W/${m}_int8_1024.npy" && echo "$m: planes = int8 at batch 1024" || { echo "DIFFER: $m planes vs int8"; status=1; }
    rm -f "$W/$m.bnn"
done
for mode in planes int8; do
    "$B/compiler/bnncc" -O3 --lowbit=$mode --target=sm_90a "$D/shared/models/qonnx/kwsmlp_w3a3.onnx" -o "$W/kws_$mode.bin" || status=1
    for b in 1 1024; do
        echo "-- kwsmlp_w3a3 --lowbit=$mode batch $b"
        "$B/runtime/bnnrun" "$W/kws_$mode.bin" --device gpu --input "$W/k$b.npy" --output "$W/kws_${mode}_$b.npy" --bench 50 --resident || status=1
    done
done
exit $status
