#!/usr/bin/env bash
# Set up, build, and run the whole test suite: the quick and gpu suites on a normal build
# (gpu tests skip where there is no GPU), then the quick suite again under ASan + UBSan.
# The last line is the total: "N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh build || exit 1
bash scripts/setup.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debug || exit 1

status=0
meson test -C build --suite quick --suite gpu --print-errorlogs --num-processes 2 || status=1
ASAN_OPTIONS=detect_leaks=1 meson test -C build-asan --suite quick --print-errorlogs \
    --num-processes 2 || status=1

python3 - build build-asan <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
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
