#!/usr/bin/env python3
"""The halo qconv with thresholds by a residual code (qconv.cu QC_HALO 1, QC_EPI 2 with
QC_RCODE > 0; codegen/lower.c lower_qconv_rcode: a qconv2d_chain whose residual is the
dequantized float of another layer's codes compares its accumulator with levels picked by the
residual's code) without a GPU, bit for bit against the CPU-only chain step it stands for.

Models (QONNX, bnncc -O3 --target=sm_80: the plan and weights do not depend on the target, and
the sm_80 CUBIN is the kernel cache's entry of a default compile too): w1a2resnet18_tiny
(bench/qonnx_resnet.py: 5 such layers, stage 1's two blocks over the stem's pool of codes with
QC_RNAN 1, the first also QC_YNAN 1, stages 2 and 3's second blocks, and stage 4's, whose codes
no conv reads, only the global pool of its float: lower.c gap_reads_codes; 8x8 batch
alternatives), rc_c40 (a stem of 40 channels, 32x30 pooled to 16x15, two blocks of 40 channels
over it with QC_RNAN (and QC_YNAN), 8x16 batch alternatives of 8 warps, a block of 70 channels
at 8x8 (a last column block of 6 channels) with its 8x8 alternative) and rc_q1 (36 channels,
7x9: a 1-bit residual (one code plane), 2-bit signed weights, a signed narrow quantizer with
pad code 2 into the layer and out of it (2 levels), the residual on the left of the add, a
residual of 3 valid codes with a zero point and FLOOR rounding, a 1-bit output (1 level) with
HALF_UP); batch-norm gammas negative on every 8th channel (codes falling with the sum); tiles
that overhang the output everywhere. bnncc's --report must count the model's layers, and the
kernels' QC_RCODE / QC_RNAN / QC_YNAN must be the expected ones.

For each kernel step (its #define block from --emit=cuda, its launch and weights from the
blob) and its batch alternative, rcode_emu.cc runs it under tests/codegen/bconv_emu.h's block
emulator on random input codes (padding bits and plane tails zero), random residual codes, and
where QC_RNAN random NaN flags (3 %) in the residual's f32 buffer (its other words garbage), at
batches 1, 3 and one where blocks take several tiles. Expected: numpy's exact accumulators from
the blob's weight planes (a padded tap reads pad_code), then blob.h blob_qconv_chain_value and
blob_quantize in float32, one rounding per operation, on the residual's float ((code + lo) -
zeropt) * scale of its producer's quantizer (the chain step's in2, whose producer is found in
the plan), NaN under a flag: every word of Y (the code planes, padding words and tails zero)
and, where QC_YNAN, the NaN flag words of YN at real pixels (the rest of YN untouched, a
pixel's padding words untouched or zero). Two emulator processes share the launches. Also
checked without the emulator: each table T against the chain for every accumulator in each
channel's reachable range and every residual code (lower.c rcode_levels). Then copies of a
kernel's data are broken (a level of T, a mask of T, a residual code bit, a NaN flag, a weight
word) and each must be reported. The one line of the kernel the emulator cannot run, the prmt
that picks a residual code's int16 level on the GPU (<name>_half), is checked against PTX's
prmt semantics. --sanitized (the ASan + UBSan build): the emulator built with
the sanitizers at -O0, batches 1 and 3, on the two custom models. Exit 77 (skipped) without a
C++20 compiler, NVRTC or onnx.

    rcode_emu.py [--sanitized] [--keep DIR]"""
import copy
import os
import re
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import emu_steps  # noqa: E402  (kernel steps, bnncc, the emulator's build and runs)
import test_e2e  # noqa: E402  (the blob readers)
from emu_steps import (ARG_BATCH, ARG_I64, ARG_PTR, FLAG_CPU_ONLY, POISON, SLOT_IN, SLOT_IN2,  # noqa: E402
                       SLOT_OUT, SLOT_P0, SLOT_P1, SLOT_W, SLOT_X0, SLOT_X1, SPACE_NONE, SPACE_WEIGHTS, STEP_CONV2D,
                       STEP_KERNEL, STEP_MAXPOOL, STEP_QCONV, define, grid_dim, launch_dims, pack, step_params,
                       unpack, weights)
from test_e2e import fail  # noqa: E402

sys.path.insert(0, os.path.join(test_e2e.SRC, "bench"))  # qonnx_resnet
QCONV_PARAMS = ("c h w o kh kw stride_h stride_w pad_top pad_left dil_h dil_w oh ow ldw xb wb wsigned bipolar epi "
                "levels yb pad_code ldy").split()
# blob.h BLOB_QCHAIN_*: a qconv chain step's descriptor (p1)
QCHAIN = "stages div relu residual out_relu f32 quant lo hi rounding scale zeropt".split()


# ---------------------------------------------------------------- models

def custom_models():
    """{name: onnx.ModelProto} of the two custom models (bench/qonnx_resnet.py's Graph: layers
    calibrated on a random batch, every 8th gamma negative, power-of-two scales)."""
    import qonnx_resnet
    from qonnx_resnet import QDOM

    class Net(qonnx_resnet.Graph):
        def quant(self, x, bits, signed=0, zeropt=0.0, narrow=0, rounding="ROUND", relu=False, spread=2.0):
            """A Quant (after a Relu with relu) of a power-of-two scale near the input's deviation
            over spread."""
            name, v = x
            if relu:
                name, v = self.node("Relu", [name]), np.maximum(v, 0)
            scale = np.float32(2.0 ** np.round(np.log2(max(v.std(), 1e-3) / spread)))
            lo = -(1 << (bits - 1)) + narrow if signed else 0
            hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
            q = self.node("Quant", [name, self.const(scale, "s"), self.const(np.float32(zeropt), "z"),
                                    self.const(np.float32(bits), "b")], QDOM, signed=signed, narrow=narrow,
                          rounding_mode=rounding)
            return q, (np.clip(np.round(v / scale + zeropt), lo, hi) - zeropt) * scale

        def conv_w2(self, x, o):
            """A 3x3 conv of 2-bit signed weights (a power-of-two scale a channel)."""
            name, v = x
            scale = 2.0 ** -self.rng.integers(4, 8, size=(o, 1, 1, 1))
            w = (self.rng.integers(-2, 2, size=(o, v.shape[1], 3, 3)) * scale).astype(np.float32)
            wq = self.node("Quant", [self.const(w, "w"), self.const(scale.astype(np.float32), "ws"),
                                     self.const(np.float32(0), "wz"), self.const(np.float32(2), "wb")], QDOM,
                           signed=1, narrow=0, rounding_mode="ROUND")
            y = self.node("Conv", [name, wq], kernel_shape=[3, 3], strides=[1, 1], pads=[1] * 4)
            return y, qonnx_resnet.conv_nchw(v, w.astype(np.float64), 1, 1)

        def add(self, a, b):
            return self.node("Add", [a[0], b[0]]), a[1] + b[1]

        def model(self, name, x_shape, y):
            from onnx import TensorProto, helper
            f = self.node("Flatten", [self.node("GlobalAveragePool", [y[0]])], axis=1)
            g = helper.make_graph(self.nodes, name,
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *x_shape])],
                                  [helper.make_tensor_value_info(f, TensorProto.FLOAT, None)], initializer=self.inits)
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(QDOM, 1)])
            m.ir_version = 8
            return m

    def rc_c40():
        """A float stem (3x3, 40 channels, relu, 2-bit quant, max-pool 3x3/2: 16x15 codes and NaN
        flags), two blocks of 40 channels (both read their residual as codes: QC_RNAN, the first
        QC_YNAN), a downsampling block to 70 channels at 8x8 (its residual a float: not taken),
        a block of 70 channels (taken), a last conv whose float the pool reads."""
        g = Net(np.random.default_rng(40))
        x = ("x", g.rng.standard_normal((4, 3, 32, 30)))
        h = g.maxpool(g.quant_relu(g.bn(g.conv(x, 40, 3, 1, 1, False))))
        h = g.block(h, 40, 1)
        h = g.block(h, 40, 1)
        h = g.block(h, 70, 2)
        h = g.block(h, 70, 1)
        return g.model("rc_c40", (3, 32, 30), g.bn(g.conv(h, 16, 3, 1, 1, True)))

    def rc_q1():
        """36 channels at 7x9 after a 2-bit input quant: a block whose 1-bit quant (the residual
        of the next, one code plane) adds a 1x1 conv's float; then three blocks that read their
        residual as codes: 2-bit signed weights over signed 2-bit codes (pad code 2), the residual
        first, a signed narrow quantizer (2 levels; 3 codes as the next one's residual); a relu,
        a zero point of 1 and FLOOR; a 1-bit quantizer (1 level) with HALF_UP."""
        g = Net(np.random.default_rng(41))
        x = ("x", g.rng.standard_normal((4, 5, 7, 9)))
        a = g.quant(x, 2)
        h0 = g.quant(g.add(g.bn(g.conv(a, 36, 3, 1, 1, True)), g.bn(g.conv(a, 36, 1, 1, 0, True))), 1, spread=1.0)
        h1 = g.quant(g.bn(g.conv(h0, 36, 3, 1, 1, True)), 2, signed=1)
        h2 = g.quant(g.add(h0, g.bn(g.conv_w2(h1, 36))), 2, signed=1, narrow=1)
        h3 = g.quant(g.bn(g.conv(h2, 36, 3, 1, 1, True)), 2, relu=True)
        h4 = g.quant(g.add(g.bn(g.conv(h3, 36, 3, 1, 1, True)), h2), 2, zeropt=1.0, relu=True, rounding="FLOOR")
        h5 = g.quant(g.bn(g.conv(h4, 36, 3, 1, 1, True)), 2, relu=True)
        h6 = g.quant(g.add(g.bn(g.conv(h5, 36, 3, 1, 1, True)), h4), 1, rounding="HALF_UP", spread=1.0)
        return g.model("rc_q1", (5, 7, 9), g.bn(g.conv(h6, 8, 3, 1, 1, True)))

    return {"rc_c40": rc_c40(), "rc_q1": rc_q1()}


# Per model: the kernels lower_qconv_rcode makes, in plan order, as (O, QC_RCODE, QC_RNAN,
# QC_YNAN, batch alternative); the --report count is the number of main steps.
EXPECT = {
    "w1a2resnet18_tiny": [(16, 2, 1, 1, True), (16, 2, 1, 0, True), (64, 2, 0, 0, False), (128, 2, 0, 0, False),
                          (160, 2, 0, 0, False)],
    "rc_c40": [(40, 2, 1, 1, True), (40, 2, 1, 0, True), (70, 2, 0, 0, True)],
    "rc_q1": [(36, 1, 0, 0, False), (36, 2, 0, 0, False), (36, 2, 0, 0, False)],
}


def write_models(tmp, names):
    import onnx
    import qonnx_resnet
    paths = {}
    custom = custom_models() if set(names) - {"w1a2resnet18_tiny"} else {}
    for name in names:
        paths[name] = os.path.join(tmp, name + ".onnx")
        onnx.save(qonnx_resnet.make(name) if name == "w1a2resnet18_tiny" else custom[name], paths[name])
    return paths


# ---------------------------------------------------------------- the blob

def f32_bits(u):
    return np.array([u & 0xFFFFFFFF], np.uint32).view(np.float32)[0]


class Kernel(emu_steps.KernelStep):
    """One QC_RCODE kernel step: defines, launch, operands, the CPU-only chain step's
    parameters (qp, desc, ep) and the residual's quantizer (rlo, rscale, rzero, rcodes)."""


def codes_slots(b, at, kind):
    """(codes slot, f32 slot, residual quantizer (lo, scale bits, zeropt bits, codes, planes))
    of a step that writes a quantizer's codes and its dequantized float: a qconv chain step, or
    a maxpool of a stem's codes; None otherwise."""
    slot = lambda s: test_e2e.blob_slot(b, at, s)  # noqa: E731
    if kind == STEP_QCONV:
        qp = dict(zip(QCONV_PARAMS, step_params(b, at)))
        if qp["epi"] != 3 or slot(SLOT_P1)[0] != SPACE_WEIGHTS:
            return None
        d = dict(zip(QCHAIN, struct.unpack_from("<12i", b, test_e2e.blob_sections(b)[3][0] + slot(SLOT_P1)[2])))
        if not d["quant"] or d["f32"] != 2 or not qp["yb"]:
            return None
        return (slot(SLOT_X1), slot(SLOT_OUT), (d["lo"], d["scale"], d["zeropt"], d["hi"] - d["lo"] + 1, qp["yb"]))
    if kind == STEP_MAXPOOL:
        p = step_params(b, at)
        if not p[17] or slot(SLOT_X0)[0] == SPACE_NONE:  # planes, the float in x0
            return None
        return (slot(SLOT_OUT), slot(SLOT_X0), (p[18], p[19], p[20], None, p[17]))
    return None


def model_kernels(name, report, b, defs, k):
    """[Kernel] of the QC_RCODE steps of the blob b of model `name` (defs: the model's QC_RCODE
    kernels' #define blocks; k: its number, the kernels' prefix), each with its CPU-only chain
    step and its residual's producer."""
    expect = EXPECT[name]
    m = re.search(r"^codegen: (\d+) low-bit convolutions read their residual as its codes", report, re.M)
    if not m or int(m.group(1)) != len(expect):
        fail(f"{name}: bnncc's report counts {m.group(1) if m else 'no'} layers that read their residual as "
             f"codes, expected {len(expect)}")
        return []
    wsec = test_e2e.blob_sections(b)[3]
    steps = test_e2e.blob_steps(b)
    flags = {at: emu_steps.step_flags(b, at) for at, _, _ in steps}
    slot = lambda at, s: test_e2e.blob_slot(b, at, s)  # noqa: E731
    out = []
    for at, kind, kname in steps:
        if kind != STEP_KERNEL or kname not in defs:
            continue
        K = Kernel(b, at, name, kname, k, defs[kname])
        args = K.args
        K.rnan, K.ynan = define(K.defines, "QC_RNAN"), define(K.defines, "QC_YNAN")
        want = [(ARG_PTR, SLOT_IN, 0), (ARG_PTR, SLOT_W, 0), (ARG_BATCH, 0, None), (ARG_PTR, SLOT_P0, 0),
                (ARG_PTR, SLOT_IN2, 0), (ARG_PTR, SLOT_X0, 0) if K.rnan else (ARG_I64, 0, 0), (ARG_PTR, SLOT_OUT, 0),
                (ARG_PTR, SLOT_X1, 0) if K.ynan else (ARG_I64, 0, 0)]
        if len(args) != 8 or any(a[:2] != w[:2] or (w[2] is not None and a[2] != w[2]) for a, w in zip(args, want)):
            fail(f"{name} {kname}: kernel arguments {args} (expected X, W, rows, T, R, RN, Y, YN as {want})")
            continue
        # The CPU-only chain step it stands for: same in and weights, its codes in the kernel's out.
        ks = {s: slot(at, s) for s in range(8)}
        chain = None
        for a2, kd, _ in steps:
            if kd == STEP_QCONV and flags[a2] & FLAG_CPU_ONLY and slot(a2, SLOT_IN) == ks[SLOT_IN] \
                    and slot(a2, SLOT_W) == ks[SLOT_W] and dict(zip(QCONV_PARAMS, step_params(b, a2)))["epi"] == 3:
                d = dict(zip(QCHAIN, weights(b, wsec, slot(a2, SLOT_P1), "<i4")))
                if (slot(a2, SLOT_X1) if d["f32"] else slot(a2, SLOT_OUT)) == ks[SLOT_OUT]:
                    chain = a2
                    break
        if chain is None:
            fail(f"{name} {kname}: no CPU-only qconv chain step with the kernel's in, weights and codes")
            continue
        K.qp = dict(zip(QCONV_PARAMS, step_params(b, chain)))
        K.desc = dict(zip(QCHAIN, (int(v) for v in weights(b, wsec, slot(chain, SLOT_P1), "<i4"))))
        K.ep = weights(b, wsec, slot(chain, SLOT_P0), "<f4")
        d, qp = K.desc, K.qp
        if (qp["epi"] != 3 or d["residual"] not in (1, 2) or not d["quant"] or not 1 <= d["hi"] - d["lo"] <= 3
                or K.ep.size != d["stages"] * 2 * qp["o"]):
            fail(f"{name} {kname}: the chain step is no chain with a residual and a quantizer of 1-3 levels: "
                 f"{qp}, {d}")
            continue
        # The residual's producer: the step writing the chain's f32 residual (in2) and the
        # kernel's residual codes (in2).
        prod = None
        for a2, kd, _ in steps:
            cs = codes_slots(b, a2, kd)
            if cs and cs[0] == ks[SLOT_IN2] and cs[1] == slot(chain, SLOT_IN2):
                prod = (a2, kd, cs)
                break
        if prod is None:
            fail(f"{name} {kname}: no step writes both the chain's f32 residual and the kernel's residual codes")
            continue
        a2, kd, (_, _, (rlo, rsb, rzb, rcodes, rplanes)) = prod
        if kd == STEP_MAXPOOL:  # the stem's codes: its conv2d step's levels
            conv = next((a3 for a3, kd3, _ in steps if kd3 == STEP_CONV2D and slot(a3, SLOT_OUT) == slot(a2, SLOT_IN)),
                        None)
            if conv is None:
                fail(f"{name} {kname}: no conv2d step writes the residual's max-pool input")
                continue
            rcodes = step_params(b, conv)[23] + 1
        K.rlo, K.rscale, K.rzero, K.rcodes, K.rplanes = rlo, f32_bits(rsb), f32_bits(rzb), rcodes, rplanes
        K.rsrc = "the stem's pool" if kd == STEP_MAXPOOL else "a chain"
        # the defines against the CPU step's parameters
        for dname, want_v in (("QC_C", qp["c"]), ("QC_H", qp["h"]), ("QC_W", qp["w"]), ("QC_O", qp["o"]),
                              ("QC_KH", qp["kh"]), ("QC_KW", qp["kw"]), ("QC_SH", qp["stride_h"]),
                              ("QC_SW", qp["stride_w"]), ("QC_PT", qp["pad_top"]), ("QC_PL", qp["pad_left"]),
                              ("QC_DH", qp["dil_h"]), ("QC_DW", qp["dil_w"]), ("QC_OH", qp["oh"]),
                              ("QC_OW", qp["ow"]), ("QC_XB", qp["xb"]), ("QC_WB", qp["wb"]),
                              ("QC_WSIGNED", qp["wsigned"]), ("QC_WBIPOLAR", qp["bipolar"]),
                              ("QC_PAD_CODE", qp["pad_code"]), ("QC_LDW", qp["ldw"]), ("QC_LDY", qp["ldy"]),
                              ("QC_YB", qp["yb"]), ("QC_EPI", 2), ("QC_L", d["hi"] - d["lo"]), ("QC_HALO", 1),
                              ("QC_RCODE", rplanes)):
            if define(K.defines, dname) != want_v:
                fail(f"{name} {kname}: {dname} {define(K.defines, dname)}, the CPU steps' {want_v}")
        if (K.rnan and ks[SLOT_X0] != slot(chain, SLOT_IN2)) or (K.ynan and ks[SLOT_X1] != slot(chain, SLOT_OUT)):
            fail(f"{name} {kname}: RN or YN is not the residual's or the layer's f32 buffer")
        if args[2][2] != qp["oh"] * qp["ow"]:
            fail(f"{name} {kname}: rows a batch item {args[2][2]}, expected {qp['oh'] * qp['ow']}")
        K.cfg = {n: define(K.defines, "QC_" + n) for n in ("TH", "TW", "WM", "WN")}
        K.w = weights(b, wsec, ks[SLOT_W], "<u4")
        K.T = weights(b, wsec, ks[SLOT_P0], "<i4")
        if K.T.size != qp["o"] * 8:
            fail(f"{name} {kname}: T has {K.T.size} words, expected {qp['o'] * 8}")
            continue
        out.append(K)
    got = [(K.qp["o"], K.rplanes, K.rnan, K.ynan) for K in out if not K.alt]
    alts = [K for K in out if K.alt]
    if got != [e[:4] for e in expect] or len(alts) != sum(e[4] for e in expect):
        fail(f"{name}: the kernels (O, QC_RCODE, QC_RNAN, QC_YNAN) {got} and {len(alts)} batch alternatives, "
             f"expected {[e[:4] for e in expect]} and {sum(e[4] for e in expect)}")
    return out


# ---------------------------------------------------------------- the reference

def plane_words(pixels, ld):
    return (pixels * ld + 7) // 8 * 8


def code_planes(codes, planes, ld, plane):
    """[B, pixels, c] codes -> [B, planes, plane] words: plane b holds bit b of each code,
    [pixels][ld] words (channel c at bit c % 32 of word c / 32), the tail zero."""
    B, px, _ = codes.shape
    out = np.zeros((B, planes, plane), np.uint32)
    for p in range(planes):
        out[:, p, :px * ld] = pack((codes >> p) & 1, ld).reshape(B, px * ld)
    return out


def weight_codes(K):
    """The signed weight codes u [O][KH][KW][C] from the blob's planes [wb][o][krow]."""
    p = K.qp
    taps = p["kh"] * p["kw"]
    krow = (taps * p["ldw"] + 7) // 8 * 8
    w = K.w.reshape(p["wb"], p["o"], krow)[:, :, :taps * p["ldw"]].reshape(p["wb"], p["o"], taps, p["ldw"])
    bits = unpack(w, p["c"]).astype(np.int64)  # [wb][o][taps][c]
    if p["bipolar"]:
        u = 2 * bits[0] - 1
    else:
        u = sum(bits[q] << q for q in range(p["wb"]))
        if p["wsigned"]:
            u = u - (bits[p["wb"] - 1] << p["wb"])
    return u.reshape(p["o"], p["kh"], p["kw"], p["c"])


def accumulators(K, x, u):
    """qconv2d's exact accumulators [B][OH][OW][O] of codes x [B][C][H][W] (a tap outside the
    image reads pad_code)."""
    p = K.qp
    B, C, H, W = x.shape
    sh, sw, dh, dw = p["stride_h"], p["stride_w"], p["dil_h"], p["dil_w"]
    pt, pl, oh, ow = p["pad_top"], p["pad_left"], p["oh"], p["ow"]
    hp = max(H + pt, (oh - 1) * sh + (p["kh"] - 1) * dh + 1)
    wp = max(W + pl, (ow - 1) * sw + (p["kw"] - 1) * dw + 1)
    xp = np.full((B, hp, wp, C), float(p["pad_code"]))
    xp[:, pt:pt + H, pl:pl + W, :] = x.transpose(0, 2, 3, 1)
    acc = np.zeros((B, oh, ow, p["o"]))
    for ky in range(p["kh"]):
        for kx in range(p["kw"]):
            tap = xp[:, ky * dh:ky * dh + (oh - 1) * sh + 1:sh, kx * dw:kx * dw + (ow - 1) * sw + 1:sw, :]
            acc += tap @ u[:, ky, kx, :].T.astype(np.float64)  # exact: |acc| < 2^53
    return acc.astype(np.int64)


def blob_round(v, mode):
    """blob.h blob_round in float32."""
    t = np.trunc(v)
    frac = np.abs(v - t)
    away = np.where(v < 0, t - np.float32(1), t + np.float32(1))
    if mode == 1:
        return np.ceil(v)
    if mode == 2:
        return np.floor(v)
    if mode == 3:
        return t
    if mode == 4:
        return np.where(v < 0, np.floor(v), np.ceil(v))
    if mode == 5:
        return np.where(frac >= np.float32(0.5), away, t)
    if mode == 6:
        return np.where(frac > np.float32(0.5), away, t)
    return np.rint(v)  # half to even (nearbyintf)


def residual_floats(K):
    """The residual's float of each code: ((code + lo) - zeropt) * scale, float32 ops."""
    c = np.arange(1 << K.rplanes)
    level = (c + K.rlo).astype(np.float32)
    return (level - K.rzero) * K.rscale


def chain(K, acc, r):
    """blob.h blob_qconv_chain_value then the codes, on accumulators acc [..., O] (int) and
    residuals r [..., O] (float32; NaN where the residual is): (codes q - lo, 0 for NaN; NaN
    flags of the value)."""
    d, O = K.desc, K.qp["o"]
    ep = K.ep.reshape(d["stages"], 2, O)
    v = acc.astype(np.float32)
    for k in range(d["stages"]):
        t = v / ep[k, 0] if (d["div"] >> k) & 1 else v * ep[k, 0]
        v = t + ep[k, 1]
        if (d["relu"] >> k) & 1:
            v = np.where(v < 0, np.float32(0), v)
    v = v + r if d["residual"] == 1 else r + v
    if d["out_relu"]:
        v = np.where(v < 0, np.float32(0), v)
    scale, zero = f32_bits(d["scale"]), f32_bits(d["zeropt"])
    lo, hi = np.float32(d["lo"]), np.float32(d["hi"])
    q = blob_round(v / scale + zero, d["rounding"])
    q = np.where(q < lo, lo, np.where(q > hi, hi, q))
    codes = np.where(np.isnan(q), 0, q - lo).astype(np.int64)
    return codes, np.isnan(v)


def t_table(K):
    """T [O][8] (lower.c rcode_levels) as (mask [O], levels [O][3][4]): word 0 the channel's
    fold mask, word 1 + 2l level l's int16 for residual codes 0 | 1 << 16, word 2 + 2l codes 2 |
    3 << 16."""
    t = K.T.reshape(K.qp["o"], 8)
    return t[:, 0].astype(np.int64), np.ascontiguousarray(t[:, 1:7]).view("<i2").reshape(-1, 3, 4).astype(np.int64)


def t_levels(K, acc, rc, nan):
    """The codes qconv.cu's codes_frag computes from T: with m the channel's mask and t_l its
    level l for the element's residual code (sorted), bit 0 = c0 ^ c1 ^ c2, bit 1 = c1, c_l =
    (acc ^ m) >= t_l (l < L); 0 under a NaN flag."""
    O, L = K.qp["o"], K.desc["hi"] - K.desc["lo"]
    mask, lv = t_table(K)
    th = lv[np.arange(O), :, rc]  # [..., O, 3]
    v = acc ^ mask
    c0 = v >= th[..., 0]
    c1 = (v >= th[..., 1]) & (L > 1)
    c2 = (v >= th[..., 2]) & (L > 2)
    code = (c0 ^ c1 ^ c2).astype(np.int64) + 2 * c1
    return np.where(nan, 0, code)


def table_ok(K, u):
    """T against the chain for every accumulator in each channel's reachable range (sum |u|
    times the largest input code, as lower.c's qchain_acc_bound) and every residual code the
    producer has (all channels at once, a residual code at a time)."""
    O = K.qp["o"]
    a = np.abs(u).reshape(O, -1).sum(axis=1) * ((1 << K.qp["xb"]) - 1)
    amax = int(a.max())
    acc = np.repeat(np.arange(-amax, amax + 1)[:, None], O, axis=1)  # [n][O]
    live = np.abs(acc) <= a[None, :]
    rf = residual_floats(K)
    ok = True
    for rc in range(K.rcodes):
        with np.errstate(all="ignore"):
            want, _ = chain(K, acc, np.full(acc.shape, rf[rc], np.float32))
        got = t_levels(K, acc, np.full(acc.shape, rc), np.zeros(acc.shape, bool))
        bad = (want != got) & live
        for o in np.flatnonzero(bad.any(axis=0))[:3]:
            i = np.flatnonzero(bad[:, o])
            ok = False
            fail(f"{K.model} {K.name}: T of channel {o}, residual code {rc} (float {rf[rc]!r}): at accumulator "
                 f"{acc[i[0], o]} the levels give code {got[i[0], o]}, the chain {want[i[0], o]} ({i.size} of "
                 f"{2 * a[o] + 1} accumulators differ; mask {t_table(K)[0][o]}, levels "
                 f"{t_table(K)[1][o, :, rc].tolist()})")
    return ok


# ---------------------------------------------------------------- inputs, launches, outputs

def random_codes(rng, shape, ncodes, image0_uniform=True):
    """Codes in [0, ncodes) of shape [B, ...], each image from its own distribution: the first
    uniform, then random weights of the codes, some all lowest or all highest."""
    B = shape[0]
    out = np.empty(shape, np.int64)
    for i in range(B):
        if i == 0 and image0_uniform or ncodes == 1:
            out[i] = rng.integers(0, ncodes, shape[1:])
        elif i % 7 == 5:
            out[i] = 0
        elif i % 7 == 6:
            out[i] = ncodes - 1
        else:
            out[i] = rng.choice(ncodes, shape[1:], p=rng.dirichlet(np.full(ncodes, 0.7)))
    return out


class Launch:
    """A kernel's operands at one batch: the codes and flags, their words, the expected words."""

    def __init__(self, K, batch, rng, u):
        p = K.qp
        self.K, self.batch = K, batch
        O, cells = p["o"], p["oh"] * p["ow"]
        self.x = random_codes(rng, (batch, p["c"], p["h"], p["w"]), 1 << p["xb"])
        self.rc = random_codes(rng, (batch, p["oh"], p["ow"], O), K.rcodes)
        self.nan = (rng.random((batch, p["oh"], p["ow"], O)) < 0.03) if K.rnan else \
            np.zeros((batch, p["oh"], p["ow"], O), bool)
        self.acc = accumulators(K, self.x, u)
        # words: X planes, R planes, RN (flags in the first cells * ldy words of each item's O
        # * cells, the rest garbage)
        xc = self.x.transpose(0, 2, 3, 1).reshape(batch, p["h"] * p["w"], p["c"])
        self.X = code_planes(xc, p["xb"], p["ldw"], plane_words(p["h"] * p["w"], p["ldw"]))
        self.R = code_planes(self.rc.reshape(batch, cells, O), K.rplanes, p["ldy"], plane_words(cells, p["ldy"]))
        self.RN = None
        if K.rnan:
            self.RN = rng.integers(0, 1 << 32, (batch, O * cells), dtype=np.uint32)
            self.RN[:, :cells * p["ldy"]] = pack(self.nan.reshape(batch, cells, O), p["ldy"]).reshape(batch, -1)

    def words(self, T=None, R=None, RN=None, W=None):
        return {"X": self.X, "W": self.K.w if W is None else W, "T": self.K.T if T is None else T,
                "R": self.R if R is None else R, "RN": self.RN if RN is None else RN}

    def reference(self):
        """(Y words, YN flag words [B][cells][ceil(O/32)] or None) of the CPU-only chain step."""
        K, p = self.K, self.K.qp
        O, cells = p["o"], p["oh"] * p["ow"]
        r = residual_floats(K)[self.rc]
        r = np.where(self.nan, np.float32(np.nan), r).astype(np.float32)
        with np.errstate(all="ignore"):
            codes, nanv = chain(K, self.acc, r)
        self.codes, self.nanv = codes, nanv
        y = code_planes(codes.reshape(self.batch, cells, O), p["yb"], p["ldy"], plane_words(cells, p["ldy"]))
        yn = pack(nanv.reshape(self.batch, cells, O), (O + 31) // 32) if K.ynan else None
        return y.reshape(-1), yn


def tiles(K, batch):
    p = K.qp
    return batch * -(-p["oh"] // K.cfg["TH"]) * -(-p["ow"] // K.cfg["TW"])


def describe(K, batch):
    gx, gy, _, _ = launch_dims(K, batch)
    nt = tiles(K, batch)
    p = K.qp
    return (f"{K.model} {K.name}{' (batch alternative from ' + str(K.alt_batch) + ')' if K.alt else ''} "
            f"{K.cfg['TH']}x{K.cfg['TW']} px, {K.cfg['WM']}x{K.cfg['WN']} warps, C {p['c']} O {p['o']} "
            f"{p['oh']}x{p['ow']}, {K.rplanes} residual planes of {K.rsrc}{', NaN flags in' if K.rnan else ''}"
            f"{' and out' if K.ynan else ''}: batch {batch}, grid {gx}x{gy}, {nt} tiles, up to {-(-nt // gy)} a block")


def several_tiles_batch(K, cap=2500):
    """The smallest batch from the step's alt_batch (16 at least) at which every block takes 2
    tiles and some 3, where that costs at most cap warp-tiles of the emulator's work (m16 tiles
    of a warp); else the smallest at which some blocks take 2 (the grid's base of 3 blocks an
    SM of 132 sets the batch: 8-warp tiles of 8x16 pixels take 2 s of fibers per 450)."""
    first = max(16, K.alt_batch + 1)
    for want in (3, 2):
        batch = first
        while tiles(K, batch) <= (want - 1) * grid_dim(K.grid[1], batch):
            batch += 1
        if want == 2 or emu_cost(K, batch) <= cap:
            return batch


def emu_cost(K, batch):
    """The emulator's work of a launch in warp m16 tiles (fibers switched per collective)."""
    mi = K.cfg["TH"] * K.cfg["TW"] // (16 * K.cfg["WM"])
    return tiles(K, batch) * grid_dim(K.grid[0], batch) * K.threads[0] // 32 * mi


class Runner(emu_steps.Runner):
    """The launches in jobs emulator processes, dealt out by their cost."""

    def __init__(self, exe, tmp, jobs):
        super().__init__(exe, tmp)
        self.jobs = jobs

    def start(self, launches):
        """launches: [(label, Launch, {operand: replacement})]: writes their operands and starts
        the emulator; finish() waits for it."""
        lines, self.outs = [[] for _ in range(self.jobs)], []
        load = [0] * self.jobs
        for i in sorted(range(len(launches)), key=lambda i: -emu_cost(launches[i][1].K, launches[i][1].batch)):
            label, ln, repl = launches[i]
            K, batch = ln.K, ln.batch
            gx, gy, threads, smem = launch_dims(K, batch)
            ops = ln.words(**repl)
            p = K.qp
            cells = p["oh"] * p["ow"]
            ywords = batch * p["yb"] * plane_words(cells, p["ldy"])
            ynwords = batch * p["o"] * cells
            yo = self.output("y", i)
            yno = self.output("yn", i) if K.ynan else "-"
            self.outs.append((i, yo, yno))
            files = [self.file(ops["X"]), self.file(ops["W"]), self.file(ops["T"]), self.file(ops["R"]),
                     self.file(ops["RN"]) if K.rnan else "-"]
            j = load.index(min(load))
            load[j] += emu_cost(K, batch) + 50  # (+ a launch's fixed cost)
            lines[j].append(f"{label} {K.emu_name} {gx} {gy} {threads} {smem} {batch * cells} {ywords} {ynwords} "
                            f"{' '.join(files)} {yo} {yno}\n")
        self.outs.sort()
        self.spawn(lines)

    def finish(self):
        """Each launch's (Y, YN) words (None where the emulator stopped before it)."""
        self.wait()
        return [(np.fromfile(y, "<u4") if os.path.exists(y) else None,
                 np.fromfile(yn, "<u4") if yn != "-" and os.path.exists(yn) else None) for _, y, yn in self.outs]


def compare(ln, y, yn, want_y, want_yn):
    """(words that differ, the first as text) of Y and YN."""
    K, p = ln.K, ln.K.qp
    O, cells, ldy, batch = p["o"], p["oh"] * p["ow"], p["ldy"], ln.batch
    plane = plane_words(cells, ldy)
    if y is None or (K.ynan and yn is None):
        return -1, "no output"
    if y.shape != want_y.shape:
        return -1, f"Y has {y.size} words, expected {want_y.size}"
    n, first = 0, ""
    bad = np.flatnonzero(y != want_y)
    if bad.size:
        n += bad.size
        i = int(bad[0])
        img, b, at = i // (p["yb"] * plane), i // plane % p["yb"], i % plane
        diff = int(y[i]) ^ int(want_y[i])
        if at < cells * ldy:
            cell, wd = at // ldy, at % ldy
            chans = [32 * wd + k for k in range(32) if diff >> k & 1]
            where = f"pixel ({cell // p['ow']}, {cell % p['ow']}), word {wd}"
            if chans and chans[0] < O:
                o = chans[0]
                oy, ox = cell // p["ow"], cell % p["ow"]
                where += (f"; channel {o}: accumulator {ln.acc[img, oy, ox, o]}, residual code {ln.rc[img, oy, ox, o]}"
                          f"{' (NaN flag)' if ln.nan[img, oy, ox, o] else ''}, expected code "
                          f"{ln.codes[img, oy, ox, o]}, T's levels give "
                          f"{t_levels(K, ln.acc[img, oy, ox], ln.rc[img, oy, ox], ln.nan[img, oy, ox])[o]}")
        else:
            chans, where = [], f"plane tail word {at - cells * ldy}"
        first = (f"Y word {i} (image {img}, plane {b}, {where}): {int(y[i]):#010x}, expected {int(want_y[i]):#010x} "
                 f"(bits {chans[:8]})")
    if K.ynan:
        if yn.size != batch * O * cells:
            return -1, f"YN has {yn.size} words, expected {batch * O * cells}"
        item = yn.reshape(batch, O * cells)
        px = item[:, :cells * ldy].reshape(batch, cells, ldy)
        nw = want_yn.shape[-1]
        bad = np.flatnonzero(px[:, :, :nw] != want_yn)
        if bad.size:
            n += bad.size
            i = int(bad[0])
            img, cell, wd = i // (cells * nw), i // nw % cells, i % nw
            first = first or (f"YN word (image {img}, pixel ({cell // p['ow']}, {cell % p['ow']}), word {wd}): "
                              f"{int(px[img, cell, wd]):#010x}, expected {int(want_yn[img, cell, wd]):#010x}")
        pad = px[:, :, nw:]
        stray = int(np.count_nonzero((pad != POISON) & (pad != 0))) + \
            int(np.count_nonzero(item[:, cells * ldy:] != POISON))
        if stray:
            n += stray
            first = first or f"{stray} words of YN other than the flags' written"
    return n, first


def self_check(K, runner, rng, u):
    """Copies of K's data at batch 3, each broken in one place, must be reported: a level of T
    and a mask of T that change the code of a pixel (checked on T's levels first), a residual
    code bit that changes one, a NaN flag over a non-zero code (QC_RNAN), a weight word."""
    ln = Launch(K, 3, rng, u)
    want_y, want_yn = ln.reference()
    O = K.qp["o"]
    base = t_levels(K, ln.acc, ln.rc, ln.nan)
    if not np.array_equal(base, ln.codes):
        fail(f"self-check on {K.model} {K.name}: T's levels differ from the chain at batch 3")
        return
    mutants = []

    def t_changes(T2):
        K2 = copy.copy(K)
        K2.T = T2
        return not np.array_equal(t_levels(K2, ln.acc, ln.rc, ln.nan), base)

    live = np.argwhere(~ln.nan)
    pick = live[rng.permutation(len(live))[:64]]
    # a level of T: level 1's int16 of the channel and residual code of a live element moved
    # across its accumulator
    for b, oy, ox, o in pick:
        rc, acc = ln.rc[b, oy, ox, o], int(ln.acc[b, oy, ox, o])
        T2 = K.T.copy()
        halves = T2.reshape(O, 8)[:, 1:3].copy().view("<i2").reshape(O, 4)  # level 1, codes 0..3
        v = acc ^ int(T2[o * 8])
        t0 = int(halves[o, rc])
        t1 = v + 1 if v >= t0 else v
        if not -32768 <= t1 <= 32767:
            continue
        halves[o, rc] = t1
        T2.reshape(O, 8)[:, 1:3] = halves.view("<i4").reshape(O, 2)
        if t_changes(T2):
            mutants.append((f"T's level 1 of channel {o}, residual code {rc}: {t0} -> {t1}", {"T": T2}))
            break
    for b, oy, ox, o in pick:  # a mask: the channel's direction flipped
        T2 = K.T.copy()
        T2[o * 8] ^= -1
        if t_changes(T2):
            mutants.append((f"T's mask of channel {o}: {K.T[o * 8]} -> {T2[o * 8]}", {"T": T2}))
            break
    # a residual code bit whose change changes the code there
    rf = residual_floats(K)
    ldy = K.qp["ldy"]
    for b, oy, ox, o in pick:
        for bit in range(K.rplanes):
            rc2 = ln.rc[b, oy, ox, o] ^ (1 << bit)
            if rc2 >= K.rcodes:
                continue
            acc = np.zeros((1, O), np.int64)
            acc[0, o] = ln.acc[b, oy, ox, o]
            with np.errstate(all="ignore"):
                c2, _ = chain(K, acc, np.full((1, O), rf[rc2], np.float32))
            if c2[0, o] != ln.codes[b, oy, ox, o]:
                R2 = ln.R.copy()
                R2[b, bit, (oy * K.qp["ow"] + ox) * ldy + o // 32] ^= np.uint32(1 << (o % 32))
                mutants.append((f"residual code of image {b}, pixel ({oy}, {ox}), channel {o}: {ln.rc[b, oy, ox, o]} "
                                f"-> {rc2}", {"R": R2}))
                break
        else:
            continue
        break
    if K.rnan:  # a NaN flag over a non-zero code
        nz = np.argwhere((ln.codes != 0) & ~ln.nan)
        if len(nz):
            b, oy, ox, o = nz[0]
            RN2 = ln.RN.copy()
            RN2[b, (oy * K.qp["ow"] + ox) * ldy + o // 32] ^= np.uint32(1 << (o % 32))
            mutants.append((f"NaN flag set at image {b}, pixel ({oy}, {ox}), channel {o} (code "
                            f"{ln.codes[b, oy, ox, o]})", {"RN": RN2}))
    # a weight word: the first word of channel 0's first tap inverted (all its channels' weights)
    W2 = K.w.copy()
    W2[0] ^= np.uint32(0xFFFFFFFF if K.qp["c"] >= 32 else (1 << K.qp["c"]) - 1)
    mutants.append(("weight word 0 (channel 0, tap 0) inverted", {"W": W2}))
    if len(mutants) < 4 + bool(K.rnan):
        fail(f"self-check on {K.model} {K.name}: only {len(mutants)} breaks found ({[m[0] for m in mutants]})")
    runner.start([(f"{K.emu_name}_mutant{i}", ln, repl) for i, (_, repl) in enumerate(mutants)])
    for (what, _), (y, yn) in zip(mutants, runner.finish()):
        n, first = compare(ln, y, yn, want_y, want_yn)
        if n > 0:
            print(f"ok: self-check on {K.model} {K.name}: {what}: reported ({n} words differ, first {first})")
        else:
            fail(f"self-check on {K.model} {K.name}: {what}: not reported ({first or 'Y and YN unchanged'})")
    return len(mutants)


def prmt(a, b, sel):
    """PTX prmt.b32 d, a, b, sel (the default mode): byte i of d is byte sel[4i+2:4i] of {b, a}
    (a bytes 0-3, b bytes 4-7), or with bit 4i+3 that byte's sign bit replicated."""
    src = (b << 32 | a).to_bytes(8, "little")
    d = 0
    for i in range(4):
        n = sel >> 4 * i & 15
        byte = src[n & 7]
        d |= ((0xFF if byte & 0x80 else 0) if n & 8 else byte) << 8 * i
    return d - (1 << 32) if d >> 31 else d


def check_half_prmt(rng):
    """qconv.cu's <name>_half takes a level's int16 for residual code rc from its pair words by
    one PTX prmt on the GPU and by shifts elsewhere: the emulator runs the latter, so here the
    former's selector against prmt's semantics, for every rc on random words."""
    src = open(os.path.join(test_e2e.SRC, "codegen", "cuda", "kernels", "qconv.cu")).read()
    sel = re.findall(r'asm\("prmt\.b32 %0, %1, %2, %3;" : "=r"\(r\) : "r"\(lo\), "r"\(hi\), '
                     r'"r"\((0x[0-9a-fA-F]+) \+ rc \* (0x[0-9a-fA-F]+)\)\);', src)
    if len(sel) != 1 or src.count("prmt.") != 1:
        fail("qconv.cu: no prmt of the form the residual code's half takes (\"r\"(A + rc * B)) or another: update "
             "rcode_emu.py's check of the GPU path, which the emulator does not run")
        return 0
    base, step = int(sel[0][0], 16), int(sel[0][1], 16)
    words = rng.integers(0, 1 << 32, (64, 2), dtype=np.uint64).tolist() + [[0x80007FFF, 0xFFFF8000], [0x7FFF8000, 0x1]]
    for lo, hi in words:
        for rc in range(4):
            want = int(np.array([(hi if rc & 2 else lo) >> (16 * (rc & 1)) & 0xFFFF], np.uint16).view(np.int16)[0])
            got = prmt(lo, hi, (base + rc * step) & 0xFFFFFFFF)
            if got != want:
                fail(f"qconv.cu's prmt selector {base:#x} + rc * {step:#x} for residual code {rc} of words {lo:#010x}, "
                     f"{hi:#010x}: {got}, the int16 {want}")
                return 0
    return 1


def start_emulator(cxx, defs, tmp, sanitized):
    """Starts compiling rcode_emu.cc with every QC_RCODE kernel of the models' CUDA source (defs
    [{name: #define block}] a model); emu_steps.finish_emulator waits."""
    calls = [(emu_steps.emu_name(k, kname), block, "cuda/kernels/qconv.cu",
              f"    {emu_steps.emu_name(k, kname)}(a.X, a.W, a.nb, a.P, (const unsigned *)a.ep0, "
              f"(const unsigned *)a.ep1, a.Y,\n        (unsigned *)a.Yb);\n    qc_drain();\n")
             for k, model_defs in enumerate(defs) for kname, block in model_defs.items()]
    return emu_steps.start_emulator(cxx, "rcode_emu", calls, tmp, sanitized)


def main():
    a = emu_steps.parse_args("custom models, batches 1 and 3")
    cxx = test_e2e.host_cxx()
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("skipped: no onnx (the models are QONNX)")
        sys.exit(77)
    tmp, tmpdir = emu_steps.work_dir(a.keep)
    names = ["rc_c40", "rc_q1"] if a.sanitized else ["w1a2resnet18_tiny", "rc_c40", "rc_q1"]
    paths = write_models(tmp, names)
    defs = [emu_steps.kernel_defines(src, "QC_NAME", "QC_RCODE", k)
            for k, src in enumerate(emu_steps.emit_cuda(paths, ["--target=sm_80"]).values())]
    # the emulator compiles while NVRTC compiles the models' kernels
    exe, cc = start_emulator(cxx, defs, tmp, a.sanitized)
    try:
        blobs = emu_steps.finish_blobs(emu_steps.start_blobs(paths, tmp, ["--target=sm_80"]),
                                       "the kernels need a GPU target")
    except SystemExit:  # (skipped or failed: the compiler stopped before tmp goes)
        cc.kill()
        cc.wait()
        raise
    kernels = []
    for k, name in enumerate(names):
        kernels += model_kernels(name, *blobs[name], defs[k], k)
    exe = emu_steps.finish_emulator(cxx, exe, cc)
    emu_steps.exit_on_failures()
    rng = np.random.default_rng(2029)
    u = {K.emu_name: weight_codes(K) for K in kernels}
    runner = Runner(exe, tmp, 2 if (os.cpu_count() or 1) > 1 else 1)
    launches = []
    for K in kernels:
        batches = [1, 3] if a.sanitized else [1, 3, several_tiles_batch(K)]
        for batch in batches:
            launches.append((f"{K.emu_name}_b{batch}", Launch(K, batch, rng, u[K.emu_name]), {}))
    runner.start(launches)
    # while the emulator runs: the references, and the tables against the chain
    tables = sum(table_ok(K, u[K.emu_name]) for K in kernels if not K.alt)
    prmt_ok = check_half_prmt(rng)
    wants = [ln.reference() for _, ln, _ in launches]
    words = 0
    for (_, ln, _), (y, yn), (want_y, want_yn) in zip(launches, runner.finish(), wants):
        K = ln.K
        if not np.array_equal(t_levels(K, ln.acc, ln.rc, ln.nan), ln.codes):
            fail(f"{describe(K, ln.batch)}: T's levels differ from the chain on these inputs")
        n, first = compare(ln, y, yn, want_y, want_yn)
        nw = want_y.size + (want_yn.size if want_yn is not None else 0)
        words += nw
        if n:
            fail(f"{describe(K, ln.batch)}: {n if n > 0 else 'all'} words differ, first: {first}")
        else:
            hist = np.bincount(ln.codes.ravel(), minlength=1 << K.qp["yb"]) * 100 // ln.codes.size
            print(f"ok: {describe(K, ln.batch)}: {nw} words (codes {'/'.join(map(str, hist))} %"
                  f"{f', {int(ln.nanv.sum())} NaN' if K.rnan else ''})")
    breaks = 0
    for K in [k for k in kernels if not k.alt and k.rnan][:1] + [k for k in kernels if k.alt][:1] + \
            [k for k in kernels if k.qp["wsigned"] or k.rplanes == 1][:1]:
        breaks += self_check(K, runner, rng, u[K.emu_name]) or 0
    nalt = sum(K.alt for K in kernels)
    print(f"rcode_emu: {len(kernels)} kernels ({nalt} batch alternatives) of {len(names)} models, "
          f"{len(launches)} launches, {words} words compared; {tables} of {len(kernels) - nalt} tables checked over "
          f"every reachable accumulator; {breaks} breaks of the data; the GPU's prmt of a residual code's levels "
          f"{'ok' if prmt_ok else 'wrong'}")
    emu_steps.exit_on_failures()
    print("rcode_emu: all ok")


if __name__ == "__main__":
    main()
