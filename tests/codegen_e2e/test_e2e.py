#!/usr/bin/env python3
"""End to end: bnncc MODEL -o m.bin, then bnnrun m.bin against bnnrun --reference MODEL.

    test_e2e.py --device cpu|gpu [--quick] [--sanitized] [--only NAME] [--no-mnist]

For every model of tests/text/*.bnn and the shared FINN/QONNX binary models: compile with
-O3 for sm_90a and sm_80 (NVRTC compiles every kernel: both CUBIN sections non-empty), run
the blob at batch 1, 3 and 1000 on random inputs (with exact zeros, which binarize maps by
its zero rule) and on the model's real inputs where there are some, and compare with the
reference interpreter: integer and bit outputs identical, float outputs within 1e-5
relative. -O0 must agree with the reference too. The QONNX low-bit models (TFC_1W2A, TFC_2W2A,
kwsmlp_w3a3, unsw_nb15-mlp-w2a2: quantize and bit-plane qgemm steps) are checked the same way,
and so are the small models of this folder (tests/codegen_e2e/*.bnn). TFC_1W1A runs the whole MNIST test set: 92.96 %,
every prediction equal to the reference's. With --device gpu the blob runs on the GPU;
without one (no driver, no device) the test exits 77 (skipped). --quick (the quick suite) leaves
out the PyTorch models (torch takes seconds to load)."""
import argparse
import base64
import gzip
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

SRC = os.environ.get("BNN_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BNN_BUILD_ROOT", os.path.join(SRC, "build"))
SHARED = os.environ.get("BNN_SHARED", os.path.join(SRC, "..", "shared"))
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")

failures = []
BATCHES = (1, 3, 1000)


def fail(msg):
    print("FAIL:", msg)
    failures.append(msg)


def run(cmd, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    return p


DTYPES = {"f32": np.float32, "i32": np.int32, "i64": np.int64, "i8": np.int8, "u8": np.uint8}


def host_cxx():
    """A C++ compiler for the emulator tests (float_tiles_emu.py, conv2d_mma_emu.py); without
    one they exit 77 (skipped)."""
    cxx = next((c for c in (os.environ.get("CXX"), "c++", "g++", "clang++") if c and shutil.which(c)), None)
    if not cxx:
        print("skipped: no C++ compiler")
        sys.exit(77)
    return cxx


def float_ops_parts(*spans):
    """float_ops.cu's text from each (first marker, next marker) span, joined: the kernels an
    emulator compiles as host C++."""
    src = open(os.path.join(SRC, "codegen", "cuda", "kernels", "float_ops.cu")).read()
    return "".join(src[src.index(a):src.index(b)] for a, b in spans)


EMU_FIBER = os.path.join(SRC, "tests", "emu")


def run_emulator(cxx, source, tmp, opt, args=(), includes=()):
    """Compiles an emulator test's host C++ source with the fibers that run its threads
    (tests/emu/emu_fiber.c; C++20, no contracted float operations, the generated .inc files from
    tmp), runs it with args, prints its output and exits with its status; exit 77 (skipped)
    where the compiler has no _Float16."""
    exe = os.path.join(tmp, "emu")
    p = subprocess.run([cxx, "-std=c++20", *opt, "-ffp-contract=off", "-Wno-unknown-pragmas", "-I", tmp,
                        *(f for d in (*includes, EMU_FIBER) for f in ("-I", d)), source,
                        os.path.join(EMU_FIBER, "emu_fiber.c"), "-o", exe],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode:
        if "_Float16" in p.stderr and "not supported" in p.stderr:
            print(f"skipped: {cxx} has no _Float16")
            sys.exit(77)
        sys.exit(f"FAIL: compiling the emulator:\n{p.stderr[-3000:]}")
    p = subprocess.run([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(p.stdout, end="")
    sys.exit(p.returncode)


def blob_sections(b):
    """{section kind: (offset, size)} of a model.bin's bytes (docs/blob-format.md)."""
    out = {}
    for i in range(struct.unpack_from("<I", b, 16)[0]):
        e = 64 + 48 * i
        out[struct.unpack_from("<I", b, e)[0]] = struct.unpack_from("<QQ", b, e + 24)
    return out


BLOB_STEP_SIZE, BLOB_SLOTS_AT, BLOB_PARAMS_AT = 648, 264, 456  # a plan step record (docs/blob-format.md)


def blob_steps(b):
    """[(offset, kind, kernel name)] of the plan steps of a model.bin's bytes."""
    poff, psize = blob_sections(b)[2]
    return [(at, struct.unpack_from("<I", b, at)[0], b[at + 16:at + 80].split(b"\0")[0].decode())
            for at in range(poff + 64, poff + psize - BLOB_STEP_SIZE + 1, BLOB_STEP_SIZE)]


def blob_slot(b, at, s):
    """Slot s of the step at offset at: (space, reserved, offset, bytes)."""
    return struct.unpack_from("<IIQQ", b, at + BLOB_SLOTS_AT + 24 * s)


def signature(model):
    """Graph inputs [(name, dtype, dims without N)] and the number of outputs, from the IR."""
    p = run([BNNCC, "-O0", model, "--emit=ir", "-o", "-"])
    if p.returncode:
        raise RuntimeError(p.stderr)
    m = re.search(r"^graph \$\S+\((.*)\) -> \((.*)\) \{$", p.stdout, re.M)
    ins = [(n, t, [int(d) for d in dims.split(",")[1:]])
           for n, t, dims in re.findall(r"%([^:]+): (\w+)\[([^\]]*)\]", m.group(1))]
    nout = len(re.findall(r"\w+\[[^\]]*\]", m.group(2)))
    return ins, nout


def cubin_sections(path):
    """{arch: size} of the CUBIN sections of a model.bin (docs/blob-format.md)."""
    with open(path, "rb") as f:
        b = f.read()
    assert b[:8] == b"BNNMODEL", "bad magic"
    n = struct.unpack_from("<I", b, 16)[0]
    out = {}
    for i in range(n):
        e = 64 + 48 * i
        kind = struct.unpack_from("<I", b, e)[0]
        tag = b[e + 8:e + 24].rstrip(b"\0").decode()
        size = struct.unpack_from("<Q", b, e + 32)[0]
        if kind == 4:
            out[tag] = size
    return out


def random_inputs(ins, batch, rng):
    xs = []
    for _, t, dims in ins:
        x = rng.standard_normal([batch] + dims).astype(np.float32)
        x[rng.random(x.shape) < 0.05] = 0.0  # exact zeros: binarize's zero rule
        xs.append(x.astype(DTYPES[t]) if t != "f32" else x)
    return xs


def compare(name, got, ref, exact=False, tol=None):
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return f"{name}: shape/dtype {got.shape} {got.dtype} vs reference {ref.shape} {ref.dtype}"
    if got.dtype.kind == "f" and tol is not None:  # within tol of the output's largest finite magnitude
        g, r = got.astype(np.float64), ref.astype(np.float64)
        fin = np.isfinite(r)
        scale = max(float(np.abs(r[fin]).max(initial=0.0)), 1e-30)
        diff = np.where(fin, np.abs(g - np.where(fin, r, 0.0)), 0.0)  # NaN where got is not finite
        same_special = np.array_equal(g[~fin], r[~fin], equal_nan=True)
        err = float(np.max(diff, initial=0.0)) / scale
        if not same_special or not err <= tol:
            return f"{name}: error {err:.3g} of the largest output (bound {tol:g})"
    elif got.dtype.kind == "f" and exact:  # bit for bit, any NaN equal to any NaN
        nan = np.isnan(got)
        bad = (nan != np.isnan(ref)) | (~nan & (got.view(np.uint32) != ref.view(np.uint32)))
        if bad.any():
            i = int(np.flatnonzero(bad.reshape(-1))[0])
            return (f"{name}: {int(bad.sum())} of {got.size} floats differ from the reference in their bits "
                    f"(first at flat index {i}: {got.reshape(-1)[i]!r} vs {ref.reshape(-1)[i]!r})")
    elif got.dtype.kind == "f":
        err = np.abs(got.astype(np.float64) - ref) / np.maximum(1.0, np.abs(ref))
        nan_ok = np.isnan(got) == np.isnan(ref)
        if not nan_ok.all() or np.nanmax(err, initial=0.0) > 1e-5:
            return f"{name}: max relative error {np.nanmax(err, initial=0.0):.3g} (bound 1e-5)"
    elif not np.array_equal(got, ref):
        return f"{name}: {int((got != ref).sum())} of {got.size} elements differ"
    return None


def run_pair(tmp, blob, model, xs, nout, device, tag):
    """Outputs of the blob on device and of the reference on the same inputs."""
    args = []
    for i, x in enumerate(xs):
        path = os.path.join(tmp, f"{tag}_x{i}.npy")
        np.save(path, x)
        args += ["--input", path]
    outs = [os.path.join(tmp, f"{tag}_y{i}.npy") for i in range(nout)]
    refs = [os.path.join(tmp, f"{tag}_r{i}.npy") for i in range(nout)]
    p = run([BNNRUN, blob, "--device", device] + args + sum((["--output", o] for o in outs), []))
    if p.returncode:
        return None, None, p.stderr
    p = run([BNNRUN, "--reference", model] + args + sum((["--output", o] for o in refs), []))
    if p.returncode:
        return None, None, "reference: " + p.stderr
    return [np.load(o) for o in outs], [np.load(r) for r in refs], None


def check_report_line(model, tmp, text, count, prefix="codegen: ", target="cpu"):
    """bnncc -O3 --report on model (--target=TARGET; None: the default GPU targets): its `PREFIX N
    ...text...` line says count (no line: 0)."""
    name = os.path.basename(model)
    fd, out = tempfile.mkstemp(suffix=".report.bin", dir=tmp)  # its own file: checks of one model run side by side
    os.close(fd)
    p = run([BNNCC, "-O3"] + ([f"--target={target}"] if target else []) + ["--report", model, "-o", out])
    if p.returncode:
        return fail(f"{name}: bnncc --report failed: {p.stderr.strip()}")
    got = [int(l.split()[1]) for l in p.stderr.splitlines() if l.startswith(prefix) and text in l]
    if (got[0] if got else 0) != count:
        return fail(f"{name}: --report says {got or 'nothing'} for '{text}', expected {count}")
    print(f"ok: {name}: --report: {count} x '{text}'")


def f16_order_kp(c, kh, kw, sw, dw):
    """(PS, KWP, KP) of the k order bnncc writes a conv's p1 in (blob.h blob_conv2d_f16_order):
    k = ky*KWP + kx*PS + c, PS = C where a pair of k falls on whole words of the staged input
    (C even, or stride_w * C even and dil_w 1), else C rounded up to even; C > 4: (c, ky, kx)."""
    if c > 4:
        return 0, 0, (c * kh * kw + 15) // 16 * 16
    ps = c if c % 2 == 0 or (sw * c % 2 == 0 and dw == 1) else c + 1
    kwp = (kw * ps + 1) // 2 * 2
    return ps, kwp, (kh * kwp + 15) // 16 * 16


def check_stem_form(model):
    """The stem conv's tensor-core kernel form in bnncc --emit=cuda: k = ky*KWP + kx*PS + c (PS
    = C = 3 where the stride is even: a 7x7 RGB stem's KP 160, not 208 with a padding channel;
    PS = 4 for stride 1 or C = 4), and the staged window (WIN 1) unless it needs more shared
    memory than three blocks an SM have (the 11x11/4 stem: its 374 k of weights)."""
    name = os.path.basename(model)
    p = run([BNNCC, "-O3", model, "--emit=cuda", "-o", "-"])
    m = re.search(r"C = (\d+), H = \d+, W = \d+, O = \d+, KH = (\d+), KW = (\d+), SH = \d+, SW = (\d+);"
                  r".*?DW = (\d+),.*?KP = (\d+),.*?PS = (\d+), KWP = (\d+), WIN = (\d)", p.stdout, re.S)
    if p.returncode or not m:
        return fail(f"{name}: --emit=cuda has no conv config with PS, KWP and WIN (rc {p.returncode})")
    c, kh, kw, sw, dw, kp, ps, kwp, win = (int(v) for v in m.groups())
    want = f16_order_kp(c, kh, kw, sw, dw) + (0 if "11x11" in name else 1,)
    if (ps, kwp, kp, win) != want:
        return fail(f"{name}: PS, KWP, KP, WIN = {(ps, kwp, kp, win)}, expected {want}")
    print(f"ok: {name}: PS = {ps}, KWP = {kwp}, KP = {kp}, WIN = {win}")


def check_stem_sm80_registers(model, tmp):
    """The staged-window stem asks for three blocks an SM on sm_90a and for two on sm_80 (emit.c
    BNN_ARCH_MINB), where only two fit its shared memory (stem_bits_pool) or its code needs more
    registers than three leave (stem_bits_ties, whose shared memory fits three): its sm_80 code
    then keeps its values in registers (with three it spilled 148 bytes, VGG-small's 108)."""
    name = os.path.basename(model)
    p = run([BNNCC, "-O3", "--report", model, "-o", os.path.join(tmp, name + ".sm80.bin")])
    src = run([BNNCC, "-O3", model, "--emit=cuda", "-o", "-"]).stdout
    if p.returncode or not src:
        return fail(f"{name}: bnncc failed")
    m = re.search(r"__launch_bounds__\(256, (BNN_ARCH_MINB\(3, 2\)|\d+)\)\s*\n(s\d+_conv2d)\(", src)
    line = re.search(r"^codegen: sm_80: [^\n]*$", p.stderr, re.M)
    if not m or not m.group(1).startswith("BNN_ARCH_MINB") or not line or m.group(2) + " (" in line.group(0):
        return fail(f"{name}: the stem's launch bounds {m.group(1) if m else None}, sm_80: "
                    f"{line.group(0) if line else 'no codegen line'}")
    print(f"ok: {name}: {m.group(2)} asks for {m.group(1)} blocks an SM; sm_80 code without local memory")


def check_pdl_flags(model, tmp):
    """Every step with a GPU kernel is flagged PDL (bit 1: its kernel waits for its producers
    before it touches an activation, docs/blob-format.md), and no step without one is."""
    name = os.path.basename(model)
    blob = os.path.join(tmp, name + ".pdl.bin")
    if run([BNNCC, "-O3", "--target=sm_90a", model, "-o", blob]).returncode:
        return fail(f"{name}: bnncc failed")
    b = open(blob, "rb").read()
    steps = [(kernel, struct.unpack_from("<I", b, at + 8)[0]) for at, _, kernel in blob_steps(b)]
    wrong = [(i, kernel, flags) for i, (kernel, flags) in enumerate(steps) if bool(flags & 2) != bool(kernel)]
    if not steps or wrong:
        return fail(f"{name}: steps whose PDL flag does not match having a kernel: {wrong or 'no steps'}")
    print(f"ok: {name}: {sum(1 for k, _ in steps if k)} kernel steps flagged PDL, {len(steps)} steps")


def check_stem_fixup(model, tmp):
    """An exact stem (a conv2d step writing bits, docs/kernels.md "The stem") lists the sums too
    close to call in slot x0, 128 bytes a tile; where its staged window has one channel tile, a
    batch alternative right after it (flag 4: several tiles a block, docs/kernels.md) shares its
    operands and list; the next step is its GPU-only fixup kernel (`kernel`, sN_stemfix) over the
    same input, output and list: there the small batches' (bnn_conv2d_bits_fixwin), then the
    fixup of the larger ones as its batch alternative from batch 3 (lower.c STEM_FIXWIN_BATCH)."""
    name = os.path.basename(model)
    blob = os.path.join(tmp, name + ".fix.bin")
    if run([BNNCC, "-O3", "--target=sm_90a", model, "-o", blob]).returncode:
        return fail(f"{name}: bnncc failed")
    b = open(blob, "rb").read()
    steps = blob_steps(b)
    stems = [i for i, (at, kind, _) in enumerate(steps) if kind == 6 and blob_slot(b, at, 6)[0]]
    flags = [struct.unpack_from("<I", b, steps[i][0] + 8)[0] for i in stems]
    alt = len(stems) == 2 and stems[1] == stems[0] + 1 and flags == [flags[0] & ~4, flags[0] | 4]
    if len(stems) != 1 and not alt:
        return fail(f"{name}: conv2d steps with a list (x0): {stems}, flags {flags}; expected the stem's, or it "
                    "and its batch alternative")
    i = stems[0]
    at, fx = steps[i][0], steps[stems[-1] + 1] if stems[-1] + 1 < len(steps) else (0, 0, "")
    same = fx[0] and all(blob_slot(b, at, s) == blob_slot(b, o, s) for s in (0, 1, 2, 3, 4, 6)
                         for o in [fx[0]] + [steps[j][0] for j in stems[1:]])
    x0 = blob_slot(b, at, 6)
    if fx[1] != 16 or not fx[2].endswith("_stemfix") or not same or x0[3] % 128:
        return fail(f"{name}: step {stems[-1] + 1} is not the stem's fixup over its operands: kind {fx[1]}, kernel "
                    f"'{fx[2]}', same slots {bool(same)}, list {x0[3]} bytes")
    what = "the stem and its alternative list" if alt else "the stem lists"
    if alt: # the fixup from batch 3 on: another kernel for the same step
        j = stems[-1] + 2
        fa = steps[j] if j < len(steps) else (0, 0, "")
        fa_flags, fa_from = struct.unpack_from("<II", b, fa[0] + 8) if fa[0] else (0, 0)
        if (fa[1] != 16 or not fa[2].endswith("_stemfix") or fa[2] == fx[2] or not fa_flags & 4 or fa_from != 3 or
                any(blob_slot(b, fx[0], s) != blob_slot(b, fa[0], s) for s in range(8))):
            return fail(f"{name}: step {j} is not the larger batches' fixup (a batch alternative of step {j - 1} "
                        f"from batch 3): kind {fa[1]}, kernel '{fa[2]}', flags {fa_flags:#x}, from {fa_from}")
        src = run([BNNCC, "-O3", "--target=sm_90a", model, "--emit=cuda", "-o", "-"]).stdout
        if f"bnn_conv2d_bits_fixwin<{fx[2]}_cfg>" not in src or f"bnn_conv2d_bits_fixup<{fa[2]}_cfg>" not in src:
            return fail(f"{name}: {fx[2]} does not call bnn_conv2d_bits_fixwin, or {fa[2]} bnn_conv2d_bits_fixup")
        print(f"ok: {name}: {what} {x0[3] // 128} tiles' sums for {fx[2]} (below batch 3) and {fa[2]}")
        return 0
    print(f"ok: {name}: {what} {x0[3] // 128} tiles' sums for {fx[2]}")


def editable_blob(model, tmp, tag, target):
    """(file name, the bytes of model compiled by bnncc -O3 --target=target, rechecksum) for a
    check that edits a blob and loads it again, or None when bnncc failed (reported)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lowbit"))
    from test_qconv_bin import rechecksum
    name = os.path.basename(model)
    blob = os.path.join(tmp, f"{name}.{tag}.bin")
    if run([BNNCC, "-O3", f"--target={target}", model, "-o", blob]).returncode:
        fail(f"{name}: bnncc failed")
        return None
    return name, bytearray(open(blob, "rb").read()), rechecksum


def check_alt_tables(model, tmp):
    """A threshold bconv's batch alternative (a halo kernel of another tile) has its own tables in
    slot x0 (kernels.h bnn_halo_tables, docs/blob-format.md bconv): the loader takes an x0 that
    differs from its main step's where both are weights, and refuses one in the arena."""
    got = editable_blob(model, tmp, "alt", "sm_90a")
    if not got:
        return
    name, b, rechecksum = got
    steps = blob_steps(b)
    alts = [i for i, (at, kind, _) in enumerate(steps) if kind == 4 and struct.unpack_from("<I", b, at + 8)[0] & 4]
    if not alts:
        return fail(f"{name}: no bconv batch alternative")
    at, main_at = steps[alts[0]][0], steps[alts[0] - 1][0]
    x0, main_x0 = blob_slot(b, at, 6), blob_slot(b, main_at, 6)
    if x0 == main_x0 or x0[0] != 2 or main_x0[0] != 2:
        return fail(f"{name}: the alternative's x0 {x0} is not tables of its own beside {main_x0}")
    x = os.path.join(tmp, name + ".alt.npy")
    ins, _ = signature(model)
    np.save(x, random_inputs(ins, 2, np.random.default_rng(4))[0])
    for what, slot in (("its own tables", x0), ("an arena x0", (1, 0, 0, 16))):
        struct.pack_into("<IIQQ", b, at + BLOB_SLOTS_AT + 24 * 6, *slot)
        path = os.path.join(tmp, f"{name}.alt_{slot[0]}.bin")
        open(path, "wb").write(rechecksum(b))
        p = run([BNNRUN, path, "--device", "cpu", "--input", x])
        refused = p.returncode != 0 and "batch alternative" in p.stderr
        if refused != (slot[0] == 1):
            return fail(f"{name}: an alternative with {what}: exit {p.returncode}, {p.stderr.strip()[-200:]!r}")
    print(f"ok: {name}: {len(alts)} batch alternatives with tables of their own; an arena x0 is refused")


def check_p1_orders(model, tmp):
    """The loader takes a stem's p1 in its k orders (docs/blob-format.md conv2d): the blob of
    model with its p1 slot cut to the (c, ky, kx) order's size (what older bnncc wrote; for a
    7x7 or 5x5 RGB stem the same as bnncc's, so model is the 11x11 one) still loads and runs on the CPU
    path, with the same outputs; a size of no order is refused. (The size of PS = C rounded up
    to even, the other older order, exceeds the weights of such a blob: not editable so.)"""
    got = editable_blob(model, tmp, "p1", "cpu")
    if not got:
        return
    name, b, rechecksum = got
    at = next((at for at, kind, _ in blob_steps(b) if kind == 6 and blob_slot(b, at, 5)[3]), None)  # conv2d, p1
    if at is None:
        return fail(f"{name}: no conv2d step with a p1")
    c, o, kh, kw, sw, dw = (struct.unpack_from("<q", b, at + BLOB_PARAMS_AT + 8 * i)[0] for i in (0, 3, 4, 5, 7, 13))
    p1_bytes_at = at + BLOB_SLOTS_AT + 24 * 5 + 16
    new = blob_slot(b, at, 5)[3]
    rows = (o + 63) // 64 * 64
    planes = new // (rows * f16_order_kp(c, kh, kw, sw, dw)[2] * 2)
    old = planes * rows * ((c * kh * kw + 15) // 16 * 16) * 2
    if old == new:
        return fail(f"{name}: p1 sizes {new} and {old} agree: the check needs another stem")
    x = os.path.join(tmp, name + ".p1.npy")
    ins, _ = signature(model)
    np.save(x, random_inputs(ins, 2, np.random.default_rng(3))[0])
    outs = []
    for what, bytes_ in (("as written", new), ("the (c, ky, kx) order's size", old), ("no order's size", old + 32)):
        struct.pack_into("<Q", b, p1_bytes_at, bytes_)
        path = os.path.join(tmp, f"{name}.p1_{len(outs)}.bin")
        open(path, "wb").write(rechecksum(b))
        y = os.path.join(tmp, f"{name}.p1_{len(outs)}.npy")
        p = run([BNNRUN, path, "--device", "cpu", "--input", x, "--output", y])
        refused = p.returncode != 0 and "slot p1" in p.stderr
        if refused != (what == "no order's size"):
            return fail(f"{name}: p1 of {bytes_} bytes ({what}): exit {p.returncode}, {p.stderr.strip()!r}")
        outs.append(None if refused else np.load(y))
    if not np.array_equal(outs[0], outs[1]):
        return fail(f"{name}: p1 of {old} bytes (the older order) gives other outputs")
    print(f"ok: {name}: p1 of {new} bytes (ky, kx, c) and {old} (c, ky, kx) load, {old + 32} is refused")


def check_model(model, device, tmp, real_inputs=None, expect=None, low="-O0", batches=None, exact=False,
                flags=(), tol=None, extra_cases=()):
    """flags: more bnncc options; tol: floats within tol of the largest output (else exact or
    1e-5 relative); extra_cases: more (what, inputs) to run."""
    name = os.path.basename(model) + "".join(f.replace("=", "_") for f in flags)
    rng = np.random.default_rng(zlib.crc32(name.encode()))  # per model: jobs run in threads
    blob = os.path.join(tmp, name + ".bin")
    flags = list(flags)
    p = run([BNNCC, "-O3", "--target=sm_90a,sm_80", model, "-o", blob] + flags)
    if p.returncode:
        return fail(f"{name}: bnncc failed: {p.stderr.strip()}")
    cubins = cubin_sections(blob)
    if set(cubins) != {"sm_90a", "sm_80"} or min(cubins.values()) == 0:
        return fail(f"{name}: CUBIN sections {cubins}, expected non-empty sm_90a and sm_80")
    ins, nout = signature(model)
    cases = [(f"batch {b}", random_inputs(ins, b, rng)) for b in batches or BATCHES]
    if real_inputs is not None:
        cases.append(("real inputs", real_inputs))
    cases += list(extra_cases)
    blob0 = os.path.join(tmp, name + ".O0.bin")
    p = run([BNNCC, low, "--target=cpu" if device == "cpu" else "--target=sm_90a,sm_80", model, "-o", blob0] + flags)
    if p.returncode:
        fail(f"{name}: bnncc {low} failed: {p.stderr.strip()}")
    else:
        cases.append((f"{low} batch 3", random_inputs(ins, 3, rng)))
    for k, (what, xs) in enumerate(cases):
        b = blob0 if what.startswith(low) else blob
        got, ref, err = run_pair(tmp, b, model, xs, nout, device, f"{name}_{k}")
        if err:
            fail(f"{name} ({what}): {err.strip()}")
            continue
        for i, (g, r) in enumerate(zip(got, ref)):
            msg = compare(f"{name} ({what}) output {i}", g, r, exact, tol)
            if msg:
                fail(msg)
        if expect is not None and what == "real inputs" and not np.array_equal(got[0].reshape(-1), expect):
            fail(f"{name}: real inputs give {got[0].reshape(-1)}, expected {expect}")
    print(f"ok: {name}: {', '.join(w for w, _ in cases)}")


def bits_const(name, shape, rng):
    b = rng.integers(0, 2, int(np.prod(shape)), dtype=np.uint8)
    dims = ",".join(map(str, shape))
    return f'const ${name}: b1[{dims}] = hex "{np.packbits(b, bitorder="little").tobytes().hex()}"\n'


def list_const(name, dtype, values):
    return f"const ${name}: {dtype}[{len(values)}] = [{', '.join(str(int(v)) for v in values)}]\n"


def conv_out(n, k, s, p, d):
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def odd_models(tmp, rng):
    """Random binary models with odd shapes: channel counts off every word size, C above
    256, strides, dilations, zero and one padding, pooling with an odd input, i32 and b1
    graph outputs. Returns their paths."""
    paths = []
    # conv chains: (C, H, layers of (O, k, stride, pad, dil, pad_value, pool, threshold))
    chains = [
        (3, 11, [(37, 3, 1, 1, 1, 0, True, True), (70, 3, 2, 1, 1, 1, False, True), (5, 1, 1, 0, 1, 0, False, False)]),
        (300, 6, [(33, 2, 1, 0, 2, 0, False, True), (8, 3, 1, 1, 1, 1, False, False)]),
        (1, 9, [(129, 3, 1, 0, 1, 0, (3, 2, 1), True), (31, 2, 2, 1, 1, 1, False, True), (7, 1, 1, 0, 1, 0, False, False)]),
    ]
    for ci, (c, h, layers) in enumerate(chains):
        consts, body = "", f"    %a0 = b1[N,{c},{h},{h}] binarize %x {{zero={1 if ci % 2 == 0 else -1}}}\n"
        cur, ch, hw = "a0", c, h
        for li, (o, k, s, p, d, pv, pool, thr) in enumerate(layers):
            consts += bits_const(f"w{li}", (o, ch, k, k), rng)
            ohw = conv_out(hw, k, s, p, d)
            body += (f"    %c{li} = i32[N,{o},{ohw},{ohw}] conv2d %{cur}, $w{li} {{strides=[{s},{s}], "
                     f"pads=[{p},{p},{p},{p}], dilations=[{d},{d}], pad_value={pv}}}\n")
            cur, ch, hw = f"c{li}", o, ohw
            if thr:
                fan = ch * k * k
                consts += list_const(f"t{li}", "i32", rng.integers(-fan // 4, fan // 4 + 1, o))
                consts += list_const(f"d{li}", "i8", rng.choice([-1, 1], o))
                body += f"    %b{li} = b1[N,{o},{hw},{hw}] threshold %{cur}, $t{li}, $d{li}\n"
                cur = f"b{li}"
                if pool:
                    pk, pst, pp = (2, 2, 0) if pool is True else pool
                    hw = (hw + 2 * pp - pk) // pst + 1
                    body += (f"    %p{li} = b1[N,{o},{hw},{hw}] maxpool %{cur} {{kernel=[{pk},{pk}], "
                             f"strides=[{pst},{pst}], pads=[{pp},{pp},{pp},{pp}]}}\n")
                    cur = f"p{li}"
        out = f"i32[N,{ch},{hw},{hw}]"
        if ci == 0:
            body += f"    %f = f32[N,{ch},{hw},{hw}] cast %{cur} {{to=f32}}\n"
            cur, out = "f", f"f32[N,{ch},{hw},{hw}]"
        text = f"{consts}\ngraph $odd{ci}(%x: f32[N,{c},{h},{h}]) -> ({out}) {{\n{body}    ret %{cur}\n}}\n"
        paths.append(os.path.join(tmp, f"odd_conv{ci}.bnn"))
        with open(paths[-1], "w") as f:
            f.write(text)
    # an MLP with K = 300, 257 and a b1 graph output of 64 channels next to a float one
    consts = bits_const("w1", (257, 300), rng) + bits_const("w2", (64, 257), rng) + bits_const("w3", (10, 64), rng)
    consts += list_const("t1", "i32", rng.integers(-40, 41, 257)) + list_const("d1", "i8", rng.choice([-1, 1], 257))
    consts += list_const("t2", "i32", rng.integers(-30, 31, 64))
    body = ("    %a = b1[N,300] binarize %x {zero=-1}\n"
            "    %h1 = i32[N,257] dense %a, $w1\n    %b1 = b1[N,257] threshold %h1, $t1, $d1\n"
            "    %h2 = i32[N,64] dense %b1, $w2\n    %b2 = b1[N,64] threshold %h2, $t2\n"
            "    %h3 = i32[N,10] dense %b2, $w3\n    %y = f32[N,10] cast %h3 {to=f32}\n")
    paths.append(os.path.join(tmp, "odd_mlp.bnn"))
    with open(paths[-1], "w") as f:
        f.write(f"{consts}\ngraph $oddmlp(%x: f32[N,300]) -> (f32[N,10], b1[N,64]) {{\n{body}    ret %y, %b2\n}}\n")
    return paths


def f32_const(name, shape, rng, special=None):
    """A random f32 constant in base64; special: {flat index: value} (inf, NaN, -0.0 ...)."""
    v = (rng.standard_normal(int(np.prod(shape))) * 0.5).astype(np.float32)
    v[rng.random(v.size) < 0.03] = 0.0
    for i, x in (special or {}).items():
        v[i] = x
    dims = ",".join(map(str, shape))
    return f'const ${name}: f32[{dims}] = base64 "{base64.b64encode(v.astype("<f4").tobytes()).decode()}"\n'


def write_models(tmp, models):
    """Write {name: (consts, args, outputs, body)} as text-format models; their paths."""
    paths = []
    for name, (consts, args, outs, body) in models.items():
        paths.append(os.path.join(tmp, name + ".bnn"))
        with open(paths[-1], "w") as f:
            f.write(f"{consts}\ngraph ${name}{args} -> ({', '.join(t for _, t in outs)}) {{\n{body}"
                    f"    ret {', '.join('%' + v for v, _ in outs)}\n}}\n")
    return paths


def float_models(tmp, rng):
    """Float convolutions and dense layers of odd shapes (the tiled kernels of float_ops.cu and
    their fallbacks), checked bit for bit against the reference: the stem's 7x7/2 over C = 3
    with pads 3 and a fused relu, 1x1 convolutions (flattened) with O = 65 and O = 1, a
    strided 1x1, dilation 2 with groups 2 and uneven pads, more input channels than one
    shared-memory stage, a non-finite weight (the one-thread kernel), a conv whose output is
    also a graph output next to its relu (no fusion), and dense layers with K = 8192, N = 10
    and K = 3001, N = 7 (bnn_dense_long); N = 1000, K = 512; N = 65; N = 1."""
    models = {}
    # (name, C, H, W, [(O, kh, kw, stride, pads t,l,b,r, dil, groups, bias, relu, special weights)])
    convs = [
        ("fconv_stem", 3, 23, 19, [(5, 7, 7, 2, (3, 3, 3, 3), 1, 1, True, True, None)]),
        ("fconv_1x1", 64, 7, 7, [(65, 1, 1, 1, (0, 0, 0, 0), 1, 1, True, False, {0: -0.0}),
                                 (1, 1, 1, 2, (0, 0, 0, 0), 1, 1, False, True, None)]),
        ("fconv_dil_groups", 6, 13, 11, [(10, 3, 3, 1, (2, 1, 0, 3), 2, 2, True, True, None),
                                         (4, 5, 3, 3, (1, 2, 0, 1), 1, 2, False, False, None)]),
        ("fconv_chunks", 70, 7, 7, [(12, 3, 3, 1, (1, 1, 1, 1), 1, 1, True, False, None),
                                    (7, 5, 5, 3, (2, 1, 2, 0), 1, 1, True, True, None)]),
        ("fconv_inf", 2, 6, 5, [(3, 3, 3, 1, (1, 1, 1, 1), 1, 1, True, True, {4: np.inf})]),
    ]
    for name, c, h0, w0, layers in convs:
        consts, body, cur, ch, h, w = "", "", "x", c, h0, w0
        for li, (o, kh, kw, st, p, d, g, bias, relu, special) in enumerate(layers):
            consts += f32_const(f"w{li}", (o, ch // g, kh, kw), rng, special)
            if bias:
                consts += f32_const(f"b{li}", (o,), rng)
            h = (h + p[0] + p[2] - d * (kh - 1) - 1) // st + 1
            w = (w + p[1] + p[3] - d * (kw - 1) - 1) // st + 1
            body += (f"    %c{li} = f32[N,{o},{h},{w}] conv2d %{cur}, $w{li}{f', $b{li}' if bias else ''} "
                     f"{{strides=[{st},{st}], pads=[{p[0]},{p[1]},{p[2]},{p[3]}], dilations=[{d},{d}], "
                     f"groups={g}}}\n")
            cur, ch = f"c{li}", o
            if relu:
                body += f"    %r{li} = f32[N,{o},{h},{w}] relu %{cur}\n"
                cur = f"r{li}"
        models[name] = (consts, f"(%x: f32[N,{c},{h0},{w0}])", [(cur, f"f32[N,{ch},{h},{w}]")], body)
    # a conv read by its relu and also a graph output: not fused
    consts = f32_const("w0", (4, 3, 3, 3), rng) + f32_const("b0", (4,), rng)
    body = ("    %c = f32[N,4,5,5] conv2d %x, $w0, $b0 {pads=[1,1,1,1]}\n"
            "    %r = f32[N,4,5,5] relu %c\n")
    models["fconv_shared"] = (consts, "(%x: f32[N,3,5,5])", [("c", "f32[N,4,5,5]"), ("r", "f32[N,4,5,5]")], body)
    dense = [("fdense_8192x10", 8192, [(10, True)]), ("fdense_512x1000", 512, [(1000, True)]),
             ("fdense_odd", 100, [(65, False), (1, True)]), ("fdense_3001x7", 3001, [(7, False)])]
    for name, k, layers in dense:
        consts, body, cur, kk = "", "", "x", k
        for li, (n, bias) in enumerate(layers):
            consts += f32_const(f"w{li}", (n, kk), rng)
            if bias:
                consts += f32_const(f"b{li}", (n,), rng)
            body += f"    %d{li} = f32[N,{n}] dense %{cur}, $w{li}{f', $b{li}' if bias else ''}\n"
            cur, kk = f"d{li}", n
        models[name] = (consts, f"(%x: f32[N,{k}])", [(cur, f"f32[N,{kk}]")], body)
    return write_models(tmp, models)


def head_models(tmp, rng):
    """XNOR ResNet-18's head: the last block's bits through a cast, a global average pool and a
    float dense layer (codegen/lower.c fuse_gap_dense: one GPU kernel pools the bits and
    multiplies): C = 512 over 7x7 into 1000 outputs with a bias (the narrow tile and its batch
    alternative), C = 40 (two words a pixel, padding bits) into 10 without one, C = 300 over
    3x5 into 33."""
    models = {}
    for name, c, h, w, n, bias in (("head_xnor512", 512, 7, 7, 1000, True), ("head_xnor40", 40, 7, 7, 10, False),
                                   ("head_xnor300", 300, 3, 5, 33, True)):
        t = f"[N,{c},{h},{w}]"
        consts = f32_const("w", (n, c), rng) + (f32_const("b", (n,), rng) if bias else "")
        body = (f"    %a = b1{t} binarize %x {{zero=1}}\n    %r = f32{t} cast %a {{to=f32}}\n"
                f"    %g = f32[N,{c},1,1] globalavgpool %r\n    %f = f32[N,{c}] reshape %g\n"
                f"    %y = f32[N,{n}] dense %f, $w{', $b' if bias else ''}\n")
        models[name] = (consts, f"(%x: f32{t})", [("y", f"f32[N,{n}]")], body)
    return write_models(tmp, models)


def f32_values(name, v):
    v = np.asarray(v, dtype=np.float32).reshape(-1)
    return f'const ${name}: f32[{v.size}] = base64 "{base64.b64encode(v.astype("<f4").tobytes()).decode()}"\n'


def stem_models(tmp, rng):
    """Float stems whose float value nobody reads (conv2d_chain -> bits, then a cast of the bits
    to +-1): the conv2d step writes the bits (BlobConv2dParams.out_words) and a maxpool step of
    bits pools them; on the GPU the exact mode's fp16x3 sums with their checked margin and the
    reference-order sums where a bit is too close to call. Input windows staged in shared
    memory (WIN) and, for the 11x11/4 stem, gathered a k step at a time. Odd channel counts
    (5, 70: three words a pixel, two channel tiles), 7x7/2 with pads 3, pools 3x3/2 pad 1 and
    2x2/2, none, batch-norm with negative and zero gammas, relu or none, both zero rules;
    XNOR-Net's stem with a second batch-norm after the pool (conv2d_chain's pool_at: its
    negative gammas pool their bits by AND; stem_after_pool_zero_gamma: a zero gamma there
    takes the separate steps, the stages after the pool's). stem_bits_ties:
    small dyadic weights and integer inputs (extra cases below) put many sums exactly on a
    channel's threshold, so the GPU takes the exact path for them; checked bit for bit."""
    models = {}
    # (name, C, H, W, O, k, stride, pad, bias, relu, pool (k, s, p) or None, zero, batch-norm
    # after the pool: None, "mixed" gammas, or with a "zero" gamma)
    stems = [("stem_bits_pool", 3, 23, 19, 5, 7, 2, 3, True, True, (3, 2, 1), 1, None),
             ("stem_bits_70", 3, 17, 16, 70, 3, 1, 1, False, False, (2, 2, 0), -1, None),
             ("stem_bits_nopool", 3, 20, 21, 64, 5, 2, 2, True, True, None, 1, None),
             ("stem_bits_ties", 4, 12, 12, 6, 3, 1, 1, False, False, (3, 2, 1), 1, None),
             ("stem_bits_after_pool", 3, 23, 19, 40, 7, 2, 3, True, True, (3, 2, 1), 1, "mixed"),
             ("stem_bits_11x11", 3, 31, 27, 8, 11, 4, 2, True, True, (3, 2, 1), 1, None),
             ("stem_after_pool_zero_gamma", 3, 15, 13, 9, 3, 1, 1, False, True, (2, 2, 0), -1, "zero")]
    for name, c, h, w, o, k, st, p, bias, relu, pool, zero, post in stems:
        ties = name.endswith("ties")
        if ties:  # sums of these are multiples of 1/4 in a small range: ties with the means
            wv = rng.integers(-4, 5, (o, c, k, k)) / 4.0
            consts = f32_values("w", wv).replace(f"f32[{wv.size}]", f"f32[{o},{c},{k},{k}]")
            g = np.array([1.0, -1.0, 0.0, 2.0, -0.5, 1.0][:o])
            consts += (f32_values("g", g) + f32_values("b", np.zeros(o)) +
                       f32_values("m", rng.integers(-4, 5, o) / 4.0) + f32_values("v", np.ones(o)))
        else:
            consts = f32_const("w", (o, c, k, k), rng)
            g = rng.standard_normal(o)
            g[0], g[-1] = 0.0, -abs(g[-1])
            consts += (f32_values("g", g) + f32_const("b", (o,), rng) + f32_const("m", (o,), rng) +
                       f32_values("v", np.abs(rng.standard_normal(o)) + 0.1))
        if bias:
            consts += f32_const("bias", (o,), rng)
        oh, ow = (h + 2 * p - k) // st + 1, (w + 2 * p - k) // st + 1
        t = f"[N,{o},{oh},{ow}]"
        body = (f"    %c = f32{t} conv2d %x, $w{', $bias' if bias else ''} {{strides=[{st},{st}], "
                f"pads=[{p},{p},{p},{p}]}}\n    %n = f32{t} batchnorm %c, $g, $b, $m, $v {{epsilon=0.00001}}\n")
        cur = "n"
        if relu:
            body += f"    %r = f32{t} relu %n\n"
            cur = "r"
        if pool:
            pk, ps, pp = pool
            oh, ow = (oh + 2 * pp - pk) // ps + 1, (ow + 2 * pp - pk) // ps + 1
            t = f"[N,{o},{oh},{ow}]"
            body += (f"    %p = f32{t} maxpool %{cur} {{kernel=[{pk},{pk}], strides=[{ps},{ps}], "
                     f"pads=[{pp},{pp},{pp},{pp}]}}\n")
            cur = "p"
        if post:
            g2 = rng.standard_normal(o)
            g2[0], g2[-1] = -abs(g2[0]), abs(g2[-1])
            if post == "zero":
                g2[1] = 0.0
            consts += (f32_values("g2", g2) + f32_const("b2", (o,), rng) + f32_const("m2", (o,), rng) +
                       f32_values("v2", np.abs(rng.standard_normal(o)) + 0.1))
            body += f"    %q = f32{t} batchnorm %{cur}, $g2, $b2, $m2, $v2 {{epsilon=0.00001}}\n"
            cur = "q"
        body += f"    %a = b1{t} binarize %{cur} {{zero={zero}}}\n    %y = f32{t} cast %a {{to=f32}}\n"
        models[name] = (consts, f"(%x: f32[N,{c},{h},{w}])", [("y", f"f32{t}")], body)
    return write_models(tmp, models)


def stem_tie_inputs(rng):
    """Inputs for stem_bits_ties: integers (sums land on the thresholds), the same nudged by a
    few ulps (sums a hair off them), and some inf and NaN (the sums' bound is not finite)."""
    x = rng.integers(-2, 3, (5, 4, 12, 12)).astype(np.float32)
    nudged = x * (1 + rng.integers(-3, 4, x.shape) * np.float32(2.0 ** -22)).astype(np.float32)
    special = x.copy()
    special.reshape(-1)[rng.choice(x.size, 12, replace=False)] = [np.inf, -np.inf, np.nan] * 4
    return [("integer inputs", [x]), ("nudged inputs", [nudged.astype(np.float32)]), ("inf and NaN", [special])]


def residual_models(tmp, rng):
    """Binary convolutions with a float chain after them, the Bi-Real and XNOR ResNet blocks
    (fuse-epilogue's bconv2d_chain, lowered by codegen/lower.c chain_epilogue: one bconv step
    computes cast, batchnorm, constant ops, the residual add and the binarize): odd channel counts (3, 40, 65), strides 1 and 2, the
    residual on either side of the add, a sum with 3 users (binarize, the next add, an
    avgpool), a chain that writes bits only, mul / div / sub by constants, zero padding of
    one. Checked bit for bit against the reference."""
    def bn(name, c):
        var = np.abs(rng.standard_normal(c)).astype(np.float32) + np.float32(0.1)
        return (f32_const(f"{name}g", (c,), rng) + f32_const(f"{name}b", (c,), rng) +
                f32_const(f"{name}m", (c,), rng) +
                f'const ${name}v: f32[{c}] = base64 "{base64.b64encode(var.astype("<f4").tobytes()).decode()}"\n')

    def conv(v, src, w, o, hw, s=1, p=1, pv=0):
        return (f"    %{v} = i32[N,{o},{hw},{hw}] conv2d %{src}, ${w} {{strides=[{s},{s}], pads=[{p},{p},{p},{p}], "
                f"pad_value={pv}}}\n")

    def cast_bn(v, src, o, hw):
        t = f"f32[N,{o},{hw},{hw}]"
        return (f"    %{v}f = {t} cast %{src} {{to=f32}}\n"
                f"    %{v} = {t} batchnorm %{v}f, ${v}g, ${v}b, ${v}m, ${v}v {{epsilon=0.00001}}\n")

    models = {}
    # Bi-Real: x f32[N,40,9,9]; s1 = bn1 + x (3 users), s2 = s1 + bn2 (residual first), a
    # stride-2 block to 65 channels with an avgpool residual of 65 channels, then 3 channels
    # through mul, div and sub by constants.
    c = ""
    c += bits_const("w1", (40, 40, 3, 3), rng) + bn("bn1", 40)
    c += bits_const("w2", (40, 40, 3, 3), rng) + bn("bn2", 40)
    c += bits_const("w3", (65, 40, 3, 3), rng) + bn("bn3", 65) + f32_const("wd", (65, 40, 1, 1), rng)
    c += bits_const("w4", (3, 65, 3, 3), rng) + f32_const("k1", (1, 3, 1, 1), rng)
    c += f32_const("k2", (3, 1, 1), rng, {0: -0.0}) + f32_const("k3", (3, 1, 1), rng)
    b = "    %a0 = b1[N,40,9,9] binarize %x {zero=1}\n"
    b += conv("c1", "a0", "w1", 40, 9) + cast_bn("bn1", "c1", 40, 9)
    b += "    %s1 = f32[N,40,9,9] add %bn1, %x\n    %a1 = b1[N,40,9,9] binarize %s1 {zero=1}\n"
    b += conv("c2", "a1", "w2", 40, 9) + cast_bn("bn2", "c2", 40, 9)
    b += "    %s2 = f32[N,40,9,9] add %s1, %bn2\n    %a2 = b1[N,40,9,9] binarize %s2 {zero=1}\n"
    b += ("    %p2 = f32[N,40,5,5] avgpool %s2 {kernel=[3,3], strides=[2,2], pads=[1,1,1,1]}\n"
          "    %d2 = f32[N,65,5,5] conv2d %p2, $wd\n")
    b += conv("c3", "a2", "w3", 65, 5, s=2) + cast_bn("bn3", "c3", 65, 5)
    b += "    %s3 = f32[N,65,5,5] add %bn3, %d2\n    %a3 = b1[N,65,5,5] binarize %s3 {zero=1}\n"
    b += conv("c4", "a3", "w4", 3, 5, pv=1)
    b += ("    %f4 = f32[N,3,5,5] cast %c4 {to=f32}\n    %m4 = f32[N,3,5,5] mul $k1, %f4\n"
          "    %q4 = f32[N,3,5,5] div %m4, $k2\n    %y = f32[N,3,5,5] sub $k3, %q4\n")
    models["resid_bireal"] = (c, "(%x: f32[N,40,9,9])", [("y", "f32[N,3,5,5]"), ("s1", "f32[N,40,9,9]")], b)
    # XNOR: x f32[N,C,7,7]; the residual is the block input's bits as +-1 (a cast of b1, which
    # the chain reads as bits: no unpack), the sum's only user a binarize (the step writes bits
    # only); twice, then an f32 output. C = 3, 40 (two words a pixel) and 64 (a halo tile of 64
    # channels: the threshold convs' batch alternative, with tables of its own). Their last bits
    # also go to a global average pool through a cast (XNOR ResNet's head), which reads the bits.
    for ch, name in ((3, "resid_xnor"), (40, "resid_xnor40"), (64, "resid_xnor64")):
        t = f"[N,{ch},7,7]"
        c = ""
        for i in (1, 2):
            c += bits_const(f"w{i}", (ch, ch, 3, 3), rng) + bn(f"bn{i}", ch)
        c += bits_const("w3", (5, ch, 1, 1), rng) + bn("bn3", 5)
        b = f"    %a0 = b1{t} binarize %x {{zero=1}}\n    %r0 = f32{t} cast %a0 {{to=f32}}\n"
        b += conv("c1", "a0", "w1", ch, 7) + cast_bn("bn1", "c1", ch, 7)
        b += f"    %s1 = f32{t} add %bn1, %r0\n    %a1 = b1{t} binarize %s1 {{zero=1}}\n"
        b += f"    %r1 = f32{t} cast %a1 {{to=f32}}\n"
        b += conv("c2", "a1", "w2", ch, 7) + cast_bn("bn2", "c2", ch, 7)
        b += f"    %s2 = f32{t} add %r1, %bn2\n    %a2 = b1{t} binarize %s2 {{zero=1}}\n"
        b += conv("c3", "a2", "w3", 5, 4, s=2, p=0) + cast_bn("bn3", "c3", 5, 4)
        b += f"    %r2 = f32{t} cast %a2 {{to=f32}}\n    %g = f32[N,{ch},1,1] globalavgpool %r2\n"
        models[name] = (c, f"(%x: f32{t})", [("bn3", "f32[N,5,4,4]"), ("g", f"f32[N,{ch},1,1]")], b)
    # XNOR's downsample block: the block's first conv (3x3, stride 2, 40 -> 64 channels, a
    # threshold) and the 1x1 stride-2 downsample conv (a float chain) read the same bits, the
    # second conv adds the downsample's value. On a GPU target bnncc computes the downsample's
    # dot inside the second conv's kernel (BC_RESD: a threshold for each of its dots); where the
    # downsample's value is read elsewhere too (_out: a graph output), it lets the GPU run the
    # two side by side instead (BLOB_STEP_BESIDE, the cheaper downsample on the side stream).
    for name, outs in (("resid_xnor_down", [("g", "f32[N,64,1,1]")]),
                       ("resid_xnor_down_out", [("g", "f32[N,64,1,1]"), ("bnd", "f32[N,64,4,4]")])):
        c = bits_const("w1", (64, 40, 3, 3), rng) + bn("bn1", 64) + bits_const("wd", (64, 40, 1, 1), rng)
        c += bn("bnd", 64) + bits_const("w2", (64, 64, 3, 3), rng) + bn("bn2", 64)
        b = "    %a0 = b1[N,40,8,8] binarize %x {zero=1}\n"
        b += conv("c1", "a0", "w1", 64, 4, s=2) + cast_bn("bn1", "c1", 64, 4)
        b += "    %a1 = b1[N,64,4,4] binarize %bn1 {zero=1}\n"
        b += conv("cd", "a0", "wd", 64, 4, s=2, p=0) + cast_bn("bnd", "cd", 64, 4)
        b += conv("c2", "a1", "w2", 64, 4) + cast_bn("bn2", "c2", 64, 4)
        b += "    %s2 = f32[N,64,4,4] add %bn2, %bnd\n    %a2 = b1[N,64,4,4] binarize %s2 {zero=1}\n"
        b += "    %r2 = f32[N,64,4,4] cast %a2 {to=f32}\n    %g = f32[N,64,1,1] globalavgpool %r2\n"
        models[name] = (c, "(%x: f32[N,40,8,8])", outs, b)
    # The residual computed after the convolution (no buffer yet when it is lowered): the
    # chain stops before the add, which stays an add step.
    c = bits_const("w1", (5, 5, 3, 3), rng) + bn("bn1", 5)
    b = "    %a0 = b1[N,5,6,6] binarize %x {zero=1}\n" + conv("c1", "a0", "w1", 5, 6) + cast_bn("bn1", "c1", 5, 6)
    b += "    %r = f32[N,5,6,6] relu %x\n    %y = f32[N,5,6,6] add %bn1, %r\n"
    models["resid_late"] = (c, "(%x: f32[N,5,6,6])", [("y", "f32[N,5,6,6]")], b)
    return write_models(tmp, models)


def mlp_models(tmp, rng):
    """Chains of binary dense layers that bnncc fuses into one GPU kernel (codegen/lower.c
    fuse_mlp_chains, kernels/mlp_fused.cu): widths 1, 33, 65, 200, K not a multiple of 32
    (45, 5, 70), channels with a decreasing threshold (dir -1) and constant ones, leading float
    ops before the binarize, a batch-norm after the last layer (div included), an i32 and a b1
    graph output, and 784-512-512-10 whose 90 KB of weights are read from global memory instead
    of shared memory. Checked bit for bit against the reference."""
    def thr(name, n, fan):
        t = rng.integers(-fan // 3, fan // 3 + 1, n)
        t[0], t[-1] = -10**6, 10**6  # constant channels (always +1, always -1 for dir +1)
        d = rng.choice([-1, 1], n)
        d[n // 2] = -1
        return list_const(f"t{name}", "i32", t) + list_const(f"d{name}", "i8", d)

    def chain(widths, k0, bits_out=False):
        """dense layers over %a, each thresholded but the last (all with bits_out)."""
        consts, body, cur, k = "", "", "a", k0
        for li, n in enumerate(widths):
            consts += bits_const(f"w{li}", (n, k), rng)
            body += f"    %h{li} = i32[N,{n}] dense %{cur}, $w{li}\n"
            cur = f"h{li}"
            if li < len(widths) - 1 or bits_out:
                consts += thr(li, n, k)
                body += f"    %b{li} = b1[N,{n}] threshold %h{li}, $t{li}, $d{li}\n"
                cur = f"b{li}"
            k = n
        return consts, body, cur

    models = {}
    # 45 floats * k - 0.25, binarize {zero=-1}, 33 -> 65 -> 200 -> 7, cast, batch-norm
    consts, body, last = chain([33, 65, 200, 7], 45)
    var = np.abs(rng.standard_normal(7)).astype(np.float32) + np.float32(0.1)
    consts += (f32_const("k", (45,), rng) + "const $h: f32[] = [0.25]\n" + f32_const("g", (7,), rng) +
               f32_const("be", (7,), rng) + f32_const("mu", (7,), rng) +
               f'const $v: f32[7] = base64 "{base64.b64encode(var.astype("<f4").tobytes()).decode()}"\n')
    body = ("    %s = f32[N,45] mul %x, $k\n    %c = f32[N,45] sub %s, $h\n"
            "    %a = b1[N,45] binarize %c {zero=-1}\n" + body +
            f"    %f = f32[N,7] cast %{last} {{to=f32}}\n"
            "    %y = f32[N,7] batchnorm %f, $g, $be, $mu, $v {epsilon=0.00001}\n")
    models["mlp_fuse_odd"] = (consts, "(%x: f32[N,45])", [("y", "f32[N,7]")], body)
    # width 1: 5 -> 1 -> 3, the i32 accumulators as the output
    consts, body, last = chain([1, 3], 5)
    models["mlp_fuse_w1"] = (consts, "(%x: f32[N,5])", [(last, "i32[N,3]")],
                             "    %a = b1[N,5] binarize %x {zero=1}\n" + body)
    # bits out: 70 -> 64 -> 96 thresholded, a b1 graph output
    consts, body, last = chain([64, 96], 70, bits_out=True)
    models["mlp_fuse_bits"] = (consts, "(%x: f32[N,70])", [(last, "b1[N,96]")],
                               "    %a = b1[N,70] binarize %x {zero=1}\n" + body)
    # weights above the shared-memory budget: read from global memory
    consts, body, last = chain([512, 512, 10], 784)
    consts += f32_const("sc", (10,), rng)
    models["mlp_fuse_global"] = (consts, "(%x: f32[N,784])", [("y", "f32[N,10]")],
                                 "    %a = b1[N,784] binarize %x {zero=1}\n" + body +
                                 f"    %f = f32[N,10] cast %{last} {{to=f32}}\n    %y = f32[N,10] mul %f, $sc\n")
    return write_models(tmp, models)


def torch_models(tmp):
    """The PyTorch-exported conv nets of export_torch.py; none (with a note) without torch."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "export_torch.py")
    for py in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if not os.path.exists(py):
            continue
        p = run([py, script, tmp])
        if p.returncode == 0:
            # Renamed: the saved 2.11 exports in tests/onnx/torch2 have the same file names, and
            # jobs of one name would share their temporary files.
            paths = []
            for m in ("vggish", "birealish"):
                paths.append(os.path.join(tmp, f"exported_{m}.onnx"))
                os.rename(os.path.join(tmp, f"{m}.onnx"), paths[-1])
            return paths
        if p.returncode != 77:
            fail(f"export_torch.py: {p.stderr.strip()[-500:]}")
            return []
    print("note: no torch, the PyTorch-exported models are not checked")
    return []


def check_cli(tmp):
    model = os.path.join(SRC, "tests", "text", "mlp.bnn")
    a = run([BNNCC, model, "--emit=cuda", "-o", "-"])
    b = run([BNNCC, model, "--emit=cuda", "-o", "-"])
    if a.returncode or a.stdout != b.stdout or 'extern "C" __global__' not in a.stdout or "bdense" not in a.stdout:
        fail(f"--emit=cuda: rc {a.returncode}, deterministic {a.stdout == b.stdout}: {a.stderr.strip()}")
    p = run([BNNCC, model, "--target=sm_9z", "-o", os.path.join(tmp, "bad.bin")])
    if p.returncode != 1 or "unknown target" not in p.stderr:
        fail(f"--target=sm_9z: {p.returncode} {p.stderr.strip()}")
    bad = os.path.join(tmp, "nvrtc.bin")
    p = run([BNNCC, model, "--target=sm_10", "-o", bad])  # NVRTC refuses the architecture
    if (p.returncode != 1 or "NVRTC" not in p.stderr or "nvrtc.bin.failed.cu" not in p.stderr or
            os.path.exists(bad) or not os.path.exists(bad + ".failed.cu")):
        fail(f"NVRTC failure: {p.returncode} {p.stderr.strip()}")
    cpu = os.path.join(tmp, "cpu.bin")
    p = run([BNNCC, model, "--target=cpu", "-o", cpu])
    if p.returncode or cubin_sections(cpu):
        fail(f"--target=cpu: {p.returncode} {p.stderr.strip()}")
    print("ok: --emit=cuda, --target, NVRTC failure")


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def check_mnist(device, tmp):
    model = os.path.join(SHARED, "models", "qonnx", "TFC_1W1A.onnx")
    mnist = os.path.join(SHARED, "data", "mnist")
    blob = os.path.join(tmp, "tfc.bin")
    p = run([BNNCC, "-O3", "--target=sm_90a,sm_80", model, "-o", blob])
    if p.returncode:
        return fail(f"MNIST: bnncc failed: {p.stderr.strip()}")
    images = read_idx(os.path.join(mnist, "t10k-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(mnist, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    x = images.reshape(-1, 1, 28, 28).astype(np.float32) * np.float32(1.0 / 255.0)
    got, ref, err = run_pair(tmp, blob, model, [x], 1, device, "mnist")
    if err:
        return fail(f"MNIST: {err.strip()}")
    pg, pr = got[0].argmax(axis=1), ref[0].argmax(axis=1)
    acc = 100.0 * (pg == labels).mean()
    same = int((pg == pr).sum())
    print(f"MNIST TFC_1W1A through model.bin ({device}): top-1 {acc:.2f} %, {same}/{len(labels)} "
          f"predictions equal to the reference")
    if f"{acc:.2f}" != "92.96" or same != len(labels):
        fail(f"MNIST: {acc:.2f} % (want 92.96 %), {same} predictions equal to the reference")
    msg = compare("MNIST logits", got[0], ref[0], exact=True)
    if msg:
        fail(msg)


TUNE_LINE = re.compile(r"^tune: step \d+ \((.*?)\) runs .*?; candidates: (.*); kernel signature: (.*)$", re.M)


def tunable_layers(model, tmp, kind=""):
    """[(layer, [candidates], signature)] of model's tunable layers whose signature starts with
    kind, from `bnncc -v`'s tune lines (docs/inspection.md), and bnncc's completed process."""
    p = run([BNNCC, "-O3", model, "--target=cpu", "-v", "-o", os.path.join(tmp, "tunable.bin")])
    return [(m.group(1), [c.strip() for c in m.group(2).split("|")], m.group(3))
            for m in TUNE_LINE.finditer(p.stderr) if m.group(3).startswith(kind)], p


def force_candidate(path, layers, c):
    """Write a tune file giving every layer of `layers` that has one its candidate c; returns
    how many layers it names."""
    lines = [f"forced\t1\t1.0\t1.0\t{sig}\t{cands[c]}\n" for _, cands, sig in layers if c < len(cands)]
    with open(path, "w") as f:
        f.write("bnncc-tune 1\n" + "".join(lines))
    return len(lines)


def gpu_available(tmp):
    """False when bnnrun reports no driver or no GPU (the test is then skipped)."""
    model = os.path.join(SRC, "tests", "text", "mlp.bnn")
    blob = os.path.join(tmp, "probe.bin")
    if run([BNNCC, model, "-o", blob]).returncode:
        return True  # let the real checks report it
    np.save(os.path.join(tmp, "probe.npy"), np.zeros((1, 16), np.float32))
    p = run([BNNRUN, blob, "--device", "gpu", "--input", os.path.join(tmp, "probe.npy"),
             "--output", os.path.join(tmp, "probe_y.npy")])
    return not (p.returncode and re.search(r"no NVIDIA driver|no GPU|driver is not usable", p.stderr))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--only", help="only models whose file name contains this")
    ap.add_argument("--no-mnist", action="store_true")
    ap.add_argument("--quick", action="store_true", help="no PyTorch models")
    ap.add_argument("--sanitized", action="store_true",
                    help="a sanitizer build: batch 1, 3 and 67, no MNIST, fewer --float-convs models")
    a = ap.parse_args()
    global BATCHES
    if a.quick:
        BATCHES = (1, 3, 1000)
    if a.sanitized:
        BATCHES, a.no_mnist = (1, 3, 67), True
    with tempfile.TemporaryDirectory() as tmp:
        if a.device == "gpu" and not gpu_available(tmp):
            print("skipped: no GPU or no NVIDIA driver")
            sys.exit(77)
        finn = os.path.join(SHARED, "models", "finn")
        models = sorted(os.path.join(SRC, "tests", "text", f)
                        for f in os.listdir(os.path.join(SRC, "tests", "text")) if f.endswith(".bnn"))
        models.append(os.path.join(SRC, "tests", "passes", "mlp_bn.bnn"))
        models += [os.path.join(SHARED, "models", "qonnx", m)
                   for m in ("TFC_1W2A.onnx", "TFC_2W2A.onnx", "kwsmlp_w3a3.onnx", "unsw_nb15-mlp-w2a2.onnx")]
        here = os.path.dirname(os.path.abspath(__file__))
        models += sorted(os.path.join(here, f) for f in os.listdir(here) if f.endswith(".bnn"))
        # Saved exports of export_torch.py's nets by PyTorch 2.11 (the GPU machine's): the 2.x
        # exporter's forms (Expand for ones_like, ReduceMean, batch-norm folded into Gemm).
        torch2 = os.path.join(SRC, "tests", "onnx", "torch2")
        models += sorted(os.path.join(torch2, f) for f in os.listdir(torch2) if f.endswith(".onnx"))
        models += [] if a.quick else torch_models(tmp)
        models += odd_models(tmp, np.random.default_rng(1234))
        jobs = [lambda m=m: check_model(m, a.device, tmp) for m in models
                if not a.only or a.only in os.path.basename(m)]
        # The float kernels: bit for bit at batch 1, 5 and 67 (67: several dense row tiles).
        jobs += [lambda m=m: check_model(m, a.device, tmp, batches=(1, 5, 67), exact=True)
                 for m in float_models(tmp, np.random.default_rng(77))
                 if not a.only or a.only in os.path.basename(m)]
        # --float-convs=fp16 / fp16x3: the GPU's float convs on fp16 tensor cores, within fp16
        # rounding of the reference (4e-3 of the largest output: fp16 keeps 11 bits) or of the
        # hi + lo split (2e-5); the CPU path stays bit for bit. The grouped and the non-finite
        # ones keep the exact kernels.
        jobs += [lambda m=m, mode=mode, tol=tol: check_model(
                     m, a.device, tmp, batches=(1, 5, 67), exact=True, flags=(f"--float-convs={mode}",),
                     tol=tol if a.device == "gpu" else None)
                 for mode, tol in (("fp16", 4e-3), ("fp16x3", 2e-5))
                 for m in float_models(tmp, np.random.default_rng(78))
                 if "fconv" in os.path.basename(m) and (not a.only or a.only in os.path.basename(m)) and
                 (not a.sanitized or os.path.basename(m) in ("fconv_stem.bnn", "fconv_dil_groups.bnn"))]
        # Pool + classifier heads in one GPU kernel: bit for bit, and the report says so.
        jobs += [lambda m=m: check_model(m, a.device, tmp, batches=(1, 5, 67), exact=True)
                 for m in head_models(tmp, np.random.default_rng(79)) if not a.only or a.only in os.path.basename(m)]
        jobs += [lambda m=m: check_report_line(m, tmp, "global average pools of bits run inside the dense kernel", 1)
                 for m in head_models(tmp, np.random.default_rng(79)) if not a.only or a.only in os.path.basename(m)]
        # Float stems that write bits (exact on the GPU's tensor cores): bit for bit.
        jobs += [lambda m=m: check_model(m, a.device, tmp, batches=(1, 5, 67), exact=True,
                                         extra_cases=stem_tie_inputs(np.random.default_rng(5))
                                         if m.endswith("ties.bnn") else ())
                 for m in stem_models(tmp, np.random.default_rng(66))
                 if not a.only or a.only in os.path.basename(m)]
        jobs += [lambda m=m: check_p1_orders(m, tmp) for m in stem_models(tmp, np.random.default_rng(66))
                 if m.endswith("stem_bits_11x11.bnn") and (not a.only or a.only in os.path.basename(m))]
        jobs += [lambda m=m: check_pdl_flags(m, tmp) for m in stem_models(tmp, np.random.default_rng(66))
                 if m.endswith("stem_bits_pool.bnn") and (not a.only or a.only in os.path.basename(m))]
        jobs += [lambda m=m: check_stem_sm80_registers(m, tmp) for m in stem_models(tmp, np.random.default_rng(66))
                 if m.endswith(("stem_bits_pool.bnn", "stem_bits_ties.bnn")) and
                 (not a.only or a.only in os.path.basename(m))]
        jobs += [lambda m=m: check_stem_fixup(m, tmp) for m in stem_models(tmp, np.random.default_rng(66))
                 if m.endswith(("stem_bits_pool.bnn", "stem_bits_11x11.bnn")) and
                 (not a.only or a.only in os.path.basename(m))]
        jobs += [lambda m=m: check_stem_form(m) for m in stem_models(tmp, np.random.default_rng(66))
                 if "zero_gamma" not in m and (not a.only or a.only in os.path.basename(m))]
        # The fused float chains of binary convolutions (residual blocks): bit for bit.
        jobs += [lambda m=m: check_model(m, a.device, tmp, batches=(1, 5, 67), exact=True)
                 for m in residual_models(tmp, np.random.default_rng(88)) +
                 [os.path.join(SRC, "tests", "passes", m + s) for m in ("bireal_block", "stem", "dense_chain")
                  for s in (".bnn", "_fused.bnn")]
                 if not a.only or a.only in os.path.basename(m)]
        jobs += [lambda m=m: check_alt_tables(m, tmp) for m in residual_models(tmp, np.random.default_rng(88))
                 if m.endswith("resid_xnor64.bnn") and (not a.only or a.only in os.path.basename(m))]
        # The XNOR blocks' chains become thresholds by the residual bit (the report says how
        # many): the models above test that form, not the float chain.
        jobs += [lambda m=m: check_report_line(m, tmp, "compare their dot with two integer thresholds",
                                               2 if "xnor" in m and "down" not in m else 0)
                 for m in residual_models(tmp, np.random.default_rng(88))
                 if "resid_xnor" in os.path.basename(m) or "resid_bireal" in os.path.basename(m)]
        jobs += [lambda m=m: check_report_line(m, tmp, "global average pools read their b1 input", 1, "cleanup: ")
                 for m in residual_models(tmp, np.random.default_rng(88))
                 if "resid_xnor" in os.path.basename(m) and "down" not in os.path.basename(m)]
        # The downsample block's two convs: on a GPU target the downsample inside the second conv
        # (BC_RESD), or, where its value has another reader, side by side with the first; no
        # other block has a pair. (A CPU target plans the pair beside each other, and no fusion.)
        jobs += [lambda m=m: check_report_line(m, tmp, "runs of steps may run on the GPU beside",
                                               1 if "xnor_down" in m else 0)
                 for m in residual_models(tmp, np.random.default_rng(88)) if not a.only or a.only in m]
        jobs += [lambda m=m, k=k, t=t: check_report_line(m, tmp, t, k, target=None)
                 for m in residual_models(tmp, np.random.default_rng(88)) if "xnor_down" in m and
                 (not a.only or a.only in m)
                 for k, t in (((0 if "out" in m else 1), "compute the 1x1 downsample convolution"),
                              ((1 if "out" in m else 0), "runs of steps may run on the GPU beside"))]
        # XNOR-Net's stem (a batch-norm after the pool) writes its bits too, unless a zero gamma
        # after the pool could hide a NaN from the pool of bits.
        jobs += [lambda m=m: check_report_line(m, tmp, "float convolutions write their bits",
                                               0 if "zero_gamma" in m else 1)
                 for m in stem_models(tmp, np.random.default_rng(66)) if "after_pool" in os.path.basename(m)]
        # Fused binary MLPs (one GPU kernel for the chain): bit for bit at batch 1, 3 and 1000.
        jobs += [lambda m=m: check_model(m, a.device, tmp, exact=True)
                 for m in mlp_models(tmp, np.random.default_rng(99)) +
                 [os.path.join(SHARED, "models", "qonnx", "TFC_1W1A.onnx")]
                 if not a.only or a.only in os.path.basename(m)]
        if not a.only or "conv_pool" in a.only:  # its explicit pad folds into the conv from -O1
            jobs.append(lambda: check_model(os.path.join(SRC, "tests", "passes", "conv_pool.bnn"), a.device,
                                            tmp, low="-O1"))
        if not a.only or "finn" in a.only or "tfc_w1a1" in a.only:
            jobs.append(lambda: check_model(
                os.path.join(finn, "tfc_w1a1_streamlined.onnx"), a.device, tmp,
                real_inputs=[np.load(os.path.join(finn, "tfc_w1a1_input.npy"))],
                expect=np.load(os.path.join(finn, "tfc_w1a1_expected_output.npy")).reshape(-1)))
        if not a.only:
            jobs.append(lambda: check_cli(tmp))
        if not a.no_mnist and not a.only:
            jobs.append(lambda: check_mnist(a.device, tmp))
        # The work is in subprocesses (NVRTC, bnnrun): threads overlap it.
        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            for f in [pool.submit(j) for j in jobs]:
                f.result()
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("all ok")


if __name__ == "__main__":
    main()
