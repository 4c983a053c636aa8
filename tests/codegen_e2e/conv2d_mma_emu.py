#!/usr/bin/env python3
"""The float stem's tensor-core kernel (float_ops.cu bnn_conv2d_mma with exact bits or codes out)
without a GPU: for each stem model of test_e2e.py (stem_models: 7x7/2, 5x5/2, 3x3/1 and 11x11/4
stems, 5 to 70 channels, pools, ties) and the stems with a quantizer (code_stem_models), bnncc
-O3 compiles the blob (its p1, bias, chain and weights) and --emit=cuda gives the conv step's
config struct; conv2d_mma_emu.cc runs the kernel under the block emulator of
tests/codegen/bconv_emu.h on normal, integer and inf / NaN inputs and on patches whose sums the
weights' fp16 rounding alone moves across a threshold (the bound of the two-MMA form), then the kernel that
recomputes the sums it listed (bnn_conv2d_bits_fixup, and for a staged window of one channel tile
also the small batches' bnn_conv2d_bits_fixwin and the larger batches' bnn_conv2d_bits_fixwin_gw
with the weights as [K][O]), and requires every bit, code and NaN flag to
equal a plain loop in the reference order. Both forms run: the staged window (WIN 1) and, for the
11x11 stem, the gathering one. Exit 77 (skipped) without a C++20 compiler with _Float16.

    conv2d_mma_emu.py"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("BNN_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("BNN_BUILD_ROOT", os.path.join(SRC, "build"))
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
sys.path.insert(0, HERE)
import test_e2e  # noqa: E402  (stem_models)

STEP_CONV2D, SLOT_IN2, SLOT_W, SLOT_P0, SLOT_P1 = 6, 1, 3, 4, 5


def stem_case(model, tmp, k):
    """(config struct, run lines, staged window) of model's exact-bits conv step, or None if it has
    none. A staged-window stem of one channel tile runs again on a grid of a third of the blocks,
    three tiles a block (the batch alternative's launch of the same kernel: the weights loaded
    once, the list per tile, the epilogue's memory kept apart from them)."""
    name = os.path.splitext(os.path.basename(model))[0]
    blob = os.path.join(tmp, name + ".bin")
    subprocess.run([BNNCC, "-O3", "--target=cpu", model, "-o", blob], check=True)
    src = subprocess.run([BNNCC, "-O3", model, "--emit=cuda", "-o", "-"], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(r"struct (s\d+_conv2d)_cfg \{(.*?)\};", src, re.S)
    if not m or "EXACT = 1" not in m.group(2):
        return None
    b = open(blob, "rb").read()
    woff, wsize = test_e2e.blob_sections(b)[3]
    at = next((at for at, kind, step in test_e2e.blob_steps(b) if kind == STEP_CONV2D and step == m.group(1)), None)
    if at is None:
        sys.exit(f"FAIL: {name}: no conv2d step {m.group(1)} in the blob")
    slots = [test_e2e.blob_slot(b, at, s) for s in range(8)]
    wts = os.path.join(tmp, name + ".wts")
    with open(wts, "wb") as f:
        f.write(b[woff:woff + wsize])
    tag = f"M{k}"
    at = {s: slots[s][2] for s in (SLOT_IN2, SLOT_W, SLOT_P0, SLOT_P1)}
    args = f'"{wts}", {at[SLOT_W]}, {at[SLOT_P0]}, {at[SLOT_P1]}, {slots[SLOT_P1][3]}, {at[SLOT_IN2]}'
    win = "WIN = 1" in m.group(2)
    runs = [f'run<{tag}>("{name}", {args}, 1, false)']
    if win and "OP = 64," in m.group(2):
        runs.append(f'run<{tag}>("TPB3 {name}", {args}, 3, false)')
        # one channel tile: the small batches' fixup from shared memory (bnn_conv2d_bits_fixwin),
        # and for codes the same from batch 3, several tiles a block (here 3)
        runs.append(f'run<{tag}>("{name}", {args}, 1, true)')
        if "LV = 0," not in m.group(2):
            runs.append(f'run<{tag}>("TPB3 {name}", {args}, 3, true)')
    return f"struct {tag} {{{m.group(2)}}};", runs, win


def code_stem_models(tmp):
    """Stems with a quantizer after the pool (codes out, LV > 0): tests/lowbit/qconv_models.py's
    (2 and 3 bits, 16 and 70 channels, a signed quant of zero point 1, a bias) and the tiny w1a2
    ResNet-18's (bench/qonnx_resnet.py, calibrated batch-norms: all four codes)."""
    import onnx
    sys.path.insert(0, os.path.join(SRC, "tests", "lowbit"))
    sys.path.insert(0, os.path.join(SRC, "bench"))
    import qconv_models
    import qonnx_resnet
    out = []
    for name in ("qcnn_stem_res", "qcnn_stem_a3"):
        make, _ = qconv_models.MODELS[name]
        out.append(os.path.join(tmp, name + ".onnx"))
        onnx.save(make(np.random.default_rng(sum(map(ord, name)))), out[-1])
    out.append(os.path.join(tmp, "w1a2resnet18_tiny.onnx"))
    onnx.save(qonnx_resnet.make("w1a2resnet18_tiny"), out[-1])
    return out


def main():
    cxx = test_e2e.host_cxx()
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "mma.inc"), "w") as f:
            f.write(test_e2e.float_ops_parts(
                ("// A quantizer's float of its level", "// Bits LSB-first in 32-bit words"),
                ("// QONNX rounding as blob.h", "template <int WORDS>"),
                ("// A float chain's stages on v", "// Convolution, NCHW."),
                ("// ---------------- fp16 tensor-core conv2d", "#endif // BNN_FLOAT_OPS_CU")))
        models = test_e2e.stem_models(tmp, np.random.default_rng(66)) + code_stem_models(tmp)
        cases = [stem_case(m, tmp, k) for k, m in enumerate(models)]
        cases = [c for c in cases if c]
        codes = sum("LV = 0," not in s for s, _, _ in cases)
        if codes < 3:
            sys.exit(f"FAIL: {codes} stems with codes out (expected 3)")
        if not any(len(runs) > 1 for _, runs, _ in cases):
            sys.exit("FAIL: no staged-window stem of one channel tile to run with three tiles a block")
        forms = {win for _, _, win in cases}
        if len(cases) < 5 or forms != {True, False}:
            sys.exit(f"FAIL: {len(cases)} exact stems, window forms {forms} (expected both)")
        with open(os.path.join(tmp, "cfgs.inc"), "w") as f:
            f.write("\n".join(s for s, _, _ in cases) + "\nstatic int run_all() {\n    int bad = 0;\n" +
                    "".join(f"    bad += {r};\n" for _, runs, _ in cases for r in runs) + "    return bad;\n}\n")
        test_e2e.run_emulator(cxx, os.path.join(HERE, "conv2d_mma_emu.cc"), tmp, ["-O1", "-frounding-math"],
                              includes=[os.path.join(SRC, "tests", "codegen"), os.path.join(SRC, "codegen")])

if __name__ == "__main__":
    main()
