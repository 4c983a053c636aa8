#!/usr/bin/env python3
"""fuse-epilogue on whole models: the Bi-Real-style net exported from PyTorch
(tests/onnx/torch2/birealish.onnx), tests/passes/bireal_block.bnn, stem.bnn and dense_chain.bnn.
At -O1 and -O3 every binary block is one bconv2d_chain or bdense_chain (conv, batch-norm or scale/relu/bias,
shortcut add, binarize) and the float stem one conv2d_chain (conv, batch-norm, relu, max-pool,
binarize), with no batchnorm, add, relu, mul, sub, sign, maxpool or cast left and no binarize
but of a graph input; the optimized IR reads back to itself; its reference outputs equal the imported model's bit for bit
(floats compared as bits). Malformed bconv2d_chain ops in the text format are refused with a
message naming the line."""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BUILD = os.environ.get("BNN_BUILD_ROOT", "build")
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")
checks = failures = 0


def check(cond, msg):
    global checks, failures
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", msg, file=sys.stderr)


def run(args):
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def body_ops(text):
    """The op name of every statement of the graph body."""
    ops = []
    for line in text[text.index("graph $"):].splitlines()[1:]:
        if " = " not in line:
            continue
        words = line.split(" = ", 1)[1].split()
        ops += [w for w in words if re.fullmatch(r"[a-z][a-z0-9_]*", w)][:1]
    return ops


def reference(model, xs, tmp, tag, nout):
    args = [BNNRUN, "--reference", model]
    for i, x in enumerate(xs):
        p = os.path.join(tmp, f"x{i}.npy")
        np.save(p, x)
        args += ["--input", p]
    outs = [os.path.join(tmp, f"{tag}{i}.npy") for i in range(nout)]
    r = run(args + [a for o in outs for a in ("--output", o)])
    check(r.returncode == 0, f"{tag}: bnnrun --reference: {r.stderr.strip()[-300:]}")
    return b"".join(np.load(o).tobytes() for o in outs) if r.returncode == 0 else None


def check_model(path, shape, nout, want_chains, want_stems, want_binarize, level):
    name = os.path.basename(path)
    tmp = tempfile.mkdtemp(prefix="bnn_fuse_epi_")
    opt = os.path.join(tmp, "opt.bnn")
    r = run([BNNCC, path, level, "--verify-each", "--emit=ir", "--report", "-o", opt])
    check(r.returncode == 0, f"{name} {level}: bnncc: {r.stderr.strip()[-400:]}")
    if r.returncode:
        return
    check(r.stderr.count("fuse-epilogue: layer") == want_chains + want_stems,
          f"{name} {level}: report lines {r.stderr.count('fuse-epilogue: layer')}, want {want_chains + want_stems}")
    text = open(opt).read()
    ops = body_ops(text)
    chains = ops.count("bconv2d_chain") + ops.count("bdense_chain")
    check(chains == want_chains, f"{name} {level}: {chains} bconv2d_chain / bdense_chain, want {want_chains}: {ops}")
    for op in ("batchnorm", "add", "relu", "mul", "sub", "div", "sign", "cast"):
        check(op not in ops, f"{name} {level}: {op} left: {ops}")
    check(ops.count("binarize") == want_binarize, f"{name} {level}: binarize left: {ops}")
    check(ops.count("conv2d_chain") == want_stems, f"{name} {level}: {ops.count('conv2d_chain')} conv2d_chain, want {want_stems}")
    check("maxpool" not in ops, f"{name} {level}: maxpool left: {ops}")
    again = os.path.join(tmp, "again.bnn")
    r = run([BNNCC, opt, level, "--emit=ir", "-o", again])
    check(r.returncode == 0 and open(again).read() == text, f"{name} {level}: the IR does not read back to itself")
    rng = np.random.default_rng(5)
    for batch in (1, 4):
        xs = []
        for sh in shape if isinstance(shape, list) else [shape]:
            x = rng.standard_normal((batch,) + sh).astype(np.float32)
            x.reshape(-1)[::7] = 0.0  # exact zeros: binarize's rule and v + r == 0
            xs.append(x)
        ref = reference(path, xs, tmp, "ref", nout)
        got = reference(opt, xs, tmp, "got", nout)
        if ref is not None and got is not None:
            check(ref == got, f"{name} {level} batch {batch}: outputs differ")


def check_errors():
    tmp = tempfile.mkdtemp(prefix="bnn_fuse_epi_err_")
    head = ('const $w: b1[2,2,1,1] = hex "0f"\n'
            'const $c: f32[1,2,CH] = [VALS]\n'
            'graph $g(%x: b1[N,2,3,3]) -> (f32[N,2,3,3]) {\n')
    cases = [
        (3, "", "chain must be f32[S,2,2]"),
        (2, " {div=[0,1]}", "attribute 'div' needs one entry per stage (1), got 2"),
        (2, " {relu=[2]}", "attribute 'relu' entries must be 0 or 1"),
        (2, " {residual_first=1}", "'residual_first' without a residual operand"),
        (2, " {zero=0}", "attribute 'zero' must be 1 or -1"),
    ]
    for ch, attrs, want in cases:
        vals = ", ".join(["1.0"] * (2 * ch))
        src = (head.replace("CH", str(ch)).replace("VALS", vals) +
               f"    %y, %b = f32[N,2,3,3], b1[N,2,3,3] bconv2d_chain %x, $w, $c{attrs}\n    ret %y\n}}\n")
        p = os.path.join(tmp, "bad.bnn")
        open(p, "w").write(src)
        r = run([BNNCC, p, "--emit=ir", "-o", os.path.join(tmp, "out.bnn")])
        check(r.returncode == 1 and want in r.stderr and "bad.bnn:4:" in r.stderr,
              f"error case {attrs or 'chain shape'}: rc {r.returncode}, {r.stderr.strip()!r}")


def main():
    if not os.path.exists(BNNRUN) or not os.path.exists(BNNCC):
        print("skipping: bnncc/bnnrun not built")
        return 77
    for level in ("-O1", "-O3"):
        check_model(os.path.join(SRC, "tests", "onnx", "torch2", "birealish.onnx"), (3, 16, 16), 1, 2, 1, 0, level)
        check_model(os.path.join(SRC, "tests", "passes", "bireal_block.bnn"), (5, 6, 6), 2, 3, 0, 1, level)
        check_model(os.path.join(SRC, "tests", "passes", "stem.bnn"), (3, 9, 9), 2, 1, 1, 0, level)
        check_model(os.path.join(SRC, "tests", "passes", "dense_chain.bnn"), [(40,), (20,)], 2, 2, 0, 1, level)
    check_errors()
    print(f"test_fuse_epilogue_models: {checks - failures} of {checks} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
