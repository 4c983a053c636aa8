#!/usr/bin/env bash
# prepare_carry.sh: what a call on the GPU machine carries, since that machine has no Meson,
# bison, flex or protoc-c (run from the repository root, where they are):
#   .cache/bench/carry  release bnncc, bnnrun, capi_bench (and build/{compiler,runtime} as
#                       bench/gpu_suite.py expects)
#   .cache/bench/models the bench models gzipped (bench/models.py, bench/qonnx_resnet.py)
#   buildslim/          build/ without objects, archives and Meson's state, for
#                       `python3 bench/gpu_suite.py --build buildslim --shared .data/shared`
#   .data/shared        ../shared's models and the test data the GPU suites read (not CIFAR's
#                       training set)
# bench/ab_bnncc.sh REV [NAME] then puts another revision's bnncc beside them (an A/B in one call).
# The carry limit is 64 MiB a call: [".cache/bench/carry", "buildslim", ".data"] is about
# 45 MiB, the models another 40. Either carry the models in a call of their own (with
# .cache/bench/carry) or export them on the GPU machine, which has torch and onnx:
#   python3 bench/models.py /tmp/m --only birealnet18,xnorresnet18,vggsmall,tfc &&
#   python3 bench/qonnx_resnet.py /tmp/m --only w1a2resnet18   (then run_models.py --models /tmp/m)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build-bench ] || meson setup build-bench -Dbuildtype=release >/dev/null
ninja -C build-bench >/dev/null
ninja -C build >/dev/null
c=.cache/bench/carry md=.cache/bench/models
mkdir -p "$c/build/compiler" "$c/build/runtime" "$md"
rm -f "$c"/*.onnx.gz # an older layout kept the models here
[ -f .cache/bench/xnorresnet18.onnx ] || /usr/bin/python3 bench/models.py .cache/bench --only birealnet18,xnorresnet18,vggsmall,tfc  # torch 1.13 (no onnx module)
[ -f .cache/bench/w1a2resnet18.onnx ] || python3 bench/qonnx_resnet.py .cache/bench --only w1a2resnet18  # numpy + onnx
for m in birealnet18 xnorresnet18 vggsmall tfc w1a2resnet18; do
    [ "$md/$m.onnx.gz" -nt ".cache/bench/$m.onnx" ] || gzip -1 -c ".cache/bench/$m.onnx" > "$md/$m.onnx.gz"
done
cc -std=c11 -O2 -Wall -Wextra -Iruntime bench/capi_bench.c build-bench/runtime/libbnnrt.a -ldl -lm -o "$c/capi_bench"
cp build-bench/compiler/bnncc build-bench/runtime/bnnrun "$c/"
cp build-bench/compiler/bnncc "$c/build/compiler/"
cp build-bench/runtime/bnnrun "$c/build/runtime/"
find build-bench/runtime -maxdepth 1 -name "libbnnrt.so*" -type f -exec cp {} "$c/build/runtime/" \;
rm -rf buildslim
tar -C build --exclude='*.p' --exclude='*.a' --exclude=meson-private --exclude=meson-logs \
    --exclude=test-kernel-cache -cf - . | (mkdir -p buildslim && tar -C buildslim -xf -)
rm -rf .data/shared && mkdir -p .data/shared && cp -r ../shared/models ../shared/data .data/shared/
rm -f .data/shared/data/cifar10/train_jpegs.bin .data/shared/data/cifar10/train_index.npz
du -sh "$c" "$md" buildslim .data | sed 's/^/prepare_carry: /'
