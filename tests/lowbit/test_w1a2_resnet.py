#!/usr/bin/env python3
"""The w1a2 ResNet-18 of issue 7 (bench/qonnx_resnet.py: a Brevitas-style QONNX export with
BipolarQuant weights, 2-bit Quant activations, float residual adds, a float stem whose
QuantReLU comes before the max-pool, a float head) at its reduced size, w1a2resnet18_tiny
(3x32x32, widths 16-64-128-160), through model.bin against the reference interpreter.

    test_w1a2_resnet.py --device cpu|gpu

- The -O3 IR holds 19 low-bit convs (every conv of the 4 stages, the three 1x1 stride-2
  downsample convs and the first block's conv behind the stem's max-pool included: lowbit moves
  the quant after the pool) and one float convolution, the stem's. 11 of them are
  qconv2d_chain (each block's second conv with its batch-norm, shortcut add, relu and the next
  quantizer; each downsample conv with its batch-norm), 8 thresholded qconv2d, and no
  batchnorm, add, relu, mul, cast, quant or quantize is left between convs or after the stem
  (its quant is the stem's `conv2d_chain`'s).
- The plan has at most PLAN_STEPS_MAX GPU steps (112 steps before qconv2d_chain, at fc0de86; 24
  now, not counting batch alternatives: the stem's and its fixup's, the classifier's, the 8x8
  qconvs'; nor the CPU-only float chains of the 5 block convs whose GPU kernels read their
  residual as codes, which --report counts, as it counts the global pool that reads the last
  block's codes), and starts with the stem's conv (writing codes),
  its fixup and the max-pool of codes, with no affine, relu or quantize step anywhere.
- The stem fixup's weights: W [O][K] and, for its fixwin_gw alternative, P1 the same numbers as
  [K/4][O][4] (fixup_weights).
- bnncc -O3 compiles it for sm_90a and sm_80 (both CUBIN sections non-empty), and no qconv
  kernel of either has a stack frame or spills (its --report's `codegen: sm_...` lines).
- Its outputs at batch 1 and 3 (and 17 on a GPU: the qconvs' batch alternatives) on random
  inputs are byte-identical to `bnnrun --reference` on the ONNX model; on a GPU also at batches
  5 and 130 with NaN and infinite pixels (which the reference's Quant refuses) to the CPU path's, so
  that the residuals' NaN flags are exercised, and the stem's fixup of the batches from 128
  (bnn_conv2d_bits_fixwin_gw) and the stride-2 threshold layers' 128-channel tiles from 64.
- With one batch-norm gamma of stage 1's first block set to 0 (a zero factor in its chain: its
  value may be NaN where the stem's is, and its chain is no step function of the sum), that block
  and the second one, whose residual it is, keep their float chains on the GPU: --report counts
  3 layers that read their residual as codes, not 5; the blob still equals the reference (and on
  a GPU, with NaN and infinite pixels, the CPU path).
- A max-pool of a signed quant of zero point 0 (which gives -0.0, so the pool would see the
  zero's sign) keeps the quant before the pool: the conv after it stays float, and the blob
  still equals the reference bit for bit.
- (--device cpu) The full-size model's plan has 20 qconv batch alternatives, 14 from batch 4,
  2 from 16, 3 from 64 and 1 from 128 (compiled for the CPU target: no NVRTC).
--device gpu runs the blobs on the GPU and exits 77 (skipped) without one."""
import argparse
import os
import re
import struct
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "codegen_e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import qconv_models  # noqa: E402
from test_qconv_bin import rechecksum  # noqa: E402
import qonnx_resnet  # noqa: E402
from test_e2e import BNNCC, BNNRUN, blob_sections, blob_slot, blob_steps, cubin_sections, gpu_available, run  # noqa: E402

failures = []

PLAN_STEPS_BEFORE = 112  # w1a2resnet18_tiny at -O3 before qconv2d_chain (fc0de86)
PLAN_STEPS_MAX = 24


def fail(msg):
    print("FAIL:", msg)
    failures.append(msg)


def same_as_reference(tmp, name, model, blob, device, x):
    """None when the blob's outputs on x equal the reference's byte for byte, else why not."""
    xin, want, have = (os.path.join(tmp, f"{name}_{s}.npy") for s in ("x", "want", "got"))
    np.save(xin, x)
    p = run([BNNRUN, "--reference", model, "--input", xin, "--output", want])
    if p.returncode:
        return f"bnnrun --reference: {p.stderr.strip()}"
    p = run([BNNRUN, blob, "--device", device, "--input", xin, "--output", have])
    if p.returncode:
        return f"bnnrun --device {device}: {p.stderr.strip()}"
    a, b = np.load(want), np.load(have)
    if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
        return f"differs from the reference in {int((a != b).sum())} of {a.size} outputs"
    return None


def nan_pixels_gpu_equals_cpu(tmp, tag, blob, x):
    """None when blob's GPU outputs on x with a NaN, an inf and a -inf pixel set (which the
    reference's Quant refuses) equal the CPU path's byte for byte, else why not."""
    x = np.array(x, np.float32)
    x[0, 0, 3, 4], x[min(2, len(x) - 1), 1, 10:12, 7], x[-1, 2, 20, 20:23] = np.nan, np.inf, -np.inf
    xin, got = os.path.join(tmp, f"{tag}_x.npy"), {}
    np.save(xin, x)
    for dev in ("cpu", "gpu"):
        out = os.path.join(tmp, f"{tag}_{dev}.npy")
        p = run([BNNRUN, blob, "--device", dev, "--input", xin, "--output", out])
        if p.returncode:
            return f"bnnrun --device {dev} on NaN and inf pixels: {p.stderr.strip()}"
        got[dev] = np.load(out)
    if got["cpu"].tobytes() != got["gpu"].tobytes():
        return (f"NaN and inf pixels: GPU differs from the CPU path in "
                f"{int((got['cpu'].view(np.uint32) != got['gpu'].view(np.uint32)).sum())} outputs")
    return None


def ir_ops(model):
    """The -O3 IR's op names, one per node line (None and the error if bnncc fails)."""
    p = run([BNNCC, "-O3", model, "--emit=ir", "-o", "-"])
    if p.returncode:
        return None, p.stderr.strip()
    return re.findall(r"^\s+%.* = [^=]*?\] (?:pack\([^)]*\) )?([a-z0-9_]+) ", p.stdout, re.M), ""


def resnet(tmp, device):
    import onnx
    name = "w1a2resnet18_tiny"
    model = os.path.join(tmp, name + ".onnx")
    onnx.save(qonnx_resnet.make(name), model)
    ops, err = ir_ops(model)
    if ops is None:
        return fail(f"{name}: bnncc -O3 --emit=ir: {err}")
    floats = [o for o in ops if o in ("conv2d", "conv2d_chain")]
    qconvs, chains = ops.count("qconv2d"), ops.count("qconv2d_chain")
    if qconvs + chains != 19 or chains != 11 or len(floats) != 1:
        return fail(f"{name}: {qconvs} qconv2d, {chains} qconv2d_chain and {len(floats)} float convs "
                    f"in the -O3 IR, want 8, 11 and 1 (the stem)")
    first = ops.index("qconv2d")
    between = [o for o in ops[first:] if o in ("batchnorm", "add", "relu", "mul", "cast", "quant", "quantize")]
    if between or ops.count("quant") + ops.count("quantize") != 0:
        return fail(f"{name}: float ops left between the convs or after the stem: {between}; all ops: {ops}")
    blob = os.path.join(tmp, name + ".bin")
    p = run([BNNCC, "-O3", "--report", model, "-o", blob])
    if p.returncode:
        return fail(f"{name}: bnncc -O3: {p.stderr.strip()}")
    # (a batch alternative, another kernel for the same step from a batch on, is not a step of its own)
    lines = [m.group(1) for m in re.finditer(r"^plan: step \d+ \w+(.*)$", p.stdout + p.stderr, re.M)]
    steps = sum("the GPU's from batch" not in x and x.startswith(" (kernel ") for x in lines)
    if not lines or steps > PLAN_STEPS_MAX:
        return fail(f"{name}: {steps} GPU plan steps, want at most {PLAN_STEPS_MAX}")
    # Every qconv kernel is the halo kernel, whose blocks walk the tiles in y: the runtime launches
    # one wave of them (BLOB_STEP_ONE_WAVE); the stem's and the fixup's kernels walk in x, or not.
    halo = [x for x in lines if re.match(r" \(kernel s\d+_qconv", x)]
    other = [x for x in lines if x.startswith(" (kernel ") and x not in halo]
    if not halo or any("one wave" not in x for x in halo) or any("one wave" in x for x in other):
        return fail(f"{name}: the qconv steps without 'one wave' in --report's plan lines, or others with it: "
                    f"{[x[:40] for x in halo if 'one wave' not in x] + [x[:40] for x in other if 'one wave' in x]}")
    rc = re.search(r"^codegen: (\d+) low-bit convolutions read their residual as its codes", p.stderr, re.M)
    gap = re.search(r"^codegen: (\d+) global average pools read the codes of a dequantized value", p.stderr, re.M)
    if not rc or rc.group(1) != "5" or not gap or gap.group(1) != "1":
        return fail(f"{name}: --report counts {rc.group(1) if rc else 'no'} convs reading their residual as "
                    f"codes and {gap.group(1) if gap else 'no'} pools reading codes, want 5 (every block's second "
                    f"conv, stage 1's first) and 1 (the global pool of the last block's value)")
    qr = re.search(r"^codegen: (\d+) low-bit convolutions compute the 1x1 downsample convolution", p.stderr, re.M)
    if not qr or qr.group(1) != "3":
        return fail(f"{name}: --report counts {qr.group(1) if qr else 'no'} convs computing their downsample, want 3 "
                    f"(stages 2-4's first blocks: qconv.cu QC_RESD)")
    cu = run([BNNCC, "-O3", model, "--emit=cuda", "-o", "-"])  # the kernels' source, which both checks read
    if cu.returncode:
        return fail(f"{name}: bnncc --emit=cuda: {cu.stderr.strip()}")
    why = resd_layout(name, cu.stdout, blob) or fixup_weights(cu.stdout, blob)
    if why:
        return fail(f"{name}: {why}")
    print(f"{name}: {steps} plan steps at -O3 ({PLAN_STEPS_BEFORE} before qconv2d_chain), "
          f"{len(lines) - steps} batch alternatives")
    # The stem (conv, batch-norm, relu, max-pool, quant) is one conv2d_chain with a quantizer:
    # a conv2d step writing each pixel's codes, the GPU's recomputation of the sums too close to
    # call (a kernel step), then the max-pool of codes; no affine, relu or quantize pass (the
    # conv's batch alternatives, other kernels for the same step, aside).
    kinds = [m.group(1) for m in re.finditer(r"^plan: step \d+ (\w+)(.*)$", p.stdout + p.stderr, re.M)
             if "the GPU's from batch" not in m.group(2)]
    if kinds[:3] != ["conv2d", "kernel", "maxpool"] or "affine" in kinds or "relu" in kinds or "quantize" in kinds:
        return fail(f"{name}: plan steps {kinds[:6]}..., want conv2d, kernel, maxpool first and no affine, relu "
                    f"or quantize")
    cubins = cubin_sections(blob)
    if sorted(cubins) != ["sm_80", "sm_90a"] or min(cubins.values()) == 0:
        return fail(f"{name}: CUBIN sections {cubins}")
    # No qconv kernel in local memory (ptxas, through --report): a loop index into the chains'
    # accumulator arrays put them in a 256-byte stack frame, the full model's chain layers 11-28 %
    # slower at batch 256 (docs/perf.md stop 32).
    res = re.findall(r"^codegen: (sm_\w+): \d+ kernels, [^\n]*?(?:local memory in ([^\n]*))?$", p.stderr, re.M)
    local = {arch: re.findall(r"(s\d+_qconv) \(", kernels) for arch, kernels in res}
    if sorted(local) != ["sm_80", "sm_90a"] or any(local.values()):
        return fail(f"{name}: qconv kernels with a stack frame or spills (ptxas, --report): {local}")
    rng = np.random.default_rng(7)
    # batch 17 on the GPU: the 8x8 layers' qconvs on their batch alternatives (8x8 tiles from 16)
    batches = (1, 3, 17) if device == "gpu" else (1, 3)
    for batch in batches:
        x = rng.standard_normal((batch,) + qonnx_resnet.shape(name)).astype(np.float32)
        why = same_as_reference(tmp, name, model, blob, device, x)
        if why:
            return fail(f"{name} batch {batch} ({device}): {why}")
    if device == "gpu":
        for nb in (5, 130):
            why = nan_pixels_gpu_equals_cpu(tmp, "nan", blob, rng.standard_normal((nb,) + qonnx_resnet.shape(name)))
            if why:
                return fail(f"{name} batch {nb}: {why}")
        print(f"ok: {name}: NaN and inf pixels at batches 5 and 130, GPU = CPU path byte for byte")
    refused_chains(tmp, blob, os.path.join(tmp, f"{name}_x.npy"))
    print(f"ok: {name}: 8 qconv2d and 11 qconv2d_chain, model.bin ({device}) identical to the reference "
          f"at batches {', '.join(map(str, batches))}")


STEP_KERNEL, STEP_QCONV, FLAG_CPU_ONLY, SLOT_IN, SLOT_IN2, SLOT_OUT, SLOT_W, SLOT_P0, SLOT_P1 = 16, 20, 1, 0, 1, 2, 3, 4, 5


def resd_layout(name, src, blob):
    """The data of each kernel step that computes its residual's downsample (qconv.cu QC_RESD,
    lower.c lower_qconv_resd), against the CPU-only steps it stands for: the downsample D (the
    CPU-only qconv step whose output is the chain step's in2) and the chain step (CPU-only, right
    before it, the same output): in2 = D's input; p0 = the chain's constants, D's, then D's
    weight rows; the kernel's QC_RESD_* = D's geometry and chain (its descriptor p1)."""
    b = open(blob, "rb").read()
    wsec = blob_sections(b)[3]
    steps = blob_steps(b)
    flags = lambda at: struct.unpack_from("<I", b, at + 8)[0]  # noqa: E731
    params = lambda at: struct.unpack_from("<24q", b, at + 456)  # noqa: E731 (BlobQconvParams' order)
    wdata = lambda sl: b[wsec[0] + sl[2]:wsec[0] + sl[2] + sl[3]]  # noqa: E731
    found = 0
    for i, (at, kind, kname) in enumerate(steps):
        m = re.search(r"#define QC_NAME %s\n(.*?)#include|#define QC_NAME %s\n(.*?)// qconv\.cu" % (kname, kname),
                      src, re.S) if kind == STEP_KERNEL and kname else None
        block = m and (m.group(1) or m.group(2))
        if not block or "#define QC_RESD 1" not in block:
            continue
        if flags(at) & 4:  # a batch alternative: the same data as its main step's
            continue
        found += 1
        chain_at = steps[i - 1][0]
        if steps[i - 1][1] != STEP_QCONV or not flags(chain_at) & FLAG_CPU_ONLY or \
                blob_slot(b, chain_at, SLOT_OUT)[2] != blob_slot(b, at, SLOT_OUT)[2]:
            return f"{kname}: the step before it is not its CPU-only chain step"
        r_off = blob_slot(b, chain_at, SLOT_IN2)[2]
        # (the arena reuses offsets: the last step before the chain step that writes its residual's)
        ds = [a for a, _, _ in steps[:i - 1] if blob_slot(b, a, SLOT_OUT)[2] == r_off]
        if not ds or [k for a, k, _ in steps if a == ds[-1]] != [STEP_QCONV] or not flags(ds[-1]) & FLAG_CPU_ONLY:
            return f"{kname}: the step that writes its chain step's residual is not a CPU-only qconv"
        d = ds[-1]
        dp = params(d)  # c, h, w, o, kh, kw, stride_h, stride_w, pad_top, pad_left, dil_h, dil_w, oh, ow, ldw, xb, ...
        if blob_slot(b, at, SLOT_IN2)[2] != blob_slot(b, d, SLOT_IN)[2]:
            return f"{kname}: in2 is not the downsample's input"
        desc = np.frombuffer(wdata(blob_slot(b, d, SLOT_P1)), np.int32)
        want = {"QC_RESD_C": dp[0], "QC_RESD_H": dp[1], "QC_RESD_W": dp[2], "QC_RESD_SH": dp[6],
                "QC_RESD_SW": dp[7], "QC_RESD_XB": dp[15], "QC_RESD_LDW": dp[14], "QC_RESD_NST": desc[0],
                "QC_RESD_DIV": desc[1], "QC_RESD_RELU": desc[2], "QC_RESD_ORELU": desc[4]}
        for k, v in want.items():
            got = re.search(r"#define %s (\d+)" % k, block)
            if not got or int(got.group(1)) != int(v):
                return f"{kname}: {k} {got.group(1) if got else 'missing'}, the downsample's {v}"
        ep = wdata(blob_slot(b, at, SLOT_P0))
        parts = wdata(blob_slot(b, chain_at, SLOT_P0)) + wdata(blob_slot(b, d, SLOT_P0)) + wdata(blob_slot(b, d, SLOT_W))
        # then (QC_RESD_FAST) the fast test's rows, 20 words a channel (blob.h BLOB_QRESD_WORDS)
        rows = len(ep) - len(parts)
        if "#define QC_RESD_FAST 1" not in block:
            return f"{kname}: no QC_RESD_FAST (codes only, clean chains: the fast test)"
        if ep[:len(parts)] != parts or rows != dp[3] * 20 * 4:
            return f"{kname}: p0 ({len(ep)} bytes) is not the chain's constants, the downsample's, its weights " \
                   f"({len(parts)} bytes) and {dp[3]} fast rows"
        fr = np.frombuffer(ep[len(parts):], np.float32).reshape(dp[3], 20)
        ints = fr.view(np.int32)
        # every channel decides: sgn +-1, finite kappa, each level's interval [il, ih] with lo <= hi + 1
        if not (np.all(np.abs(fr[:, 1]) == 1) and np.all(np.isfinite(fr[:, 0]))):
            return f"{kname}: a fast row without its sign or kappa"
        for lv in range(3):
            lo, hi, il, ih = fr[:, 4 + 4 * lv], fr[:, 5 + 4 * lv], ints[:, 6 + 4 * lv], ints[:, 7 + 4 * lv]
            inside = (il <= ih) & ~(np.isinf(lo) & (lo == hi))  # (+-inf both: one status at every d)
            if np.any(inside & ~(np.isfinite(lo) & np.isfinite(hi))) or np.any(inside & (lo > hi + 1.0)):
                return f"{kname}: level {lv}'s bounds are not a narrow band (lo {lo[:4]}, hi {hi[:4]})"
    if found != 3:
        return f"{found} kernel steps with QC_RESD, want 3"
    print(f"ok: {name}: the 3 fused downsamples' steps read the downsample's input, constants, weights and fast rows")
    return None


def fixup_weights(src, blob):
    """The stem fixup's weights (lower.c, float_ops.cu bnn_conv2d_bits_fixwin and _gw): W the f32
    weights [O][K] in the reference's k order (c, ky, kx), P1 the same as [K/4][O][4] with zeros
    past K (fixwin_gw's 16-byte loads of 4 k a lane): the same numbers, so that a wrong layout
    shows without a GPU (on one, the fixup from batch 64 would compute wrong sums)."""
    b = open(blob, "rb").read()
    wsec = blob_sections(b)[3]
    wdata = lambda sl: np.frombuffer(b[wsec[0] + sl[2]:wsec[0] + sl[2] + sl[3]], np.float32)  # noqa: E731
    fixes = [(at, kname) for at, kind, kname in blob_steps(b)
             if kind == STEP_KERNEL and kname.endswith("stemfix") and not struct.unpack_from("<I", b, at + 8)[0] & 4]
    if len(fixes) != 1:
        return f"{len(fixes)} main steps of the stem's fixup, want 1"
    at, kname = fixes[0]
    if not re.search(r"bnn_conv2d_bits_fixwin_gw<s\d+_stemfix_cfg>", src):
        return f"{kname}: no bnn_conv2d_bits_fixwin_gw alternative (the codes stem's fixup from batch 64)"
    cfg = re.search(r"struct %s_cfg \{(.*?)\};" % kname, src, re.S)
    dims = dict(re.findall(r"\b(C|KH|KW|O) = (\d+)", cfg.group(1))) if cfg else {}
    if len(dims) != 4:
        return f"{kname}: its config's C, KH, KW, O not found"
    o, k = int(dims["O"]), int(dims["C"]) * int(dims["KH"]) * int(dims["KW"])
    w, q = wdata(blob_slot(b, at, SLOT_W)), wdata(blob_slot(b, at, SLOT_P1))
    k4 = (k + 3) // 4
    if w.size != o * k or q.size != k4 * o * 4:
        return f"{kname}: W {w.size} and P1 {q.size} floats, want {o} x {k} and {k4} x {o} x 4"
    want = np.zeros((k4 * 4, o), np.float32)
    want[:k] = w.reshape(o, k).T
    if not np.array_equal(q.reshape(k4, o, 4), want.reshape(k4, 4, o).transpose(0, 2, 1)):
        return f"{kname}: P1 is not W as [K/4][O][4]"
    print(f"ok: {kname}: the fixup's weights [O][K] = {o} x {k} and, for fixwin_gw, [K/4][O][4]")
    return None


def unclean_block(tmp, device):
    """A zero batch-norm gamma in stage 1's first block: no thresholds by a residual code there
    (lower.c qchain_clean), nor in the block after it (its residual may be NaN, and no GPU
    kernel writes the flags)."""
    import onnx
    from onnx import numpy_helper
    name = "w1a2resnet18_tiny"
    m = qonnx_resnet.make(name)
    conv = next(n for n in m.graph.node if n.op_type == "Conv" and n.name == "Conv_31")
    bn = next(n for n in m.graph.node if n.op_type == "BatchNormalization" and n.input[0] == conv.output[0])
    init = next(i for i in m.graph.initializer if i.name == bn.input[1])
    gamma = numpy_helper.to_array(init).copy()
    gamma[3] = 0.0
    init.CopyFrom(numpy_helper.from_array(gamma, init.name))
    model, blob = os.path.join(tmp, "unclean.onnx"), os.path.join(tmp, "unclean.bin")
    onnx.save(m, model)
    p = run([BNNCC, "-O3", "--report", model, "-o", blob])
    if p.returncode:
        return fail(f"unclean block: bnncc -O3: {p.stderr.strip()}")
    rc = re.search(r"^codegen: (\d+) low-bit convolutions read their residual as its codes", p.stderr, re.M)
    if not rc or rc.group(1) != "3":
        return fail(f"unclean block: --report counts {rc.group(1) if rc else 'no'} convs reading their residual "
                    f"as codes, want 3 (stage 1's two blocks keep their float chains)")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3,) + qonnx_resnet.shape(name)).astype(np.float32)
    why = same_as_reference(tmp, "unclean", model, blob, device, x)
    if why:
        return fail(f"unclean block ({device}): {why}")
    if device == "gpu":
        why = nan_pixels_gpu_equals_cpu(tmp, "unclean_nan", blob, x)
        if why:
            return fail(f"unclean block: {why}")
    print(f"ok: a zero gamma keeps stage 1's blocks on their float chains (3 read codes); model.bin ({device}) "
          f"equals the reference")


def patched_chain(blob, out, params=(), words=()):
    """A copy of blob whose first qconv step with the float chain (kind 20, epi 3) has
    params[i] = v and descriptor word i (p1, in the weights) = v, checksums recomputed."""
    b = bytearray(open(blob, "rb").read())
    sec = {}
    for i in range(struct.unpack_from("<I", b, 16)[0]):
        kind, (off, size) = struct.unpack_from("<I", b, 64 + 48 * i)[0], struct.unpack_from("<QQ", b, 64 + 48 * i + 24)
        sec[kind] = off
    plan, nsteps = sec[2], struct.unpack_from("<I", b, sec[2])[0]
    for k in range(nsteps):
        at = plan + 64 + 648 * k
        if struct.unpack_from("<I", b, at)[0] == 20 and struct.unpack_from("<q", b, at + 456 + 8 * 19)[0] == 3:
            p1 = sec[3] + struct.unpack_from("<Q", b, at + 264 + 24 * 5 + 8)[0]
            for i, v in params:
                struct.pack_into("<q", b, at + 456 + 8 * i, v)
            for i, v in words:
                struct.pack_into("<i", b, p1 + 4 * i, v)
            break
    open(out, "wb").write(rechecksum(b))


def refused_chains(tmp, blob, x):
    """The loader checks the chain's descriptor field by field (docs/blob-format.md)."""
    cases = [("9 stages", [], [(0, 9)]), ("a div mask past the stages", [], [(1, 1 << 5)]),
             ("residual 3", [], [(3, 3)]), ("f32 output 3", [], [(5, 3)]),
             ("codes without a quantizer", [], [(6, 0)]), ("lo >= hi", [], [(7, 3), (8, 3)]),
             ("rounding 7", [], [(9, 7)]), ("levels 1", [(20, 1)], []), ("epi 4", [(19, 4)], [])]
    for what, params, words in cases:
        bad = os.path.join(tmp, "bad.bin")
        patched_chain(blob, bad, params, words)
        p = run([BNNRUN, bad, "--device", "cpu", "--input", x, "--output", os.path.join(tmp, "bad.npy")])
        if p.returncode == 0 or "(qconv)" not in p.stderr:
            return fail(f"a qconv chain with {what} was not refused: exit {p.returncode}, {p.stderr.strip()!r}")
    print(f"ok: {len(cases)} damaged qconv chains refused by the loader")


def signed_pool(tmp, device):
    """x -> signed 2-bit quant (zero point 0) -> max-pool -> binary-weight conv: not hoisted."""
    import onnx
    n = qconv_models.Net("signed_pool", np.random.default_rng(5))
    q = n.quant("x", 0.25, 2, 1)
    p = n.node("MaxPool", [q], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    model = os.path.join(tmp, "signed_pool.onnx")
    onnx.save(n.model((4, 9, 9), n.conv(p, 4, 8, 3, 1, 1, 1)), model)
    ops, err = ir_ops(model)
    if ops is None or "qconv2d" in ops or "maxpool" not in ops:
        return fail(f"signed_pool: -O3 IR ops {ops} {err}: want the pool kept before a float conv")
    blob = os.path.join(tmp, "signed_pool.bin")
    p = run([BNNCC, "-O3", model, "-o", blob])
    if p.returncode:
        return fail(f"signed_pool: bnncc -O3: {p.stderr.strip()}")
    x = np.random.default_rng(9).uniform(-0.2, 0.2, size=(3, 4, 9, 9)).astype(np.float32)
    why = same_as_reference(tmp, "signed_pool", model, blob, device, x)
    if why:
        return fail(f"signed_pool ({device}): {why}")
    print(f"ok: a pool of a signed quant keeps its order; model.bin ({device}) equals the reference")


def batch_alternatives(tmp):
    """The full-size w1a2 ResNet-18's qconv batch alternatives (codegen/cuda/kernels.h
    bnn_qhalo_batch_alts, measured on an H200: docs/perf.md stops 31, 38, 41, 44 and 50), from its
    plan: 14 larger tiles of 3x3 layers from batch 4, 2 from 16 (the 1x1 downsamples into 14x14
    and 7x7 on 8x8 and 4x8), 3 from 64 (the 1x1 downsample into 28x28 on 8x16 tiles, the stride-2
    threshold layers into 28x28 and 7x7 on 128 channels a block) and 1 from 128 (the 28x28 chain
    of codes alone back on the rule's tile; its two 28x28 threshold layers keep 8x16), none below
    4. The CPU target: no NVRTC (and no residual read as codes)."""
    import onnx
    name = "w1a2resnet18"
    model = os.path.join(tmp, name + ".onnx")
    onnx.save(qonnx_resnet.make(name), model)
    p = run([BNNCC, "-O3", "--target=cpu", "--report", model, "-o", os.path.join(tmp, name + ".bin")])
    if p.returncode:
        return fail(f"{name}: bnncc -O3 --target=cpu: {p.stderr.strip()}")
    alts = re.findall(r"^plan: step \d+ qconv \(kernel \w+, the GPU's from batch (\d+) ", p.stdout + p.stderr, re.M)
    counts = {b: alts.count(b) for b in sorted(set(alts), key=int)}
    if counts != {"4": 14, "16": 2, "64": 3, "128": 1}:
        return fail(f"{name}: qconv batch alternatives from batches {counts}, want 14 from 4, 2 from 16, 3 from 64 "
                    f"and 1 from 128")
    # --report's tune lines name them too (what bnncc --tune compares with at those batches)
    tune = re.findall(r"^tune: step \d+ \(\w+\) runs [^;]*", p.stdout + p.stderr, re.M)
    if sum(", from batch 4 on halo " in x for x in tune) != 14:
        return fail(f"{name}: --report's tune lines do not name 14 alternatives from batch 4: {tune[:3]}")
    conv17 = [x for x in tune if "(Conv_17)" in x]
    if not conv17 or not conv17[0].endswith(", from batch 4 on halo 8x8 px, 64 ch, 4 warps, minb 2"):
        return fail(f"{name}: Conv_17's tune line: {conv17}")
    # the stride-2 threshold layers into 28x28 and 7x7: 128 channels a block from batch 64
    wide = {"Conv_75": "4x8 px, 128 ch, 4 warps", "Conv_209": "8x8 px, 128 ch, 8 warps"}
    for layer, cfg in wide.items():
        line = [x for x in tune if f"({layer})" in x]
        if not line or not line[0].endswith(f", from batch 64 on halo {cfg}, minb 2"):
            return fail(f"{name}: {layer}'s tune line: {line}")
    print(f"ok: {name}: 20 qconv batch alternatives (14 from batch 4, 2 from 16, 3 from 64, 1 from 128), named "
          f"by --report's tune lines")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if a.device == "gpu" and not gpu_available(tmp):
            print("skipped: no GPU or no NVIDIA driver")
            sys.exit(77)
        resnet(tmp, a.device)
        unclean_block(tmp, a.device)
        signed_pool(tmp, a.device)
        if a.device == "cpu":
            batch_alternatives(tmp)
    checks = 4 if a.device == "cpu" else 3
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
