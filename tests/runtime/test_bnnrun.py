#!/usr/bin/env python3
"""bnnrun on model.bin files built by hand (tests/runtime/mkblob): outputs equal the plain C
computation exactly on the CPU path; every user error exits 1 with a message and leaves no
output; --bench (also with --resident) prints its figures; the docs' example program runs
against libbnnrt."""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

BUILD = os.environ["BNN_BUILD_ROOT"]
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")
MKBLOB = os.path.join(BUILD, "tests", "runtime", "mkblob")
EXAMPLE = os.path.join(BUILD, "tests", "runtime", "bnnrt_example")

failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print(f"FAIL: {what}", file=sys.stderr)


def run(args, env=None):
    p = subprocess.run(args, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr


def expect_error(args, needle, what, out_path=None, env=None):
    rc, out, err = run(args, env)
    check(rc == 1, f"{what}: exit code {rc}, expected 1 (stderr: {err.strip()})")
    check(err.startswith("bnnrun: error: "), f"{what}: stderr is not 'bnnrun: error: ...': {err!r}")
    check(needle in err, f"{what}: stderr lacks {needle!r}: {err.strip()}")
    check("AddressSanitizer" not in err and "runtime error" not in err, f"{what}: sanitizer report")
    if out_path:
        check(not os.path.exists(out_path), f"{what}: left a partial output {out_path}")


with tempfile.TemporaryDirectory() as tmp:
    def p(name):
        return os.path.join(tmp, name)

    rc, out, err = run([MKBLOB, tmp])
    check(rc == 0, f"mkblob: {err}")

    # --- exact results on the CPU, whole batch and in chunks ----------------------------
    for extra in ([], ["--batch", "2"], ["--batch", "1"], ["--batch", "100"]):
        rc, out, err = run([BNNRUN, p("mlp.bin"), "--input", p("mlp_x.npy"), "--output",
                            p("logits.npy"), "--output", p("label.npy"), "--device", "cpu"] + extra)
        check(rc == 0, f"mlp {extra}: exit {rc}: {err}")
        if rc == 0:
            got, want = np.load(p("logits.npy")), np.load(p("mlp_logits.npy"))
            check(got.dtype == np.float32 and got.shape == (5, 10), f"mlp logits {got.dtype} {got.shape}")
            check(np.array_equal(got.view(np.uint32), want.view(np.uint32)), f"mlp logits {extra}")
            got = np.load(p("label.npy"))
            check(got.dtype == np.int64 and np.array_equal(got, np.load(p("mlp_label.npy"))),
                  f"mlp labels {extra}")
    outs = ["logits", "logits2", "bits", "stem"]
    rc, out, err = run([BNNRUN, p("conv.bin"), "--input", p("conv_x.npy"), "--device", "auto"] +
                       sum([["--output", p(f"o_{o}.npy")] for o in outs], []))
    check(rc == 0, f"conv: exit {rc}: {err}")
    for o in outs:
        if rc == 0:
            got, want = np.load(p(f"o_{o}.npy")), np.load(p(f"conv_{o}.npy"))
            check(got.shape == want.shape and np.array_equal(got.view(np.uint32), want.view(np.uint32)),
                  f"conv output {o}")

    # --- --bench ----------------------------------------------------------------------
    rc, out, err = run([BNNRUN, p("mlp.bin"), "--input", p("mlp_x.npy"), "--device", "cpu",
                        "--bench", "5", "--batch", "2"])
    check(rc == 0 and "median" in out and "items/s" in out and "batch 2, 5 runs" in out
          and "device: CPU" in out, f"bench output: {out!r} {err!r}")

    # --- --bench --resident: runs without copies, outputs still written -------------------
    rc, out, err = run([BNNRUN, p("mlp.bin"), "--input", p("mlp_x.npy"), "--device", "cpu",
                        "--bench", "5", "--batch", "2", "--resident", "--output", p("logits.npy"),
                        "--output", p("label.npy")])
    check(rc == 0 and "batch 2, 5 runs" in out and "resident buffers: no copies" in out
          and "device: CPU" in out, f"bench --resident output: {out!r} {err!r}")
    if rc == 0:
        got, want = np.load(p("logits.npy")), np.load(p("mlp_logits.npy"))
        check(np.array_equal(got.view(np.uint32), want.view(np.uint32)), "mlp logits with --resident")
    rc, out, err = run([BNNRUN, p("mlp.bin"), "--input", p("mlp_x.npy"), "--device", "cpu",
                        "--bench", "3"])
    check(rc == 0 and "no copies" not in out and "(wall clock)" in out, f"plain --bench: {out!r}")

    # --- --profile: a line per plan step, the outputs those of an ordinary run --------------
    # --device auto: the CPU path here, the GPU (steps launched one by one) on a GPU machine.
    rc, out, err = run([BNNRUN, p("conv.bin"), "--input", p("conv_x.npy"), "--profile", "3",
                        "--batch", "2"] + sum([["--output", p(f"prof_{o}.npy")] for o in outs], []))
    check(rc == 0, f"--profile: exit {rc}: {err}")
    lines = out.splitlines()
    steps = [ln.split() for ln in lines if re.match(r"\s+\d+\s+\w", ln)]
    check(lines and lines[0].startswith("profile: 3 passes over 3 items in runs of batch 2 on "),
          f"--profile header: {out!r}")
    check(len(steps) >= 3 and [int(s[0]) for s in steps] == list(range(len(steps))),
          f"--profile: one line per step, in order: {out!r}")
    timed = [float(s[3]) for s in steps if len(s) >= 5 and s[3] != "-"]
    check(timed and all(t >= 0 for t in timed), f"--profile: step times {timed}")
    check(any("conv2d" in s[1] for s in steps) and "all steps (median run)" in out,
          f"--profile: kinds and the total: {out!r}")
    for o in outs:
        if rc == 0:
            got, want = np.load(p(f"prof_{o}.npy")), np.load(p(f"conv_{o}.npy"))
            check(np.array_equal(got.view(np.uint32), want.view(np.uint32)), f"--profile: output {o}")

    # --- --reference --stats: a line per computed value, exact figures ---------------------
    with open(p("stats.bnn"), "w") as f:
        f.write("graph $stats(%x: f32[N,2,2]) -> (f32[N,2,2], b1[N,2,2]) {\n"
                "    %r = f32[N,2,2] relu %x\n"
                "    %b = b1[N,2,2] binarize %x {zero=1}\n"
                "    ret %r, %b\n}\n")
    np.save(p("stats_x.npy"), np.array([[[-1, 2], [0, np.inf]]], dtype=np.float32))
    rc, out, err = run([BNNRUN, "--reference", p("stats.bnn"), "--input", p("stats_x.npy"), "--stats"])
    check(rc == 0, f"--stats: exit {rc}: {err}")
    rows = {ln.split()[-1]: ln.split() for ln in out.splitlines()[2:]}
    # relu: 0, 2, 0 finite (min 0, max 2, mean 2/3, 2 of 3 zero) and one inf
    check(rows.get("r", [])[:6] == ["relu", "f32[1,2,2]", "0", "2", "0.6667", "0.9428"] and
          "66.7%" in rows["r"] and rows["r"][-3:-1] == ["0", "1"], f"--stats relu row: {out!r}")
    # binarize: -1 +1 +1 +1 (75 % +1); channel 1 (0, inf) is +1 everywhere
    check(rows.get("b", [])[:2] == ["binarize", "b1[1,2,2]"] and "75.0%" in rows["b"] and
          "1 const ch" in " ".join(rows["b"]), f"--stats binarize row: {out!r}")
    expect_error([BNNRUN, p("mlp.bin"), "--input", p("mlp_x.npy"), "--stats"], "--stats goes with --reference",
                 "stats on a model.bin")

    # --- user errors ------------------------------------------------------------------
    y = p("y.npy")
    base = [BNNRUN, p("mlp.bin"), "--output", y, "--output", p("l.npy")]
    np.save(p("bad_shape.npy"), np.zeros((3, 99), np.float32))
    expect_error(base + ["--input", p("bad_shape.npy")], "expects shape (N, 100)", "wrong shape", y)
    np.save(p("bad_dtype.npy"), np.zeros((3, 100), np.float64))
    expect_error(base + ["--input", p("bad_dtype.npy")], "expects float32", "wrong dtype", y)
    np.save(p("empty.npy"), np.zeros((0, 100), np.float32))
    expect_error(base + ["--input", p("empty.npy")], "at least 1", "empty batch", y)
    expect_error([BNNRUN, p("mlp.bin"), "--input", p("mlp_x.npy"), "--output", y],
                 "the model has 2 outputs, 1 --output file given", "output count", y)
    expect_error(base, "the model has 1 input, 0 --input files given", "input count", y)
    blob = open(p("mlp.bin"), "rb").read()
    for name, data, needle in [("trunc.bin", blob[:1000], "truncated"),
                               ("magic.bin", b"XXXX" + blob[4:], "bad magic"),
                               ("newer.bin", blob[:8] + b"\x09" + blob[9:], "format version 9 is newer"),
                               ("damaged.bin", blob[:-64] + bytes([blob[-64] ^ 1]) + blob[-63:],
                                "checksum mismatch")]:
        open(p(name), "wb").write(data)
        expect_error([BNNRUN, p(name), "--input", p("mlp_x.npy"), "--output", y, "--output",
                      p("l.npy")], needle, name, y)
        expect_error([BNNRUN, p(name), "--input", p("mlp_x.npy"), "--output", y, "--output",
                      p("l.npy")], p(name), name + " names the file", y)
    expect_error(base + ["--input", p("mlp_x.npy"), "--device", "gpu"], "", "gpu without a cubin", y)
    expect_error(base + ["--input", p("mlp_x.npy"), "--device", "gpu"], "no NVIDIA driver",
                 "gpu without a driver", y, env={"BNN_CUDA_LIBRARY": "/nonexistent/libcuda.so.1"})
    expect_error(base + ["--input", p("mlp_x.npy"), "--device", "tpu"], "--device needs", "bad device")
    expect_error(base + ["--input", p("mlp_x.npy"), "--batch", "0"], "--batch needs", "batch 0")
    expect_error(base + ["--input", p("mlp_x.npy"), "--bench", "x"], "--bench needs", "bench x")
    expect_error(base + ["--input", p("mlp_x.npy"), "--profile", "0"], "--profile needs", "profile 0")
    expect_error([BNNRUN, "--reference", p("mlp.bin"), "--input", p("mlp_x.npy"), "--profile", "2"],
                 "apply to model.bin", "profile with reference")
    expect_error(base + ["--input", p("mlp_x.npy"), "--device", "cpu", "--profile-graph", "3"],
                 "--profile-graph times the GPU's CUDA graph", "profile-graph on the CPU", y)
    expect_error(base + ["--input", p("mlp_x.npy"), "--profile-graph", "0"], "--profile-graph needs",
                 "profile-graph 0")
    expect_error([BNNRUN, "--reference", p("mlp.bin"), "--input", p("mlp_x.npy"), "--profile-graph", "2"],
                 "apply to model.bin", "profile-graph with reference")
    expect_error([BNNRUN, "/nonexistent.bin", "--input", p("mlp_x.npy")], "cannot open", "missing model")
    expect_error(base + ["--input", p("mlp_x.npy"), "--resident"], "--resident goes with --bench",
                 "resident without bench", y)
    expect_error([BNNRUN, "--reference", p("mlp.bin"), "--input", p("mlp_x.npy"), "--resident"],
                 "apply to model.bin", "resident with reference")
    open(p("m.onnx"), "wb").write(b"not a blob, an onnx file")
    expect_error([BNNRUN, p("m.onnx"), "--input", p("mlp_x.npy"), "--output", y],
                 "compile it with bnncc first", "onnx without --reference", y)

    # --- the docs' example ------------------------------------------------------------
    rc, out, err = run([EXAMPLE, p("mlp.bin"), "cpu"])
    check(rc == 0 and "input 'x': f32[N,100], 400 bytes per item" in out and "device: CPU" in out
          and "output 1: first value" in out, f"example: {rc} {out!r} {err!r}")
    rc, out, err = run([EXAMPLE, p("trunc.bin")])
    check(rc == 1 and "bad model file" in err and "truncated" in err, f"example on a bad blob: {err!r}")

# docs/runtime.md shows example.c whole (less its leading comment): keep them the same.
src = open(os.path.join(os.environ["BNN_SOURCE_ROOT"], "tests", "runtime", "example.c")).read()
doc = open(os.path.join(os.environ["BNN_SOURCE_ROOT"], "docs", "runtime.md")).read()
body = src[src.index("#include <bnnrt.h>"):]
check(body in doc, "docs/runtime.md does not show tests/runtime/example.c as it is")

print(f"test_bnnrun: {checks - failures} of {checks} checks passed")
sys.exit(1 if failures else 0)
