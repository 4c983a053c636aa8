#!/usr/bin/env bash
# The main job: set up and build, compile the bundled binary MNIST network (TFC, 1-bit
# weights and activations) to model.bin, and run all 10,000 MNIST test images through it, on
# the GPU when there is one and on the CPU path otherwise, next to the reference interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
shared=${BNN_SHARED:-../shared}
model=models/tfc_w1a1.bnn
echo "demo: bnncc $model -O3 -o build/tfc_w1a1.bin --report"
build/compiler/bnncc "$model" -O3 -o build/tfc_w1a1.bin --report
echo "demo: the optimized IR (bnncc --emit=ir), weights left out:"
build/compiler/bnncc "$model" -O3 --emit=ir -o - | grep -v '^const'
echo "demo: 10,000 MNIST test images through model.bin (--device auto: the GPU if there is one)"
python3 bench/accuracy.py build/tfc_w1a1.bin --bin --device auto --mnist "$shared/data/mnist" \
    --save-predictions build/pred_bin.npy
echo "demo: the same through the reference interpreter"
python3 bench/accuracy.py "$model" --mnist "$shared/data/mnist" --save-predictions build/pred_ref.npy
python3 -c "import numpy as np; a=np.load('build/pred_bin.npy'); b=np.load('build/pred_ref.npy'); \
print(f'demo: {int((a != b).sum())} of {len(a)} predictions differ between model.bin and the reference')"
