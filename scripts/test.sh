#!/usr/bin/env bash
# Set up, build, and run the whole test suite: the quick and gpu suites on a normal build
# (gpu tests skip where there is no GPU), then the quick suite again under ASan + UBSan.
# The last line is the total: "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh build || exit 1
# The sanitized build is optimized at -O1 (ASan's checks stay; the CPU paths run 2-3x faster
# than at -O0, and it compiles 3-4x faster than at -O2, where the sanitizers' instrumentation
# made the build the longest part of CI) and reads the plain build's CUBIN cache, which the
# plain run below fills first: the kernels are the same, and NVRTC, not instrumented, was most
# of this run's time.
bash scripts/setup.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false \
    -Doptimization=1 -Ddebug=true -Dtest_kernel_cache="$PWD/build/test-kernel-cache" || exit 1

status=0
meson test -C build --suite quick --suite gpu --print-errorlogs --num-processes 2 || status=1
meson test -C build-asan --suite quick --print-errorlogs \
    --num-processes 2 || status=1

# Bounded fuzzing of the two readers of untrusted input (ONNX, model.bin) with libFuzzer: only
# the two fuzzers are built, and they run side by side (two cores). Each counts as one test:
# passed when it runs its time without a crash.
fuzz_seconds=${BNN_FUZZ_SECONDS:-45}
fuzzers="onnx/fuzz_onnx:tests/onnx/fuzz-seeds runtime/fuzz_blob:tests/runtime/crashers"
: > build/fuzz-results.txt
if [ "$fuzz_seconds" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "ok installed"; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-14-dev >/dev/null || true
    fi
    if command -v clang >/dev/null && { [ -f build-fuzz/build.ninja ] || \
        CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
            -Dbuildtype=debugoptimized >/dev/null; } && \
        ninja -C build-fuzz $(for f in $fuzzers; do echo "tests/${f%%:*}"; done) >/dev/null; then
        for f in $fuzzers; do
            bin=build-fuzz/tests/${f%%:*}; seeds=${f#*:}; name=$(basename "$bin")
            corpus=$(mktemp -d); cp "$seeds"/* "$corpus"/ 2>/dev/null || true
            { "$bin" -max_total_time="$fuzz_seconds" -rss_limit_mb=4096 -print_final_stats=0 "$corpus" \
                  >build/fuzz-$name.log 2>&1; echo $? > build/fuzz-$name.rc; rm -rf "$corpus"; } &
        done
        wait
        for f in $fuzzers; do
            name=$(basename "${f%%:*}")
            if [ "$(cat build/fuzz-$name.rc)" = 0 ]; then
                echo "fuzz $name: ${fuzz_seconds}s, no crash"; echo passed >> build/fuzz-results.txt
            else
                echo "fuzz $name: FAILED, see build/fuzz-$name.log"
                tail -30 build/fuzz-$name.log; echo failed >> build/fuzz-results.txt; status=1
            fi
        done
    else
        echo "fuzz: clang with libFuzzer not available, fuzzers skipped"
        echo skipped >> build/fuzz-results.txt; echo skipped >> build/fuzz-results.txt
    fi
fi

python3 - build build-asan <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for line in open("build/fuzz-results.txt").read().split():
    counts[line] += 1
for d in sys.argv[1:]:
    try:
        lines = open(f"{d}/meson-logs/testlog.json").read().splitlines()
    except OSError:
        counts["failed"] += 1
        continue
    for line in lines:
        r = json.loads(line)["result"]
        key = {"OK": "passed", "SKIP": "skipped", "EXPECTEDFAIL": "passed"}.get(r, "failed")
        counts[key] += 1
print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
PY
exit $status
