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
echo "demo: 10,000 MNIST test images through model.bin (--device auto: the GPU if there is one),"
echo "      compared with the reference interpreter on the same images"
python3 bench/accuracy.py build/tfc_w1a1.bin --bin --device auto --mnist "$shared/data/mnist" \
    --compare-reference "$model" --jobs 2
# A network trained here (models/train_fmnist_mlp.py): the binary Fashion-MNIST MLP, exported
# from PyTorch with its straight-through estimators, through model.bin next to the reference.
fm=/usr/share/datasets/fashion-mnist
echo "demo: bnncc models/fmnist_mlp.onnx -O3 -o build/fmnist_mlp.bin --report"
build/compiler/bnncc models/fmnist_mlp.onnx -O3 -o build/fmnist_mlp.bin --report 2>&1 | grep -E "^node|^summary"
echo "demo: 10,000 Fashion-MNIST test images through model.bin, compared with the reference interpreter"
python3 bench/accuracy.py build/fmnist_mlp.bin --bin --device auto --dataset fashion-mnist \
    --fashion-mnist "$fm" --compare-reference models/fmnist_mlp.onnx --jobs 2
