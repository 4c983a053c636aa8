#!/usr/bin/env bash
# The main job: set up and build, then run the bundled binary MNIST network (TFC, 1-bit
# weights and activations) on all 10,000 MNIST test images and print its accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
model=models/tfc_w1a1.bnn
echo "demo: $model, compiled and printed as IR by bnncc (first lines):"
build/compiler/bnncc "$model" -O3 --report --emit=ir -o - | grep -v '^const' | head -20
echo "demo: running the 10,000 MNIST test images through the reference interpreter"
python3 bench/accuracy.py "$model" --mnist "${BNN_SHARED:-../shared}/data/mnist"
