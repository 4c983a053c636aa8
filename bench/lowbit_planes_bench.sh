#!/usr/bin/env bash
# lowbit_planes_bench.sh BIN [OLD_BNNCC]: low-bit dense layers on bit-planes through model.bin
# (issue 7; the qgemm step's pre-tiled batch alternative, docs/codegen.md "Batch alternatives"),
# against PyTorch in the same run. On the GPU machine, from the repository root, with BIN a
# folder holding release bnncc and bnnrun (bench/prepare_carry.sh's .cache/bench/carry), numpy,
# onnx and torch:
#   1. w1a2 (+-1 weights) and w2a2 MLPs of 4 layers of 4096 (bench/lowbit_mlp.py), compiled
#      --lowbit=planes and --lowbit=int8 for sm_90a (and --lowbit=planes by OLD_BNNCC, another
#      bnncc to compare with); bnnrun --bench 50 --resident at batch 1024, 512, 256 and 64, two
#      alternations; outputs: planes = int8 (= OLD_BNNCC's) on the GPU at 1024, GPU = CPU path
#      at 64.
#   2. the same at 2 layers of 8192 and batch 8192, the shape of issue 7's GEMM target:
#      bnnrun --profile 10 gives each qgemm step's time, printed as effective POPS (2*M*N*K of
#      the wMaN layer over the step's time).
#   3. PyTorch fp16 `a @ w.t()` (nn.Linear's form) and int8 `torch._int_mm` (B column-major) of
#      each layer's shape, random operands, timed as gemm_peer.py does (bench/timing.py: calls
#      back to back in a CUDA graph, the median of 20 replays; until stop 36 one call between
#      events, about 9 % slower at 8192^3 than this).
# WIDTHS="8192" (or "4096") runs part 1 or 2 alone (with the PyTorch layers of that width).
# Work files under /tmp/lowbit_planes (LOWBIT_DIR); the checks and the table print last, and
# are kept in $OUT where it is set (the device tool's folder), line by line as they come.
set -uo pipefail
BIN=${1:?BIN: a folder with bnncc and bnnrun}
OLD=${2:-}
W=${LOWBIT_DIR:-/tmp/lowbit_planes}
mkdir -p "$W"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ms() { grep -o "median [0-9.]* ms" | head -1 | awk '{print $2}'; }
python3 - "$W" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(1)
x = rng.uniform(-1, 4, size=(1024, 4096)).astype(np.float32)
for b in (1024, 512, 256, 64):
    np.save(f"{sys.argv[1]}/x4096_{b}.npy", x[:b])
np.save(f"{sys.argv[1]}/x8192_8192.npy", rng.uniform(-1, 4, size=(8192, 8192)).astype(np.float32))
PY
WIDTHS=${WIDTHS:-4096 8192}
table=${OUT:-$W}/table.txt checks=${OUT:-$W}/checks.txt
: > "$table"
: > "$checks"
for shape in "4096 4 1024,512,256,64" "8192 2 8192"; do
    set -- $shape
    width=$1 layers=$2 batches=$3
    case " $WIDTHS " in *" $width "*) ;; *) continue ;; esac
    for wa in "1 2" "2 2"; do
        set -- $wa
        m=w$1a$2_${width}x$layers
        python3 bench/lowbit_mlp.py "$W/$m.onnx" "$width" "$layers" "$1" "$2" || exit 1
        "$BIN/bnncc" -O3 --emit=ir "$W/$m.onnx" -o "$W/$m.bnn" && rm -f "$W/$m.onnx"
        variants="planes int8"
        for v in planes int8; do
            "$BIN/bnncc" -O3 --lowbit=$v --target=sm_90a --report "$W/$m.bnn" -o "$W/${m}_$v.bin" 2>&1 |
                grep -E "low-bit dense|pre-tiled"
        done
        if [ -n "$OLD" ]; then
            "$OLD" -O3 --lowbit=planes --target=sm_90a "$W/$m.bnn" -o "$W/${m}_old.bin" && variants="$variants old"
        fi
        big=${batches%%,*} small=${batches##*,}
        "$BIN/bnncc" -O3 --lowbit=planes --target=cpu "$W/$m.bnn" -o "$W/${m}_cpu.bin"
        for v in $variants; do
            "$BIN/bnnrun" "$W/${m}_$v.bin" --device gpu --input "$W/x${width}_$big.npy" --output "$W/${m}_$v.out.npy" >/dev/null
        done
        "$BIN/bnnrun" "$W/${m}_planes.bin" --device gpu --input "$W/x${width}_$small.npy" --output "$W/${m}_g.npy" >/dev/null
        [ "$width" = 8192 ] || "$BIN/bnnrun" "$W/${m}_cpu.bin" --device cpu --input "$W/x${width}_$small.npy" --output "$W/${m}_c.npy" >/dev/null
        python3 - "$W" "$m" "$variants" "$width" >> "$checks" <<'PY'
import os, sys
import numpy as np
w, m, variants, width = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4]
outs = [np.load(f"{w}/{m}_{v}.out.npy") for v in variants]
print(f"{m}: GPU outputs of {', '.join(variants)} equal:", all(np.array_equal(outs[0], o) for o in outs[1:]))
if width != "8192":
    print(f"{m}: planes GPU = CPU path:", np.array_equal(np.load(f"{w}/{m}_g.npy"), np.load(f"{w}/{m}_c.npy")))
PY
        for b in ${batches//,/ }; do
            for rep in 1 2; do
                for v in $variants; do
                    t=$("$BIN/bnnrun" "$W/${m}_$v.bin" --device gpu --input "$W/x${width}_$b.npy" --bench 50 --resident 2>&1 | ms)
                    echo "| $m | $b | $v | $rep | $t |" >> "$table"
                done
            done
        done
        if [ "$width" = 8192 ]; then
            "$BIN/bnnrun" "$W/${m}_planes.bin" --device gpu --input "$W/x8192_8192.npy" --profile 10 > "$W/${m}_profile.txt" 2>&1
            grep -E "qgemm|quantize|total|pass" "$W/${m}_profile.txt" | sed "s/^/$m profile: /"
        fi
        rm -f "$W"/${m}_*.bin "$W/$m.bnn"
    done
done
WIDTHS="$WIDTHS" BENCH_DIR="$(cd "$(dirname "$0")" && pwd)" python3 - <<'PY' >> "$table"
import os
import sys
import torch
sys.path.insert(0, os.environ["BENCH_DIR"])
from timing import time_ms  # the benchmarks' one timer: calls back to back in a CUDA graph
def med(f):
    return time_ms(f, 20)
for m, k in ((1024, 4096), (512, 4096), (256, 4096), (64, 4096), (8192, 8192)):
    if str(k) not in os.environ["WIDTHS"].split():
        continue
    # nn.Linear's form: the weight [N, K] row-major, used transposed (cuBLAS's fastest layout here;
    # a row-major [K, N] B ran 1.67 against 1.46 ms at 8192^3 on an H200, stop 35)
    a = torch.randn(m, k, device="cuda", dtype=torch.half); b = torch.randn(k, k, device="cuda", dtype=torch.half).t()
    ai = torch.randint(-2, 2, (m, k), device="cuda", dtype=torch.int8)
    bi = torch.randint(-2, 2, (k, k), device="cuda", dtype=torch.int8).t()
    f16, i8 = med(lambda: a @ b), med(lambda: torch._int_mm(ai, bi))
    print(f"| PyTorch {m}x{k}x{k} | {m} | fp16 matmul, int8 _int_mm (one layer) | - | {f16:.4f} / {i8:.4f} "
          f"({2 * m * k * k / f16 / 1e12:.2f} / {2 * m * k * k / i8 / 1e12:.2f} POPS) |")
PY
cat "$checks"
echo "| model | batch | variant | alternation | median ms |"
echo "|---|---:|---|---:|---:|"
cat "$table"
[ -z "${OUT:-}" ] || cp "$W"/*_profile.txt "$OUT"/
