#!/usr/bin/env python3
"""ncu_sass.py: one kernel's executed SASS from `ncu --page source --csv --print-source sass`,
summed by opcode and by windows of consecutive instructions, the way docs/perf.md's "by windows
of its SASS" figures are read.

    ncu --import REPORT.ncu-rep -k KERNEL --page source --csv --print-source sass > K.csv
    bench/ncu_sass.py K.csv [--window 100] [--top 20] [--min 1.0] [--lines A:B]

Prints the kernel's executed instructions and warp samples, the --top opcodes (share of the
instructions and of the samples; predicates and modifiers dropped: `@P0 IMAD.MOV` counts as
IMAD), then each window of --window SASS lines holding at least --min % of either, with its six
commonest opcodes. --lines A:B lists those lines one by one instead (count and text), to read a
window found above. Where ncu repeats the kernel's table (it can print it twice), the first is
read."""
import argparse
import collections
import csv
import sys


def read(path):
    """[(executed, samples, text)] of the first table of the file, in address order."""
    rows, header = [], None
    with open(path, newline="") as f:
        for r in csv.reader(f):
            if len(r) > 5 and r[0] == "Address":
                if header is not None:
                    break  # a repeated table
                header = r
                ie, isa, isrc = (r.index("Instructions Executed"),
                                 r.index("Warp Stall Sampling (All Samples)"), r.index("Source"))
                continue
            if header is not None and len(r) > ie and r[ie].isdigit():
                rows.append((int(r[ie]), int(r[isa] or 0), r[isrc].strip()))
    if header is None:
        sys.exit(f"ncu_sass: {path} holds no SASS table (ncu ... --page source --csv --print-source sass)")
    return rows


def opcode(text):
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--window", type=int, default=100)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--min", type=float, default=1.0, help="windows below this %% of both are left out")
    ap.add_argument("--lines", default=None, help="A:B, list these SASS lines")
    a = ap.parse_args()
    rows = read(a.csv)
    ti = sum(e for e, _, _ in rows) or 1
    ts = sum(s for _, s, _ in rows) or 1
    if a.lines:
        lo, hi = (int(v) for v in a.lines.split(":"))
        for i in range(max(lo, 0), min(hi, len(rows))):
            print(f"{i:6d} {rows[i][0]:12d} {rows[i][1]:6d}  {rows[i][2]}")
        return
    print(f"{a.csv}: {len(rows)} SASS lines, {ti:,} instructions executed (warp level), {ts:,} warp samples")
    ops, opsam = collections.Counter(), collections.Counter()
    for e, s, t in rows:
        ops[opcode(t)] += e
        opsam[opcode(t)] += s
    print("| opcode | instructions | share | samples |")
    print("|---|---:|---:|---:|")
    for o, c in ops.most_common(a.top):
        print(f"| {o} | {c / 1e6:.2f} M | {100 * c / ti:.1f} % | {100 * opsam[o] / ts:.1f} % |")
    print(f"\n| lines | instructions | samples | commonest opcodes (% of the window's instructions) |")
    print("|---|---:|---:|---|")
    for i in range(0, len(rows), a.window):
        w = rows[i:i + a.window]
        c, s = sum(e for e, _, _ in w), sum(x for _, x, _ in w)
        if 100 * c / ti < a.min and 100 * s / ts < a.min:
            continue
        top = collections.Counter()
        for e, _, t in w:
            top[opcode(t)] += e
        mix = " ".join(f"{k} {100 * v // max(c, 1)}" for k, v in top.most_common(6))
        print(f"| {i}-{i + len(w) - 1} | {100 * c / ti:.1f} % | {100 * s / ts:.1f} % | {mix} |")


if __name__ == "__main__":
    main()
