#!/usr/bin/env python3
"""bnncc's CUBIN cache and kernel sharing (docs/codegen.md, docs/cli.md).

- A miss fills the cache with one entry per target, a hit reads it: the blob is byte-identical
  either way, and equal to what --no-cache gives, which stores nothing.
- A damaged, truncated or misplaced entry is ignored: correct blob, entry rewritten.
- An unwritable cache folder: one warning, exit 0, the same blob.
- The folder: $BNNCC_CACHE_DIR, else $XDG_CACHE_HOME/bnncc, else $HOME/.cache/bnncc.
- Targets compiled in parallel give the CUBIN a compile of that target alone gives.
- Two binary convs that need the same kernel share one: --emit=cuda defines it once, every plan
  step names a kernel that the source defines and each CUBIN holds, and the blob runs on the
  CPU path bit-identically with the reference interpreter."""
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np

BUILD = os.environ["BNN_BUILD_ROOT"]
BNNCC = os.path.join(BUILD, "compiler", "bnncc")
BNNRUN = os.path.join(BUILD, "runtime", "bnnrun")

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}", file=sys.stderr)


def run(args, env_changes):
    env = dict(os.environ)
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    p = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    return p.returncode, p.stdout, p.stderr


def hexbits(rng, nbits):
    return bytes(rng.integers(0, 256, (nbits + 7) // 8, dtype=np.uint8)).hex()


def twin_model(rng):
    """Three 3x3 binary convs on 8 channels: the first two (threshold epilogue, same shapes)
    need the same kernel, the third (i32 result) another."""
    c = 8
    lines = ["# three binary convs; conv1 and conv2 differ only in their weights and thresholds"]
    for i in (1, 2, 3):
        lines.append(f'const $w{i}: b1[{c},{c},3,3] = hex "{hexbits(rng, c * c * 9)}"')
    for i in (1, 2):
        t = ", ".join(str(int(v)) for v in rng.integers(-6, 7, c))
        d = ", ".join(str(int(v)) for v in rng.choice([-1, 1], c))
        lines += [f"const $t{i}: i32[{c}] = [{t}]", f"const $d{i}: i8[{c}] = [{d}]"]
    lines += [
        f"graph $twin(%x: f32[N,{c},6,6]) -> (f32[N,{c},6,6]) {{",
        f"    %a = b1[N,{c},6,6] binarize %x {{zero=1}}",
        f"    %c1 = i32[N,{c},6,6] conv2d %a, $w1 {{pads=[1,1,1,1]}}",
        f"    %h1 = b1[N,{c},6,6] threshold %c1, $t1, $d1",
        f"    %c2 = i32[N,{c},6,6] conv2d %h1, $w2 {{pads=[1,1,1,1]}}",
        f"    %h2 = b1[N,{c},6,6] threshold %c2, $t2, $d2",
        f"    %c3 = i32[N,{c},6,6] conv2d %h2, $w3 {{pads=[1,1,1,1]}}",
        f"    %y = f32[N,{c},6,6] cast %c3 {{to=f32}}",
        "    ret %y",
        "}",
    ]
    return "\n".join(lines) + "\n"


def sections(blob):
    """{(kind, tag): bytes} of a model.bin (docs/blob-format.md)."""
    n = struct.unpack_from("<I", blob, 16)[0]
    out = {}
    for i in range(n):
        kind, _, tag, off, size, _ = struct.unpack_from("<II16sQQQ", blob, 64 + 48 * i)
        out[(kind, tag.rstrip(b"\0").decode())] = blob[off:off + size]
    return out


def plan_kernels(blob):
    plan = sections(blob)[(2, "")]
    nsteps = struct.unpack_from("<I", plan, 0)[0]
    names = [plan[64 + 648 * i + 16:64 + 648 * i + 80].rstrip(b"\0").decode() for i in range(nsteps)]
    return [n for n in names if n]


def entries(folder):
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def read(p):
    with open(p, "rb") as f:
        return f.read()


with tempfile.TemporaryDirectory() as tmp:
    def path(*name):
        return os.path.join(tmp, *name)

    model = path("twin.bnn")
    with open(model, "w") as f:
        f.write(twin_model(np.random.default_rng(7)))

    # --- a miss fills the cache (creating the folders), a hit reads it ---------------------------
    cache = path("a", "b", "cache")
    env = {"BNNCC_CACHE_DIR": cache}
    rc, _, err = run([BNNCC, model, "-o", path("miss.bin")], env)
    check(rc == 0, f"cold compile: exit {rc}: {err}")
    check("NVRTC" not in err, f"no progress line without -v when stderr is no terminal: {err!r}")
    names = entries(cache)
    check(len(names) == 2 and all(n.endswith(".cubin") and len(n) == 64 + 6 for n in names),
          f"one entry per target (sm_90a, sm_80), named by the key: {names}")
    before = {n: (read(os.path.join(cache, n)), os.stat(os.path.join(cache, n)).st_mtime_ns) for n in names}
    rc, _, err = run([BNNCC, model, "-o", path("hit.bin"), "-v"], env)
    check(rc == 0, f"warm compile: exit {rc}: {err}")
    check(err.count("(from the kernel cache)") == 2, f"-v says both CUBINs came from the cache: {err}")
    check("with NVRTC" not in err, f"a hit compiles nothing: {err}")
    check(entries(cache) == names and all(os.stat(os.path.join(cache, n)).st_mtime_ns == before[n][1]
                                          for n in names), "a hit leaves the entries alone")
    miss = read(path("miss.bin"))
    check(read(path("hit.bin")) == miss, "the blob is byte-identical with and without a cache hit")

    # --- --no-cache: compiles (-v says what), reads and writes nothing ---------------------------
    env2 = {"BNNCC_CACHE_DIR": path("nocache")}
    rc, _, err = run([BNNCC, model, "-o", path("nocache.bin"), "--no-cache", "-v"], env2)
    check(rc == 0, f"--no-cache: exit {rc}: {err}")
    check("bnncc: compiling 3 kernels for sm_90a, sm_80 with NVRTC" in err,
          f"-v: the progress line counts the kernels (pack, 3 convs as 2) and names the targets: {err}")
    check(not os.path.exists(path("nocache")), "--no-cache creates no cache folder")
    check(read(path("nocache.bin")) == miss, "--no-cache gives the same blob")
    rc, _, err = run([BNNCC, model, "-o", path("nocache2.bin"), "--no-cache", "-v"], env)
    check(rc == 0 and "from the kernel cache" not in err and entries(cache) == names,
          f"--no-cache ignores a warm cache: {err}")

    # --- damaged entries: ignored, rewritten ------------------------------------------------------
    a, b = (os.path.join(cache, n) for n in names)
    with open(a, "r+b") as f:  # one byte of the CUBIN flipped
        f.seek(len(before[names[0]][0]) - 100)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0x40]))
    with open(b, "r+b") as f:  # truncated
        f.truncate(len(before[names[1]][0]) // 2)
    rc, _, err = run([BNNCC, model, "-o", path("damaged.bin"), "-v"], env)
    check(rc == 0, f"damaged entries: exit {rc}: {err}")
    check("from the kernel cache" not in err and "with NVRTC" in err, f"damaged entries are misses: {err}")
    check(read(path("damaged.bin")) == miss, "damaged entries: the same blob")
    check(entries(cache) == names and all(read(os.path.join(cache, n)) == before[n][0] for n in names),
          f"damaged entries are rewritten: {entries(cache)}")
    # An intact entry under the other entry's name (its key disagrees): a miss too.
    with open(b, "wb") as f:
        f.write(before[names[0]][0])
    rc, _, err = run([BNNCC, model, "-o", path("swapped.bin"), "-v"], env)
    check(rc == 0 and err.count("(from the kernel cache)") == 1, f"an entry under a wrong name: {err}")
    check(read(path("swapped.bin")) == miss, "an entry under a wrong name: the same blob")
    check(read(b) == before[names[1]][0], "an entry under a wrong name is rewritten")

    # --- an unwritable cache: one warning, the same blob -----------------------------------------
    with open(path("file"), "w") as f:
        f.write("not a folder\n")
    rc, _, err = run([BNNCC, model, "-o", path("unwritable.bin")], {"BNNCC_CACHE_DIR": path("file", "cache")})
    check(rc == 0, f"unwritable cache: exit {rc}: {err}")
    check(err.count("warning: cannot write the kernel cache") == 1, f"unwritable cache: one warning: {err!r}")
    check(read(path("unwritable.bin")) == miss, "unwritable cache: the same blob")

    # --- where the cache is without BNNCC_CACHE_DIR ----------------------------------------------
    rc, _, err = run([BNNCC, model, "--target=sm_80", "-o", path("xdg.bin")],
                     {"BNNCC_CACHE_DIR": None, "XDG_CACHE_HOME": path("xdg"), "HOME": path("home")})
    check(rc == 0 and len(entries(path("xdg", "bnncc"))) == 1 and not os.path.exists(path("home")),
          f"$XDG_CACHE_HOME/bnncc: {err}")
    rc, _, err = run([BNNCC, model, "--target=sm_80", "-o", path("home.bin")],
                     {"BNNCC_CACHE_DIR": "", "XDG_CACHE_HOME": None, "HOME": path("home")})
    check(rc == 0 and len(entries(path("home", ".cache", "bnncc"))) == 1, f"$HOME/.cache/bnncc: {err}")

    # --- the targets in parallel give what each alone gives ---------------------------------------
    alone = sections(read(path("xdg.bin")))
    both = sections(miss)
    check(alone[(4, "sm_80")] == both[(4, "sm_80")], "sm_80 CUBIN: compiled alone == compiled beside sm_90a")
    check(read(path("xdg.bin")) == read(path("home.bin")), "the cache folder changes nothing in the blob")

    # --- kernel sharing ---------------------------------------------------------------------------
    rc, src, err = run([BNNCC, model, "--emit=cuda", "-o", "-"], env)
    check(rc == 0, f"--emit=cuda: exit {rc}: {err}")
    defined = re.findall(r"^// -{20,} (s\d+_\w+)$", src, re.M)
    convs = [d for d in defined if d.endswith("_bconv")]
    check(len(convs) == 2 and src.count("#define BC_NAME s") == 2, f"3 convs, 2 distinct kernels: {defined}")
    check(src.count("// also launched by ") == 1, "the shared kernel names its other step")
    used = plan_kernels(miss)
    check(set(used) == set(defined) and sorted(used.count(n) for n in set(used)) == [1, 1, 2],
          f"plan steps launch the defined kernels, one of them twice: {used} / {defined}")
    for (kind, tag), data in both.items():
        if kind == 4:
            check(all(n.encode() + b"\0" in data for n in set(used)), f"{tag} CUBIN holds every kernel")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 8, 6, 6)).astype(np.float32)
    np.save(path("x.npy"), x)
    rc, _, err = run([BNNRUN, path("miss.bin"), "--device", "cpu", "--input", path("x.npy"),
                      "--output", path("cpu.npy")], {})
    check(rc == 0, f"bnnrun --device cpu: exit {rc}: {err}")
    rc, _, err = run([BNNRUN, "--reference", model, "--input", path("x.npy"), "--output", path("ref.npy")], {})
    check(rc == 0, f"bnnrun --reference: exit {rc}: {err}")
    if rc == 0 and os.path.exists(path("cpu.npy")):
        check(read(path("cpu.npy")) == read(path("ref.npy")), "CPU path == reference, bit for bit")

print(f"cache: {'FAIL' if failures else 'ok'} ({failures} failures)")
sys.exit(1 if failures else 0)
