#!/usr/bin/env python3
"""bnncc and bnnrun from the outside: exit codes, messages, and no partial outputs.

Every user error must exit 1 with a message naming the place, and leave no output file."""
import os
import subprocess
import sys
import tempfile

import numpy as np

BUILD = os.environ["BNN_BUILD_ROOT"]
SRC = os.environ["BNN_SOURCE_ROOT"]
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")
TINY = os.path.join(SRC, "tests", "cli", "tiny.bnn")

failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print(f"FAIL: {what}", file=sys.stderr)


def run(args):
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def expect_error(args, needle, what, out_path=None):
    rc, out, err = run(args)
    check(rc == 1, f"{what}: exit code {rc}, expected 1 (stderr: {err.strip()})")
    check(needle in err, f"{what}: stderr lacks {needle!r}: {err.strip()}")
    check("AddressSanitizer" not in err and "runtime error" not in err, f"{what}: sanitizer report")
    if out_path:
        check(not os.path.exists(out_path), f"{what}: left a partial output {out_path}")


def tiny_reference(x):
    """What tests/cli/tiny.bnn computes, in numpy: binarize (0 -> +1), a ±1 dense layer."""
    w = np.array([[1, -1, 1, -1, 1, -1, 1, -1],
                  [1, 1, 1, 1, -1, -1, -1, -1],
                  [1, 1, 1, 1, 1, 1, 1, 1],
                  [-1, -1, 1, 1, -1, -1, 1, 1]], dtype=np.float32)
    b = np.where(x >= 0, 1.0, -1.0).astype(np.float32)
    return b @ w.T


with tempfile.TemporaryDirectory() as tmp:
    def path(name):
        return os.path.join(tmp, name)

    # --- happy paths ---------------------------------------------------------------
    rc, out, err = run([BNNCC, "--version"])
    check(rc == 0 and out.startswith("bnncc "), "bnncc --version")
    rc, out, err = run([BNNCC, "--help"])
    check(rc == 0 and "--emit=ir" in out, "bnncc --help lists --emit=ir")
    rc, out, err = run([BNNRUN, "--help"])
    check(rc == 0 and "--reference" in out, "bnnrun --help")

    rc, out, err = run([BNNCC, TINY, "--emit=ir", "-o", path("tiny.ir")])
    check(rc == 0, f"bnncc --emit=ir exit {rc}: {err}")
    if rc == 0:
        # The dump reads back and prints the same (one text form).
        rc2, out2, err2 = run([BNNCC, path("tiny.ir"), "--emit=ir", "-o", "-"])
        check(rc2 == 0 and out2 == open(path("tiny.ir")).read(), "dump re-reads identically")
    for level in ("-O0", "-O3"):
        rc, out, err = run([BNNCC, TINY, level, "--emit=ir", "-o", "-"])
        check(rc == 0 and "graph" in out, f"bnncc {level}")

    rng = np.random.default_rng(1)
    for batch in (1, 3, 1000):
        x = rng.standard_normal((batch, 8)).astype(np.float32)
        x[0, 0] = 0.0  # binarize maps 0 to +1 here
        np.save(path("x.npy"), x)
        rc, out, err = run([BNNRUN, "--reference", TINY, "--input", path("x.npy"),
                            "--output", path("y.npy")])
        check(rc == 0, f"bnnrun batch {batch}: exit {rc}: {err}")
        if rc == 0:
            y = np.load(path("y.npy"))
            check(y.dtype == np.float32 and y.shape == (batch, 4), f"output shape {y.shape}")
            check(np.array_equal(y, tiny_reference(x)), f"bnnrun batch {batch} values")

    # The bundled model reproduces its recorded output (models/README.md).
    models = os.path.join(SRC, "models")
    rc, out, err = run([BNNRUN, "--reference", os.path.join(models, "tfc_w1a1.bnn"), "--input",
                        os.path.join(models, "tfc_w1a1_input.npy"), "--output", path("tfc.npy")])
    check(rc == 0, f"bundled tfc_w1a1.bnn runs: {err}")
    if rc == 0:
        want = np.load(os.path.join(models, "tfc_w1a1_expected_output.npy"))
        check(np.array_equal(np.load(path("tfc.npy")), want), "bundled model: expected output")
        check(list(want.argmax(1)) == [7, 2, 1, 0, 4, 1, 4, 9], "bundled model: classes")

    # --- user errors: exit 1, a message naming the place, no output file -------------
    expect_error([BNNCC], "no model given", "bnncc without a model")
    expect_error([BNNCC, TINY, "--bogus"], "unknown option '--bogus'", "bad flag")
    expect_error([BNNCC, TINY, "--emit=elf"], "unknown --emit kind 'elf'", "bad --emit")
    expect_error([BNNCC, TINY, "--float-convs=fast", "-o", path("fc.bin")], "--float-convs=exact, fp16 or fp16x3",
                 "bad --float-convs", path("fc.bin"))
    expect_error([BNNCC, TINY, "--dump-after=nosuchpass"], "unknown pass", "bad --dump-after")
    expect_error([BNNCC, path("missing.bnn"), "--emit=ir", "-o", path("o.ir")],
                 "missing.bnn", "missing model", path("o.ir"))

    with open(path("bad.bnn"), "w") as f:
        f.write("graph $g(%x: f32[N,4]) -> (f32[N,4]) {\n    %y = f32[N,4] frobnicate %x\n    ret %y\n}\n")
    expect_error([BNNCC, path("bad.bnn"), "--emit=ir", "-o", path("o.ir")], "bad.bnn:2:",
                 "unknown op gives file:line", path("o.ir"))
    expect_error([BNNRUN, "--reference", path("bad.bnn"), "--input", path("x.npy"),
                  "--output", path("o.npy")], "bad.bnn:2:", "bnnrun on a bad model", path("o.npy"))

    with open(path("side.bnn"), "w") as f:
        f.write('const $w: f32[2,2] = file "nowhere.weights" offset 0\n'
                "graph $g(%x: f32[N,2]) -> (f32[N,2]) {\n    %y = f32[N,2] dense %x, $w\n    ret %y\n}\n")
    expect_error([BNNCC, path("side.bnn"), "--emit=ir", "-o", path("o.ir")], "nowhere.weights",
                 "missing weight side file", path("o.ir"))

    x = np.zeros((2, 8), np.float32) + 0.5
    np.save(path("x64.npy"), x.astype(np.float64))
    expect_error([BNNRUN, "--reference", TINY, "--input", path("x64.npy"), "--output",
                  path("o.npy")], "float64", "wrong dtype", path("o.npy"))
    np.save(path("xshape.npy"), np.zeros((2, 9), np.float32))
    expect_error([BNNRUN, "--reference", TINY, "--input", path("xshape.npy"), "--output",
                  path("o.npy")], "expects shape", "wrong shape", path("o.npy"))
    np.save(path("xgood.npy"), x)
    raw = open(path("xgood.npy"), "rb").read()
    with open(path("xtrunc.npy"), "wb") as f:
        f.write(raw[:-5])
    expect_error([BNNRUN, "--reference", TINY, "--input", path("xtrunc.npy"), "--output",
                  path("o.npy")], "truncated", "truncated npy", path("o.npy"))
    with open(path("xjunk.npy"), "wb") as f:
        f.write(b"hello world, not numpy")
    expect_error([BNNRUN, "--reference", TINY, "--input", path("xjunk.npy"), "--output",
                  path("o.npy")], "not a .npy file", "junk npy", path("o.npy"))
    expect_error([BNNRUN, "--reference", TINY, "--output", path("o.npy")], "1 input",
                 "missing --input", path("o.npy"))
    expect_error([BNNRUN, "--reference", TINY, "--input", path("nope.npy"), "--output",
                  path("o.npy")], "nope.npy", "missing input file", path("o.npy"))

print(f"test_cli: {checks - failures} of {checks} checks passed")
sys.exit(1 if failures else 0)
