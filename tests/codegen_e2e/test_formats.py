#!/usr/bin/env python3
"""Tile-major formats (choose-formats, docs/passes.md) end to end.

    test_formats.py --device cpu|gpu [--nvrtc]

Random binary MLPs (odd widths, K not a multiple of 128 / 256, thresholds in both directions
and constant channels, a bdense_chain with a batch-norm as the last layer, bits as a graph
output, one layer's bits read by a tiled layer and by the graph's output) compiled with
--formats=tiled and --formats=plain:

- cpu: the CPU path of both blobs, at batch 1, 3, 67 and 200 (two 128-row tiles, the last one
  compact), bit for bit equal to the reference interpreter and to each other;
- the IR after choose-formats shows k128 activations, k256 weights and the repacks where the
  rule puts them (counted per model), plain has none, auto follows its rule (a large layer
  tiled for sm_90a, nothing for the default targets with sm_80 or for small layers);
- --nvrtc: NVRTC compiles every generated kernel for sm_90a (wgmma) and sm_90 (mma.sync): the
  CUBIN sections are non-empty;
- gpu: the blobs for sm_90a and for sm_90 run on the GPU, equal to the CPU path bit for bit
  (exit 77 without a driver or a GPU);
- errors: --formats=tiled with an sm_80 target, a tile-major model compiled for sm_80, and a
  tile-major value read by an op that cannot read it are refused with a message, exit 1.
"""
import argparse
import base64
import os
import re
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import test_e2e as e2e  # noqa: E402  (its runner, constant writers and comparisons)

BNNCC, BNNRUN = e2e.BNNCC, e2e.BNNRUN
BATCHES = (1, 3, 67, 200)
failures = []


def fail(msg):
    print("FAIL:", msg)
    failures.append(msg)


def thresholds(rng, name, n, fan):
    t = rng.integers(-fan // 2, fan // 2 + 1, n)
    t[0], t[-1] = -10**6, 10**6  # constant channels: always +1, always -1 (dir +1)
    d = rng.choice([-1, 1], n)
    d[0] = d[-1] = 1
    d[n // 2] = -1
    return e2e.list_const(f"t{name}", "i32", t) + e2e.list_const(f"d{name}", "i8", d)


def mlp(rng, k0, widths, last="i32", tap=None):
    """Binary dense layers over binarize(x): every layer but the last thresholded; the last
    one's i32 (last='i32'), its bits (last='bits': a b1 output), or cast + batch-norm in f32
    (last='bn': a bdense_chain). tap: a hidden layer whose bits are a second graph output.
    Returns (text, expected tiled layers with --formats=tiled, k128 results written by a
    tiled producer, repacks to k128)."""
    consts, body, cur, k = "", f"    %a = b1[N,{k0}] binarize %x {{zero={rng.choice([-1, 1])}}}\n", "a", k0
    outs = []
    for li, n in enumerate(widths):
        consts += e2e.bits_const(f"w{li}", (n, k), rng)
        body += f"    %h{li} = i32[N,{n}] dense %{cur}, $w{li}\n"
        cur = f"h{li}"
        if li < len(widths) - 1 or last == "bits":
            consts += thresholds(rng, li, n, k)
            body += f"    %b{li} = b1[N,{n}] threshold %h{li}, $t{li}, $d{li}\n"
            cur = f"b{li}"
        k = n
    if last == "bn":
        n = widths[-1]
        var = (np.abs(rng.standard_normal(n)) + 0.1).astype(np.float32)
        gam = rng.standard_normal(n).astype(np.float32)
        gam[0] = -abs(gam[0])
        consts += "".join(e2e.f32_const(c, (n,), rng) for c in ("be", "mu"))
        consts += "".join(f'const ${c}: f32[{n}] = base64 "{base64.b64encode(v.astype("<f4").tobytes()).decode()}"\n'
                          for c, v in (("g", gam), ("v", var)))
        body += (f"    %f = f32[N,{n}] cast %{cur} {{to=f32}}\n"
                 f"    %y = f32[N,{n}] batchnorm %f, $g, $be, $mu, $v {{epsilon=0.00001}}\n")
        outs.append(("y", f"f32[N,{n}]"))
    elif last == "bits":
        outs.append((cur, f"b1[N,{widths[-1]}]"))
    else:
        outs.append((cur, f"i32[N,{widths[-1]}]"))
    if tap is not None:
        outs.append((f"b{tap}", f"b1[N,{widths[tap]}]"))
    # With --formats=tiled every thresholded layer and a last bdense_chain are tiled (a last
    # plain dense with an i32 result is no bdense); a layer's bits are k128 when only tiled
    # layers read them; the first layer reads a repack of the binarize, the tap's reader one
    # of the tap.
    nt = len(widths) - 1 + (last in ("bits", "bn"))
    k128 = sum(1 for li in range(len(widths) - 1) if li + 1 < nt and li != tap)
    repacks = 1 + (tap is not None and tap + 1 < nt)
    args = f"(%x: f32[N,{k0}])"
    text = (f"{consts}\ngraph $mlp{args} -> ({', '.join(t for _, t in outs)}) {{\n{body}"
            f"    ret {', '.join('%' + v for v, _ in outs)}\n}}\n")
    return text, nt, k128, repacks


MODELS = [  # name, k0, widths, last, tap
    ("odd", 130, [300, 77, 200, 10], "i32", None),
    ("wide_k", 1100, [257, 513, 5], "bn", None),
    ("bits_out", 45, [33, 1030, 64], "bits", None),
    ("tap", 200, [129, 255, 31], "i32", 0),
    ("one", 1, [1, 3], "bn", None),
]


def ir_after(model, *flags):
    p = e2e.run([BNNCC, "-O3", "--verify-each", model, "--emit=ir", "-o", "-"] + list(flags))
    if p.returncode:
        raise RuntimeError(p.stderr.strip())
    return p.stdout


def count_formats(ir):
    """(binary layers reading k128, k128 results of bdense, k128 repacks, k256 constants)."""
    k128_in = 0
    kinds = {m.group(1): m.group(2) for m in re.finditer(r"^\s+%(\S+) = \S+ (pack\([^)]*\))?", ir, re.M)}
    for src in re.findall(r"^\s+%.* = .*bdense(?:_chain)? %(\S+),", ir, re.M):
        k128_in += "tile=k128" in (kinds.get(src) or "")
    k128_out = len(re.findall(r"tile=k128\) bdense ", ir))
    repacks = len(re.findall(r"tile=k128\) repack ", ir))
    k256 = len(re.findall(r"^const \$\S+: b1\[[^\]]*\] pack\([^)]*tile=k256\)", ir, re.M))
    return k128_in, k128_out, repacks, k256


def check_ir(name, path, nt, k128, repacks):
    try:
        tiled = count_formats(ir_after(path, "--formats=tiled", "--target=cpu"))
        plain = count_formats(ir_after(path, "--formats=plain", "--target=cpu"))
        auto = count_formats(ir_after(path, "--target=sm_90a"))
    except RuntimeError as e:
        return fail(f"{name}: bnncc --emit=ir: {e}")
    if tiled != (nt, k128, repacks, nt):
        fail(f"{name}: tiled IR has (k128 operands, k128 results, k128 repacks, k256 weights) = {tiled}, "
             f"expected {(nt, k128, repacks, nt)}")
    if plain != (0, 0, 0, 0):
        fail(f"{name}: --formats=plain IR has tile-major formats {plain}")
    if auto != (0, 0, 0, 0):  # every layer here is below the auto rule's size
        fail(f"{name}: auto IR tiles a small layer {auto}")


def check_auto_rule(tmp, rng):
    """A 2048-wide layer is tiled by auto for sm_90a (and its first layer, 1000 wide, is not:
    too small) but not for the default targets (sm_80 has no pre-tiled kernel)."""
    text, _, _, _ = mlp(rng, 1000, [2048, 2048, 16], "i32")
    path = os.path.join(tmp, "auto.bnn")
    with open(path, "w") as f:
        f.write(text)
    try:
        got = count_formats(ir_after(path, "--target=sm_90a"))
        dflt = count_formats(ir_after(path))
    except RuntimeError as e:
        return fail(f"auto: {e}")
    if got != (1, 0, 1, 1):  # layer 1 (2048 x 2048) tiled, its input repacked from layer 0's bits
        fail(f"auto rule for sm_90a: {got}, expected (1, 0, 1, 1)")
    if dflt != (0, 0, 0, 0):
        fail(f"auto rule with the default targets (sm_80 among them) tiles: {dflt}")
    print("ok: auto rule")


def run_blob(blob, xs_path, outs, device):
    p = e2e.run([BNNRUN, blob, "--device", device, "--input", xs_path] + sum((["--output", o] for o in outs), []))
    if p.returncode:
        return None, p.stderr.strip()
    return [np.load(o) for o in outs], None


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def check_model(name, path, nouts, tmp, device, rng, nvrtc):
    blobs = {}
    targets = {"tiled": "cpu", "plain": "cpu"}
    for mode, target in targets.items():
        blobs[mode] = os.path.join(tmp, f"{name}_{mode}.bin")
        p = e2e.run([BNNCC, "-O3", "--verify-each", f"--formats={mode}", f"--target={target}", path, "-o",
                     blobs[mode]])
        if p.returncode:
            return fail(f"{name}: bnncc --formats={mode}: {p.stderr.strip()}")
    gpu_blobs = []
    if nvrtc or device == "gpu":
        for arch in ("sm_90a", "sm_90"):
            b = os.path.join(tmp, f"{name}_{arch}.bin")
            p = e2e.run([BNNCC, "-O3", "--formats=tiled", f"--target={arch}", path, "-o", b])
            if p.returncode:
                fail(f"{name}: bnncc --formats=tiled --target={arch}: {p.stderr.strip()}")
                continue
            cub = e2e.cubin_sections(b)
            if set(cub) != {arch} or cub[arch] == 0:
                fail(f"{name}: CUBIN sections {cub} for --target={arch}")
            gpu_blobs.append((arch, b))
    for batch in BATCHES:
        x = rng.standard_normal((batch, int(re.search(r"f32\[N,(\d+)\]", open(path).read()).group(1))))
        x = x.astype(np.float32)
        x[rng.random(x.shape) < 0.05] = 0.0
        xp = os.path.join(tmp, f"{name}_x{batch}.npy")
        np.save(xp, x)
        res = {}
        for mode, blob in blobs.items():
            res[mode], err = run_blob(blob, xp, [os.path.join(tmp, f"{name}_{mode}_{batch}_{i}.npy")
                                                 for i in range(nouts)], "cpu")
            if err:
                return fail(f"{name} {mode} batch {batch}: {err}")
        refs = [os.path.join(tmp, f"{name}_ref_{batch}_{i}.npy") for i in range(nouts)]
        p = e2e.run([BNNRUN, "--reference", path, "--input", xp] + sum((["--output", o] for o in refs), []))
        if p.returncode:
            return fail(f"{name}: reference: {p.stderr.strip()}")
        ref = [np.load(o) for o in refs]
        for i in range(nouts):
            if not same(res["tiled"][i], ref[i]):
                fail(f"{name} batch {batch} output {i}: tiled CPU path differs from the reference")
            if not same(res["tiled"][i], res["plain"][i]):
                fail(f"{name} batch {batch} output {i}: tiled and plain CPU paths differ")
        if device == "gpu":
            for arch, b in gpu_blobs:
                got, err = run_blob(b, xp, [os.path.join(tmp, f"{name}_{arch}_{batch}_{i}.npy")
                                            for i in range(nouts)], "gpu")
                if err:
                    fail(f"{name} {arch} batch {batch} on the GPU: {err}")
                    continue
                for i in range(nouts):
                    if not same(got[i], res["tiled"][i]):
                        fail(f"{name} {arch} batch {batch} output {i}: GPU differs from the CPU path")
    print(f"ok: {name}: batches {BATCHES}" + (f", GPU {[a for a, _ in gpu_blobs]}" if device == "gpu" else
                                            f", NVRTC {[a for a, _ in gpu_blobs]}" if gpu_blobs else ""))


def check_errors(tmp, path):
    p = e2e.run([BNNCC, "--formats=tiled", path, "-o", os.path.join(tmp, "e.bin")])
    if p.returncode != 1 or "sm_90 or newer" not in p.stderr:
        fail(f"--formats=tiled with sm_80: exit {p.returncode}, {p.stderr.strip()!r}")
    ir = ir_after(path, "--formats=tiled", "--target=cpu")
    tiled_ir = os.path.join(tmp, "tiled.bnn")
    with open(tiled_ir, "w") as f:
        f.write(ir)
    # choose-formats decides again: for targets with sm_80 the tiled IR becomes plain
    try:
        again = count_formats(ir_after(tiled_ir, "--target=sm_90a,sm_80"))
        same_again = ir_after(tiled_ir, "--formats=tiled", "--target=cpu") == ir
    except RuntimeError as e:
        return fail(f"a tile-major model read back: {e}")
    if again != (0, 0, 0, 0) or not same_again:
        fail(f"a tile-major model read back: {again} for sm_80, the same IR again: {same_again}")
    # a tile-major value read by something that does not read that layout
    bad = ir.replace("    ret %h3", "    %z = f32[N,300] cast %b0 {to=f32}\n    ret %h3")
    bad_path = os.path.join(tmp, "bad.bnn")
    with open(bad_path, "w") as f:
        f.write(bad)
    p = e2e.run([BNNCC, "-O0", "--target=cpu", bad_path, "-o", os.path.join(tmp, "e.bin")])
    if p.returncode != 1 or "tile-major" not in p.stderr:
        fail(f"a k128 value read by dense: exit {p.returncode}, {p.stderr.strip()!r}")
    # a tile-major result of the wrong kind: a binarize writing k128
    bad = re.sub(r"(%a = b1\[N,130\]) pack\([^)]*\) binarize", r"\1 pack(axis=1, word=32, pad=1024, tile=k128) binarize", ir)
    with open(bad_path, "w") as f:
        f.write(bad)
    p = e2e.run([BNNCC, "-O0", "--target=cpu", bad_path, "-o", os.path.join(tmp, "e.bin")])
    if p.returncode != 1 or "tile-major" not in p.stderr:
        fail(f"a binarize writing k128: exit {p.returncode}, {p.stderr.strip()!r}")
    print("ok: errors")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--nvrtc", action="store_true", help="compile every model for sm_90a and sm_90 too")
    a = ap.parse_args()
    rng = np.random.default_rng(20261130)
    with tempfile.TemporaryDirectory() as tmp:
        if a.device == "gpu" and not e2e.gpu_available(tmp):
            print("no GPU: skipped")
            return 77
        for name, k0, widths, last, tap in MODELS:
            text, nt, k128, repacks = mlp(rng, k0, widths, last, tap)
            path = os.path.join(tmp, name + ".bnn")
            with open(path, "w") as f:
                f.write(text)
            check_ir(name, path, nt, k128, repacks)
            check_model(name, path, 1 + (tap is not None), tmp, a.device, rng, a.nvrtc)
            if name == "odd":
                check_errors(tmp, path)
        check_auto_rule(tmp, rng)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
