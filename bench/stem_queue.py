#!/usr/bin/env python3
"""stem_queue.py BLOB [--batch N] [--kp KP ...]: how many sums of a model's exact stem (the conv2d
step with bits or codes out, docs/kernels.md "The stem") the GPU kernel lists for its fixup: those
whose interval [sum - m, sum + m] holds one of the channel's thresholds (m the staged-window kernel's
bound, BnnConvBits and BnnChainK::exact_consts in float_ops.cu: REL * ||x||_2 * ||w||_2 + ABS *
(K * xmax + sqrt(K) ||w||_2), REL from the kernel's KP and its MMAs a k step, TERMS, and with
TERMS 2 also ||x||_2 * ||w - fp16(w)||_2, with TERMS 1 that and the input's rounding, 2^-11 * ||x||_2 *
(||w||_2 + ||w - fp16(w)||_2) + 2^-25 * sqrt(K) * (||w||_2 + ||w - fp16(w)||_2)), and every sum of a channel without a threshold form
(mode 3); with codes out, the levels' thresholds. All three TERMS are counted. Counted on the CPU
from the blob's weights and chain, with float64 sums, on random normal inputs (BLOB compiled for
that input shape), for the kernel's blocks of 8 x 16 pixels x 64 channels (WIN), whose lists hold
31 sums for bits, 127 for codes (255 with TERMS 1; more are recomputed by the block itself). No GPU needed."""
import argparse
import struct

import numpy as np

STEP_SIZE, STEP_CONV2D, SLOTS_AT, PARAMS_AT = 648, 6, 264, 456


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("blob")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--kp", type=int, nargs="*", help="KP values to compare (default: the blob's p1)")
    a = ap.parse_args()
    b = open(a.blob, "rb").read()
    sec = {}
    for i in range(struct.unpack_from("<I", b, 16)[0]):
        e = 64 + 48 * i
        sec[struct.unpack_from("<I", b, e)[0]] = struct.unpack_from("<QQ", b, e + 24)
    (poff, psize), (woff, _) = sec[2], sec[3]
    for at in range(poff + 64, poff + psize - STEP_SIZE + 1, STEP_SIZE):
        prm = [struct.unpack_from("<q", b, at + PARAMS_AT + 8 * i)[0] for i in range(24)]
        if struct.unpack_from("<I", b, at)[0] == STEP_CONV2D and prm[17] > 0:  # out_words: bits or codes out
            break
    else:
        raise SystemExit(f"{a.blob}: no conv2d step with bits or codes out")
    levels = prm[23]
    c, h, w, o, kh, kw, sh, sw, pt, pl, _, _, dh, dw, _, oh, ow, _, stages = prm[:19]
    if (dh, dw) != (1, 1):
        raise SystemExit("dilated stems are not counted here")
    slot = lambda s: struct.unpack_from("<IIQQ", b, at + SLOTS_AT + 24 * s)  # noqa: E731
    k = c * kh * kw
    w32 = np.frombuffer(b, np.float32, o * k, woff + slot(3)[2]).reshape(o, k).astype(np.float64)
    rows = 2 * stages + (2 + levels if levels else 3)
    chain = np.frombuffer(b, np.float32, rows * o, woff + slot(1)[2]).reshape(-1, o).astype(np.float64)
    wabs = chain[2 * stages][None, :, None]
    if levels:  # the thresholds on the sum: sign * tt[j] (docs/blob-format.md, conv2d)
        sign = chain[2 * stages + 1 + levels]
        ts = [(sign * chain[2 * stages + 1 + j])[None, :, None] for j in range(levels)]
        decided = np.ones((1, o, 1), bool)  # every channel has the threshold form
    else:
        t, mode = (chain[2 * stages + i][None, :, None] for i in (1, 2))
        ts, decided = [t], np.abs(mode) == 1
    p1_bytes, op = slot(5)[3], (o + 63) // 64 * 64
    kp_blob = p1_bytes // (2 * op * 2)  # two planes (hi, lo) of fp16
    x = np.random.default_rng(1).standard_normal((a.batch, c, h, w))
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pt + sh), (pl, pl + sw)))
    cols = np.stack([xp[:, :, ky:ky + sh * oh:sh, kx:kx + sw * ow:sw] for ky in range(kh) for kx in range(kw)], 2)
    cols = cols.reshape(a.batch, k, oh * ow)  # k = (c, ky, kx), as w32
    s = np.einsum("ok,nkp->nop", w32, cols)
    xmax = np.abs(cols).max(1)[:, None, :]
    xnorm = np.sqrt((cols ** 2).sum(1))[:, None, :]
    dlo = np.sqrt(((w32 - w32.astype(np.float16).astype(np.float64)) ** 2).sum(1))[None, :, None]
    ty, tx = (oh + 7) // 8, (ow + 15) // 16
    for kp in a.kp or [kp_blob]:
        for terms in (3, 2, 1):
            listq = (255 if terms == 1 else 127) if levels else 31
            rel, abs_ = 2.0 * (17.0 * terms * (kp // 16) + k + 16.0) * 2.0 ** -23, 2.0 * 2.0 ** -23
            m = rel * xnorm * wabs + abs_ * (k * xmax + np.sqrt(k) * wabs) + (xnorm * dlo if terms < 3 else 0)
            if terms == 1:
                m = m + (2.0 ** -11 * xnorm + 2.0 ** -25 * np.sqrt(k)) * (wabs + dlo)
            near = np.zeros(s.shape, bool)
            for t in ts:
                near |= (s - m <= t) & (s + m >= t)
            queued = decided & near | (~decided if levels else (mode == 3))
            q = np.zeros((a.batch, op, ty * 8, tx * 16), bool)
            q[:, :o, :oh, :ow] = queued.reshape(a.batch, o, oh, ow)
            blocks = q.reshape(a.batch, op // 64, 64, ty, 8, tx, 16).sum((2, 4, 6)).reshape(-1)
            print(f"KP {kp}{' (the blob)' if kp == kp_blob else ''}, TERMS {terms}: {queued.mean() * 100:.3f} % of "
                  f"the sums listed, {queued.sum() / a.batch:.0f} an image; a block of 8x16 pixels x 64 channels "
                  f"lists {blocks.mean():.1f} on average, at most {blocks.max()}, more than {listq} in "
                  f"{np.mean(blocks > listq) * 100:.2f} %, none in {np.mean(blocks == 0) * 100:.0f} % of blocks")


if __name__ == "__main__":
    main()
