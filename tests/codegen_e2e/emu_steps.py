"""What the emulator tests of bnncc's generated kernel steps (resd_emu.py, rcode_emu.py) share:
the plan's step kinds, flags, slots and argument kinds (docs/blob-format.md), a kernel step's
launch and weights read from a blob, bnncc's blobs and --emit=cuda #define blocks, kernels.inc
and the compile of a driver built on emu_driver.h, and the runs of its manifests. The blob's
sections, steps and slots, fail() and host_cxx() are test_e2e.py's."""
import argparse
import os
import platform
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np

import test_e2e
from test_e2e import fail, failures

HERE = os.path.dirname(os.path.abspath(__file__))

STEP_BCONV, STEP_CONV2D, STEP_MAXPOOL, STEP_KERNEL, STEP_QCONV = 4, 6, 8, 16, 20
FLAG_CPU_ONLY, FLAG_BATCH_ALT = 1, 4
SLOT_IN, SLOT_IN2, SLOT_OUT, SLOT_W, SLOT_P0, SLOT_P1, SLOT_X0, SLOT_X1 = range(8)
SPACE_NONE, SPACE_WEIGHTS = 0, 2
ARG_PTR, ARG_BATCH, ARG_I64 = 1, 2, 4
POISON = 0x5EADBEEF  # emu_driver.h's fill of the outputs
# freed memory filled (glibc; meson test sets it too): tables built from a stale pointer show
BNNCC_ENV = {"MALLOC_PERTURB_": "165", **os.environ}


# ---------------------------------------------------------------- the command line

def parse_args(sanitized):
    """--sanitized (sanitized: what the sanitizer build runs) and --keep DIR."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--sanitized", action="store_true", help=f"the sanitizer build: {sanitized}")
    ap.add_argument("--keep", help="work in this folder and keep it")
    return ap.parse_args()


def work_dir(keep):
    """(the folder to work in, the TemporaryDirectory that removes it, None with --keep): hold
    the second until the end."""
    tmpdir = None if keep else tempfile.TemporaryDirectory()
    tmp = keep or tmpdir.name
    os.makedirs(tmp, exist_ok=True)
    return tmp, tmpdir


def exit_on_failures():
    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)


# ---------------------------------------------------------------- bnncc

def start_blobs(paths, tmp, args=()):
    """Starts bnncc -O3 ARGS --report on every model of paths {name: path} at once (-o
    NAME.bin in tmp); finish_blobs waits."""
    return {name: (os.path.join(tmp, name + ".bin"),
                   subprocess.Popen([test_e2e.BNNCC, "-O3", *args, path, "--report", "-o",
                                     os.path.join(tmp, name + ".bin")],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=BNNCC_ENV))
            for name, path in paths.items()}


def finish_blobs(procs, why):
    """{name: (report, blob bytes)}; exit 77 where bnncc has no NVRTC (why: what needs it)."""
    out = {}
    for name, (blob, p) in procs.items():
        so, se = p.communicate()
        if p.returncode:
            if "NVRTC not found" in se:
                print(f"skipped: bnncc has no NVRTC ({why})")
                sys.exit(77)
            sys.exit(f"FAIL: bnncc {name}:\n{se[-3000:]}")
        out[name] = (so + se, open(blob, "rb").read())
    return out


def emit_cuda(paths, args=()):
    """{name: the CUDA source of bnncc -O3 ARGS --emit=cuda} (no NVRTC)."""
    return {name: subprocess.run([test_e2e.BNNCC, "-O3", *args, path, "--emit=cuda", "-o", "-"], check=True,
                                 capture_output=True, text=True, env=BNNCC_ENV).stdout for name, path in paths.items()}


def emu_name(k, kname):
    """Kernel kname of model number k as the emulator compiles it (several models' kernels in
    one program)."""
    return f"m{k}_{kname}"


def kernel_defines(src, name_define, marker, k):
    """{kernel name: its #define block} of --emit=cuda's output src of model number k for the
    kernels whose block defines marker (BC_RESD, QC_RCODE), the block's name (name_define:
    BC_NAME, QC_NAME) emu_name's."""
    return {m.group(1): m.group(0).replace(f"#define {name_define} {m.group(1)}\n",
                                           f"#define {name_define} {emu_name(k, m.group(1))}\n", 1)
            for m in re.finditer(rf"^#define {name_define} (\w+)\n(?:#define [^\n]*\n)+", src, re.M)
            if f"\n#define {marker} " in m.group(0)}


def define(block, name):
    return int(re.search(rf"^#define {name} (\S+)$", block, re.M).group(1))


# ---------------------------------------------------------------- the blob

def step_flags(b, at):
    return struct.unpack_from("<I", b, at + 8)[0]


def step_params(b, at, n=24):
    """The first n int64 parameters of the step at offset at."""
    return struct.unpack_from(f"<{n}q", b, at + test_e2e.BLOB_PARAMS_AT)


def weights(b, wsec, slot, dtype):
    space, _, off, size = slot
    if space != SPACE_WEIGHTS:
        raise ValueError(f"slot in space {space}, not the weights")
    return np.frombuffer(b, dtype, size // np.dtype(dtype).itemsize, wsec[0] + off)


class KernelStep:
    """A kernel step of a blob (docs/blob-format.md "kernel") as the emulator runs it: model,
    name, emu_name, defines (its #define block, kernel_defines'), alt (a batch alternative, from
    batch alt_batch), grid ((base, per batch, div) a dimension), threads, smem and args [(kind,
    slot, value)]."""

    def __init__(self, b, at, model, kname, k, defines):
        self.model, self.name, self.emu_name, self.defines = model, kname, emu_name(k, kname), defines
        self.alt = bool(step_flags(b, at) & FLAG_BATCH_ALT)
        self.alt_batch = struct.unpack_from("<I", b, at + 12)[0]
        self.grid = [struct.unpack_from("<3I", b, at + 80 + 12 * d) for d in range(3)]
        self.threads = struct.unpack_from("<3I", b, at + 116)
        self.smem = struct.unpack_from("<I", b, at + 128)[0]
        nargs = struct.unpack_from("<I", b, at + 132)[0]
        self.args = [struct.unpack_from("<IIq", b, at + 136 + 16 * a) for a in range(nargs)]


def grid_dim(g, batch):
    base, per_batch, div = g
    return base + (batch * per_batch + div - 1) // div


def launch_dims(K, batch):
    """(grid x, grid y, threads, shared bytes) of K's launch at batch."""
    return (grid_dim(K.grid[0], batch), grid_dim(K.grid[1], batch), K.threads[0] * K.threads[1] * K.threads[2],
            K.smem)


# ---------------------------------------------------------------- bits

def unpack(words, c):
    """[..., words] u32 -> [..., c] 0 / 1."""
    u8 = np.ascontiguousarray(words.astype("<u4")).view(np.uint8)
    return np.unpackbits(u8, axis=-1, bitorder="little")[..., :c]


def pack(bits, nwords):
    """[..., c] bool -> [..., nwords] u32, the bits past c zero."""
    full = np.zeros(bits.shape[:-1] + (nwords * 32,), np.uint8)
    full[..., :bits.shape[-1]] = bits
    return np.packbits(full, axis=-1, bitorder="little").view("<u4")


# ---------------------------------------------------------------- the emulator

def start_emulator(cxx, driver, kernels, tmp, sanitized):
    """Writes kernels.inc: for each of kernels [(emu name, #define block, kernel source, launcher
    body)] the block, the source's #include and call_<name>(const EmuArgs &a) of that body, then
    emu_driver.h's table emu_kernels[]; and starts compiling tests/codegen_e2e/DRIVER.cc into
    tmp (-O1; sanitized: -O0 with ASan and UBSan); finish_emulator waits."""
    with open(os.path.join(tmp, "kernels.inc"), "w") as f:
        for name, block, source, call in kernels:
            f.write(f"{block}#include \"{source}\"\nstatic void call_{name}(const EmuArgs &a) {{\n{call}}}\n")
        f.write("static const EmuKernel emu_kernels[] = {\n" +
                "".join(f"    {{\"{name}\", call_{name}}},\n" for name, *_ in kernels) + "};\n")
    exe = os.path.join(tmp, driver)
    opt = ["-O0", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"] if sanitized else ["-O1"]
    if platform.machine() in ("x86_64", "AMD64") and " popcnt" in open("/proc/cpuinfo").read():
        opt.append("-mpopcnt")  # the emulated MMAs' popcounts: half of its time as calls to libgcc
    fiber = test_e2e.EMU_FIBER
    p = subprocess.Popen([cxx, "-std=c++20", *opt, "-ffp-contract=off", "-w", "-I", tmp,
                          "-I", os.path.join(test_e2e.SRC, "tests", "codegen"), "-I",
                          os.path.join(test_e2e.SRC, "codegen"), "-I", fiber,
                          os.path.join(HERE, driver + ".cc"), os.path.join(fiber, "emu_fiber.c"), "-o", exe],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return exe, p


def finish_emulator(cxx, exe, p):
    """exe once it compiled; exit 77 (skipped) where cxx has no C++20."""
    _, err = p.communicate()
    if p.returncode:
        if "-std=c++20" in err or "unrecognized" in err and "c++20" in err:
            print(f"skipped: {cxx} has no C++20")
            sys.exit(77)
        sys.exit(f"FAIL: compiling the emulator:\n{err[-3000:]}")
    return exe


class Runner:
    """Writes the launches' operands into tmp and runs the emulator on manifests of them, one
    process a manifest (emu_driver.h's drivers: a launch a line). A test's start() writes the
    lines and spawn()s, its finish() wait()s and reads the outputs."""

    def __init__(self, exe, tmp):
        self.exe, self.tmp, self.n = exe, tmp, 0

    def file(self, arr):
        self.n += 1
        path = os.path.join(self.tmp, f"a{self.n}.bin")
        np.ascontiguousarray(arr).tofile(path)
        return path

    def output(self, name, i):
        """Where launch i writes its output name."""
        path = os.path.join(self.tmp, f"{name}{self.n}_{i}.bin")
        if os.path.exists(path):  # a --keep folder's from before
            os.remove(path)
        return path

    def spawn(self, manifests):
        """Starts the emulator on each non-empty list of lines of manifests."""
        self.procs = []
        for j, lines in enumerate(manifests):
            if not lines:
                continue
            manifest = os.path.join(self.tmp, f"manifest{self.n}_{j}.txt")
            with open(manifest, "w") as f:
                f.writelines(lines)
            self.procs.append(subprocess.Popen([self.exe, manifest], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                               text=True))

    def wait(self):
        """Waits for the processes: their FAIL lines, and an exit other than 0 (all ok) or 1 (a
        FAIL line), are failures."""
        for proc in self.procs:
            out, _ = proc.communicate()
            for line in out.splitlines():
                if line.startswith("FAIL:"):
                    fail(line[6:])
            if proc.returncode not in (0, 1):
                fail(f"the emulator exited with {proc.returncode}:\n{out[-3000:]}")
