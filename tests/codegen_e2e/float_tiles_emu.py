#!/usr/bin/env python3
"""The tiled float kernels (float_ops.cu) without a GPU: bnncc --emit=cuda on the float models
of test_e2e.py (float_models, head_models), tests/passes/stem.bnn and ResNet-18's float layers (the 7x7/2 stem
with its relu at 224x224, a stem with batch-norm and relu fused into its store, the 1x1
downsample convs, the 512 -> 1000 head), and bnn_pool, bnn_pack, bnn_quantize_image and bnn_dequantize4
on fixed shapes, with the cost model's tiles and with
each other tile bnncc --tune measures for a conv, their config structs collected, the
kernels compiled as host C++ under float_tiles_emu.cc's block emulator and run at batch 1 and
5 (the stem at 1; the 1x1 convs, tiled over the batch, at 5 too): every output must equal the
reference loop bit for bit, and no stage may write past the shared memory the launch gives. Exit 77 (skipped) without a C++20 compiler.

    float_tiles_emu.py"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("BNN_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("BNN_BUILD_ROOT", os.path.join(SRC, "build"))
sys.path.insert(0, HERE)
import test_e2e  # noqa: E402  (float_models, f32_const)


def resnet_models(tmp, rng):
    """ResNet-18's float layers, one model each (big: emulated at batch 1 only, but for the 1x1
    convs, whose tiles run over the batch: FLAT)."""
    specs = {"resnet_stem": ("(%x: f32[N,3,224,224])", "f32[N,64,112,112]",
                             test_e2e.f32_const("w", (64, 3, 7, 7), rng) + test_e2e.f32_const("b", (64,), rng),
                             "    %c = f32[N,64,112,112] conv2d %x, $w, $b {strides=[2,2], pads=[3,3,3,3]}\n"
                             "    %r = f32[N,64,112,112] relu %c\n", "r")}
    # a stem with its batch-norm and relu (the w1a2 ResNet's): a conv2d_chain of 3 stages, one a
    # division, run in the conv's store; 60x60 so that the tiles have edges
    bn = "".join(test_e2e.f32_const(k, (64,), rng) for k in ("g", "be", "m"))
    bn += f"const $v: f32[64] = [{', '.join(f'{v:.6g}' for v in rng.uniform(0.1, 2.0, 64))}]\n"
    specs["resnet_stem_bn"] = ("(%x: f32[N,3,60,60])", "f32[N,64,30,30]",
                               test_e2e.f32_const("w", (64, 3, 7, 7), rng) + test_e2e.f32_const("b", (64,), rng) + bn,
                               "    %c = f32[N,64,30,30] conv2d %x, $w, $b {strides=[2,2], pads=[3,3,3,3]}\n"
                               "    %n = f32[N,64,30,30] batchnorm %c, $g, $be, $m, $v\n"
                               "    %r = f32[N,64,30,30] relu %n\n", "r")
    for c, hw in ((64, 28), (128, 14), (256, 7)):
        specs[f"resnet_down{c}"] = (f"(%x: f32[N,{c},{hw},{hw}])", f"f32[N,{2 * c},{hw},{hw}]",
                                    test_e2e.f32_const("w", (2 * c, c, 1, 1), rng) +
                                    test_e2e.f32_const("b", (2 * c,), rng),
                                    f"    %c = f32[N,{2 * c},{hw},{hw}] conv2d %x, $w, $b\n", "c")
    paths = []
    for name, (args, out, consts, body, ret) in specs.items():
        paths.append(os.path.join(tmp, name + ".bnn"))
        with open(paths[-1], "w") as f:
            f.write(f"{consts}\ngraph ${name}{args} -> ({out}) {{\n{body}    ret %{ret}\n}}\n")
    return paths


BNNCC = os.path.join(BUILD, "compiler", "bnncc")


def conv_tile_candidates(tmp, model):
    """[(c, tune file)] forcing candidate c >= 1 on every tunable float conv of model."""
    layers, _ = test_e2e.tunable_layers(model, tmp, "conv2d:")
    out = []
    for c in range(1, max((len(k) for _, k, _ in layers), default=0)):
        path = os.path.join(tmp, f"{os.path.basename(model)}.{c}.tune")
        test_e2e.force_candidate(path, layers, c)
        out.append((c, path))
    return out


def main():
    cxx = test_e2e.host_cxx()
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "tile.inc"), "w") as f:
            # The exact tiled kernels only (conv2d_mma_emu.py runs the fp16 tensor-core conv after them).
            f.write(test_e2e.float_ops_parts(
                ("// A quantizer's float of its level", "__device__ __forceinline__ void bnn_unpack"),
                ("// QONNX rounding as blob.h", "template <int WORDS>"),
                ("// quantize of an NCHW item (C channels x S pixels) into image planes",
                 "// ---------------------------------------------------------------- tiled float conv2d and dense"),
                ("// Max or average pooling over NCHW f32", "// Max-pool of NHWC-packed bits"),
                ("// A float chain's stages on v", "// ---------------- fp16 tensor-core conv2d")))
        rng = np.random.default_rng(5)
        big = resnet_models(tmp, rng)
        structs, small_runs, big_runs = [], [], []
        seen = set()
        # tests/passes/stem.bnn: a conv2d_chain whose batch-norm (negative and zero gammas) and
        # relu run in the conv's store, its max-pool after
        stem = os.path.join(SRC, "tests", "passes", "stem.bnn")
        heads = test_e2e.head_models(tmp, rng)  # the pool of bits inside the dense (GS > 0)
        for model in test_e2e.float_models(tmp, rng) + [stem] + heads + big:
            name = os.path.basename(model)[:-4]
            # The cost model's tiles, then each other candidate bnncc --tune measures (forced on
            # every conv of the model through a tune file built from --report's tune lines).
            for cand, tune in [(0, None)] + conv_tile_candidates(tmp, model):
                cmd = [BNNCC, "-O3", model, "--emit=cuda", "-o", "-"] + ([f"--tune-file={tune}"] if tune else [])
                p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if p.returncode:
                    sys.exit(f"FAIL: bnncc {model} (candidate {cand}): {p.stderr.strip()}")
                for m in re.finditer(r"struct (s\d+_(conv2d|dense|gapdense))_cfg \{(.*?)\};", p.stdout, re.S):
                    if (name, m.group(3)) in seen:
                        continue
                    seen.add((name, m.group(3)))
                    tag = f"{name}_{m.group(1)}" + (f"_c{cand}" if cand else "")
                    structs.append(f"struct {tag} {{{m.group(3)}}};")
                    # the 1x1 convs at batch 5 too: their tiles run over the batch (FLAT)
                    runs = big_runs if model in big and "FLAT = 1" not in m.group(3) else small_runs
                    runs.append(f'run_{m.group(2)}<{tag}>("{tag}", batch)')
                    if "MANY = 1" in m.group(3):  # the same kernel on a grid of three tiles a block too
                        runs.append(f'run_{m.group(2)}<{tag}>("{tag} x3", batch, 3)')
        if len(structs) < 15:
            sys.exit(f"FAIL: only {len(structs)} tiled float kernels in the models (the lowering stopped tiling?)")
        if not any("FLAT = 1" in st for st in structs):
            sys.exit("FAIL: no 1x1 conv tiled over the batch's pixels (FLAT = 1): the lowering stopped?")
        with open(os.path.join(tmp, "cfgs.inc"), "w") as f:
            f.write("\n".join(structs) + "\nstatic int run_all(int batch) {\n    int bad = 0;\n" +
                    "".join(f"    bad += {r};\n" for r in small_runs) +
                    "    if (batch == 1) {\n" + "".join(f"        bad += {r};\n" for r in big_runs) +
                    "    }\n    return bad;\n}\n")
        test_e2e.run_emulator(cxx, os.path.join(HERE, "float_tiles_emu.cc"), tmp, ["-O1"], args=["1", "5"])

if __name__ == "__main__":
    main()
