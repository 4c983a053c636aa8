#!/usr/bin/env python3
"""Low-bit dense layers on int8 codes (issue 7: bnncc --lowbit=auto|planes|int8, qgemm_s8.cu,
docs/codegen.md "Bit-planes or int8") through model.bin against the reference interpreter.
    test_lowbit_int8.py --device cpu|gpu [--sanitized]
Random QONNX MLPs (w1a1 .. w8a8: bipolar, signed and unsigned weights, signed and unsigned
activation quants, odd K and N, an i32 output layer behind a float epilogue; three with layers wide
enough for the pre-tiled bit-plane GEMM's batch alternative, which the GPU runs at batch 1025, one of
them writing 31 levels, which the bit-plane kernels count over x0's folded levels) and kwsmlp_w3a3,
each compiled at -O3 with --lowbit=int8, --lowbit=planes and --lowbit=auto: the -O3 report must
count the layers of each kind (int8: every low-bit dense layer; planes: none; auto: those with
more than 4 activation bits or more than 16 plane pairs: lower.c qdense_int8_rule), the outputs
at batch 1, 3 and 67 must be byte-identical to `bnnrun --reference` and so to each other. Low-bit CNNs likewise (cnn_models: w4a4 with a
signed activation's non-zero pad code and an i32 output conv, w8a8 on u8 codes beside a bipolar
layer that stays bit-planes, a w4a4 conv writing packed bits for a binary conv, qcnn_tail's
dilated conv of unsigned weights): with GPU targets the report must count the convolutions of
each kind (qgemm_s8.cu Q8_CONV; none without a GPU target, nor for a conv with a float chain);
the bit-plane halo kernels of a w1a4 and a w2a2 layer must compile without spills; a tune file
that turns each convolution with a choice to the other kind (cnn_kinds) must do so, the outputs
unchanged; the rule's kinds at 15-16 plane pairs and where no halo tile fits (rule_kinds); the
pre-tiled bit-plane GEMM's first batch below and from 8 plane pairs (tiled_from); the int8 layers'
128 x 128 tiles from the batch that fills 256 of them (wide_from; the GPU runs the wide models at
batch 1025 on them, bit-planes and bytes out).
With GPU targets (sm_90a, sm_80) NVRTC builds the
int8 kernels (CUBINs non-empty); --device gpu runs those blobs on the GPU (exit 77 without one)
and compares them with the CPU path too. --lowbit=int8 on a CNN whose dense layer reads a
convolution's image planes is refused with the node's name and exit 1; damaged int8 qgemm and
quantize steps are refused by the loader. A bit-plane conv writing 255 levels has x0, its levels
folded and sorted for its GPU kernels (conv_folded_levels). --sanitized (the ASan / UBSan build): w8a8 under
--lowbit=auto only, kwsmlp_w3a3 left out."""
import argparse
import os
import re
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "codegen_e2e"))
import qconv_models  # noqa: E402
from test_e2e import (BLOB_SLOTS_AT, BNNCC, BNNRUN, blob_sections, blob_slot, blob_steps,  # noqa: E402
                      cubin_sections, gpu_available, run)
from test_qconv_bin import patched_qconv, rechecksum  # noqa: E402

X0 = 6  # the slot x0 (docs/blob-format.md)
SRC = os.environ.get("BNN_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.environ.get("BNN_SHARED", os.path.join(SRC, "..", "shared"))
failures = []
INT8 = "int8 MMA (qgemm_s8.cu)"  # the int8 kind's name among bnncc --tune's candidates


def fail(msg):
    print("FAIL:", msg)
    failures.append(msg)


def mlp(name, rng, k0, widths, bits, signed_in=0):
    """x -> Quant(a0) -> [dense(w_i) -> BN -> (Relu) -> Quant(a_i+1)]* -> dense (the output).
    bits: [(wbits, abits)] per layer, abits of the layer's input quant."""
    n = qconv_models.Net(name, rng)
    x = n.quant("x", 0.25, bits[0][1], signed_in)
    k = k0
    for i, o in enumerate(widths):
        wbits = bits[i][0]
        y = n.dense(x, k, o, wbits)
        if i == len(widths) - 1:
            return n.model((k0,), y)
        y = n.bn(y, o)
        signed = i % 2 == 1  # every other hidden quant signed, no relu: codes re-based
        if not signed:
            y = n.node("Relu", [y])
        x = n.quant(y, 0.5, bits[i + 1][1], int(signed))
        k = o


# name, K0, widths (the last is the output layer), (wbits, abits) per layer
MODELS = [
    ("w1a1", 37, [33, 10], [(1, 1), (1, 1)]),
    ("w2a2", 100, [65, 7], [(2, 2), (2, 2)]),
    ("w3a3", 99, [70, 33, 5], [(3, 3), (3, 3), (1, 3)]),
    ("w4a4", 129, [130, 11], [(4, 4), (4, 4)]),
    ("w1a8", 45, [31, 9], [(1, 8), (2, 3)]),
    ("w8a8", 40, [37, 6], [(8, 8), (8, 8)]),
    ("mixed", 63, [90, 50, 3], [(2, 2), (3, 4), (2, 2)]),
    # wide enough for the pre-tiled bit-plane GEMM (bgemm_planes_tiled.cu), which the GPU runs
    # from batch 1024 on at 2048 outputs (64 tiles): a bipolar w1a2 layer and a w2a2 one writing
    # codes, a w2a3 output layer writing i32
    ("tiled", 700, [2048, 2048, 7], [(1, 2), (2, 2), (2, 2)]),
    ("tiled_out", 513, [2100], [(2, 3)]),
    # a w2a2 layer writing 5-bit codes (31 levels: bnncc hands the bit-plane kernels their levels
    # folded and sorted in x0, PL_LFOLD / PT_LFOLD): under --lowbit=planes as bit-planes for a
    # bit-plane layer, through the pre-tiled GEMM from batch 1024; under auto as bytes for an
    # int8 one (bgemm_planes.cu alone)
    ("tiled_fold", 600, [2048, 6], [(2, 2), (1, 5)]),
    # qdense_int8_rule's edges: 16 pairs over 2 bits and 9 over 3 stay bit-planes, 20 over 4
    # and 5 over 5 bits go int8 (the rule before stop 54, int8 past 8 pairs, counts 3, not 2)
    ("edges", 50, [40, 30, 20, 6], [(8, 2), (5, 4), (1, 5), (3, 3)]),
    # an int8 layer of 4096 outputs, whose 128 x 128 tiles the GPU runs from batch 1024 on (256
    # of them; lower.c qgemm_int8_wide_alt), writing bit-planes for a bit-plane layer (wide) or
    # bytes for an int8 one (wide_bytes); wide's over 128 inputs, so K in stages of 128 bytes on
    # four warps (7 levels), wide_bytes' stages of 64 on eight (63 levels)
    # (w1a5 over 128 or 16 inputs: the lowbit pass checks every reachable accumulator of each channel)
    ("wide", 128, [4096, 6], [(1, 5), (2, 3)]),
    ("wide_bytes", 16, [4096, 6], [(1, 5), (1, 6)]),
    # w8a8 over 512 inputs: about 8 million reachable accumulators a channel, past what the
    # lowbit pass enumerates, so its thresholds come by the binary search (docs/passes.md)
    ("w8a8_k512", 512, [64, 6], [(8, 8), (8, 8)]),
]
# low-bit dense layers with the pre-tiled alternative under --lowbit=planes and under auto
TILED_LAYERS = {"tiled": (2, 2), "tiled_out": (1, 1), "tiled_fold": (1, 0)}
WIDE_FROM = 1024  # the batch from which the wide models' int8 layer runs 128 x 128 tiles


def want_layers(bits, widths):
    """Layers per mode: (int8 under auto, low-bit dense layers in all, int8 layers with 128 x 128
    tiles as a batch alternative under --lowbit=int8 (128 outputs or more) and under auto)."""
    auto = [a > 4 or w * a > 16 for w, a in bits]
    return (sum(auto), len(bits), sum(o >= 128 for o in widths),
            sum(o >= 128 and i8 for o, i8 in zip(widths, auto)))


def compile_blob(tmp, model, mode, targets, extra=()):
    """The blob; its (int8, plane, pre-tiled, int8 on 128 x 128 tiles) dense layer counts; its
    qgemm alternatives (qgemm_alts); how many casts run with their affines in one GPU pass (cast_affine). (None,
    None, None, None) when bnncc failed."""
    blob = os.path.join(tmp, f"{os.path.basename(model)}.{mode}.{targets.replace(',', '_')}.bin")
    p = run([BNNCC, "-O3", f"--lowbit={mode}", f"--target={targets}", "--report", model, "-o", blob, *extra])
    if p.returncode:
        fail(f"{model} --lowbit={mode} --target={targets}: bnncc: {p.stderr.strip()}")
        return None, None, None, None
    m = re.search(r"low-bit dense layers: (\d+) on int8 MMA .*?, (\d+) as bit-planes", p.stderr)
    t = re.search(r"codegen: (\d+) bit-plane dense layers run the pre-tiled GEMM", p.stderr)
    w = re.search(r"codegen: (\d+) int8 dense layers run 128 x 128 tiles", p.stderr)
    counts = ((int(m.group(1)), int(m.group(2))) if m else (0, 0)) + (int(t.group(1)) if t else 0,
                                                                        int(w.group(1)) if w else 0)
    f = re.search(r"codegen: (\d+) casts to f32 run with the affine steps after them", p.stderr)
    return blob, counts, qgemm_alts(p.stderr), int(f.group(1)) if f else 0


def qgemm_alts(report):
    """The qgemm batch alternatives in a --report's plan lines, in order: (step, kernel kind,
    from batch, main step, sm_90a only). Each must be persistent (a block an SM)."""
    return [(int(a), k, int(b), int(m), bool(f)) for a, k, b, m, f in re.findall(
        r"plan: step (\d+) qgemm \(kernel s\d+_(qgemm_tiled|qgemm_wgmma), the GPU's from batch (\d+) "
        r"instead of step (\d+)'s( on sm_90a)?, persistent: a block an SM\)", report)]


def check_alts(alts, layers, targets):
    """Each pre-tiled layer's alternatives for targets: the mma.sync one unless every target is
    sm_90a, then the wgmma one (sm_90a only) from the same batch where a target is sm_90a."""
    kinds = ([("qgemm_tiled", False)] if targets != "sm_90a" else []) + \
        ([("qgemm_wgmma", True)] if "sm_90a" in targets.split(",") else [])
    if [(k, f) for _, k, _, _, f in alts] != kinds * layers:
        return f"alternatives {alts}, want {kinds} for each of {layers} layers"
    for i in range(0, len(alts), len(kinds)):
        group = alts[i:i + len(kinds)]
        if len({(b, m) for _, _, b, m, _ in group}) != 1 or [a for a, *_ in group] != list(
                range(group[0][0], group[0][0] + len(group))):
            return f"alternatives {group} are not consecutive steps for one step from one batch"
    return None


def outputs(tmp, args, x):
    xin, yout = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xin, x)
    p = run([BNNRUN] + args + ["--input", xin, "--output", yout])
    if p.returncode:
        fail(f"bnnrun {' '.join(os.path.basename(a) for a in args)}: {p.stderr.strip()}")
        return None
    return np.load(yout)


def mismatch(want, have):
    """How many outputs differ (all where dtype or shape do); 0 when byte-identical."""
    if want.dtype != have.dtype or want.shape != have.shape:
        return want.size
    return 0 if want.tobytes() == have.tobytes() else max(1, int((want != have).sum()))


def check(tmp, name, model, xs, counts, device, gpu_targets):
    """counts: {mode: (int8 layers, plane layers, pre-tiled alternatives, int8 128 x 128
    alternatives)} expected in the report, for each mode checked."""
    results = {}
    wants = {}  # the reference's outputs, once per input
    for mode in counts:
        blob, got, _, _ = compile_blob(tmp, model, mode, "cpu")
        if not blob:
            return
        if got != counts[mode][:2] + (0, 0):
            return fail(f"{name} --lowbit={mode}: (int8, planes, pre-tiled, int8 128 x 128) layers {got}, want "
                        f"{counts[mode]} (no alternative without a GPU target)")
        runs = [(blob, "cpu")]
        if gpu_targets or device == "gpu":
            gblob, got, alts, fused = compile_blob(tmp, model, mode, "sm_90a,sm_80")
            if not gblob:
                return
            # the output layer's cast and affines (an MLP's, not kwsmlp's float head) in one pass
            if fused != (name != "kwsmlp_w3a3"):
                return fail(f"{name} --lowbit={mode} for sm_90a,sm_80: {fused} cast_affine passes")
            if got != counts[mode]:
                return fail(f"{name} --lowbit={mode} for sm_90a,sm_80: (int8, planes, pre-tiled, int8 128 x 128) "
                            f"layers {got}, want {counts[mode]}")
            bad = check_alts(alts, counts[mode][2], "sm_90a,sm_80")
            if bad:
                return fail(f"{name} --lowbit={mode} for sm_90a,sm_80: {bad}")
            cubins = cubin_sections(gblob)
            if sorted(cubins) != ["sm_80", "sm_90a"] or min(cubins.values()) == 0:
                return fail(f"{name} --lowbit={mode}: CUBIN sections {cubins}")
            if device == "gpu":
                runs.append((gblob, "gpu"))
                if counts[mode][2]:  # without sm_90a: the mma.sync alternative on the same GPU
                    mblob, got, alts, _ = compile_blob(tmp, model, mode, "sm_90,sm_80")
                    if not mblob:
                        return
                    bad = check_alts(alts, counts[mode][2], "sm_90,sm_80")
                    if bad:
                        return fail(f"{name} --lowbit={mode} for sm_90,sm_80: {bad}")
                    runs.append((mblob, "gpu"))
        for i, x in enumerate(xs):
            if i not in wants:
                wants[i] = outputs(tmp, ["--reference", model], x)
            want = wants[i]
            for b, dev in runs:
                have = outputs(tmp, [b, "--device", dev], x)
                if want is None or have is None:
                    return
                if mismatch(want, have):
                    return fail(f"{name} --lowbit={mode} ({dev}) batch {len(x)}: differs from the reference in "
                                f"{mismatch(want, have)} of {want.size} outputs")
                results.setdefault(len(x), []).append(have.tobytes())
    same = all(len(set(v)) == 1 for v in results.values())
    if not same:
        return fail(f"{name}: int8, planes and auto outputs differ")
    print(f"ok: {name}: --lowbit={', '.join(counts)} (layers {counts}) identical to the reference and "
          f"to each other at batch {sorted(results)} ({'CPU and GPU' if device == 'gpu' else 'CPU'})")


def cnn_w4a4(rng):
    """3 -> 64 (3x3 pad 1) -> 96 (3x3 stride 2 pad 1, into signed 4-bit codes: the next conv's
    padding reads pad code 8) -> 40 (3x3 pad 1) -> 5 (3x3 stride 2 pad 1, its i32 accumulator
    out through the float epilogue), 4-bit weights and activations."""
    n = qconv_models.Net("cnn_w4a4", rng)
    x = n.quant("x", 0.25, 4, 0)
    x = qconv_models.block(n, x, 3, 64, 3, 4, 4)
    x = qconv_models.block(n, x, 64, 96, 3, 4, 4, stride=2, signed=1, relu=False)
    x = qconv_models.block(n, x, 96, 40, 3, 4, 4)
    return n.model((3, 10, 10), n.conv(x, 40, 5, 3, 4, stride=2, pad=1))


def cnn_w8a8(rng):
    """8-bit codes (the .u8 MMA): 3 -> 33 (3x3 pad 1, w8) -> 16 (3x3 stride 2, bipolar weights
    over 8 bits: int8 too under auto) -> 10 (3x3 pad 1, w8 over signed 3-bit codes) out."""
    n = qconv_models.Net("cnn_w8a8", rng)
    x = n.quant("x", 1 / 32, 8, 0)
    x = qconv_models.block(n, x, 3, 33, 3, 8, 8)
    x = qconv_models.block(n, x, 33, 16, 3, 1, 3, stride=2, signed=1, relu=False)
    return n.model((3, 11, 9), n.conv(x, 16, 10, 3, 8, stride=1, pad=1))


def cnn_tobits(rng):
    """A w4a4 conv into a BipolarQuant (one level, one image plane of packed bits) read by a
    binary conv with a float output."""
    n = qconv_models.Net("cnn_tobits", rng)
    x = n.quant("x", 0.25, 4, 0)
    y = n.bn(n.conv(x, 3, 40, 3, 4, 1, 1), 40)
    b = n.node("BipolarQuant", [y, n.const(np.float32(1))], qconv_models.QDOM)
    return n.model((3, 6, 6), n.bn(n.conv(b, 40, 20, 3, 1, 1, 1), 20))


# name, builder, input shape, {mode: (int8 convs, bit-plane convs)} with GPU targets; a conv with
# a float chain (each model's last: its f32 out) is bit-planes in every mode, and under auto so
# are up to 4 activation bits of up to 14 plane pairs, 16 over more than 14x14 output pixels (qcnn_tail's w2a3;
# qcnn_w1a2, whose dense layer over image planes keeps it from --lowbit=int8)
CNN_MODELS = [
    ("cnn_w4a4", cnn_w4a4, (3, 10, 10), {"auto": (3, 1), "int8": (3, 1), "planes": (0, 4)}),
    ("cnn_w8a8", cnn_w8a8, (3, 11, 9), {"auto": (2, 1), "int8": (2, 1), "planes": (0, 3)}),
    ("cnn_tobits", cnn_tobits, (3, 6, 6), {"auto": (1, 0), "int8": (1, 0), "planes": (0, 1)}),
    ("qcnn_tail", qconv_models.tail, (5, 6, 7), {"auto": (0, 2), "int8": (1, 1), "planes": (0, 2)}),
    ("qcnn_w1a2", qconv_models.w1a2, (3, 7, 8), {"auto": (0, 3), "planes": (0, 3)}),
]


def conv_counts(report):
    m = re.search(r"low-bit convolutions: (\d+) on int8 MMA .*?, (\d+) as bit-planes", report)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def same_as_reference(tmp, what, blob, devs, xs, wants):
    """Whether blob's outputs on each device of devs equal the reference's (wants) on each input
    of xs; a failure is reported."""
    for dev in devs:
        for x, want in zip(xs, wants):
            have = outputs(tmp, [blob, "--device", dev], x)
            if want is None or have is None:
                return False
            if mismatch(want, have):
                fail(f"{what} ({dev}) batch {len(x)}: differs from the reference in {mismatch(want, have)} of "
                     f"{want.size} outputs")
                return False
    return True


def check_cnn(tmp, name, build, shape, counts, device, sanitized):
    """Each mode's blob for the GPU targets (and one for the CPU: every conv bit-planes) against
    the reference at batch 1, 3 and 17, on the CPU path and, with --device gpu, the GPU."""
    import onnx
    model = os.path.join(tmp, name + ".onnx")
    onnx.save(build(np.random.default_rng(len(name))), model)
    rng = np.random.default_rng(7)
    xs = []
    for b in (1, 3, 17):
        x = rng.uniform(-3, 3, size=(b,) + shape).astype(np.float32)
        x[::2] = np.round(x[::2] * 4) / 4  # the input quant's ties
        xs.append(x)
    wants = [outputs(tmp, ["--reference", model], x) for x in xs]
    modes = ("auto",) if sanitized else tuple(counts)
    for mode in modes:
        for targets in ("cpu", "sm_90a,sm_80"):
            if sanitized and targets != "cpu":
                continue
            blob = os.path.join(tmp, f"{name}.{mode}.{targets.replace(',', '_')}.bin")
            p = run([BNNCC, "-O3", f"--lowbit={mode}", f"--target={targets}", "--report", model, "-o", blob])
            if p.returncode:
                return fail(f"{name} --lowbit={mode} --target={targets}: bnncc: {p.stderr.strip()}")
            want_counts = counts[mode] if targets != "cpu" else (0, sum(counts[mode]))
            if conv_counts(p.stderr) != want_counts:
                return fail(f"{name} --lowbit={mode} --target={targets}: (int8, planes) convolutions "
                            f"{conv_counts(p.stderr)}, want {want_counts}")
            if targets != "cpu":
                cubins = cubin_sections(blob)
                if sorted(cubins) != ["sm_80", "sm_90a"] or min(cubins.values()) == 0:
                    return fail(f"{name} --lowbit={mode}: CUBIN sections {cubins}")
            devs = ["cpu"] + (["gpu"] if device == "gpu" and targets != "cpu" else [])
            if not same_as_reference(tmp, f"{name} --lowbit={mode} --target={targets}", blob, devs, xs, wants):
                return
    print(f"ok: {name}: --lowbit={', '.join(modes)}, (int8, planes) convolutions {counts}, identical to the "
          f"reference at batch 1, 3, 17 ({'CPU and GPU' if device == 'gpu' else 'CPU'})")


def cnn_wide(rng):
    """Two int8 convolutions of 128 outputs or more (the wgmma alternative on sm_90a): 5 -> 128
    (3x3 pad 1, into signed 4-bit codes: the next conv's padding reads pad code 8) -> 144 (3x3
    pad 1) over 15 x 15 pixels (225 an image: a batch's last row tile partial), then a 1x1 conv
    to 6 with a float out (bit-planes)."""
    n = qconv_models.Net("cnn_wide", rng)
    x = n.quant("x", 0.25, 4, 0)
    x = qconv_models.block(n, x, 5, 128, 3, 4, 4, signed=1, relu=False)
    x = qconv_models.block(n, x, 128, 144, 3, 4, 4)
    return n.model((5, 15, 15), n.conv(x, 144, 6, 1, 4, stride=1, pad=0))


def conv_wgmma(tmp, device):
    """cnn_wide under --lowbit=int8: for sm_90a each int8 conv gets its wgmma form (PT_CONV) as a
    batch alternative from the batch that gives 128 of its 128-pixel tiles (73 images of 225
    pixels), sm_90a only and persistent; none without an sm_90a target. The blob equals the
    reference on the CPU path at batch 1 and 3 and, on a GPU, at 1 (mma.sync) and at 75 (wgmma;
    there against the CPU path: the reference is slow at that size)."""
    import onnx
    model = os.path.join(tmp, "cnn_wide.onnx")
    onnx.save(cnn_wide(np.random.default_rng(11)), model)
    blobs = {}
    for targets in ("sm_90a,sm_80", "sm_90,sm_80"):
        blob = os.path.join(tmp, f"cnn_wide.{targets.replace(',', '_')}.bin")
        p = run([BNNCC, "-O3", "--lowbit=int8", f"--target={targets}", "--report", model, "-o", blob])
        if p.returncode:
            return fail(f"cnn_wide --target={targets}: bnncc: {p.stderr.strip()}")
        alts = re.findall(r"plan: step (\d+) kernel \(kernel s\d+_qconv8wg, the GPU's from batch (\d+) instead of "
                          r"step (\d+)'s on sm_90a, persistent: a block an SM\)", p.stderr)
        want = [("73", True), ("73", True)] if targets.startswith("sm_90a") else []
        if [(b, int(a) == int(m) + 1) for a, b, m in alts] != want or \
                ("2 int8 convolutions run on wgmma" in p.stderr) != bool(want):
            return fail(f"cnn_wide --target={targets}: wgmma alternatives {alts}, want {len(want)} from batch 73 "
                        f"right after their mma.sync step")
        blobs[targets] = blob
    rng = np.random.default_rng(12)
    xs = [rng.uniform(-3, 3, size=(b, 5, 15, 15)).astype(np.float32) for b in (1, 3, 75)]
    wants = [outputs(tmp, ["--reference", model], x) for x in xs[:2]]
    for blob in blobs.values():
        if not same_as_reference(tmp, f"cnn_wide {os.path.basename(blob)}", blob, ["cpu"], xs[:2], wants):
            return
    if device == "gpu":
        blob = blobs["sm_90a,sm_80"]
        if not same_as_reference(tmp, "cnn_wide on the GPU", blob, ["gpu"], xs[:1], wants[:1]):
            return
        want, have = outputs(tmp, [blob, "--device", "cpu"], xs[2]), outputs(tmp, [blob, "--device", "gpu"], xs[2])
        if want is None or have is None:
            return
        if mismatch(want, have):
            return fail(f"cnn_wide batch 75 (the wgmma convolutions): the GPU differs from the CPU path in "
                        f"{mismatch(want, have)} of {want.size} outputs")
    print(f"ok: cnn_wide: two int8 convolutions with a wgmma alternative from batch 73 (sm_90a only), identical to "
          f"the reference at batch 1, 3 (CPU{' and GPU' if device == 'gpu' else ''})"
          f"{' and to the CPU path at 75 on the GPU' if device == 'gpu' else ''}")


def cnn_kinds(rng):
    """w4a4 (int8 by the rule) -> w2a2 -> w2a2 (bit-planes by the rule) -> a 1x1 conv with a
    float out (a chain: bit-planes, no choice)."""
    n = qconv_models.Net("cnn_kinds", rng)
    x = n.quant("x", 0.25, 4, 0)
    x = qconv_models.block(n, x, 16, 32, 3, 4, 2)
    x = qconv_models.block(n, x, 32, 24, 3, 2, 2, stride=2)
    x = qconv_models.block(n, x, 24, 24, 3, 2, 2)
    return n.model((16, 9, 9), n.conv(x, 24, 6, 1, 2))


def tuned_kinds(tmp, device):
    """A tune file turns every convolution with a choice to the other kind (bnncc --tune's
    candidates: the rule's kind first, the int8 MMA last or first): --report's tune lines name
    the int8 MMA among each such layer's candidates, the tuned blob counts the kinds flipped, and
    its outputs equal the reference at batch 1, 3 and 17 (CPU path, and with --device gpu the
    GPU)."""
    import onnx
    model, blob = os.path.join(tmp, "cnn_kinds.onnx"), os.path.join(tmp, "cnn_kinds.bin")
    onnx.save(cnn_kinds(np.random.default_rng(11)), model)
    args = [BNNCC, "-O3", "--target=sm_90a,sm_80", "--report", model, "-o", blob]
    p = run(args)
    if p.returncode or conv_counts(p.stderr) != (1, 3):
        return fail(f"cnn_kinds: exit {p.returncode}, (int8, planes) convolutions {conv_counts(p.stderr)}, want "
                    f"(1, 3): {p.stderr.strip()[-300:]}")
    lines = re.findall(r"^tune: step \d+ \((\w+)\) runs .*; candidates: (.*); kernel signature: (.*)$", p.stderr, re.M)
    tune = ["bnncc-tune 1"]
    for layer, cands, sig in lines:
        cands = cands.split(" | ")
        if INT8 not in cands:
            continue
        other = cands[1] if cands[0] == INT8 else INT8
        tune.append("\t".join(["Test GPU", "256", "0.1", "0.2", sig, other]))
    if len(tune) != 4:
        return fail(f"cnn_kinds: {len(tune) - 1} convolutions with the int8 MMA among their candidates, want 3")
    tfile = os.path.join(tmp, "cnn_kinds.tune")
    with open(tfile, "w") as f:
        f.write("\n".join(tune) + "\n")
    p = run(args + [f"--tune-file={tfile}"])
    if p.returncode or conv_counts(p.stderr) != (2, 2):
        return fail(f"cnn_kinds tuned: exit {p.returncode}, (int8, planes) convolutions {conv_counts(p.stderr)}, "
                    f"want (2, 2): {p.stderr.strip()[-300:]}")
    rng = np.random.default_rng(12)
    xs = [rng.uniform(-1, 4, size=(b, 16, 9, 9)).astype(np.float32) for b in (1, 3, 17)]
    wants = [outputs(tmp, ["--reference", model], x) for x in xs]
    if not same_as_reference(tmp, "cnn_kinds tuned", blob, ["cpu"] + (["gpu"] if device == "gpu" else []), xs, wants):
        return
    print(f"ok: cnn_kinds: a tune file flips 3 convolutions' kind (int8 1 -> 2), identical to the reference at "
          f"batch 1, 3, 17 ({'CPU and GPU' if device == 'gpu' else 'CPU'})")


def rule_kinds(tmp, device):
    """qconv_int8_rule and the direct kernel's place under --lowbit=auto (docs/perf.md stop 53):
    w8a2 (16 plane pairs) stays bit-planes at 28x28 and goes int8 into 14x14; w6a2 (12) stays
    bit-planes into 7x7, and goes int8 at 7x7 with 512 channels, where no halo tile fits (the
    direct kernel among its candidates); outputs equal the reference at batch 2 (CPU path, and
    with --device gpu the GPU)."""
    import onnx
    n = qconv_models.Net("rule_kinds", np.random.default_rng(3))
    x = n.quant("x", 0.25, 2, 0)
    x = qconv_models.block(n, x, 64, 64, 3, 8, 2)
    x = qconv_models.block(n, x, 64, 128, 3, 8, 2, stride=2)
    x = qconv_models.block(n, x, 128, 512, 3, 6, 2, stride=2)
    x = qconv_models.block(n, x, 512, 512, 3, 6, 2)
    model, blob = os.path.join(tmp, "rule_kinds.onnx"), os.path.join(tmp, "rule_kinds.bin")
    onnx.save(n.model((64, 28, 28), n.conv(x, 512, 10, 1, 2)), model)
    p = run([BNNCC, "-O3", "--target=sm_90a,sm_80", "--report", model, "-o", blob])
    runs = dict(re.findall(r"^tune: step \d+ \((\w+)\) runs (halo|int8)", p.stderr, re.M))
    want = {"Conv_10": "halo", "Conv_26": "int8", "Conv_42": "halo", "Conv_58": "int8", "Conv_74": "halo"}
    direct = re.search(r"^tune: step \d+ \(Conv_58\) .*candidates: int8 MMA \(qgemm_s8.cu\) \| direct \(qconv.cu\);",
                       p.stderr, re.M)
    if p.returncode or runs != want or not direct or conv_counts(p.stderr) != (2, 3):
        return fail(f"rule_kinds: exit {p.returncode}, kinds {runs} (want {want}), the direct kernel a candidate of "
                    f"Conv_58: {bool(direct)}, (int8, planes) {conv_counts(p.stderr)}: {p.stderr.strip()[-300:]}")
    rng = np.random.default_rng(4)
    xs = [rng.uniform(-1, 4, size=(2, 64, 28, 28)).astype(np.float32)]
    wants = [outputs(tmp, ["--reference", model], x) for x in xs]
    if not same_as_reference(tmp, "rule_kinds", blob, ["cpu"] + (["gpu"] if device == "gpu" else []), xs, wants):
        return
    print(f"ok: rule_kinds: w8a2 planes at 28x28, int8 into 14x14; w6a2 planes into 7x7, int8 where no halo tile "
          f"fits; identical to the reference ({'CPU and GPU' if device == 'gpu' else 'CPU'})")


def tiled_from(tmp):
    """The pre-tiled bit-plane GEMM's first batch (lower.c qgemm_tiled_alt): the batch that gives
    64 tiles of 128 x 256 below 8 plane pairs (a w1a2 layer of 2048 outputs: 8 column tiles, from
    batch 1024), 32 from 8 pairs on (a w2a4 one: from 512), both alternatives of a layer (mma.sync,
    wgmma) from the same batch (docs/perf.md stop 54)."""
    import onnx
    model = os.path.join(tmp, "tiled_from.onnx")
    onnx.save(mlp("tiled_from", np.random.default_rng(7), 600, [2048, 2048, 7], [(1, 2), (2, 4), (2, 2)]), model)
    blob, _, alts, _ = compile_blob(tmp, model, "planes", "sm_90a,sm_80")
    if not blob:
        return
    froms = [(k, b) for _, k, b, _, _ in alts]
    want = [("qgemm_tiled", 1024), ("qgemm_wgmma", 1024), ("qgemm_tiled", 512), ("qgemm_wgmma", 512)]
    if froms != want:
        return fail(f"tiled_from: pre-tiled alternatives (kernel, from batch) {froms}, want {want}")
    print("ok: the pre-tiled alternative from batch 1024 (64 tiles) at 2 plane pairs, 512 (32 tiles) at 8")


def wide_from(tmp):
    """The int8 layers' batch alternatives (lower.c qgemm_int8_alts), each right after its step
    or another of its alternatives: the 128 x 128 mma.sync tile from the batch that fills 256
    of them (wide's 4096 outputs: 32 column tiles, from batch 1024; w4a4's 130: 2, from 16384;
    tiled_out's 2100: 17, from 2048), none for fewer than 128 outputs; on sm_90a the wgmma form
    from the batch that fills 32 of its 128 x 256 tiles where the layer writes int32 (tiled_out:
    9 column tiles, from 512), 128 where it writes codes (wide: 16, from 1024; w4a4: 1, from
    16384), before the mma.sync tile's where that is earlier, and from its batch after it (the
    GPU runs the last alternative a batch reaches)."""
    alts = []
    for name, k in (("wide", 128), ("w4a4", 129), ("tiled_out", 513)):
        x_npy = os.path.join(tmp, "wide_from_x.npy")
        np.save(x_npy, inputs(np.random.default_rng(2), k, 3))
        p = run([BNNCC, "-O3", "--lowbit=int8", "--target=sm_90a,sm_80", "--report", os.path.join(tmp, name + ".onnx"),
                 "-o", os.path.join(tmp, "wide_from.bin")])
        if p.returncode:
            return fail(f"wide_from: bnncc {name}: {p.stderr.strip()}")
        alts += [(name, k, int(b), int(a) - int(m), bool(sm)) for a, k, b, m, sm in re.findall(
            r"plan: step (\d+) qgemm \(kernel s\d+_(qgemm8wg?), the GPU's from batch (\d+) instead of step (\d+)'s"
            r"( on sm_90a)?", p.stderr)]
        # the runtime loads the plan (an alternative's x1 may differ from the one before it)
        q = run([BNNRUN, os.path.join(tmp, "wide_from.bin"), "--device", "cpu", "--input", x_npy,
                 "--output", os.path.join(tmp, "wide_from.npy")])
        if q.returncode:
            return fail(f"wide_from: bnnrun {name}: {q.stderr.strip()}")
    want = [("wide", "qgemm8w", WIDE_FROM, 1, False), ("wide", "qgemm8wg", WIDE_FROM, 2, True),
            ("w4a4", "qgemm8w", 16384, 1, False), ("w4a4", "qgemm8wg", 16384, 2, True),
            ("tiled_out", "qgemm8wg", 512, 1, True), ("tiled_out", "qgemm8w", 2048, 2, False),
            ("tiled_out", "qgemm8wg", 2048, 3, True)]
    if alts != want:
        return fail(f"wide_from: (model, kernel, from batch, steps after its own, sm_90a only) {alts}, want {want}")
    # K in stages of 128 bytes three deep where a row of bytes is a multiple of 128 and the block
    # has four warps (wide: 128 inputs, 7 levels), else of 64 four deep (wide_bytes: a row of
    # 64, 63 levels on eight warps); warps as q8_warps says. The wgmma form: the row's bytes as
    # 8 x ld bits and ld / 4 words of A, the codes as bytes for the next int8 layer.
    tiles = []
    for name in ("wide", "wide_bytes"):
        cu = os.path.join(tmp, name + "_wide.cu")
        p = run([BNNCC, "-O3", "--lowbit=int8", "--target=sm_90a", "--emit=cuda", os.path.join(tmp, name + ".onnx"),
                 "-o", cu])
        if p.returncode:
            return fail(f"wide_from: bnncc --emit=cuda {name}: {p.stderr.strip()}")
        with open(cu) as f:
            text = f.read()
        for kernel in ("qgemm", "qgemm8w"):  # the first layer's main tile, then its wide one
            m = re.search(r"#define Q8_NAME s\d+_%s\n((?:#define Q8_\w+ \d+\n)*)" % kernel, text)
            d = dict(re.findall(r"#define (Q8_\w+) (\d+)", m.group(1))) if m else {}
            tiles.append((name, kernel, d.get("Q8_LD"), d.get("Q8_BK"), d.get("Q8_STAGES"), d.get("Q8_WARPS")))
        m = re.search(r"#define PT_NAME s\d+_qgemm8wg\n((?:#define PT_\w+ [^\n]+\n)*)", text)
        d = dict(re.findall(r"#define (PT_\w+) ([^\n]+)", m.group(1))) if m else {}
        tiles.append((name, "qgemm8wg", d.get("PT_S8"), d.get("PT_K"), d.get("PT_LDA"), d.get("PT_L"), d.get("PT_YFMT")))
    # (the main tile: K stages of 128 where the row allows, on its default 3 stages and 8 warps)
    want = [("wide", "qgemm", "128", "128", None, None), ("wide", "qgemm8w", "128", "128", "3", "4"),
            ("wide", "qgemm8wg", "1", "1024", "32", "7", "1"),
            ("wide_bytes", "qgemm", "64", None, None, None), ("wide_bytes", "qgemm8w", "64", "64", "4", "8"),
            ("wide_bytes", "qgemm8wg", "1", "512", "16", "63", "1")]
    if tiles != want:
        return fail(f"wide_from: the int8 kernels' defines {tiles}, want {want}")
    print("ok: the int8 128 x 128 tiles from batch 1024 at 4096 outputs, 16384 at 130, none below 128; "
          "K stages of 128 where a row is a multiple of 128 (the wide tile's on four warps); on sm_90a wgmma "
          "from batch 1024 at 4096 outputs writing codes, 16384 at 130, 512 at 2100 writing int32 (before and after "
          "the 128 x 128 tile)")


def planes_spills(tmp):
    """The bit-plane halo kernel's larger tiles (its batch alternatives, 8 warps) of layers with
    more accumulators than w1a2's (w1a4, w2a2) compile without a stack frame or spills for sm_90a
    (kernels.h bnn_qhalo_variant: one block an SM; at two they spilled up to 1.9 KB)."""
    import onnx
    for name, c, hw, wbits, abits in (("w1a4_128_28", 128, 28, 1, 4), ("w2a2_256_14", 256, 14, 2, 2)):
        n = qconv_models.Net(name, np.random.default_rng(3))
        x = n.quant("x", 0.25, abits, 0)
        y = qconv_models.block(n, x, c, c, 3, wbits, abits)
        model, blob = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, name + ".bin")
        onnx.save(n.model((c, hw, hw), n.conv(y, c, 10, 1, wbits)), model)
        p = run([BNNCC, "-O3", "--lowbit=planes", "--target=sm_90a", "-v", model, "-o", blob])
        line = re.search(r"codegen: sm_90a: .*", p.stderr)
        if p.returncode or not line or "no stack or spills" not in line.group(0):
            return fail(f"{name} (bit-planes): exit {p.returncode}, {line.group(0) if line else p.stderr.strip()}")
    print("ok: the bit-plane halo kernels of w1a4 and w2a2 layers have no stack or spills")


def inputs(rng, k, batch):
    x = rng.uniform(-3, 3, size=(batch, k)).astype(np.float32)
    x[::3] = np.round(x[::3] * 8) / 8  # the input quant's ties
    return x


def refused(tmp):
    """--lowbit=int8 where a dense layer reads a convolution's image planes: exit 1, the node."""
    import onnx
    model, blob = os.path.join(tmp, "qcnn.onnx"), os.path.join(tmp, "qcnn.bin")
    onnx.save(qconv_models.w2a2(np.random.default_rng(5)), model)
    p = run([BNNCC, "-O3", "--lowbit=int8", "--target=cpu", model, "-o", blob])
    if p.returncode != 1 or "--lowbit=int8: this layer cannot run on int8 codes" not in p.stderr or \
            "node '" not in p.stderr or os.path.exists(blob):
        return fail(f"--lowbit=int8 on a CNN's classifier: exit {p.returncode}, {p.stderr.strip()!r}")
    p = run([BNNCC, "-O3", "--lowbit=int4", "--target=cpu", model, "-o", blob])
    if p.returncode != 1 or "--lowbit=auto, planes or int8" not in p.stderr:
        return fail(f"--lowbit=int4: exit {p.returncode}, {p.stderr.strip()!r}")
    p = run([BNNCC, "-O3", "--target=cpu", model, "-o", blob])  # auto: the classifier stays planes
    if p.returncode:
        return fail(f"--lowbit=auto on a CNN: {p.stderr.strip()}")
    print("ok: --lowbit=int8 refused where a dense layer reads image planes:", p.stderr.strip()[:0] +
          "exit 1 naming the node")


def refused_blobs(tmp, model):
    """Damaged int8 steps (checksums valid): refused by the loader, naming the step kind; the
    GPU kernel's folded levels (x0) a level short too."""
    blob, _, _, _ = compile_blob(tmp, model, "int8", "cpu")
    if not blob:
        return
    x = os.path.join(tmp, "x.npy")
    np.save(x, inputs(np.random.default_rng(1), 129, 2))
    # qgemm: params rows n ld xb wb wsigned bipolar epi levels yb format yformat
    cases = [(19, "qgemm", "codes format 2", [(10, 2)]), (19, "qgemm", "9-bit int8 codes", [(3, 9)]),
             (19, "qgemm", "ld not a multiple of 64", [(2, 136)]), (19, "qgemm", "yb 9 bytes out", [(9, 9)]),
             (18, "quantize", "ld below k", [(2, 64)]), (18, "quantize", "format 3", [(11, 3)])]
    for kind, kname, what, edits in cases:
        bad = os.path.join(tmp, "bad.bin")
        patched_qconv(blob, bad, edits, kind)
        p = run([BNNRUN, bad, "--device", "cpu", "--input", x, "--output", os.path.join(tmp, "bad.npy")])
        if p.returncode == 0 or f"({kname})" not in p.stderr:
            fail(f"a {kname} step with {what} was not refused: exit {p.returncode}, {p.stderr.strip()!r}")
    print(f"ok: {len(cases)} damaged int8 qgemm / quantize steps refused by the loader")
    # the GPU kernel's folded levels (slot x0, only with a GPU target) one level short
    blob, _, _, _ = compile_blob(tmp, model, "int8", "sm_80")
    if not blob:
        return
    b = bytearray(open(blob, "rb").read())
    steps = [at for at, kind, _ in blob_steps(b) if kind == 19]
    x0 = [blob_slot(b, at, X0) for at in steps]  # (space, reserved, offset, bytes)
    if not steps or x0[0][0] != 2 or x0[0][3] == 0:
        return fail(f"int8 qgemm steps with a GPU target: slot x0 {x0[:1]}, want the folded levels in the weights")
    bad = x0_short_loads(tmp, b, steps[0], x0[0][3], x)
    if bad:
        return fail(f"an int8 qgemm step whose x0 is 4 bytes short was not refused: {bad}")
    print("ok: an int8 qgemm step whose folded levels (x0) are 4 bytes short is refused by the loader")


def x0_short_loads(tmp, b, step_at, size, x, kind="qgemm"):
    """The blob b with the x0 of its step (a kind step) at step_at 4 bytes short of size, run on
    input file x: None where the loader refuses it naming slot x0, else what happened."""
    struct.pack_into("<Q", b, step_at + BLOB_SLOTS_AT + 24 * X0 + 16, size - 4)
    bad = os.path.join(tmp, "x0_short.bin")
    open(bad, "wb").write(rechecksum(b))
    p = run([BNNRUN, bad, "--device", "cpu", "--input", x, "--output", os.path.join(tmp, "x0_short.npy")])
    if p.returncode == 0 or f"({kind}): slot x0 has" not in p.stderr:
        return f"exit {p.returncode}, {p.stderr.strip()!r}"
    return None


def qgemm_x0(tmp, model, mode):
    """model compiled --lowbit=mode for sm_80: the blob, its bytes, the weights section's offset,
    and its qgemm steps that have an x0, as (step offset, x0 slot); Nones when bnncc failed."""
    blob, _, _, _ = compile_blob(tmp, model, mode, "sm_80")
    if not blob:
        return None, None, None, None
    b = bytearray(open(blob, "rb").read())
    return blob, b, blob_sections(b)[3][0], [(at, blob_slot(b, at, X0)) for at, kind, _ in blob_steps(b)
                                       if kind == 19 and blob_slot(b, at, X0)[3]]


def level_estimates(tmp, model):
    """w8a8's first layer (37 outputs, 255 levels): x0 holds the folded levels, then from word
    ceil(37 * 255 / 4) * 4 each channel's estimate {lo, per, first, last} (blob.h
    blob_q8_level_estimate), each as this test computes it from those levels; the loader takes
    x0 without the estimates too (an older bnncc's blob, its outputs the same) and refuses any
    other size. As bit-planes the layer's x0 is the same, and only that size loads."""
    blob, b, woff, x0 = qgemm_x0(tmp, model, "int8")
    if not b:
        return
    n, levels = 37, 255
    at_est = (n * levels + 3) // 4 * 4
    if len(x0) != 1 or x0[0][1][3] != (at_est + 4 * n) * 4:
        return fail(f"level_estimates: the int8 steps' x0 {[s for _, s in x0]}, want one of {(at_est + 4 * n) * 4} bytes")
    at, (_, _, off, size) = x0[0]
    words = np.frombuffer(bytes(b[woff + off:woff + off + size]), dtype=np.int32)
    u = words[:n * levels].reshape(n, levels)
    est = words[at_est:].reshape(n, 4)
    if (np.diff(u.astype(np.int64), axis=1) < 0).any() or words[n * levels:at_est].any():
        return fail("level_estimates: x0's levels not sorted, or the words before the estimates not zero")
    for c in range(n):
        first = int((u[c] == -2**31).sum())
        last = levels - int((u[c] == 2**31 - 1).sum())
        lo = int(u[c][first]) if last > first else 0
        span = int(u[c][last - 1]) - lo if last - first >= 2 else 0
        per = np.float32((last - first - 1) / span) if span > 0 else np.float32(0)
        want = [lo, int(per.view(np.int32)), first, last]
        if list(map(int, est[c])) != want:
            return fail(f"level_estimates: channel {c}'s estimate {list(map(int, est[c]))}, want {want}")
    xs = inputs(np.random.default_rng(4), 40, 3)
    want, x = outputs(tmp, [blob, "--device", "cpu"], xs), os.path.join(tmp, "x0_in.npy")
    np.save(x, xs)
    for size, ok in ((n * levels * 4, True), (size - 4, False), (n * levels * 4 + 16, False)):
        struct.pack_into("<Q", b, at + BLOB_SLOTS_AT + 24 * X0 + 16, size)
        bad = os.path.join(tmp, "x0.bin")
        open(bad, "wb").write(rechecksum(b))
        p = run([BNNRUN, bad, "--device", "cpu", "--input", x, "--output", os.path.join(tmp, "x0.npy")])
        if ok and (p.returncode or not np.array_equal(np.load(os.path.join(tmp, "x0.npy")), want)):
            return fail(f"level_estimates: x0 of the levels alone ({size} bytes): exit {p.returncode}, "
                        f"{p.stderr.strip()!r}, or other outputs")
        if not ok and (p.returncode == 0 or "(qgemm): slot x0 has" not in p.stderr):
            return fail(f"level_estimates: x0 of {size} bytes not refused: exit {p.returncode}, {p.stderr.strip()!r}")
    # as bit-planes (past 15 levels: PL_LFOLD, PT_LFOLD) the layer's x0 is the same; its size checked too
    _, pb, pw, px0 = qgemm_x0(tmp, model, "planes")
    if not pb:
        return
    if len(px0) != 1 or bytes(pb[pw + px0[0][1][2]:pw + px0[0][1][2] + px0[0][1][3]]) != words.tobytes():
        return fail(f"level_estimates: the bit-plane steps' x0 {[s for _, s in px0]}, want one, the int8 step's")
    bad = x0_short_loads(tmp, pb, px0[0][0], px0[0][1][3], x)
    if bad:
        return fail(f"level_estimates: a bit-plane step's x0 4 bytes short not refused: {bad}")
    # (its kernels read the estimates: no older form of x0 without them loads)
    bad = x0_short_loads(tmp, pb, px0[0][0], n * levels * 4 + 4, x)
    if bad:
        return fail(f"level_estimates: a bit-plane step's x0 of the levels alone not refused: {bad}")
    print(f"ok: w8a8's {n} channels' count estimates after their 255 levels in x0, as computed here, the same "
          "for the bit-plane layer; x0 without them loads (int8 only), other sizes are refused")


def conv_folded_levels(tmp, model):
    """cnn_w8a8 (model, check_cnn's) as bit-planes: its first conv (33 channels into 8-bit codes,
    255 levels) has x0, its levels as p0 and p1 give them, folded (t ^ -1 where the channel falls)
    and sorted, which its GPU kernels count by q8_levels.cu's search (qconv.cu QC_LFOLD); the conv
    of 7 levels and the one with a float chain have none, nor the CPU target's blob; x0 4 bytes
    short is refused."""
    have = {}
    for targets in ("sm_80", "cpu"):
        blob = os.path.join(tmp, f"cnn_w8a8_x0.{targets}.bin")
        p = run([BNNCC, "-O3", "--lowbit=planes", f"--target={targets}", model, "-o", blob])
        if p.returncode:
            return fail(f"conv_folded_levels: bnncc --target={targets}: {p.stderr.strip()}")
        b = bytearray(open(blob, "rb").read())
        have[targets] = (blob, b, blob_sections(b)[3][0],
                         [at for at, kind, _ in blob_steps(b) if kind == 20 and blob_slot(b, at, X0)[3] and
                          not struct.unpack_from("<I", b, at + 8)[0] & 4])  # (not its batch alternatives)
    blob, b, woff, steps = have["sm_80"]
    n, levels = 33, 255
    if len(steps) != 1 or have["cpu"][3]:
        return fail(f"conv_folded_levels: qconv steps with x0: {len(steps)} for sm_80 (want 1), "
                    f"{len(have['cpu'][3])} for the CPU (want 0)")
    at = steps[0]

    def words(slot, count):
        _, _, off, size = blob_slot(b, at, slot)
        if size != count * 4:
            return None
        return np.frombuffer(bytes(b[woff + off:woff + off + size]), dtype=np.int32)
    t, d, u = words(4, n * levels), words(5, n), words(X0, n * levels)  # p0, p1, x0
    if t is None or d is None or u is None:
        return fail(f"conv_folded_levels: p0 / p1 / x0 of {[blob_slot(b, at, s)[3] for s in (4, 5, X0)]} bytes, "
                    f"want {n * levels * 4}, {n * 4}, {n * levels * 4}")
    want = np.sort(t.reshape(n, levels) ^ np.where(d < 0, -1, 0).astype(np.int32)[:, None], axis=1)
    if not np.array_equal(u.reshape(n, levels), want) or not (d < 0).any() or not (d > 0).any():
        return fail("conv_folded_levels: x0 is not p0's levels folded by p1 and sorted (or no channel falls / rises)")
    x = os.path.join(tmp, "cnn_w8a8_x0.npy")
    np.save(x, np.random.default_rng(5).uniform(-3, 3, size=(2, 3, 11, 9)).astype(np.float32))
    bad = x0_short_loads(tmp, b, at, n * levels * 4, x, "qconv")
    if bad:
        return fail(f"conv_folded_levels: a qconv step's x0 4 bytes short not refused: {bad}")
    print(f"ok: cnn_w8a8 as bit-planes: its 255-level conv's x0 holds p0's levels folded and sorted, no other "
          "conv's and no CPU blob's has one; x0 4 bytes short is refused")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--sanitized", action="store_true",
                        help="the ASan / UBSan build: w8a8 under --lowbit=auto only, no kwsmlp_w3a3")
    a = parser.parse_args()
    device = a.device
    # Under the sanitizers bnncc's exact check of every accumulator of w8a8's and kwsmlp's
    # layers (the same code in each mode) took half this test's time 3 times over: w8a8 in one
    # mode, kwsmlp not at all (test_lowbit_bin.py compiles it under the sanitizers too); the
    # other modes' plans are checked on the other models and in the plain build.
    slow = ("w8a8", "w8a8_k512") if a.sanitized else ()
    import onnx
    with tempfile.TemporaryDirectory() as tmp:
        if device == "gpu" and not gpu_available(tmp):
            sys.exit(print("skipped: no GPU or no NVIDIA driver") or 77)
        for i, (name, k0, widths, bits) in enumerate(MODELS):
            model = os.path.join(tmp, name + ".onnx")
            onnx.save(mlp(name, np.random.default_rng(100 + i), k0, widths, bits, signed_in=i % 2), model)
            auto, total, wide, wide_auto = want_layers(bits, widths)
            tiled, tiled_auto = TILED_LAYERS.get(name, (0, 0))
            counts = {"int8": (total, 0, 0, wide), "planes": (0, total, tiled, 0),
                      "auto": (auto, total - auto, tiled_auto, wide_auto)}
            if name in slow:
                counts = {"auto": counts["auto"]}
            rng = np.random.default_rng(i)
            # NVRTC for the GPU targets on some models (each compile takes seconds), all on a GPU;
            # on a GPU batch 1025 runs the pre-tiled alternative (nine row tiles, the last of one
            # row; the CPU path has nothing batch-dependent there, and the reference at 1025 rows
            # is slow under ASan)
            # (the wide models' 128 x 128 tiles likewise at 1025: nine row tiles)
            big = tiled or name.startswith("wide")
            # (and at 300, the wide models' int8 layer on wgmma before the 128 x 128 tile's batch)
            batches = ((1, 67, 300, WIDE_FROM + 1) if device == "gpu" else (1, 67)) if big else (1, 3, 67)
            check(tmp, name, model, [inputs(rng, k0, b) for b in batches], counts, device,
                  name in ("w4a4", "mixed", "tiled", "tiled_out", "tiled_fold", "wide", "wide_bytes"))
        kws = os.path.join(SHARED, "models", "qonnx", "kwsmlp_w3a3.onnx")
        if os.path.exists(kws) and not a.sanitized:
            # kwsmlp stays float in the lowbit pass (its float sums round near level boundaries,
            # docs/passes.md): no low-bit dense layer, so every mode gives the same float plan.
            rng = np.random.default_rng(9)
            xs = [rng.uniform(-110, 110, size=(b, 1, 10, 49)).astype(np.float32) for b in (1, 3, 67)]
            check(tmp, "kwsmlp_w3a3", kws, xs, {m: (0, 0, 0, 0) for m in ("int8", "planes", "auto")}, device, False)
        for name, build, shape, counts in CNN_MODELS:
            check_cnn(tmp, name, build, shape, counts, device, a.sanitized)
        if not a.sanitized:
            planes_spills(tmp)
            tiled_from(tmp)
            wide_from(tmp)
            level_estimates(tmp, os.path.join(tmp, "w8a8.onnx"))
            conv_folded_levels(tmp, os.path.join(tmp, "cnn_w8a8.onnx"))
            conv_wgmma(tmp, device)
            tuned_kinds(tmp, device)
            rule_kinds(tmp, device)
        refused(tmp)
        refused_blobs(tmp, os.path.join(tmp, "w4a4.onnx"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
