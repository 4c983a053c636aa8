#!/usr/bin/env bash
# TFC_1W1A latency at batch 1 and 10000: model.bin on the GPU, model.bin on the CPU path,
# and the reference interpreter, on real MNIST images. Prints a markdown table.
#   bench/tfc_latency.sh [BUILD] [SHARED]     (run from the repository root)
set -euo pipefail
build=${1:-build}; shared=${2:-../shared}
tmp=$(mktemp -d)
"$build/compiler/bnncc" "$shared/models/qonnx/TFC_1W1A.onnx" -O3 --target=sm_90a,sm_80 -o "$tmp/tfc.bin"
python3 - "$shared" "$tmp" <<'PY'
import gzip, sys, numpy as np
shared, tmp = sys.argv[1:]
d = gzip.open(f"{shared}/data/mnist/t10k-images-idx3-ubyte.gz").read()
x = np.frombuffer(d, np.uint8, offset=16).reshape(-1, 1, 28, 28).astype(np.float32) / 255
np.save(f"{tmp}/x1.npy", x[:1]); np.save(f"{tmp}/x10000.npy", x)
PY
echo "| batch | path | median latency | throughput |"
echo "|---|---|---|---|"
for b in 1 10000; do
    for dev in gpu cpu; do
        n=$([ $dev = gpu ] && echo 200 || echo $([ $b = 1 ] && echo 200 || echo 5))
        line=$("$build/runtime/bnnrun" "$tmp/tfc.bin" --input "$tmp/x$b.npy" --device $dev --bench $n 2>&1 | tail -1 || true)
        echo "| $b | model.bin, $dev | $line |"
    done
    t0=$(date +%s.%N)
    "$build/runtime/bnnrun" --reference "$shared/models/qonnx/TFC_1W1A.onnx" --input "$tmp/x$b.npy" --output "$tmp/y.npy"
    t1=$(date +%s.%N)
    echo "| $b | reference interpreter (whole process, wall clock) | $(python3 -c "print(f'{($t1-$t0)*1e3:.1f} ms')") | |"
done
rm -rf "$tmp"
