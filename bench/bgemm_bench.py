#!/usr/bin/env python3
"""bgemm_bench.py: the bit-GEMM microbenchmark of issue 6.

For each shape M x N x K (K in bits; ops = 2*M*N*K), on one GPU, in one run:
  - bnncc's binary GEMM kernels, NVRTC-compiled from codegen/cuda/kernels/*.cu and launched
    through the CUDA driver API (ctypes; no CuPy): bgemm.cu (mma.sync, 16-byte cp.async),
    bgemm_tiled.cu (mma.sync, pre-tiled operands, bulk copies), bgemm_wgmma.cu (wgmma, sm_90a),
    each with int32 output and with thresholded bit output (what layers use), plus the
    tiled kernels' main loop alone (no stores) at the large shapes;
  - PyTorch fp16 matmul (cuBLAS) and int8 torch._int_mm on the same shapes.
Every bnncc result is checked bit-exact first against an fp32 matmul of the +-1 matrices
(exact: integer sums below 2^24) and its epilogue in torch, with poisoned outputs and a guard
region; a wrong result prints WRONG and no time. Times: CUDA events, median of --reps after
warm-up; inputs random (never all zeros). Prints a table: shape, kernel, ms, POPS, ratio vs
fp16 and vs int8 (their time / this time: > 1 is faster than them). 'main loop' rows time the
tiled kernels with the epilogue's stores compiled out (BT_NOSTORE / BW_NOSTORE); the tiled
kernels' times exclude the popc(a) prep kernel, timed on its own row.

    python3 bench/bgemm_bench.py [--shapes 256,1024,4096,8192,16384] [--extra] [--reps 20]
                                 [--configs KCxSTAGES[xCLUSTER],...] [--cluster-grid occupancy|sms]
                                 [--commit HASH] [--md OUT.md]
Needs: an sm_90 GPU (the tiled kernels), torch, libnvrtc and libcuda.
"""
import argparse
import concurrent.futures
import ctypes
import glob
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import time_ms  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KDIR = os.path.join(ROOT, 'codegen', 'cuda', 'kernels')
EPI_I32, EPI_THRESHOLD = 1, 2
POISON = 0xAB
GUARD = 4096  # bytes after each output that must stay poisoned

# ---------------------------------------------------------------- NVRTC and the driver by ctypes


def _load(names):
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            pass
    raise SystemExit('bgemm_bench: cannot load any of ' + ', '.join(names))


def _nvrtc_names():
    names = ['libnvrtc.so', 'libnvrtc.so.13', 'libnvrtc.so.12']
    for root in (os.environ.get('CUDA_HOME'), os.environ.get('CUDA_PATH'), '/usr/local/cuda'):
        if root:
            names += sorted(glob.glob(os.path.join(root, 'lib64', 'libnvrtc.so*')))
    return names


nvrtc = _load(_nvrtc_names())
cuda = _load(['libcuda.so.1'])
for f in ('nvrtcGetErrorString',):
    getattr(nvrtc, f).restype = ctypes.c_char_p


def nv_check(r, what, prog=None):
    if r != 0:
        log = ''
        if prog is not None:
            n = ctypes.c_size_t()
            nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
            buf = ctypes.create_string_buffer(n.value)
            nvrtc.nvrtcGetProgramLog(prog, buf)
            log = buf.value.decode(errors='replace')
        raise RuntimeError('%s: %s\n%s' % (what, nvrtc.nvrtcGetErrorString(r).decode(), log))


def cu_check(r, what):
    if r != 0:
        s = ctypes.c_char_p()
        cuda.cuGetErrorString(r, ctypes.byref(s))
        raise RuntimeError('%s failed: %s (%d)' % (what, s.value.decode() if s.value else '?', r))


def compile_cubin(src, name, arch='sm_90a'):
    prog = ctypes.c_void_p()
    nv_check(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None), 'create')
    inc = '/usr/local/cuda/include'
    for root in (os.environ.get('CUDA_HOME'), os.environ.get('CUDA_PATH')):
        if root and os.path.isdir(os.path.join(root, 'include')):
            inc = os.path.join(root, 'include')
    opts = [b'--gpu-architecture=' + arch.encode(), b'--std=c++17', b'-default-device', b'-I' + inc.encode()]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    try:
        nv_check(nvrtc.nvrtcCompileProgram(prog, len(opts), arr), 'compile ' + name, prog)
        n = ctypes.c_size_t()
        nv_check(nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(n)), 'cubin size')
        buf = ctypes.create_string_buffer(n.value)
        nv_check(nvrtc.nvrtcGetCUBIN(prog, buf), 'cubin')
        return buf.raw
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))


def read_kernel(kdir, name):
    with open(os.path.join(kdir, name), encoding='utf-8') as f:
        return '#line 1 "%s"\n' % name + f.read()


def read_sources(kdir):
    """The kernel files, from kdir where it has them, else from the repository's."""
    return {n: read_kernel(kdir if os.path.exists(os.path.join(kdir, n)) else KDIR, n)
            for n in ('common.cu', 'bgemm.cu', 'tiled_common.cu', 'bgemm_tiled.cu', 'bgemm_wgmma.cu')}


SRC = {}
CLUSTER_GRID = 'occupancy'


class CUlaunchConfig(ctypes.Structure):  # cuda.h's CUlaunchConfig (no attributes: the kernel has __cluster_dims__)
    _fields_ = [('gridDimX', ctypes.c_uint), ('gridDimY', ctypes.c_uint), ('gridDimZ', ctypes.c_uint),
                ('blockDimX', ctypes.c_uint), ('blockDimY', ctypes.c_uint), ('blockDimZ', ctypes.c_uint),
                ('sharedMemBytes', ctypes.c_uint), ('hStream', ctypes.c_void_p), ('attrs', ctypes.c_void_p),
                ('numAttrs', ctypes.c_uint)]

# ---------------------------------------------------------------- the kernels


class Kernel:
    """One specialized bnncc kernel: family, shape, epilogue, tile; its NVRTC source."""

    def __init__(self, family, N, K, epi, nostore=False, kc=8, stages=4, cluster=1):
        self.family, self.N, self.K, self.epi, self.nostore = family, N, K, epi, nostore
        self.cluster = cluster
        self.ldy = (N + 31) // 32 if epi == EPI_THRESHOLD else N
        if family == 'bgemm':  # the best tile of docs/kernels.md: 128x256, 8 warps, KC 4, 4 stages
            self.bm, self.bn, self.kc, self.stages, self.threads = 128, 256, 4, 4, 256
            self.smem = self.stages * self.kc * ((self.bm + self.bn) * 16 + 2 * (128 // self.kc)) + self.bm * 4
        else:  # tile_layout.h: bnn_bgemm_tiled_smem, bnn_bgemm_tiled_threads, BNN_WGMMA_THREADS
            self.bm, self.bn, self.kc, self.stages = 128, 256, kc, stages
            self.threads = 384 if family == 'wgmma' else 256
            self.smem = (self.stages * self.kc * (self.bm + self.bn) * 16 + 16 * self.stages +
                         2 * (4 * self.bn + self.bn // 32 + self.bm) * 4 + 32)
        self.name = 'k_%s_%d_%d_%d_%d_%d_%d_%d' % (family, N, K, epi, nostore, self.kc, self.stages, cluster)
        self.fn = None

    def label(self):
        out = 'main loop' if self.nostore else 'int32' if self.epi == EPI_I32 else 'bits'
        fam = {'bgemm': 'bgemm(cp.async)', 'tiled': 'tiled(mma.sync)', 'wgmma': 'wgmma'}[self.family]
        cl = ' cluster2 (grid %d)' % self.grid_cap if self.cluster > 1 else ''
        cfg = '' if self.family == 'bgemm' else ' k%d s%d%s' % (self.kc * 128, self.stages, cl)
        return '%s %s%s' % (fam, out, cfg)

    def source(self):
        if self.family == 'bgemm':
            d = ('#define BG_NAME %s\n#define BG_N %d\n#define BG_K %d\n#define BG_EPI %d\n#define BG_BM 128\n'
                 '#define BG_BN 256\n#define BG_WM 2\n#define BG_WN 4\n#define BG_KC 4\n#define BG_STAGES 4\n'
                 % (self.name, self.N, self.K, self.epi))
            return SRC['common.cu'] + d + SRC['bgemm.cu']
        p = 'BT' if self.family == 'tiled' else 'BW'
        d = ''.join('#define %s_%s %s\n' % (p, k, v) for k, v in (
            ('NAME', self.name), ('N', self.N), ('K', self.K), ('EPI', self.epi), ('KC', self.kc),
            ('STAGES', self.stages), ('NOSTORE', int(self.nostore))) +
            ((('CLUSTER', self.cluster),) if self.family == 'wgmma' else ()))
        return SRC['common.cu'] + SRC['tiled_common.cu'] + d + SRC['bgemm_%s.cu' % self.family]

    def load(self, cubin):
        mod = ctypes.c_void_p()
        cu_check(cuda.cuModuleLoadData(ctypes.byref(mod), cubin), 'cuModuleLoadData ' + self.name)
        fn = ctypes.c_void_p()
        cu_check(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, self.name.encode()), 'cuModuleGetFunction')
        cu_check(cuda.cuFuncSetAttribute(fn, 8, self.smem), 'cuFuncSetAttribute')  # max dynamic smem
        self.fn, self.mod = fn, mod
        # Blocks a launch may have: a persistent grid of clusters larger than the clusters that
        # fit at once would run its surplus clusters in a second wave (cluster placement is by
        # GPC, so fewer than SMs / 2 clusters of two may fit).
        self.grid_cap = SMS
        if self.cluster > 1:
            cfg = CUlaunchConfig(SMS // self.cluster * self.cluster, 1, 1, self.threads, 1, 1, self.smem, None, None, 0)
            n = ctypes.c_int()
            cu_check(cuda.cuOccupancyMaxActiveClusters(ctypes.byref(n), fn, ctypes.byref(cfg)),
                     'cuOccupancyMaxActiveClusters')
            self.max_clusters = n.value
            if CLUSTER_GRID == 'occupancy':
                self.grid_cap = n.value * self.cluster
        if self.family != 'bgemm':
            prep = ctypes.c_void_p()
            cu_check(cuda.cuModuleGetFunction(ctypes.byref(prep), mod, b'bnn_tiled_row_popc'), 'prep kernel')
            self.prep = prep

    def launch(self, ops, M, stream=None):
        """ops: the Operands; launches on `stream` (a CUstream handle), by default torch's
        current stream (the capture stream while a CUDA graph is captured)."""
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        Y = ops.Y[self.epi]
        p0, p1 = (ops.thr, ops.dir) if self.epi == EPI_THRESHOLD else (None, None)
        ptrs = [ops.A[self.family], ops.W[self.family]]
        if self.family != 'bgemm':
            ptrs.append(ops.apop)
        ptrs += [ops.wpop, p0, p1, Y]
        vals = [ctypes.c_uint64(t.data_ptr() if t is not None else 0) for t in ptrs] + [ctypes.c_int(M)]
        args = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
        if self.family == 'bgemm':
            grid = ((self.N + self.bn - 1) // self.bn, (M + self.bm - 1) // self.bm)
        else:
            cl = self.cluster  # work units: tiles, or pairs of M tiles for clusters of two
            units = ((M + self.bm - 1) // self.bm + cl - 1) // cl * ((self.N + self.bn - 1) // self.bn)
            grid = (min(units, self.grid_cap // cl) * cl, 1)
        cu_check(cuda.cuLaunchKernel(self.fn, grid[0], grid[1], 1, self.threads, 1, 1, self.smem,
                                     ctypes.c_void_p(stream), args, None), 'cuLaunchKernel ' + self.name)

    def launch_prep(self, ops, M, stream=None):
        """popc(a) per row from the tiled A (the tiled kernels' apop)."""
        if stream is None:
            stream = torch.cuda.current_stream().cuda_stream
        vals = [ctypes.c_uint64(ops.A[self.family].data_ptr()), ctypes.c_int(M), ctypes.c_int(self.bm),
                ctypes.c_int(ops.nch), ctypes.c_uint64(ops.apop.data_ptr())]
        args = (ctypes.c_void_p * 5)(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
        cu_check(cuda.cuLaunchKernel(self.prep, (M + 31) // 32, 1, 1, 32, 8, 1, 0, ctypes.c_void_p(stream), args,
                                     None), 'prep')


# ---------------------------------------------------------------- operands and the reference

POPC8 = None


def popc_rows(x):  # x: uint8 [R, bytes] -> int32 popcount per row
    return POPC8[x.long()].sum(1).to(torch.int32)


def tile_bits(x, tr, kpad_bits):
    """Row-major packed bytes [R, kb] -> the pre-tiled image (tile_layout.h), flat uint8."""
    R, kb = x.shape
    Rp = (R + tr - 1) // tr * tr
    pad = torch.zeros((Rp, kpad_bits // 8), dtype=torch.uint8, device=x.device)
    pad[:R, :kb] = x
    return pad.view(Rp // tr, tr, kpad_bits // 128, 16).permute(0, 2, 1, 3).contiguous().view(-1)


def unpack_pm1(x, K):  # packed bytes -> +-1 float32 [R, K]
    bits = (x.unsqueeze(-1) >> torch.arange(8, device=x.device, dtype=torch.uint8)) & 1
    return bits.view(x.shape[0], -1)[:, :K].float() * 2 - 1


class Operands:
    def __init__(self, M, N, K, gen):
        dev = 'cuda'
        kb = (K + 7) // 8
        a = torch.randint(0, 256, (M, kb), dtype=torch.uint8, device=dev, generator=gen)
        w = torch.randint(0, 256, (N, kb), dtype=torch.uint8, device=dev, generator=gen)
        if K % 8:  # bits past K are zero
            a[:, -1] &= (1 << (K % 8)) - 1
            w[:, -1] &= (1 << (K % 8)) - 1
        self.M, self.N, self.K = M, N, K
        lda = (K + 255) // 256 * 32  # bgemm.cu's default row stride, bytes
        rowm = lambda x: torch.nn.functional.pad(x, (0, lda - kb)).contiguous()
        kpad = (K + 1023) // 1024 * 1024
        self.nch = kpad // 128
        ta, tw = tile_bits(a, 128, kpad), tile_bits(w, 256, kpad)
        self.A = {'bgemm': rowm(a), 'tiled': ta, 'wgmma': ta}
        self.W = {'bgemm': rowm(w), 'tiled': tw, 'wgmma': tw}
        self.wpop = popc_rows(w)
        self.apop = torch.full((M,), -7, dtype=torch.int32, device=dev)  # made by the prep kernel
        self.apop_ref = popc_rows(a)
        # Reference: +-1 fp32 matmul, exact (|sums| <= K <= 2^24).
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        self.ref = (unpack_pm1(a, K) @ unpack_pm1(w, K).t()).round().to(torch.int32)
        torch.backends.cuda.matmul.allow_tf32 = prev
        rows = torch.randint(0, M, (N,), device=dev, generator=gen)
        self.thr = (self.ref[rows, torch.arange(N, device=dev)] +
                    torch.randint(-1, 2, (N,), device=dev, generator=gen)).to(torch.int32)
        self.dir = (torch.randint(0, 2, (N,), device=dev, generator=gen) * 2 - 1).to(torch.int32)
        ldy = (N + 31) // 32
        on = torch.where(self.dir >= 0, self.ref >= self.thr, self.ref <= self.thr)
        on = torch.nn.functional.pad(on, (0, ldy * 32 - N)).view(M, ldy, 32).long()
        words = (on << torch.arange(32, device=dev)).sum(-1)
        self.ref_bits = (words - (words >= 2**31).long() * 2**32).to(torch.int32)
        ybytes = {EPI_I32: M * N * 4, EPI_THRESHOLD: M * ldy * 4}
        self.Y = {e: torch.empty(n + GUARD, dtype=torch.uint8, device=dev) for e, n in ybytes.items()}
        self.ybytes = ybytes

    def check(self, k):
        """Poisoned output, one launch, bit-exact comparison, guard intact. Returns an error or None."""
        y = self.Y[k.epi]
        y.fill_(POISON)
        if k.family != 'bgemm':
            self.apop.fill_(-7)
            k.launch_prep(self, self.M)
        k.launch(self, self.M)
        torch.cuda.synchronize()
        if k.family != 'bgemm' and not torch.equal(self.apop, self.apop_ref):
            return 'popc(a) prep kernel wrong'
        if not bool((y[self.ybytes[k.epi]:] == POISON).all()):
            return 'guard region written'
        got = y[:self.ybytes[k.epi]].view(torch.int32).view(self.M, -1)
        want = self.ref if k.epi == EPI_I32 else self.ref_bits
        if not torch.equal(got, want):
            bad = int((got != want).sum())
            return '%d of %d output words wrong' % (bad, want.numel())
        return None


# ---------------------------------------------------------------- timing


def main():
    global POPC8, SMS, CLUSTER_GRID
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--shapes', default='256,1024,4096,8192,16384', help='square sizes M=N=K')
    ap.add_argument('--extra', default='1x1024x1024,128x4096x4096,16384x4096x1024,4096x1024x16384',
                    help='non-square MxNxK shapes ("" for none)')
    ap.add_argument('--reps', type=int, default=20)
    ap.add_argument('--commit', default='?')
    ap.add_argument('--md', default='', help='also write the table as markdown here')
    ap.add_argument('--seed', type=int, default=1234)
    ap.add_argument('--kdir', default=KDIR, help='kernel sources (default: codegen/cuda/kernels)')
    ap.add_argument('--configs', default='8x4', help='KCxSTAGES[xCLUSTER] of the tiled kernels: 16-byte chunks '
                    'per stage, stages, wgmma cluster size (1, 2); the first at every shape, the others at >= 8192^3')
    ap.add_argument('--cluster-grid', choices=('occupancy', 'sms'), default='occupancy',
                    help='blocks of a cluster kernel\'s persistent grid: the clusters that fit at once '
                    '(cuOccupancyMaxActiveClusters), or one a SM')
    args = ap.parse_args()
    CLUSTER_GRID = args.cluster_grid

    SRC.update(read_sources(args.kdir))
    torch.cuda.init()
    torch.zeros(1, device='cuda')  # the primary context, shared with the driver API calls below
    POPC8 = torch.tensor([bin(i).count('1') for i in range(256)], dtype=torch.int32, device='cuda')
    prop = torch.cuda.get_device_properties(0)
    SMS = prop.multi_processor_count
    if prop.major != 9:
        raise SystemExit('bgemm_bench: needs an sm_90 GPU (got sm_%d%d)' % (prop.major, prop.minor))
    shapes = [(s, s, s) for s in map(int, filter(None, args.shapes.split(',')))]
    shapes += [tuple(map(int, x.split('x'))) for x in filter(None, args.extra.split(','))]

    # (KC, stages, cluster); the first is the default, cluster 2 applies to wgmma only
    cfgs = [tuple(map(int, (c + 'x1').split('x')[:3])) for c in args.configs.split(',')]
    kernels, allk = {}, {}
    for (M, N, K) in shapes:
        ks = []
        for fam in ('bgemm', 'tiled', 'wgmma'):
            fcfgs = [(4, 4, 1)] if fam == 'bgemm' else cfgs if fam == 'wgmma' else [c for c in cfgs if c[2] == 1]
            for ci, (kc, st, cl) in enumerate(fcfgs):
                if ci and M * N * K < 8192**3:
                    continue  # other stage configurations at the large shapes only
                for epi in (EPI_I32, EPI_THRESHOLD):
                    ks.append(Kernel(fam, N, K, epi, kc=kc, stages=st, cluster=cl))
                if fam != 'bgemm' and M * N * K >= 4096**3:
                    ks.append(Kernel(fam, N, K, EPI_THRESHOLD, nostore=True, kc=kc, stages=st, cluster=cl))
        kernels[(M, N, K)] = [allk.setdefault(k.name, k) for k in ks]  # same N, K: one kernel
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 4)) as ex:
        cubins = dict(zip(allk, ex.map(lambda k: compile_cubin(k.source(), k.name + '.cu'), allk.values())))
    for name, k in allk.items():
        k.load(cubins[name])
        if k.cluster > 1:
            print('%s: at most %d clusters of %d at once (%d SMs)' % (k.name, k.max_clusters, k.cluster, SMS))
    print('device: %s, %d SMs; torch %s; %d kernels NVRTC-compiled in %.1f s' %
          (prop.name, SMS, torch.__version__, len(allk), time.time() - t0), flush=True)

    gen = torch.Generator(device='cuda')
    gen.manual_seed(args.seed)
    rows, failed = [], 0
    for (M, N, K) in shapes:
        ops = Operands(M, N, K, gen)
        nops = 2.0 * M * N * K
        # PyTorch on the same shape: fp16 (cuBLAS) and int8 (_int_mm), +-1 values.
        a16 = (torch.randint(0, 2, (M, K), device='cuda', generator=gen) * 2 - 1).half()
        w16 = (torch.randint(0, 2, (N, K), device='cuda', generator=gen) * 2 - 1).half()
        t16 = time_ms(lambda: torch.matmul(a16, w16.t()), args.reps)
        t8 = None
        if M > 16 and K % 8 == 0 and N % 8 == 0:
            a8, w8 = a16.to(torch.int8), w16.to(torch.int8).t()  # [K, N] column-major, as for fp16
            try:
                t8 = time_ms(lambda: torch._int_mm(a8, w8), args.reps)
            except RuntimeError as e:
                print('int8 %dx%dx%d: %s' % (M, N, K, str(e).splitlines()[0]))
        del a16, w16
        shape = '%dx%dx%d' % (M, N, K)
        rows.append((shape, 'torch fp16 matmul', t16, nops / t16 / 1e12, 1.0, t8 / t16 if t8 else None))
        if t8:
            rows.append((shape, 'torch int8 _int_mm', t8, nops / t8 / 1e12, t16 / t8, 1.0))
        for k in kernels[(M, N, K)]:
            if not k.nostore:
                err = ops.check(k)
                if err:
                    failed += 1
                    print('WRONG: %s %s: %s' % (shape, k.label(), err), flush=True)
                    rows.append((shape, k.label(), None, None, None, None))
                    continue
            t = time_ms(lambda: k.launch(ops, M), args.reps)
            rows.append((shape, k.label(), t, nops / t / 1e12, t16 / t, t8 / t if t8 else None))
        k = [k for k in kernels[(M, N, K)] if k.family == 'tiled'][0]  # its prep kernel: popc(a)
        tp = time_ms(lambda: k.launch_prep(ops, M), args.reps)
        rows.append((shape, 'popc(a) prep (tiled A)', tp, None, None, None))
        del ops
        torch.cuda.empty_cache()

    fmt = lambda v, f: f % v if v is not None else '-'
    head = '| shape (MxNxK bits) | kernel | ms | POPS | vs fp16 | vs int8 |'
    lines = [head, '|---|---|---:|---:|---:|---:|']
    for (shape, name, t, tops, r16, r8) in rows:
        lines.append('| %s | %s | %s | %s | %s | %s |' % (
            shape, name, fmt(t, '%.4f') if t is not None else 'WRONG (no time)',
            fmt(tops, '%.2f'), fmt(r16, '%.1fx'), fmt(r8, '%.1fx')))
    when = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    info = ('%s, %s (%d SMs), driver API + NVRTC, torch %s, commit %s; ms per call, median of %d replays of a '
            'CUDA graph of back-to-back calls, after 3 warm-ups' % (
                when, prop.name, SMS, torch.__version__, args.commit, args.reps))
    print('\n' + info)
    print('\n'.join(lines))
    if args.md:
        with open(args.md, 'w') as f:
            f.write(info + '\n\n' + '\n'.join(lines) + '\n')
    if failed:
        print('bgemm_bench: %d kernels gave WRONG results' % failed)
        sys.exit(1)


if __name__ == '__main__':
    main()
