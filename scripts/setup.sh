#!/usr/bin/env bash
# Set up a fresh Debian 12 machine (with the CUDA toolkit) to build bnncc, then configure
# and build it into build/. Installs missing Debian packages when run as root, and the
# Python packages the tests use from PyPI. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(meson ninja-build bison flex protobuf-c-compiler libprotobuf-c-dev libonnx-dev pkg-config
      python3 python3-numpy python3-torch dataset-fashion-mnist)
missing=()
for p in "${debs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "setup: installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "setup: missing Debian packages: ${missing[*]}" >&2
        echo "setup: run as root, or: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
fi

# Python helpers for the tests (onnxruntime compares the ONNX frontend with a real runtime).
py=python3
if ! "$py" -c "import numpy, onnx, onnxruntime, PIL" 2>/dev/null; then
    echo "setup: installing numpy, onnx, onnxruntime, pillow from PyPI"
    "$py" -m pip install -q --disable-pip-version-check numpy onnx onnxruntime pillow 2>&1 | grep -v "as the 'root' user" || true
fi

# CUDA toolkit: NVRTC compiles the kernels; no GPU is needed to build or test.
if [ -z "${CUDA_HOME:-}" ] && [ -d /usr/local/cuda ]; then
    export CUDA_HOME=/usr/local/cuda
fi

build=${1:-build}
shift || true
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" "$@" >/dev/null
fi
ninja -C "$build" >/dev/null
echo "setup: built $build/compiler/bnncc and $build/runtime/bnnrun"
