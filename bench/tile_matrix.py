#!/usr/bin/env python3
"""tile_matrix.py: every kernel configuration of every tunable layer of a model, timed at several
batches, as one table a layer (how docs/perf.md stop 31 chose the qconvs' batch alternatives).

    bench/tile_matrix.py prepare MODEL.onnx DIR [--bnncc PATH] [--kind qconv|bconv|conv2d|qgemm]
    bench/tile_matrix.py run DIR [--bnnrun PATH] [--batches 8,16,64,256] [--shape 3,224,224]
    bench/tile_matrix.py report DIR

prepare (where bnncc is built; no GPU): reads the tunable layers of `bnncc MODEL -O3 --report`
(its `tune: step N (LAYER) runs ..., candidates: A | B | ...; kernel signature: S` lines) and
compiles one blob a candidate number v, DIR/v<v>.bin, every tunable layer of the chosen kinds
(all without --kind) on its candidate v (its candidate 0, the cost model's, where it has fewer)
through a tune file DIR/v<v>.tune. A layer with a tune line has no batch alternative, so each
blob runs exactly its candidates at every batch. DIR/layers.txt lists the layers: the plan step
of each in these blobs, its name and its candidates.

run (on the GPU machine, DIR carried): `bnnrun DIR/v<v>.bin --device gpu --profile N` at each
batch on random normal inputs (fixed seed), the outputs in DIR/prof_v<v>_b<batch>.txt.

report (anywhere): a table a batch: for each layer its step's ms (bnnrun --profile's: per pass
over the profiled items) on each candidate, the fastest marked, and the change against candidate
0. Layers with fewer candidates show "-" past them."""
import argparse
import os
import re
import subprocess
import sys

import numpy as np

TUNE_LINE = re.compile(r"^tune: step (\d+) \((.+?)\) runs .*?candidates: (.*?); kernel signature: (.*)$", re.M)


def prepare(a):
    os.makedirs(a.dir, exist_ok=True)
    p = subprocess.run([a.bnncc, a.model, "-O3", "--report", "-o", os.path.join(a.dir, "plain.bin")],
                       capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"tile_matrix: bnncc failed: {p.stderr.strip()}")
    layers = [(int(m.group(1)), m.group(2), [c.strip() for c in m.group(3).split("|")], m.group(4))
              for m in TUNE_LINE.finditer(p.stdout + p.stderr)]
    if a.kind:
        layers = [x for x in layers if x[3].startswith(a.kind + ":")]
    if not layers:
        sys.exit("tile_matrix: no tunable layer" + (f" of kind {a.kind}" if a.kind else ""))
    nvar = max(len(c) for _, _, c, _ in layers)
    steps = None
    for v in range(nvar):
        tune = os.path.join(a.dir, f"v{v}.tune")
        with open(tune, "w") as f:
            f.write("bnncc-tune 1\n")
            for sig in dict.fromkeys(s for _, _, _, s in layers):
                cands = next(c for _, _, c, s in layers if s == sig)
                f.write(f"tile_matrix\t0\t1\t1\t{sig}\t{cands[v] if v < len(cands) else cands[0]}\n")
        p = subprocess.run([a.bnncc, a.model, "-O3", "--report", "--tune-file=" + tune, "-o",
                            os.path.join(a.dir, f"v{v}.bin")], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"tile_matrix: bnncc with {tune} failed: {p.stderr.strip()}")
        found = {m.group(2): int(m.group(1)) for m in TUNE_LINE.finditer(p.stdout + p.stderr)}
        steps = steps or found
        if found != steps:
            sys.exit("tile_matrix: the variants' plan steps differ (a bnncc bug)")
        print(f"tile_matrix: v{v}.bin", flush=True)
    with open(os.path.join(a.dir, "layers.txt"), "w") as f:
        for _, name, cands, _ in layers:
            f.write(f"{steps[name]}\t{name}\t{' | '.join(cands)}\n")
    print(f"tile_matrix: {len(layers)} layers, {nvar} blobs in {a.dir}")


def run(a):
    nvar = len([f for f in os.listdir(a.dir) if re.fullmatch(r"v\d+\.bin", f)]) if os.path.isdir(a.dir) else 0
    if not nvar:
        sys.exit(f"tile_matrix: no v0.bin ... in {a.dir} (run `tile_matrix.py prepare MODEL {a.dir}` first)")
    shape = tuple(int(x) for x in a.shape.split(","))
    batches = [int(b) for b in a.batches.split(",")]
    x = os.path.join(a.dir, "x.npy")
    np.save(x, np.random.default_rng(1).standard_normal((max(batches),) + shape).astype(np.float32))
    for v in range(nvar):
        for b in batches:
            p = subprocess.run([a.bnnrun, os.path.join(a.dir, f"v{v}.bin"), "--device", "gpu", "--input", x,
                                "--batch", str(b), "--profile", str(20 if b < 64 else 10)],
                               capture_output=True, text=True)
            with open(os.path.join(a.dir, f"prof_v{v}_b{b}.txt"), "w") as f:
                f.write(p.stdout + p.stderr)
            print(f"tile_matrix: v{v} batch {b}: {'ok' if p.returncode == 0 else 'FAILED'}", flush=True)


def step_ms(path):
    """{step: ms} of a bnnrun --profile table (rows with a time)."""
    out = {}
    for line in open(path):
        m = re.match(r"\s*(\d+)\s+\w+\s+\S+\s+([0-9.]+)\s", line)
        if m:
            out[int(m.group(1))] = float(m.group(2))
    return out


def report(a):
    listing = os.path.join(a.dir, "layers.txt")
    if not os.path.exists(listing):
        sys.exit(f"tile_matrix: no {listing} (run `tile_matrix.py prepare MODEL {a.dir}` first)")
    layers = [line.rstrip("\n").split("\t") for line in open(listing)]
    profs = {}
    for f in os.listdir(a.dir):
        m = re.fullmatch(r"prof_v(\d+)_b(\d+)\.txt", f)
        if m:
            profs[(int(m.group(1)), int(m.group(2)))] = step_ms(os.path.join(a.dir, f))
    if not profs:
        sys.exit("tile_matrix: no prof_v*_b*.txt in " + a.dir + " (run `tile_matrix.py run` first)")
    nvar = max(v for v, _ in profs) + 1
    for b in sorted({b for _, b in profs}):
        print(f"\nbatch {b} (ms per profiled pass; * the fastest)\n")
        print("| step | layer | " + " | ".join(f"v{v}" for v in range(nvar)) + " | best against v0 |")
        print("|---|---|" + "---:|" * nvar + "---|")
        for step, name, cands in layers:
            n = len(cands.split(" | "))
            ms = [profs.get((v, b), {}).get(int(step)) if v < n else None for v in range(nvar)]
            have = [(t, v) for v, t in enumerate(ms) if t is not None]
            if not have:
                continue
            best = min(have)[1]
            cells = ["-" if t is None else f"{t:.4f}{'*' if v == best else ''}" for v, t in enumerate(ms)]
            gain = f"v{best} {ms[best] / ms[0] - 1:+.0%}" if ms[0] else "?"
            print(f"| {step} | {name} | " + " | ".join(cells) + f" | {gain} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("model")
    p.add_argument("dir")
    p.add_argument("--bnncc", default="build/compiler/bnncc")
    p.add_argument("--kind", choices=["qconv", "bconv", "conv2d", "qgemm"])
    p = sub.add_parser("run")
    p.add_argument("dir")
    p.add_argument("--bnnrun", default="build/runtime/bnnrun")
    p.add_argument("--batches", default="8,16,64,256")
    p.add_argument("--shape", default="3,224,224")
    p = sub.add_parser("report")
    p.add_argument("dir")
    a = ap.parse_args()
    {"prepare": prepare, "run": run, "report": report}[a.cmd](a)


if __name__ == "__main__":
    main()
