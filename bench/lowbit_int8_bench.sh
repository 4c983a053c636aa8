#!/bin/sh
# lowbit_int8_bench.sh prepare|run [DIR]: low-bit dense layers as bit-planes against int8 MMA
# (bnncc --lowbit, docs/codegen.md "Bit-planes or int8"), with PyTorch's fp16 and int8 in the
# same run: where the planes / int8 line of --lowbit=auto (lower.c qdense_int8_rule) comes from.
#   prepare (here, where Meson is; from the repository root): DIR (default .cache/int8) gets
#       release bnncc and bnnrun (build-bench) as DIR/build/{compiler,runtime} and kwsmlp_w3a3.
#   run (on the GPU machine, from the repository root, DIR carried; python3 with numpy, onnx
#       and torch):
#       1. tests/lowbit/test_lowbit_int8.py --device gpu (GPU against the reference and the
#          CPU), unless TESTS=0;
#       2. for each W,A of PRECISIONS (default "4,4 8,8") an MLP of LAYERS (4) dense layers of
#          WIDTH (4096) with W-bit weights over A-bit codes (bench/lowbit_mlp.py; the slow
#          lowbit pass runs once, --emit=ir), compiled for sm_90a,sm_80 with --lowbit=planes,
#          int8 and auto (whose kind the table names), each timed with bnnrun --bench 50
#          --resident at every batch of BATCHES (default "1024 1"); planes = int8 on the GPU at
#          every batch, = the CPU path at batch 3, or the run fails;
#       3. PyTorch's chain of LAYERS fp16 matmuls with relu and of int8 torch._int_mm, both in
#          nn.Linear's form (the weight [N, K] used transposed), at each batch (int8 from 17 rows:
#          _int_mm's least M), by bench/timing.py;
#       4. kwsmlp_w3a3 at batch 1 and 1024 both ways (it stays float in lowbit: same plan);
#       then one table: ms per batch, planes / int8 / the peers.
#   e.g. PRECISIONS="3,3 4,3 3,4 4,4 1,8 4,6 4,8 8,8" BATCHES="1024 256 1" TESTS=0 (stop 54).
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
if [ "${TESTS:-1}" != 0 ]; then
    echo "== tests/lowbit/test_lowbit_int8.py --device gpu"
    BNN_BUILD_ROOT=$B BNN_SHARED=$D/shared python3 tests/lowbit/test_lowbit_int8.py --device gpu || status=1
fi
PRECISIONS=${PRECISIONS:-4,4 8,8}
BATCHES=${BATCHES:-1024 1}
WIDTH=${WIDTH:-4096}
LAYERS=${LAYERS:-4}
table=$W/table.md
echo "| model (pairs, levels) | batch | bit-planes ms | int8 ms | auto runs | PyTorch fp16 ms | PyTorch int8 ms |" > "$table"
echo "|---|---:|---:|---:|---|---:|---:|" >> "$table"
python3 -c "
import numpy as np, sys
rng = np.random.default_rng(1)
bs = [int(b) for b in sys.argv[3].split()] + [3]
x = rng.uniform(-1, 4, size=(max(bs), int(sys.argv[2]))).astype(np.float32)
for b in bs: np.save(f'{sys.argv[1]}/x{b}.npy', x[:b])
k = rng.uniform(-110, 110, size=(1024, 1, 10, 49)).astype(np.float32)
for b in (1024, 1): np.save(f'{sys.argv[1]}/k{b}.npy', k[:b])
" "$W" "$WIDTH" "$BATCHES"
# PyTorch's chains, one line per batch: "BATCH FP16_MS INT8_MS" (int8 "-" below 17 rows)
BENCH_DIR="$(cd "$(dirname "$0")" && pwd)" python3 - "$WIDTH" "$LAYERS" $BATCHES > "$W/peers.txt" <<'PY'
import os
import sys
import torch
sys.path.insert(0, os.environ["BENCH_DIR"])
from timing import time_ms  # the benchmarks' one timer: calls back to back in a CUDA graph
n, layers = int(sys.argv[1]), int(sys.argv[2])
ws = [torch.randn(n, n, device="cuda", dtype=torch.half) * 0.02 for _ in range(layers)]
wi = [torch.randint(-128, 127, (n, n), device="cuda", dtype=torch.int8) for _ in range(layers)]
for m in (int(b) for b in sys.argv[3:]):
    x = torch.randn(m, n, device="cuda", dtype=torch.half)
    def f16():
        y = x
        for w in ws:
            y = torch.relu(y @ w.t())
        return y
    line = f"{m} {time_ms(f16, 20):.4f}"
    if m >= 17:
        xi = torch.randint(-128, 127, (m, n), device="cuda", dtype=torch.int8)
        line += f" {time_ms(lambda: [torch._int_mm(xi, w.t()) for w in wi], 20):.4f}"
    else:
        line += " -"
    print(line)
PY
median() { grep -oE "median [0-9.]+ ms" | grep -oE "[0-9.]+" | head -1; }
for p in $PRECISIONS; do
    wb=${p%,*} ab=${p#*,}
    m=w${wb}a${ab}
    echo "== $m: $LAYERS layers of $WIDTH"
    python3 bench/lowbit_mlp.py "$W/$m.onnx" "$WIDTH" "$LAYERS" "$wb" "$ab"
    "$B/compiler/bnncc" -O3 --emit=ir "$W/$m.onnx" -o "$W/$m.bnn"
    rm -f "$W/$m.onnx"
    auto=$("$B/compiler/bnncc" -O3 --lowbit=auto --target=cpu --report "$W/$m.bnn" -o "$W/${m}_auto_cpu.bin" 2>&1 |
           grep -oE "[0-9]+ on int8 MMA" | grep -oE "^[0-9]+") || status=1
    for mode in planes int8; do
        "$B/compiler/bnncc" -O3 --lowbit=$mode --target=sm_90a,sm_80 --report "$W/$m.bnn" -o "$W/${m}_$mode.bin" 2>&1 | grep "low-bit dense" || status=1
        "$B/compiler/bnncc" -O3 --lowbit=$mode --target=cpu "$W/$m.bnn" -o "$W/${m}_${mode}_cpu.bin" || status=1
        for b in $BATCHES; do
            echo "-- $m --lowbit=$mode batch $b"
            "$B/runtime/bnnrun" "$W/${m}_$mode.bin" --device gpu --input "$W/x$b.npy" --output "$W/${m}_${mode}_$b.npy" --bench 50 --resident > "$W/${m}_${mode}_$b.log" 2>&1 || status=1
            cat "$W/${m}_${mode}_$b.log"
        done
        "$B/runtime/bnnrun" "$W/${m}_$mode.bin" --device gpu --input "$W/x3.npy" --output "$W/${m}_${mode}_g3.npy" || status=1
        "$B/runtime/bnnrun" "$W/${m}_${mode}_cpu.bin" --device cpu --input "$W/x3.npy" --output "$W/${m}_${mode}_c3.npy" || status=1
        cmp "$W/${m}_${mode}_g3.npy" "$W/${m}_${mode}_c3.npy" && echo "$m $mode: GPU = CPU at batch 3" || { echo "DIFFER: $m $mode GPU vs CPU"; status=1; }
    done
    kind="int8 in $auto of $LAYERS"
    [ "$auto" = 0 ] && kind="bit-planes"
    [ "$auto" = "$LAYERS" ] && kind="int8"
    for b in $BATCHES; do
        cmp "$W/${m}_planes_$b.npy" "$W/${m}_int8_$b.npy" && echo "$m: planes = int8 at batch $b" || { echo "DIFFER: $m planes vs int8 at batch $b"; status=1; }
        set -- $(grep "^$b " "$W/peers.txt")
        echo "| $m ($((wb * ab)), $(( (1 << ab) - 1 ))) | $b | $(median < "$W/${m}_planes_$b.log") | $(median < "$W/${m}_int8_$b.log") | $kind | ${2:-?} | ${3:-?} |" >> "$table"
    done
    rm -f "$W/$m.bnn" "$W/${m}"_*.bin
done
for mode in planes int8; do
    "$B/compiler/bnncc" -O3 --lowbit=$mode --target=sm_90a "$D/shared/models/qonnx/kwsmlp_w3a3.onnx" -o "$W/kws_$mode.bin" || status=1
    for b in 1 1024; do
        echo "-- kwsmlp_w3a3 --lowbit=$mode batch $b"
        "$B/runtime/bnnrun" "$W/kws_$mode.bin" --device gpu --input "$W/k$b.npy" --output "$W/kws_${mode}_$b.npy" --bench 50 --resident || status=1
    done
done
echo
cat "$table"
exit $status
