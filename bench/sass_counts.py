#!/usr/bin/env python3
"""sass_counts.py: each kernel's SASS instruction count in a model.bin's CUBINs, without a GPU or
a disassembler, and the kernels whose count differs between two blobs of one model.

    bench/sass_counts.py A.bin [B.bin] [--arch sm_90a] [--all]

From sm_70 on every SASS instruction is 16 bytes, so a kernel's `.text.NAME` section in the
CUBIN (an ELF file; docs/blob-format.md's CUBIN sections) holds size / 16 of them: the static
count, the same number `ncu --page source` lists for the kernel. With one blob it prints every
kernel's count; with two the kernels whose count differs (--all: every kernel), so that a change
to a kernel's code can be weighed before a GPU run (docs/perf.md, stop 46). Static counts are a
proxy: a loop's body counts once."""
import argparse
import struct
import sys


def cubins(path):
    """{arch: bytes} of the CUBIN sections (kind 4) of a model.bin."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:8] != b"BNNMODEL":
        sys.exit(f"sass_counts: {path}: not a model.bin (bad magic)")
    out = {}
    for i in range(struct.unpack_from("<I", b, 16)[0]):
        e = 64 + 48 * i
        kind = struct.unpack_from("<I", b, e)[0]
        tag = b[e + 8:e + 24].rstrip(b"\0").decode()
        offset, size = struct.unpack_from("<QQ", b, e + 24)
        if kind == 4:
            out[tag] = b[offset:offset + size]
    return out


def text_sizes(elf):
    """{kernel: bytes of its .text section} of a 64-bit little-endian ELF."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        sys.exit("sass_counts: a CUBIN that is not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", elf, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = heads[shstrndx][4]
    out = {}
    for h in heads:
        name = elf[names_at + h[0]:elf.index(b"\0", names_at + h[0])].decode()
        if name.startswith(".text."):
            out[name[len(".text."):]] = h[5]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("blobs", nargs="+", help="one or two model.bin files")
    ap.add_argument("--arch", default="sm_90a", help="the CUBIN to read (default sm_90a)")
    ap.add_argument("--all", action="store_true", help="with two blobs, every kernel, not only those that differ")
    a = ap.parse_args()
    if len(a.blobs) > 2:
        sys.exit("sass_counts: one or two blobs")
    counts = []
    for path in a.blobs:
        cs = cubins(path)
        if a.arch not in cs:
            sys.exit(f"sass_counts: {path} has no {a.arch} CUBIN (it has {', '.join(sorted(cs)) or 'none'})")
        counts.append({k: v // 16 for k, v in text_sizes(cs[a.arch]).items()})
    if len(counts) == 1:
        for k in sorted(counts[0]):
            print(f"{k:24s} {counts[0][k]:7d}")
        print(f"{'all kernels':24s} {sum(counts[0].values()):7d}")
        return
    old, new = counts
    for k in sorted(set(old) | set(new)):
        o, n = old.get(k, 0), new.get(k, 0)
        if o != n or a.all:
            change = f"{100 * (n - o) / o:+.1f} %" if o else "new"
            print(f"{k:24s} {o:7d} -> {n:7d}  {change}")
    print(f"{'all kernels':24s} {sum(old.values()):7d} -> {sum(new.values()):7d}")


if __name__ == "__main__":
    main()
