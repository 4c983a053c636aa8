#!/usr/bin/env python3
"""The pass pipeline through bnncc: --list-passes, --dump-after with banners, --time-passes,
--report lines, and that the optimized IR (fused ops, packed types) reads back and compiles
again to the same text."""
import os
import subprocess
import sys
import tempfile

BUILD = os.environ["BNN_BUILD_ROOT"]
SRC = os.environ["BNN_SOURCE_ROOT"]
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
HERE = os.path.join(SRC, "tests", "passes")

failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print(f"FAIL: {what}", file=sys.stderr)


def run(args, cwd=None):
    p = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=cwd)
    check("AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr,
          f"{args}: sanitizer report: {p.stderr[-400:]}")
    return p.returncode, p.stdout, p.stderr


rc, out, _ = run([BNNCC, "--list-passes"])
check(rc == 0, "--list-passes exits 0")
for name in ["infer-shapes", "cleanup", "sign-to-binarize", "padding", "fold-thresholds",
             "fuse-binary", "choose-formats", "plan-memory"]:
    check(name in out, f"--list-passes names {name}")

with tempfile.TemporaryDirectory() as tmp:
    for model in ["conv_pool.bnn", "mlp_bn.bnn"]:
        path = os.path.join(HERE, model)
        dump = os.path.join(tmp, "dump.txt")
        rc, out, err = run([BNNCC, path, "-O3", "--emit=ir", "--dump-after=all",
                            f"--dump-file={dump}", "--time-passes", "--report"], cwd=tmp)
        check(rc == 0, f"{model}: -O3 exits 0 ({err.strip()[-300:]})")
        text = open(dump).read() if os.path.exists(dump) else ""
        for banner in ["# --- after infer-shapes ---", "# --- after fold-thresholds ---",
                       "# --- after fuse-binary ---", "# --- after plan-memory ---"]:
            check(banner in text, f"{model}: dump has {banner}")
        check("pass fold-thresholds" in err and " ms" in err, f"{model}: --time-passes lines")
        check("memory: peak " in err and "bytes per batch element" in err,
              f"{model}: report has the memory line")
        check("integer threshold" in err, f"{model}: report names a folded layer")
        check(" batchnorm " not in out, f"{model}: no batchnorm left at -O3")
        check("bdense" in out or "bconv2d" in out, f"{model}: a fused op at -O3")
        check("pack(axis=1, word=32, pad=256, tile=none)" in out, f"{model}: packed formats")
        # The optimized IR is a model too: it reads back and a second run changes nothing.
        opt = os.path.join(tmp, "opt.bnn")
        with open(opt, "w") as f:
            f.write(out)
        rc2, out2, err2 = run([BNNCC, opt, "-O3", "--emit=ir"], cwd=tmp)
        check(rc2 == 0, f"{model}: the -O3 IR compiles again ({err2.strip()[-300:]})")
        check(out2 == out, f"{model}: compiling the -O3 IR again gives the same IR")
        rc0, out0, err0 = run([BNNCC, path, "-O0", "--emit=ir", "--dump-after=fold-thresholds"],
                              cwd=tmp)
        check(rc0 == 0 and "# --- after" not in err0, f"{model}: -O0 skips fold-thresholds")
        check(" batchnorm " in out0, f"{model}: -O0 keeps the float epilogue")
    check(not os.path.exists(os.path.join(tmp, "bnncc-crash.bnn")), "no reproducer on success")

print(f"test_cli_passes: {checks - failures} of {checks} checks passed")
sys.exit(1 if failures else 0)
