#!/usr/bin/env bash
# prepare_carry.sh: what a call on the GPU machine carries, since that machine has no Meson,
# bison, flex or protoc-c (run from the repository root, where they are):
#   .cache/bench/carry  release bnncc, bnnrun, capi_bench (and build/{compiler,runtime} as
#                       bench/gpu_suite.py expects), the bench models gzipped (bench/models.py)
#   buildslim/          build/ without objects, archives and Meson's state, for
#                       `python3 bench/gpu_suite.py --build buildslim --shared .data/shared`
#   .data/shared        ../shared's models and data the GPU suites read
# Then: run with carry [".cache/bench/carry", "buildslim", ".data"] (under 64 MiB together).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build-bench ] || meson setup build-bench -Dbuildtype=release >/dev/null
ninja -C build-bench >/dev/null
ninja -C build >/dev/null
c=.cache/bench/carry
mkdir -p "$c/build/compiler" "$c/build/runtime"
[ -f .cache/bench/xnorresnet18.onnx ] || /usr/bin/python3 bench/models.py .cache/bench  # torch 1.13
[ -f .cache/bench/w1a2resnet18.onnx ] || python3 bench/qonnx_resnet.py .cache/bench --only w1a2resnet18  # numpy + onnx
for m in birealnet18 xnorresnet18 vggsmall tfc w1a2resnet18; do
    [ "$c/$m.onnx.gz" -nt ".cache/bench/$m.onnx" ] || gzip -1 -c ".cache/bench/$m.onnx" > "$c/$m.onnx.gz"
done
cc -std=c11 -O2 -Wall -Wextra -Iruntime bench/capi_bench.c build-bench/runtime/libbnnrt.a -ldl -lm -o "$c/capi_bench"
cp build-bench/compiler/bnncc build-bench/runtime/bnnrun "$c/"
cp build-bench/compiler/bnncc "$c/build/compiler/"
cp build-bench/runtime/bnnrun "$c/build/runtime/"
find build-bench/runtime -maxdepth 1 -name "libbnnrt.so*" -type f -exec cp {} "$c/build/runtime/" \;
rm -rf buildslim
tar -C build --exclude='*.p' --exclude='*.a' --exclude=meson-private --exclude=meson-logs \
    --exclude=test-kernel-cache -cf - . | (mkdir -p buildslim && tar -C buildslim -xf -)
if [ ! -d .data/shared ]; then
    mkdir -p .data/shared && cp -r ../shared/models ../shared/data .data/shared/
fi
du -sh "$c" buildslim .data | sed 's/^/prepare_carry: /'
