#!/usr/bin/env sh
# qhalo_bench.sh: issue 7's check of the halo-tile qconv kernel on a GPU machine (no Meson
# there). Prepare on the build machine:  sh bench/qhalo_bench.sh --prepare
#   (a release build-bench; .cache/qhalo/build/{compiler/bnncc,runtime/bnnrun} and
#    .cache/qhalo/w1a2resnet18.onnx.gz), then on the GPU with carry [".cache/qhalo"]:
#   sh bench/qhalo_bench.sh
# It runs the low-bit GPU tests against the halo build, checks that w1a2resnet18 gives the same
# bytes on the GPU with the halo kernel, with the direct one (--qconv=direct) and on the CPU
# path at batch 2, then times both at batch 1, 8 and 256 (bnnrun --bench 50 --resident).
set -eu
cd "$(dirname "$0")/.."
C=.cache/qhalo
if [ "${1:-}" = --prepare ]; then
    [ -d build-bench ] || meson setup build-bench -Dbuildtype=release >/dev/null
    ninja -C build-bench >/dev/null
    mkdir -p "$C/build/compiler" "$C/build/runtime"
    cp build-bench/compiler/bnncc "$C/build/compiler/"
    cp build-bench/runtime/bnnrun "$C/build/runtime/"
    [ -f "$C/w1a2resnet18.onnx.gz" ] || {
        python3 -c "import sys; sys.path.insert(0,'bench'); import qonnx_resnet; qonnx_resnet.save('w1a2resnet18', '$C')"
        gzip -9 "$C/w1a2resnet18.onnx"
    }
    du -sh "$C"
    exit 0
fi
export BNN_BUILD_ROOT="$PWD/$C/build"
T=$(mktemp -d)
st=0
python3 tests/lowbit/test_w1a2_resnet.py --device gpu || st=1
python3 tests/lowbit/test_qconv_bin.py --device gpu || st=1
gunzip -c "$C/w1a2resnet18.onnx.gz" > "$T/m.onnx"
"$C/build/compiler/bnncc" -O3 "$T/m.onnx" -o "$T/halo.bin"
"$C/build/compiler/bnncc" -O3 --qconv=direct "$T/m.onnx" -o "$T/direct.bin"
R="$C/build/runtime/bnnrun"
python3 -c "import numpy as np; np.save('$T/x2.npy', np.random.default_rng(7).standard_normal((2,3,224,224)).astype(np.float32))"
"$R" "$T/halo.bin" --device gpu --input "$T/x2.npy" --output "$T/y_halo.npy"
"$R" "$T/direct.bin" --device gpu --input "$T/x2.npy" --output "$T/y_direct.npy"
"$R" "$T/halo.bin" --device cpu --input "$T/x2.npy" --output "$T/y_cpu.npy"
if cmp -s "$T/y_halo.npy" "$T/y_cpu.npy" && cmp -s "$T/y_direct.npy" "$T/y_cpu.npy"; then
    echo "ok: w1a2resnet18 batch 2: GPU halo = GPU direct = CPU path, byte for byte"
else
    echo "FAIL: w1a2resnet18 batch 2: outputs differ (halo/direct/cpu)"; st=1
fi
for B in 1 8 256; do
    python3 -c "import numpy as np; np.save('$T/x.npy', np.random.default_rng(1).standard_normal(($B,3,224,224)).astype(np.float32))"
    for k in direct halo; do
        printf 'w1a2resnet18 batch %s %s: ' "$B" "$k"
        "$R" "$T/$k.bin" --device gpu --input "$T/x.npy" --batch "$B" --bench 50 --resident | tail -1
    done
done
rm -rf "$T"
exit $st
