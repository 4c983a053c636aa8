#!/bin/sh
# formats_bench.sh prepare|run [DIR]: tile-major against plain formats (choose-formats,
# docs/passes.md) on a binary MLP of 4 layers of 4096 (bench/formats_mlp.py) at batch 1024.
#   prepare (where Meson and NVRTC are; run from the repository root):
#       sh bench/formats_bench.sh prepare      -> DIR (default .cache/formats): bnnrun, the model
#       compiled four ways (auto = tile-major, wgmma, for sm_90a; tiled for sm_90 = the mma.sync
#       pre-tiled kernel; plain for sm_90a; plain for cpu), x1024.npy and x67.npy
#   run (on the GPU machine, from the repository root, DIR carried along):
#       sh bench/formats_bench.sh run
#       each blob: bnnrun --bench 50 --resident at batch 1024 and at batch 1 on the GPU; the
#       GPU outputs of the three GPU blobs at batch 1024 compared byte for byte, and at batch
#       67 against the CPU path.
set -eu
MODE=${1:-run}
D=${2:-.cache/formats}
if [ "$MODE" = prepare ]; then
    B=${BUILD:-build}
    mkdir -p "$D"
    cp "$B/runtime/bnnrun" "$D/"
    python3 bench/formats_mlp.py "$D/mlp.bnn" 4096 4
    "$B/compiler/bnncc" -O3 --report --target=sm_90a "$D/mlp.bnn" -o "$D/auto_sm90a.bin" 2>&1 | grep -E "choose-formats|pre-tiled" || true
    "$B/compiler/bnncc" -O3 --formats=tiled --target=sm_90 "$D/mlp.bnn" -o "$D/tiled_sm90.bin"
    "$B/compiler/bnncc" -O3 --formats=plain --target=sm_90a "$D/mlp.bnn" -o "$D/plain_sm90a.bin"
    "$B/compiler/bnncc" -O3 --formats=plain --target=cpu "$D/mlp.bnn" -o "$D/plain_cpu.bin"
    python3 -c "
import numpy as np, sys
rng = np.random.default_rng(1)
x = rng.standard_normal((1024, 4096)).astype(np.float32)
np.save(sys.argv[1] + '/x1024.npy', x); np.save(sys.argv[1] + '/x67.npy', x[:67]); np.save(sys.argv[1] + '/x1.npy', x[:1])
" "$D"
    rm "$D/mlp.bnn" # 17 MB the GPU machine does not need (the carry limit is 64 MiB)
    ls -l "$D"
    exit 0
fi
OUT=${OUT:-/tmp/formats_out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
date -u
status=0
for m in auto_sm90a tiled_sm90 plain_sm90a; do
    for b in 1024 1; do
        echo "== $m batch $b"
        "$D/bnnrun" "$D/$m.bin" --device gpu --input "$D/x$b.npy" --output "$OUT/${m}_$b.npy" --bench 50 --resident || status=1
    done
    "$D/bnnrun" "$D/$m.bin" --device gpu --input "$D/x67.npy" --output "$OUT/${m}_67.npy" || status=1
done
"$D/bnnrun" "$D/plain_cpu.bin" --device cpu --input "$D/x67.npy" --output "$OUT/cpu_67.npy" || status=1
for m in tiled_sm90 plain_sm90a; do
    cmp "$OUT/auto_sm90a_1024.npy" "$OUT/${m}_1024.npy" && echo "batch 1024: $m equals auto_sm90a" || { echo "DIFFER: $m at batch 1024"; status=1; }
done
for m in auto_sm90a tiled_sm90 plain_sm90a; do
    cmp "$OUT/cpu_67.npy" "$OUT/${m}_67.npy" && echo "batch 67: $m equals the CPU path" || { echo "DIFFER: $m at batch 67"; status=1; }
done
exit $status
