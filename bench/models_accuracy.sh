#!/usr/bin/env bash
# models_accuracy.sh BUILD MNIST FMNIST CIFAR10 [LOGITS]: issue 8's check of the bundled models
# in one go: each is compiled with bnncc -O3, all of its test set runs through model.bin on
# the GPU and on the CPU path, and through the reference interpreter; prints the accuracies,
# the predictions that differ from the reference and whether the outputs are bit-identical
# (bench/accuracy.py --compile). LOGITS: PyTorch's own CIFAR-10 test logits, compared too.
# The reference and the CPU path run $JOBS bnnrun processes at a time (default: all cores).
set -uo pipefail
build=$1 mnist=$2 fmnist=$3 cifar=$4 logits=${5:-}
jobs=${JOBS:-$(nproc)}
common=(--compile --device gpu,cpu --bnncc "$build/compiler/bnncc" --bnnrun "$build/runtime/bnnrun"
        --jobs "$jobs")
python3 bench/accuracy.py models/tfc_w1a1.bnn "${common[@]}" --mnist "$mnist" --chunk 1000
python3 bench/accuracy.py models/fmnist_mlp.onnx "${common[@]}" --dataset fashion-mnist \
    --fashion-mnist "$fmnist" --chunk 1000
python3 bench/accuracy.py models/cifar_cnv.onnx "${common[@]}" --dataset cifar10 --cifar10 "$cifar" \
    --chunk 250 ${logits:+--compare-logits "$logits"}
