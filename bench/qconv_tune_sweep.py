#!/usr/bin/env python3
"""qconv_tune_sweep.py: every bit-plane tile and the int8 MMA of ResNet-18's 3x3 layers at several
precisions, timed by `bnncc --tune` itself (docs/perf.md stop 52, where the planes / int8 rule
and the heavy layers' batch tiles come from).

    python3 bench/qconv_tune_sweep.py --bin DIR [--precisions 2,2/1,3/...] [--batch 256]
                                      [--target sm_90a] [--keep DIR]
    python3 bench/qconv_tune_sweep.py --from-logs DIR     (tables from kept logs, no GPU)

DIR holds a release bnncc (bench/prepare_carry.sh's .cache/bench/carry). For each precision W,A
(weight bits, activation bits) a QONNX CNN of ResNet-18's 3x3 shapes, batch-norm and a W-bit
ReLU quant after each (tests/lowbit/qconv_models.py's block): 56x56 64 -> 64, stride 2 to 28x28
128, 28x28, stride 2 to 14x14 256, 14x14, stride 2 to 7x7 512, 7x7, then a 1x1 conv with a float
output; `bnncc -O3 --tune=BATCH` compiles a variant per candidate, runs them on this machine's GPU
(two rounds, 15 profiled runs each) and prints each layer's candidates' mean ms. The table: per
layer the plan's ms (what an untuned blob runs at BATCH: the rule's kind, its batch tile) and the
best candidate's, then every candidate of the layer (tiles as THxTW/channels/warps/minb). The
tuner's log of precision W,A goes to KEEP/wWaA.log (with --keep), which --from-logs reads.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lowbit"))

LAYERS = ((64, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2), (512, 512, 1))
NAMES = ("56x56, 64", "56 -> 28, 128", "28x28, 128", "28 -> 14, 256", "14x14, 256", "14 -> 7, 512", "7x7, 512",
         "1x1 out")


def sweep_model(wbits, abits):
    """The CNN above as an onnx ModelProto."""
    import qconv_models
    n = qconv_models.Net("sweep_w%da%d" % (wbits, abits), np.random.default_rng(wbits * 10 + abits))
    y = n.quant("x", 0.25, abits, 0)
    for c, o, s in LAYERS:
        y = qconv_models.block(n, y, c, o, 3, wbits, abits, stride=s)
    return n.model((64, 56, 56), n.conv(y, 512, 10, 1, wbits))


def short(candidate):
    """'halo 4x8 px, 64 ch, 4 warps, minb 2' -> '4x8/64/4w/m2'; the int8 MMA -> 'int8'."""
    if candidate.startswith("int8"):
        return "int8"
    m = re.match(r"halo (\w+) px, (\d+) ch, (\d+) warps, minb (\d+)", candidate)
    return "%s/%s/%sw/m%s" % m.groups() if m else candidate


def parse(log):
    """The tuner's table: [(layer, plan ms, best ms, [(candidate, ms or None)])] in plan order."""
    rows = re.findall(r"^tune: (\S+) +([\d.]+) +([\d.]+)  .*\ntune:   candidates, ms: (.*)$", log, re.M)
    out = []
    for layer, plan, best, cands in rows:
        cs = []
        for c in cands.split(" | "):
            m = re.match(r"([\d.]+|-) (.*?)( \(not used\))?$", c.strip())
            cs.append((short(m.group(2)), None if m.group(1) == "-" else float(m.group(1))))
        out.append((layer, float(plan), float(best), cs))
    return out


def table(logs):
    """A markdown table, a column per precision: each layer's 'plan / best' ms; then the
    candidates of each precision's layers."""
    heads = list(logs)
    parsed = {k: parse(v) for k, v in logs.items()}
    lines = ["| layer | " + " | ".join(heads) + " |", "|---|" + "---|" * len(heads)]
    for i, name in enumerate(NAMES):
        cells = []
        for k in heads:
            rows = parsed[k]
            cells.append("%.4f / %.4f" % rows[i][1:3] if i < len(rows) else "-")
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
    for k in heads:
        lines.append("")
        lines.append("%s, every candidate (ms):" % k)
        for i, (layer, _, _, cs) in enumerate(parsed[k]):
            lines.append("  %-14s %s" % (NAMES[i] if i < len(NAMES) else layer,
                                         "  ".join("%s=%s" % (c, "-" if ms is None else "%.4f" % ms) for c, ms in cs)))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", help="folder with a release bnncc")
    ap.add_argument("--precisions", default="2,2/3,2/4,2/1,3/2,3/1,4/2,4/3,3",
                    help="W,A pairs (weight bits, activation bits) separated by /")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--target", default="sm_90a")
    ap.add_argument("--keep", default="", help="keep the models, blobs and tuner logs in this folder")
    ap.add_argument("--from-logs", default="", help="print the table of the logs kept in this folder")
    a = ap.parse_args()
    precisions = []
    for p in a.precisions.split("/"):
        w, x = (int(v) for v in p.split(","))
        if not (1 <= w <= 8 and 1 <= x <= 8):
            raise SystemExit("qconv_tune_sweep: a precision %r outside 1..8 bits" % p)
        precisions.append((w, x))
    names = ["w%da%d" % p for p in precisions]
    if a.from_logs:
        logs = {}
        for k in names:
            path = os.path.join(a.from_logs, k + ".log")
            if os.path.exists(path):
                with open(path) as f:
                    logs[k] = f.read()
        if not logs:
            raise SystemExit("qconv_tune_sweep: no wWaA.log in %s" % a.from_logs)
        print(table(logs))
        return
    if not a.bin:
        raise SystemExit("qconv_tune_sweep: --bin DIR (a release bnncc) or --from-logs DIR")
    import onnx
    work = a.keep or tempfile.mkdtemp(prefix="qconv_sweep_")
    os.makedirs(work, exist_ok=True)
    logs = {}
    for (w, x), k in zip(precisions, names):
        model = os.path.join(work, k + ".onnx")
        onnx.save(sweep_model(w, x), model)
        cmd = [os.path.join(a.bin, "bnncc"), "-O3", "--target=" + a.target, "--tune=%d" % a.batch, model, "-o",
               os.path.join(work, k + ".bin"), "--tune-file=" + os.path.join(work, k + ".tune")]
        print("qconv_tune_sweep: %s: %s" % (k, " ".join(cmd)), file=sys.stderr, flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True)
        log = "\n".join(line for line in p.stderr.splitlines() if not re.match(r"tune: \d+/\d+ ", line))
        if p.returncode != 0:
            raise SystemExit("qconv_tune_sweep: %s: bnncc --tune failed (exit %d):\n%s" % (k, p.returncode, log))
        logs[k] = log
        with open(os.path.join(work, k + ".log"), "w") as f:
            f.write(log + "\n")
    print("batch %d, %s, bnncc --tune's mean of 2 rounds' medians; plan / best ms\n" % (a.batch, a.target))
    print(table(logs))


if __name__ == "__main__":
    main()
