#!/usr/bin/env python3
"""ab_blobs.py: an old blob against new ones of the same model, the way docs/perf.md's A/B
tables are made: correctness first, then alternated timing rounds and a per-step comparison.

    bench/ab_blobs.py OLD.bin NEW.bin [NEW2.bin ...] [--bnnrun PATH] [--shape 3,224,224]
                      [--batches 1,8,64,256] [--check-batches 1,3,24,64] [--rounds 2]
                      [--profile-batch 256] [--device gpu|cpu] [--dir DIR]

1. Inputs (fixed seed): FINITE, max(--batches, 100) random normal items of --shape, and NANS,
   64 of them with a NaN, an inf and a NaN in items 3, 7 and 11.
2. The reference is OLD's CPU path (which equals the reference interpreter: the test suite's
   contract). Each NEW's --device outputs must equal it bit for bit, NaN positions included: on
   NANS at every --check-batches batch, on FINITE at the largest --batches batch and at 100. A
   blob that differs anywhere is reported and not timed (exit 1).
3. `bnnrun --bench N --resident` at each --batches batch (N 300, 60 from batch 64), the blobs
   alternated, --rounds rounds; then `--profile 10` of each at --profile-batch (0: none) and
   the steps whose time moved by more than 2 %.
Prints one table a section; everything it runs goes through --bnnrun. --device cpu is a dry run
of the same steps on the CPU path (small batches: the CPU path is slow)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def bnnrun(a, blob, *args):
    p = subprocess.run([a.bnnrun, blob] + list(args), capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"ab_blobs: bnnrun {os.path.basename(blob)} {' '.join(args)} failed ({p.returncode}): "
                 f"{p.stderr.strip()[-400:]}")
    return p.stdout + p.stderr


def same(ref, got):
    """Bit for bit, NaN positions equal (NaN payloads may differ: docs/runtime.md)."""
    if ref.shape != got.shape or ref.dtype != got.dtype:
        return f"shape {got.shape} {got.dtype}, expected {ref.shape} {ref.dtype}"
    if ref.dtype.kind != "f":
        return "" if np.array_equal(ref, got) else f"{int((ref != got).sum())} values differ"
    na, nb = np.isnan(ref), np.isnan(got)
    if not np.array_equal(na, nb):
        return f"NaN at {int(na.sum())} places in the reference, {int(nb.sum())} here"
    bits = ref.view(np.uint32 if ref.itemsize == 4 else np.uint64)
    gbits = got.view(bits.dtype)
    d = int((bits[~na] != gbits[~na]).sum())
    return f"{d} values differ" if d else ""


def profile(text):
    """{step: (kernel, ms)} and the total from `bnnrun --profile`'s table."""
    steps, total = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*(\d+)\s+\S+\s+(\S+)\s+([0-9.]+)\s", line)
        if m:
            steps[int(m.group(1))] = (m.group(2), float(m.group(3)))
        m = re.search(r"all steps \(median run\)\s+([0-9.]+)", line)
        if m:
            total = float(m.group(1))
    return steps, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new", nargs="+")
    here = os.path.dirname(os.path.abspath(__file__))
    carry = os.path.join(here, "..", ".cache", "bench", "carry", "bnnrun")
    ap.add_argument("--bnnrun", default=carry if os.path.exists(carry) else
                    os.path.join(here, "..", "build", "runtime", "bnnrun"))
    ap.add_argument("--shape", default="3,224,224")
    ap.add_argument("--batches", default="1,8,64,256")
    ap.add_argument("--check-batches", default="1,3,24,64")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--profile-batch", type=int, default=256)
    ap.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--dir", default=None, help="where the inputs and outputs go (default: a temporary folder)")
    a = ap.parse_args()
    shape = tuple(int(v) for v in a.shape.split(","))
    batches = [int(v) for v in a.batches.split(",") if v]
    checks = [int(v) for v in a.check_batches.split(",") if v]
    blobs = [a.old] + a.new
    names = [os.path.basename(b) for b in blobs]
    for b in blobs:
        if not os.path.isfile(b):
            sys.exit(f"ab_blobs: no blob {b}")
    if not os.access(a.bnnrun, os.X_OK):
        sys.exit(f"ab_blobs: no bnnrun at {a.bnnrun} (build it, or name it with --bnnrun)")
    tmp = a.dir or tempfile.mkdtemp(prefix="ab_blobs_")
    os.makedirs(tmp, exist_ok=True)
    rng = np.random.RandomState(1)
    nfin = max(batches + [100])
    finite = rng.randn(nfin, *shape).astype(np.float32)
    nans = rng.randn(64, *shape).astype(np.float32)
    for i, v in ((3, np.nan), (7, np.inf), (11, np.nan)):
        nans[(i,) + tuple(j % s for j, s in zip((i % 3, 10 + i, 20), shape))] = v
    fin_path, nan_path = os.path.join(tmp, "finite.npy"), os.path.join(tmp, "nans.npy")
    np.save(fin_path, finite)
    np.save(nan_path, nans)

    # 1. Correctness against OLD's CPU path.
    ref_nan, ref_fin = os.path.join(tmp, "ref_nans.npy"), os.path.join(tmp, "ref_finite.npy")
    bnnrun(a, a.old, "--device", "cpu", "--input", nan_path, "--output", ref_nan)
    bnnrun(a, a.old, "--device", "cpu", "--input", fin_path, "--output", ref_fin)
    ref = {"nans": np.load(ref_nan), "finite": np.load(ref_fin)}
    runs = [("nans", nan_path, b) for b in checks] + [("finite", fin_path, b) for b in (max(batches), 100)]
    wrong = []
    print(f"## correctness: {a.device} outputs against {names[0]}'s CPU path, bit for bit")
    for name, blob in zip(names[1:], blobs[1:]):
        for what, path, b in runs:
            out = os.path.join(tmp, "got.npy")
            bnnrun(a, blob, "--device", a.device, "--batch", str(b), "--input", path, "--output", out)
            why = same(ref[what], np.load(out))
            print(f"{name} batch {b} ({what}): {'ok' if not why else 'DIFFERS: ' + why}")
            if why:
                wrong.append(name)
    if wrong:
        print(f"ab_blobs: {', '.join(sorted(set(wrong)))} differ from the reference: not timed")
        sys.exit(1)

    # 2. Alternated timing rounds.
    times = {(n, b): [] for n in names for b in batches}
    for _ in range(a.rounds):
        for name, blob in zip(names, blobs):
            for b in batches:
                n = 300 if b < 64 else 60
                if a.device == "cpu":
                    n = 3
                out = bnnrun(a, blob, "--device", a.device, "--input", fin_path, "--batch", str(b), "--bench",
                             str(n), *(["--resident"] if a.device == "gpu" else []))
                m = re.search(r"median ([0-9.]+) ms", out)
                if not m:
                    sys.exit(f"ab_blobs: no median in bnnrun's output for {name} batch {b}: {out.strip()[-300:]}")
                times[(name, b)].append(float(m.group(1)))
    print(f"\n## times: `bnnrun --bench N{' --resident' if a.device == 'gpu' else ''}` medians, ms, "
          f"the blobs alternated, rounds: {a.rounds} ({a.device})")
    print("| batch | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for b in batches:
        base = min(times[(names[0], b)])
        cells = []
        for n in names:
            t = times[(n, b)]
            cell = ", ".join(f"{v:.4f}" for v in t)
            if n != names[0]:
                cell += f" ({(min(t) / base - 1) * 100:+.1f} %)"
            cells.append(cell)
        print(f"| {b} | " + " | ".join(cells) + " |")

    # 3. Per-step times.
    if a.profile_batch > 0:
        profs = []
        for blob in blobs:
            out = bnnrun(a, blob, "--device", a.device, "--input", fin_path, "--batch", str(a.profile_batch),
                         "--profile", "10" if a.device == "gpu" else "2")
            profs.append(profile(out))
        print(f"\n## steps: `bnnrun --profile` at batch {a.profile_batch}, ms; steps that moved by more than 2 %")
        for name, (steps, _) in zip(names[1:], profs[1:]):
            if [k for k, _ in steps.values()] != [k for k, _ in profs[0][0].values()]:
                print(f"(the plans differ: {name}'s steps are not {names[0]}'s; rows are by step number)")
        print("| step | kernel | " + " | ".join(names) + " |")
        print("|---|---|" + "---|" * len(names))
        base_steps = profs[0][0]
        for s, (kernel, ms) in sorted(base_steps.items()):
            others = [p[0].get(s) for p in profs[1:]]
            if all(o and abs(o[1] / ms - 1) <= 0.02 for o in others):
                continue
            cells = [f"{ms:.4f}"] + [f"{o[1]:.4f}" if o else "-" for o in others]
            print(f"| {s} | {kernel} | " + " | ".join(cells) + " |")
        print("| all | | " + " | ".join(f"{p[1]:.4f}" if p[1] else "-" for p in profs) + " |")


if __name__ == "__main__":
    main()
