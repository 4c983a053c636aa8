#!/usr/bin/env python3
"""Low-bit CNNs (qconv_models.py: QONNX w2a2, w1a2, w3a2 and unsigned-weight nets; 3x3 pad 1,
stride 2 and dilated convs; channels 3, 5, 31, 33, 65, 300; 2- and 3-bit activations; signed activation
quants whose padding reads a non-zero pad code; a dense classifier on the flattened codes; a
last conv with an i32 accumulator; a qconv2d whose one-level threshold writes packed bits for a
binary conv; a 3x20x20 input) through model.bin against the reference interpreter.

    test_qconv_bin.py --device cpu|gpu

For each model: the -O3 IR must hold the expected qconv2d layers (the lowbit pass took every
conv integer), bnncc -O3 compiles it for sm_90a and sm_80 (both CUBIN sections non-empty:
NVRTC built the qconv and quantize kernels), and the blob's outputs at batch 1, 3 and 17 on
random inputs (a third of them on the input quant's rounding ties) are byte-identical to
`bnnrun --reference` on the ONNX model; so are -O1's (qconv2d and its multi-level threshold
unfused). So are 8 random nets (qconv_models.random_net: channels 1-130, kernels 1-3, strides,
dilations, asymmetric pads, 1-3 bit weights, 2-3 bit activations). A grouped qconv2d is refused with the node's name and exit 1; qconv steps with impossible
parameters (a checksum-valid blob) are refused by the loader. --device gpu runs the blob on the GPU and exits 77 (skipped) without one;
it also runs the direct qconv kernel at a batch past 65,535 row tiles (direct_large_batch)."""
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
from test_e2e import BNNCC, BNNRUN, cubin_sections, gpu_available, run  # noqa: E402

failures = []
QCONVS = {"qcnn_big": 2, "qcnn_tobits": 1, "qcnn_w2a2": 3, "qcnn_w1a2": 3, "qcnn_tail": 2, "qcnn_wide": 3,
          "qcnn_s2c64": 1, "qcnn_stem_res": 1, "qcnn_stem_a3": 1, "qcnn_stem_nopool": 1}


def fail(msg):
    print("FAIL:", msg)
    failures.append(msg)


def inputs(shape, batch, rng):
    x = rng.uniform(-2.5, 2.5, size=(batch,) + shape).astype(np.float32)
    x[::3] = np.round(x[::3] * 16) / 16  # on the grid of every input quant's scale: ties
    return x


def check(tmp, name, device, rng, net=None):
    """net: (model, input shape) of a random net (at least one qconv2d wanted), else the
    named model of qconv_models.MODELS."""
    import onnx
    model = os.path.join(tmp, name + ".onnx")
    if net:
        onnx.save(net[0], model)
        shape = net[1]
    else:
        make, shape = qconv_models.MODELS[name]
        onnx.save(make(np.random.default_rng(sum(map(ord, name)))), model)
    p = run([BNNCC, "-O3", model, "--emit=ir", "-o", "-"])
    # a qconv2d, or a qconv2d_chain (its float tail fused: two results, f32 and i32)
    got = len(re.findall(r"= (?:i32\[[^\]]*\] qconv2d|f32\[[^\]]*\], i32\[[^\]]*\] qconv2d_chain) ", p.stdout))
    if p.returncode or (got < 1 if net else got != QCONVS[name]):
        return fail(f"{name}: {got} qconv2d / qconv2d_chain in the -O3 IR, want {QCONVS.get(name, 'some')} "
                    f"({p.stderr.strip()})")
    for level in ("-O3", "-O1"):
        blob = os.path.join(tmp, f"{name}{level}.bin")
        p = run([BNNCC, level, model, "-o", blob])
        if p.returncode:
            return fail(f"{name} {level}: bnncc: {p.stderr.strip()}")
        cubins = cubin_sections(blob)
        if sorted(cubins) != ["sm_80", "sm_90a"] or min(cubins.values()) == 0:
            return fail(f"{name} {level}: CUBIN sections {cubins}")
        for batch in (1, 3, 17) if level == "-O3" else (3,):
            x = inputs(shape, batch, rng)
            xin, want, have = (os.path.join(tmp, f"{name}_{s}.npy") for s in ("x", "want", "got"))
            np.save(xin, x)
            p = run([BNNRUN, "--reference", model, "--input", xin, "--output", want])
            if p.returncode:
                return fail(f"{name}: bnnrun --reference: {p.stderr.strip()}")
            p = run([BNNRUN, blob, "--device", device, "--input", xin, "--output", have])
            if p.returncode:
                return fail(f"{name} {level}: bnnrun --device {device}: {p.stderr.strip()}")
            a, b = np.load(want), np.load(have)
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                return fail(f"{name} {level} batch {batch}: model.bin ({device}) differs from the "
                            f"reference in {int((a != b).sum())} of {a.size} outputs")
        print(f"ok: {name} {level}: model.bin ({device}) identical to the reference")


def refused(tmp):
    """A grouped qconv2d: a clear message naming the node, exit 1, no file."""
    import onnx
    model, blob = os.path.join(tmp, "grouped.onnx"), os.path.join(tmp, "grouped.bin")
    onnx.save(qconv_models.grouped(np.random.default_rng(1)), model)
    p = run([BNNCC, "-O3", model, "-o", blob])
    want = "node 'Conv_10' (Conv): no code generator for a grouped qconv2d yet"
    if p.returncode != 1 or want not in p.stderr or os.path.exists(blob):
        return fail(f"grouped qconv2d: exit {p.returncode}, {p.stderr.strip()!r}")
    print("ok: a grouped qconv2d is refused:", p.stderr.strip().splitlines()[-1])


def fnv1a(data, h=0xcbf29ce484222325):
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def patched_qconv(blob, out, edits, step_kind=20):
    """A copy of blob whose first qconv step (kind 20, or step_kind) has params[i] = v for (i, v)
    in edits, every checksum recomputed (docs/blob-format.md), so only the loader's checks can
    refuse it."""
    b = bytearray(open(blob, "rb").read())
    n = struct.unpack_from("<I", b, 16)[0]
    for i in range(n):
        e = 64 + 48 * i
        kind, off, size = struct.unpack_from("<I", b, e)[0], *struct.unpack_from("<QQ", b, e + 24)
        if kind == 2:  # PLAN: a 64-byte header, then 648-byte steps, params at 456
            for k in range((size - 64) // 648):
                at = off + 64 + 648 * k
                if struct.unpack_from("<I", b, at)[0] == step_kind:
                    for idx, v in edits:
                        struct.pack_into("<q", b, at + 456 + 8 * idx, v)
                    break
    open(out, "wb").write(rechecksum(b))


def rechecksum(b):
    """The blob bytearray b with every section checksum and the header's recomputed."""
    n = struct.unpack_from("<I", b, 16)[0]
    for i in range(n):
        e = 64 + 48 * i
        off, size = struct.unpack_from("<QQ", b, e + 24)
        struct.pack_into("<Q", b, e + 40, fnv1a(b[off:off + size]))
    struct.pack_into("<Q", b, 32, fnv1a(b[64:64 + 48 * n], fnv1a(b[:32])))
    return b


def refused_blobs(tmp):
    """model.bin is untrusted: qconv steps with impossible parameters are refused at load."""
    blob = os.path.join(tmp, "qcnn_w2a2-O3.bin")
    x = os.path.join(tmp, "qcnn_w2a2_x.npy")
    cases = [("kh*kw*ldw past 2^64", [(4, 1 << 24), (5, 1 << 24), (14, 1 << 23)]),
             ("3 words a pixel", [(14, 3)]), ("pad code of 3 bits", [(22, 9)]),
             ("xb 17", [(15, 17)])]
    for what, edits in cases:
        bad = os.path.join(tmp, "bad.bin")
        patched_qconv(blob, bad, edits)
        p = run([BNNRUN, bad, "--device", "cpu", "--input", x, "--output", os.path.join(tmp, "bad.npy")])
        if p.returncode == 0 or "(qconv)" not in p.stderr:
            fail(f"a qconv step with {what} was not refused: exit {p.returncode}, {p.stderr.strip()!r}")
    print(f"ok: {len(cases)} damaged qconv steps refused by the loader")


def direct_large_batch(tmp, device, rng):
    """--qconv=direct (qconv.cu's direct kernel, a block a 16-row tile in y) at a batch of 1040
    32x32 images: 66,560 row tiles, past the 65,535 blocks a grid holds in y. The kernel walks its
    row tiles (BLOB_STEP_ONE_WAVE), so the loader accepts the batch and the GPU's outputs are the
    CPU path's byte for byte (the CPU path equals the reference above)."""
    import onnx
    n = qconv_models.Net("direct_big", np.random.default_rng(5))
    x = n.quant("x", 0.25, 2, 0)
    x = qconv_models.block(n, x, 8, 8, 3, 1, 2)
    model, blob = os.path.join(tmp, "direct_big.onnx"), os.path.join(tmp, "direct_big.bin")
    onnx.save(n.model((8, 32, 32), n.conv(qconv_models.block(n, x, 8, 8, 3, 2, 2), 8, 4, 1, 2)), model)
    p = run([BNNCC, "-O3", "--qconv=direct", "--target=sm_90a,sm_80", model, "-o", blob])
    if p.returncode:
        return fail(f"direct_big: bnncc: {p.stderr.strip()}")
    xin = os.path.join(tmp, "direct_big_x.npy")
    np.save(xin, inputs((8, 32, 32), 1040, rng))
    outs = {}
    for dev in ("cpu", device):
        outs[dev] = os.path.join(tmp, f"direct_big_{dev}.npy")
        p = run([BNNRUN, blob, "--device", dev, "--input", xin, "--output", outs[dev]])
        if p.returncode:
            return fail(f"direct_big: bnnrun --device {dev} at batch 1040: {p.stderr.strip()}")
    a, b = np.load(outs["cpu"]), np.load(outs[device])
    if a.shape != b.shape or a.tobytes() != b.tobytes():
        return fail(f"direct_big: the GPU differs from the CPU path in {int((a != b).sum())} of {a.size} outputs")
    print(f"ok: direct_big: the direct qconv kernel at batch 1040 (66,560 row tiles), {device} = CPU path")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    a = ap.parse_args()
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        if a.device == "gpu" and not gpu_available(tmp):
            print("skipped: no GPU or no NVIDIA driver")
            sys.exit(77)
        for name in sorted(qconv_models.MODELS):
            check(tmp, name, a.device, rng)
        shapes = np.random.default_rng(2026)
        for i in range(8):
            check(tmp, f"qcnn_random{i}", a.device, rng, qconv_models.random_net(shapes))
        if a.device == "gpu":
            direct_large_batch(tmp, a.device, rng)
        refused(tmp)
        refused_blobs(tmp)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
