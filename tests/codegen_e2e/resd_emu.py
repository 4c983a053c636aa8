#!/usr/bin/env python3
"""The halo bconv with a threshold by a residual dot (bconv.cu BC_RESD, codegen/lower.c
lower_bconv_resd: an XNOR ResNet downsampling block whose second conv C2 adds the float value of
a 1x1 bconv2d_chain D computes D's dot itself and looks its threshold up) without a GPU, bit for
bit. For resid_xnor_down (test_e2e.py) and the blocks below (K1 = D's input channels 40, 64, 130
and 300, the last two k256 steps of R; O = 64, 70 and 128; D's strides 2 and (2, 1); non-square
inputs; partial tiles; negative batch-norm gammas, so some channels fall with the dot; gamma 0 on
C2's, on D's and on both chains of a channel: a threshold by dot1 alone, a constant residual, a
constant bit; the residual on either side of the add), bnncc -O3 compiles the blob (default
targets; the report must count one fused downsample) and --emit=cuda gives each BC_RESD kernel's
#define block. resd_emu.cc runs the kernel step and its batch alternative under the block
emulator of tests/codegen/bconv_emu.h with the step record's launch (grid for the batch, block,
shared memory) and its weights (w, p0, p1, x0: the tables, threshold rows and B fragments) on
random bits of C2's and D's inputs at batches 1, 3 and one where each warp takes several tiles,
and every word of Y must equal numpy's reading of the CPU-only steps (docs/blob-format.md
"bconv"): C2's chain over its dot plus D's chain over its dot, bit = v >= 0. Then copies of one
kernel's data are broken (a threshold row's entry, a channel's row base, a word of D's B
fragments, a dir, a correction) and each must be reported. bnncc runs with MALLOC_PERTURB_ (freed
memory filled, as under meson test). --sanitized (the ASan + UBSan build): every model through
the sanitized bnncc, the emulator, built with the sanitizers at -O0, on two blocks (K1 40 and
300) at batches 1 and 3. Exit 77 (skipped) without a C++20 compiler or without NVRTC.

    resd_emu.py [--sanitized] [--keep DIR]"""
import base64
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import emu_steps  # noqa: E402  (kernel steps, bnncc, the emulator's build and runs)
import test_e2e  # noqa: E402  (residual_models, the blob readers)
from emu_steps import (ARG_BATCH, ARG_PTR, FLAG_CPU_ONLY, SLOT_IN, SLOT_IN2, SLOT_OUT, SLOT_P0,  # noqa: E402
                       SLOT_P1, SLOT_W, SLOT_X0, STEP_BCONV, STEP_KERNEL, define, grid_dim, launch_dims, pack,
                       unpack, weights)
from test_e2e import fail, failures  # noqa: E402

BCONV_PARAMS = ("h w c words o kh kw stride_h stride_w pad_top pad_left pad_bottom pad_right pad_value dil_h dil_w "
                "oh ow pool out_words out_layout epi_stages epi_div epi_residual").split()
# The kernel's arguments (bconv.cu BC_HALO with BC_RESD): X, Wt, P, ep0, ep1, Y, R as PTR of
# slots in, w, x0, p0, p1, out, in2, then the batch (BATCH, value 1).
RESD_ARGS = [(ARG_PTR, SLOT_IN), (ARG_PTR, SLOT_W), (ARG_PTR, SLOT_X0), (ARG_PTR, SLOT_P0), (ARG_PTR, SLOT_P1),
             (ARG_PTR, SLOT_OUT), (ARG_PTR, SLOT_IN2), (ARG_BATCH, 0)]


# ---------------------------------------------------------------- models

def resd_models(tmp, rng):
    """XNOR downsampling blocks in the text format: a0 = the input's bits (K1 channels, h x w); c1
    3x3 / s, pad 1 -> O (a threshold), cd 1x1 / s -> O (a batch-norm chain), c2 3x3 / 1, pad 1
    over c1's bits whose chain adds cd's (on the left of the add with left); its bits to a global
    average pool. g2, gd: {channel: gamma} of c2's and cd's batch-norms, the others positive
    (negative: a falling chain; 0: a constant one)."""
    def bn(name, c, gamma):
        var = np.abs(rng.standard_normal(c)).astype(np.float32) + np.float32(0.1)
        g = (rng.standard_normal(c) * 0.5).astype(np.float32)
        g = np.where(np.abs(g) < 0.05, np.float32(0.3), np.abs(g))  # positive, then the chosen signs
        for ch, v in gamma.items():
            g[ch] = v

        def f32(suffix, v):
            data = base64.b64encode(v.astype("<f4").tobytes()).decode()
            return f'const ${name}{suffix}: f32[{c}] = base64 "{data}"\n'
        return (f32("g", g) + test_e2e.f32_const(f"{name}b", (c,), rng) + test_e2e.f32_const(f"{name}m", (c,), rng) +
                f32("v", var))

    def block(k1, o, h, w, s, g2, gd, left=False):
        sh, sw = s if isinstance(s, tuple) else (s, s)
        oh, ow = (h - 1) // sh + 1, (w - 1) // sw + 1
        c = test_e2e.bits_const("w1", (o, k1, 3, 3), rng) + bn("bn1", o, {})
        c += test_e2e.bits_const("wd", (o, k1, 1, 1), rng) + bn("bnd", o, gd)
        c += test_e2e.bits_const("w2", (o, o, 3, 3), rng) + bn("bn2", o, g2)
        t = f"[N,{o},{oh},{ow}]"

        def conv(v, src, wt, p, stride):
            return (f"    %{v} = i32{t} conv2d %{src}, ${wt} {{strides=[{stride[0]},{stride[1]}], "
                    f"pads=[{p},{p},{p},{p}], pad_value=0}}\n")

        def cast_bn(v, src):
            return (f"    %{v}f = f32{t} cast %{src} {{to=f32}}\n"
                    f"    %{v} = f32{t} batchnorm %{v}f, ${v}g, ${v}b, ${v}m, ${v}v {{epsilon=0.00001}}\n")
        b = f"    %a0 = b1[N,{k1},{h},{w}] binarize %x {{zero=1}}\n"
        b += conv("c1", "a0", "w1", 1, (sh, sw)) + cast_bn("bn1", "c1") + f"    %a1 = b1{t} binarize %bn1 {{zero=1}}\n"
        b += conv("cd", "a0", "wd", 0, (sh, sw)) + cast_bn("bnd", "cd")
        b += conv("c2", "a1", "w2", 1, (1, 1)) + cast_bn("bn2", "c2")
        b += f"    %s2 = f32{t} add {'%bnd, %bn2' if left else '%bn2, %bnd'}\n"
        b += f"    %a2 = b1{t} binarize %s2 {{zero=1}}\n    %r2 = f32{t} cast %a2 {{to=f32}}\n"
        b += f"    %g = f32[N,{o},1,1] globalavgpool %r2\n"
        return c, f"(%x: f32[N,{k1},{h},{w}])", [("g", f"f32[N,{o},1,1]")], b

    neg = {ch: -0.7 for ch in range(1, 70, 3)}
    models = {
        # K1 64, O 70 (a last column block of 6 channels, no batch alternative), 17 x 21 -> 9 x 11
        # (the 2 x 8 tile, partial tiles both ways); falling channels on both chains, gamma 0 on
        # c2's (channel 5: a threshold on dot1 alone), on cd's (7: a constant residual), on both
        # (11: a constant bit); the residual on the left of the add.
        "resd_k64_o70": block(64, 70, 17, 21, 2, {**neg, 5: 0.0, 11: 0.0}, {**{ch: -0.5 for ch in range(0, 70, 4)},
                                                                           7: 0.0, 11: 0.0}, left=True),
        # K1 130 (two channels in R's second 128-bit chunk), O 128, strides 2 and 1 (BC_RESD_SH
        # and BC_RESD_SW differ), 13 x 7 -> 7 x 7 (partial 4 x 4 tiles).
        "resd_k130_o128": block(130, 128, 13, 7, (2, 1), {ch: -1.1 for ch in range(0, 128, 5)},
                                {ch: -0.4 for ch in range(2, 128, 7)}),
        # K1 300: R 12 words a pixel, two k256 steps; O 64; 10 x 10 -> 5 x 5.
        "resd_k300_o64": block(300, 64, 10, 10, 2, {3: -0.9, 40: -0.2, 63: 0.0}, {0: -1.3, 40: -0.6, 9: 0.0}),
    }
    return test_e2e.write_models(tmp, models)


# ---------------------------------------------------------------- the blob

def bconv_params(b, at):
    return dict(zip(BCONV_PARAMS, emu_steps.step_params(b, at)))


class Kernel(emu_steps.KernelStep):
    """One BC_RESD kernel step of a blob: its defines, launch and weights, and the CPU-only steps
    of C2 (the conv) and D (the downsample) whose semantics it must reproduce."""


def model_kernels(name, report, b, defs, k):
    """[Kernel] of the BC_RESD steps of the blob b of model `name` (the main step, then its batch
    alternative; defs: the model's BC_RESD kernels' #define blocks; k: its number, the kernels'
    prefix), each with its CPU-only steps."""
    m = re.search(r"^codegen: (\d+) binary convolutions compute the 1x1 downsample convolution", report, re.M)
    if not m or m.group(1) != "1":
        fail(f"{name}: bnncc's report does not count one fused 1x1 downsample ({m.group(0) if m else 'no line'})")
        return []
    wsec = test_e2e.blob_sections(b)[3]
    steps = test_e2e.blob_steps(b)
    out = []
    cpu_bconv = [a for a, kd, _ in steps if kd == STEP_BCONV and emu_steps.step_flags(b, a) & FLAG_CPU_ONLY]
    for at, kind, kname in steps:
        if kind != STEP_KERNEL or kname not in defs:
            continue
        K = Kernel(b, at, name, kname, k, defs[kname])
        args = K.args
        if [(a[0], a[1]) for a in args] != RESD_ARGS or args[-1][2] != 1:
            fail(f"{name} {kname}: kernel arguments {args} (expected X, Wt, P, ep0, ep1, Y, R, the batch)")
            continue
        slots = [test_e2e.blob_slot(b, at, s) for s in range(8)]
        # The CPU-only steps it stands for: C2 (same in, out and weights; an f32 residual, bits
        # out) and D (writing C2's residual from the kernel's in2).
        c2 = next((a for a in cpu_bconv if test_e2e.blob_slot(b, a, SLOT_IN) == slots[SLOT_IN]
                   and test_e2e.blob_slot(b, a, SLOT_OUT) == slots[SLOT_OUT]), None)
        if c2 is None:
            fail(f"{name} {kname}: no CPU-only bconv step with the kernel's in and out")
            continue
        c2in2 = test_e2e.blob_slot(b, c2, SLOT_IN2)
        d = next((a for a in cpu_bconv if test_e2e.blob_slot(b, a, SLOT_OUT) == c2in2), None)
        if d is None or test_e2e.blob_slot(b, d, SLOT_IN) != slots[SLOT_IN2]:
            fail(f"{name} {kname}: no CPU-only bconv step writing C2's residual from the kernel's in2")
            continue
        K.c2, K.d = bconv_params(b, c2), bconv_params(b, d)
        c2p, dp = K.c2, K.d
        d1x1 = [dp[k] for k in ("kh", "kw", "pad_top", "pad_left", "pad_bottom", "pad_right")] == [1, 1, 0, 0, 0, 0]
        if (test_e2e.blob_slot(b, c2, SLOT_W) != slots[SLOT_W] or c2p["pool"] or c2p["epi_residual"] & 3 not in (1, 2)
                or c2p["epi_residual"] >> 2 or not c2p["out_words"] or not c2p["epi_stages"] or not d1x1
                or dp["epi_residual"] or not dp["epi_stages"]
                or (dp["o"], dp["oh"], dp["ow"]) != (c2p["o"], c2p["oh"], c2p["ow"])):
            fail(f"{name} {kname}: the CPU steps are not a fused pair: C2 {c2p}, D {dp}")
            continue
        for dname, want in (("BC_C", c2p["c"]), ("BC_CWP", c2p["words"]), ("BC_O", c2p["o"]),
                            ("BC_LDY", c2p["out_words"]), ("BC_RESD", dp["c"]), ("BC_RESD_CWP", dp["words"]),
                            ("BC_RESD_H", dp["h"]), ("BC_RESD_W", dp["w"])):
            if define(K.defines, dname) != want:
                fail(f"{name} {kname}: {dname} {define(K.defines, dname)}, the CPU steps' {want}")
        K.cfg = {n: define(K.defines, "BC_" + n) for n in ("TH", "TW", "BN", "WM", "MINB")}
        # the kernel's operands (its own copies of the weights), and the CPU steps' for the reference
        K.w = weights(b, wsec, slots[SLOT_W], "<u4")
        K.p0 = weights(b, wsec, slots[SLOT_P0], "<i4")
        K.p1 = weights(b, wsec, slots[SLOT_P1], "<i4")
        K.x0 = weights(b, wsec, slots[SLOT_X0], "<u4")
        K.c2w = weights(b, wsec, test_e2e.blob_slot(b, c2, SLOT_W), "<u4")
        K.c2ep = weights(b, wsec, test_e2e.blob_slot(b, c2, SLOT_P0), "<f4")
        K.dw = weights(b, wsec, test_e2e.blob_slot(b, d, SLOT_W), "<u4")
        K.dep = weights(b, wsec, test_e2e.blob_slot(b, d, SLOT_P0), "<f4")
        out.append(K)
    if not out or len(out) > 2:
        fail(f"{name}: {len(out)} BC_RESD kernel steps (expected the main step and perhaps its batch alternative)")
    elif out[0].alt or out[-1].alt != (len(out) == 2):
        fail(f"{name}: the BC_RESD steps' flags: main {out[0].alt}, alternative {out[1].alt}")
    return out


def resd_row(k1):
    """int16 entries of a channel's threshold row (kernels.h bnn_resd_row): K1 + 1 rounded up to
    2 mod 8."""
    return (k1 + 1 + 5) // 8 * 8 + 2


def x0_parts(K):
    """Byte offsets in x0 (lower.c set_halo_kernel): the correction tables, then each column
    block's int16 threshold rows [BN][resd_row(K1)] and int32 bases [BN], then each block's B
    fragments of D's weights."""
    bn, k1, o = K.cfg["BN"], K.d["c"], K.c2["o"]
    nbx, rch = (o + bn - 1) // bn, (K.d["words"] + 7) // 8
    rsz = bn * resd_row(k1) * 2 + bn * 4
    frag = nbx * (bn // 8) * rch * 64 * 4
    nt = K.x0.nbytes - nbx * rsz - frag
    return nt, rsz, nt + nbx * rsz


# ---------------------------------------------------------------- the reference

def bconv_dot(x, wt, p):
    """The dot of bconv step parameters p on NHWC words x [B][h][w][words] and weights
    [o][kh][kw][words]: +1 where the bits agree, -1 where they differ, a padded tap all
    pad_value (0: nothing), over the true channels; [B][oh][ow][o], exact in float32."""
    c, o, kh, kw = p["c"], p["o"], p["kh"], p["kw"]
    xs = unpack(x, c).astype(np.float32) * 2 - 1
    xp = np.full((x.shape[0], p["h"] + p["pad_top"] + p["pad_bottom"], p["w"] + p["pad_left"] + p["pad_right"], c),
                 float(p["pad_value"]), np.float32)
    xp[:, p["pad_top"]:p["pad_top"] + p["h"], p["pad_left"]:p["pad_left"] + p["w"]] = xs
    ws = unpack(wt.reshape(o, kh, kw, p["words"]), c).astype(np.float32) * 2 - 1
    oh, ow, sh, sw = p["oh"], p["ow"], p["stride_h"], p["stride_w"]
    dot = np.zeros((x.shape[0] * oh * ow, o), np.float32)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * p["dil_h"], kx * p["dil_w"]
            tap = xp[:, y0:y0 + (oh - 1) * sh + 1:sh, x0:x0 + (ow - 1) * sw + 1:sw, :]
            dot += tap.reshape(-1, c) @ ws[:, ky, kx, :].T
    return dot.reshape(x.shape[0], oh, ow, o)


def chain(dot, p, ep):
    """blob.h blob_bconv_chain_value without the residual: each op rounded to float32."""
    v = dot.astype(np.float32)
    ep = ep.reshape(p["epi_stages"], 2, p["o"])
    for k in range(p["epi_stages"]):
        v = v / ep[k, 0] if (p["epi_div"] >> k) & 1 else v * ep[k, 0]
        v = v + ep[k, 1]
    return v


def reference(K, x, r):
    """C2's output words [B][oh][ow][out_words] from the CPU-only steps: D's chain over its dot
    is the residual of C2's chain over its own, bit = v >= 0 (NaN 0). Also dot1 (the self-check's)."""
    out, dot1s = [], []
    for b0 in range(0, x.shape[0], 256):
        with np.errstate(all="ignore"):
            dot1 = bconv_dot(r[b0:b0 + 256], K.dw, K.d)
            res = chain(dot1, K.d, K.dep)
            v = chain(bconv_dot(x[b0:b0 + 256], K.c2w, K.c2), K.c2, K.c2ep)
            v = v + res if K.c2["epi_residual"] & 3 == 1 else res + v
            out.append(pack(v >= 0, K.c2["out_words"]))
        dot1s.append(dot1)
    return np.concatenate(out), np.concatenate(dot1s)


# ---------------------------------------------------------------- inputs and runs

def random_bits(rng, shape, c, words, probs):
    """NHWC words [B][h][w][words] of c channels (bits past c zero), image i's bits 1 with
    probability probs[i % len(probs)]."""
    p = np.array([probs[i % len(probs)] for i in range(shape[0])])[:, None, None, None]
    return pack(rng.random(shape + (c,), np.float32) < p, words)


def inputs(K, batch, rng):
    """C2's input bits and R (D's input), random, each image's bits 1 with its own probability
    (0.5 in the first, so that a batch of 1 sees varied pixels; all 0 or all 1 in some later ones);
    in the images after the first a quarter of R's pixels are D's weights of a random channel or
    their complement (that channel's dot1 = K1 or -K1: the ends of its threshold row)."""
    c2, d = K.c2, K.d
    x = random_bits(rng, (batch, c2["h"], c2["w"]), c2["c"], c2["words"], (0.5, 0.5, 0.2, 0.8, 0.5, 0.0, 1.0))
    r = random_bits(rng, (batch, d["h"], d["w"]), d["c"], d["words"], (0.5, 0.8, 0.5, 0.2, 1.0, 0.5, 0.0))
    if batch > 1:
        w1 = K.dw.reshape(d["o"], d["words"])
        mask = pack(np.ones((d["c"],), bool), d["words"])
        pick = rng.random((batch, d["h"], d["w"])) < 0.25
        pick[0] = False
        ch = rng.integers(0, d["o"], pick.sum())
        flip = rng.random(len(ch)) < 0.5
        rows = np.where(flip[:, None], w1[ch] ^ mask, w1[ch])
        r[pick] = rows
    return x, r


def several_tiles_batch(K, cap=5000):
    """The smallest batch from 16 on at which the step's grid gives a warp 3 tiles, or else 2,
    without more than cap tiles of blocks (the emulator's time); else the largest batch within
    cap."""
    warps = K.threads[0] // 32
    for want in (3, 2):
        batch = 16
        while grid_dim(K.grid[0], batch + 1) * (batch + 1) * K.grid[1][1] <= cap:
            if -(-batch * K.grid[1][1] // (grid_dim(K.grid[1], batch) * warps)) >= want:
                return batch
            batch += 1
    return batch


def describe(K, batch):
    gx, gy, threads, smem = launch_dims(K, batch)
    warps = threads // 32
    nmt = batch * K.grid[1][1]
    return (f"{K.model} {K.name}{' (batch alternative)' if K.alt else ''} {K.cfg['TH']}x{K.cfg['TW']} px, "
            f"{K.cfg['BN']} ch, {K.cfg['WM']} warps, K1 {K.d['c']}, O {K.c2['o']}, {K.c2['oh']}x{K.c2['ow']}: "
            f"batch {batch}, grid {gx}x{gy}, {nmt} tiles, up to {-(-nmt // (gy * warps))} a warp")


class Runner(emu_steps.Runner):
    """The launches in one emulator process, in their order."""

    def start(self, launches):
        """launches: [(label, K, batch, x, r, {operand: replacement})]: writes their operands and
        starts the emulator on them; finish() waits for it."""
        lines, self.outs = [], []
        for label, K, batch, x, r, repl in launches:
            gx, gy, threads, smem = launch_dims(K, batch)
            ops = {"w": K.w, "x0": K.x0, "p0": K.p0, "p1": K.p1, **repl}
            ywords = batch * K.c2["oh"] * K.c2["ow"] * K.c2["out_words"]
            self.outs.append(self.output("y", len(self.outs)))
            files = [self.file(x), self.file(ops["w"]), self.file(ops["x0"]), self.file(ops["p0"]),
                     self.file(ops["p1"]), self.file(r)]
            lines.append(f"{label} {K.emu_name} {gx} {gy} {threads} {smem} {batch} {ywords} "
                         f"{' '.join(files)} {self.outs[-1]}\n")
        self.spawn([lines])

    def finish(self):
        """Each launch's Y words (None where the emulator stopped before it)."""
        self.wait()
        return [np.fromfile(o, "<u4") if os.path.exists(o) else None for o in self.outs]


def compare(K, y, want):
    """(words that differ, the first as text)."""
    want = want.reshape(-1)
    if y is None:
        return -1, "no output"
    if y.shape != want.shape:
        return -1, f"{y.size} words, expected {want.size}"
    bad = np.flatnonzero(y != want)
    if not bad.size:
        return 0, ""
    i = int(bad[0])
    ow, oh, lw = K.c2["ow"], K.c2["oh"], K.c2["out_words"]
    b, pix, wd = i // (oh * ow * lw), i // lw % (oh * ow), i % lw
    diff = int(y[i]) ^ int(want[i])
    chans = [32 * wd + k for k in range(32) if diff >> k & 1]
    return bad.size, (f"word {i} (image {b}, pixel ({pix // ow}, {pix % ow}), word {wd}): {int(y[i]):#010x}, "
                      f"expected {int(want[i]):#010x} (channels {chans[:8]})")


def self_check(K, runner, rng):
    """Copies of K's data at batch 3, each broken in one place, must be reported: at pixel (0, 0)
    of image 0 and a channel c, a threshold row entry, c's row base (moved to an entry that flips
    its bit there), the correction of that pixel's border class (by 2^20 the other way) and c's
    dir each flip a known bit; the first word of c's B fragments inverted changes its dot1."""
    batch = 3
    x, r = inputs(K, batch, rng)
    want, dot1 = reference(K, x, r)
    bits = unpack(want, K.c2["o"])
    nt, rsz, frag = x0_parts(K)
    bn, k1 = K.cfg["BN"], K.d["c"]
    with np.errstate(all="ignore"):
        dot2 = bconv_dot(x, K.c2w, K.c2)

    def row(c):  # c's threshold row: T[j] where (dot1 + K1) / 2 = j
        at = (nt + c // bn * rsz) // 2 + c % bn * resd_row(k1)
        return K.x0.view("<i2")[at:at + k1 + 1]

    def flips(c, t):  # whether threshold t on c's dot2 at the pixel gives the other bit
        d2 = dot2[0, 0, 0, c]
        return (d2 >= t if K.p1[c] >= 0 else d2 <= t) != bits[0, 0, 0, c]

    # a channel whose row at the pixel's dot1 has another entry that flips its bit there
    for c in range(K.c2["o"]):
        j = int(dot1[0, 0, 0, c] + k1) // 2
        moves = sorted((jj - j for jj in range(k1 + 1) if flips(c, row(c)[jj])), key=abs)
        if moves:
            break
    else:
        sys.exit(f"FAIL: self-check on {K.model} {K.name}: no channel for it")
    bx, cl, d2, bit = c // bn, c % bn, int(dot2[0, 0, 0, c]), bool(bits[0, 0, 0, c])
    up = K.p1[c] >= 0
    t = (d2 + 1 if bit else d2) if up else (d2 - 1 if bit else d2)
    mutants = []
    x0 = K.x0.copy()
    x0.view("<i2")[(nt + bx * rsz) // 2 + cl * resd_row(k1) + j] = t
    mutants.append((f"T[{c}][{j}] {row(c)[j]} -> {t}", {"x0": x0}))
    x0 = K.x0.copy()
    x0.view("<i4")[(nt + bx * rsz + rsz - bn * 4) // 4 + cl] += moves[0]
    mutants.append((f"row base of channel {c} {moves[0]:+d}", {"x0": x0}))
    x0 = K.x0.copy()  # class 0 (pixel (0, 0)): entry cl of block bx's table
    x0.view("<i4")[bx * (nt // 4 // ((K.c2["o"] + bn - 1) // bn)) + cl] += -(1 << 20) if bit == up else 1 << 20
    mutants.append((f"correction of class 0, channel {c} {'-' if bit == up else '+'}2^20", {"x0": x0}))
    p1 = K.p1.copy()
    p1[c] = -p1[c]
    mutants.append((f"dir of channel {c} negated", {"p1": p1}))
    # lane 4g + t of n8 tile ni, step 0, holds words t and 4 + t of channel 32q + 8(g / 2) + 2u + g % 2
    x0 = K.x0.copy()
    cw, rch = c % 32, (K.d["words"] + 7) // 8
    ni, g = 4 * (cl // 32) + (cw % 8) // 2, 2 * (cw // 8) + cw % 2
    x0[frag // 4 + bx * (bn // 8) * rch * 64 + (ni * rch * 32 + 4 * g) * 2] ^= 0xFFFFFFFF
    mutants.append((f"B fragment word 0 of D's channel {c} inverted", {"x0": x0}))
    runner.start([(f"mutant{i}", K, batch, x, r, repl) for i, (_, repl) in enumerate(mutants)])
    for (what, _), y in zip(mutants, runner.finish()):
        n, first = compare(K, y, want)
        if n > 0:
            print(f"ok: self-check on {K.model} {K.name}: {what}: reported ({n} words differ, first {first})")
        else:
            fail(f"self-check on {K.model} {K.name}: {what}: not reported ({first or 'Y unchanged'})")


def main():
    a = emu_steps.parse_args("two blocks, batches 1 and 3")
    cxx = test_e2e.host_cxx()
    tmp, tmpdir = emu_steps.work_dir(a.keep)
    rng = np.random.default_rng(2027)
    paths = [p for p in test_e2e.residual_models(tmp, np.random.default_rng(7)) if p.endswith("resid_xnor_down.bnn")]
    paths += resd_models(tmp, rng)
    paths = {os.path.splitext(os.path.basename(p))[0]: p for p in paths}
    # every model through bnncc (under the sanitizers too), for the default targets
    blobs = emu_steps.finish_blobs(emu_steps.start_blobs(paths, tmp), "the fusion needs a GPU target")
    srcs = emu_steps.emit_cuda(paths)
    kernels = []
    for k, name in enumerate(paths):
        defs = emu_steps.kernel_defines(srcs[name], "BC_NAME", "BC_RESD", k)
        kernels += model_kernels(name, *blobs[name], defs, k)
    if failures:
        sys.exit(1)
    k1s = sorted({K.d["c"] for K in kernels})
    if k1s != [40, 64, 130, 300] or not any(K.alt for K in kernels):
        sys.exit(f"FAIL: K1 of the kernels {k1s} (expected 40, 64, 130, 300), batch alternatives "
                 f"{sum(K.alt for K in kernels)}")
    if a.sanitized:  # the emulator at -O0 with the sanitizers: K1 40 and 300 (two k256 steps)
        kernels = [K for K in kernels if K.d["c"] in (40, 300)]
    calls = [(K.emu_name, K.defines, "cuda/kernels/bconv.cu",
              f"    {K.emu_name}(a.X, a.W, a.P, a.ep0, a.ep1, a.Y, a.R, a.nb);\n") for K in kernels]
    exe = emu_steps.finish_emulator(cxx, *emu_steps.start_emulator(cxx, "resd_emu", calls, tmp, a.sanitized))
    runner = Runner(exe, tmp)
    launches = []
    for K in kernels:
        for batch in [1, 3] if a.sanitized else [1, 3, 17, several_tiles_batch(K)]:
            launches.append((f"{K.emu_name}_b{batch}", K, batch, *inputs(K, batch, rng), {}))
    runner.start(launches)
    wants = [reference(K, x, r)[0] for _, K, _, x, r, _ in launches]  # while the emulator runs
    for (_, K, batch, _, _, _), y, want in zip(launches, runner.finish(), wants):
        n, first = compare(K, y, want)
        if n:
            fail(f"{describe(K, batch)}: {n if n > 0 else 'all'} words differ, first: {first}")
        else:
            print(f"ok: {describe(K, batch)}: {want.size} words")
    self_check(kernels[0], runner, rng)
    emu_steps.exit_on_failures()


if __name__ == "__main__":
    main()
