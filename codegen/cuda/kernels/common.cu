// common.cu: device code shared by the binary kernel families (bgemm.cu, bconv.cu): PTX
// wrappers, the shared-memory tile pipeline around mma.sync m16n8k256 .b1 AND.POPC, the
// epilogue stores, and two generic prep kernels. Emitted once per NVRTC program, before any
// specialized kernel; the kernel files include it only when compiled on their own (nvcc).
// NVRTC has no <cstdint>: built-in types only. docs/kernels.md holds the contracts.
#ifndef BNN_COMMON_CU
#define BNN_COMMON_CU

// Epilogue kinds, the values of BG_EPI / BC_EPI.
#define BNN_EPI_I32 1       // int32 dot, row-major [M][LDY]
#define BNN_EPI_THRESHOLD 2 // packed bits, LSB-first, 32-bit words, row stride LDY words
#define BNN_EPI_AFFINE 3    // f32 (float)dot * scale[n] + bias[n], row-major [M][LDY]
#define BNN_EPI_CHAIN 4     // bconv's float chain: f32 NCHW and/or packed bits (bnn_epilogue_chain)

// ---------------------------------------------------------------- PTX wrappers

// Programmatic dependent launch (sm_90 and later; docs/kernels.md "Programmatic launch"). The
// runtime may launch a step's kernel before the step before it has completed. Every kernel
// calls bnn_pdl_wait before it reads or writes any activation: it returns once the kernels
// before have completed and their writes are visible. Work before it touches only shared
// memory and the model's constants. Without a programmatic launch, and below sm_90, the wait
// does nothing.
__device__ __forceinline__ void bnn_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
// The kernels after this one may launch once each of its blocks has called this
// (griddepcontrol.launch_dependents) or exited; their wait above still returns only when this
// grid has completed. The binary convs call it when a block's (warp's) last tile is out of the
// tensor cores, before its epilogue: the next kernel's blocks are placed while the epilogues
// store: XNOR ResNet-18 at batch 1 7 % faster, Bi-Real 5 % (docs/perf.md stop 24). Other
// places were slower: in every kernel right after its wait (the next kernel's blocks then sit on
// the SMs through a whole last wave) up to 13 %; before the epilogues of the stem, its fixup, the
// dense layers and the low-bit convs too, 2-7 % at batches 4 and 16 (XNOR, the w1a2 ResNet); at
// entry before the wait, a cascade of launches, up to 18 % (fcfa496).
__device__ __forceinline__ void bnn_pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
#undef BNN_PDL_ENTER // a kernel file's no-op stand-in, if it came first
#define BNN_PDL_ENTER() bnn_pdl_wait()

__device__ __forceinline__ unsigned bnn_smem(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
// 16-byte global->shared copy; src_bytes = 0 writes 16 zero bytes and reads nothing, which
// is how padded taps, K past its end and rows past M become exact zeros for free.
__device__ __forceinline__ void bnn_cp16(unsigned dst, const void *src, unsigned src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
                 : "memory");
}
__device__ __forceinline__ void bnn_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void bnn_cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void bnn_st16(unsigned dst, unsigned x, unsigned y, unsigned z, unsigned w) {
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(x), "r"(y), "r"(z), "r"(w)
                 : "memory");
}
__device__ __forceinline__ void bnn_ld16(unsigned src, unsigned (&v)[4]) {
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                 : "r"(src));
}
__device__ __forceinline__ void bnn_ldsm4(unsigned a, unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(a));
}
// The threshold epilogues count every level in one orientation, x >= u: a level `x <= t` is
// !(x >= u) with u = t + 1, or with u = INT_MAX for t = INT_MAX, which needs every x below
// INT_MAX (each caller's bound on its counts).
__device__ __forceinline__ int bnn_le_as_ge(int t) { return t == 2147483647 ? t : t + 1; }
// w |= m where p: one predicated OR. (Said in C, the compiler selects m or 0 and ORs that:
// two instructions a bit in the threshold epilogues that set bits one by one.)
__device__ __forceinline__ void bnn_or_if(unsigned &w, unsigned m, bool p) {
    asm("{\n .reg .pred q;\n setp.ne.b32 q, %1, 0;\n @q or.b32 %0, %0, %2;\n}\n" : "+r"(w) : "r"((unsigned)p), "r"(m));
}
// The bit epilogues' exchange: in an m16n8 accumulator layout a row's 32-column output word is
// spread over the 4 lanes t of the row (lane 4g + t). w[j]: this lane's part of word j (NS
// words, NS a multiple of 4). Two rounds (lanes t ^ 1, then t ^ 2), each lane sending half of
// what it holds, leave r[i] = word 4i + t ORed over the 4 lanes: each lane stores a quarter
// of the words, whole (where ORing every word in every lane and storing from one took 2 NS
// shuffles and NS stores a quarter of the lanes busy).
template <int NS>
__device__ __forceinline__ void bnn_quad_or_scatter(const unsigned (&w)[NS], unsigned (&r)[NS / 4], int t) {
    static_assert(NS % 4 == 0, "a quarter of the words a lane");
    const bool odd = t & 1, high = t & 2;
    unsigned r1[NS / 2]; // word 2i + (t & 1), ORed over lanes t and t ^ 1
#pragma unroll
    for (int i = 0; i < NS / 2; ++i) {
        const unsigned keep = odd ? w[2 * i + 1] : w[2 * i], send = odd ? w[2 * i] : w[2 * i + 1];
        r1[i] = keep | __shfl_xor_sync(0xffffffffu, send, 1);
    }
#pragma unroll
    for (int i = 0; i < NS / 4; ++i) {
        const unsigned keep = high ? r1[2 * i + 1] : r1[2 * i], send = high ? r1[2 * i] : r1[2 * i + 1];
        r[i] = keep | __shfl_xor_sync(0xffffffffu, send, 2);
    }
}

// The only MMA of the binary path: AND then popcount. Never the XOR form (emulated on Hopper).
__device__ __forceinline__ void bnn_bmma(int (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// The float stem's MMA (float_ops.cu bnn_conv2d_mma): fp16 inputs, f32 accumulators. Lane 4g+t
// holds a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..], b0 =
// B[2t..2t+1][g], b1 = B[2t+8..][g] (the lower k in the low half) and d0 = D[g][2t], d1 =
// D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1].
__device__ __forceinline__ void bnn_hmma_f16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// The blocks an SM a kernel's launch bounds ask for, by target: emit.c writes
// BNN_ARCH_MINB(sm90, sm80) where fewer of its blocks fit sm_80's shared memory than sm_90's.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define BNN_ARCH_MINB(sm90, sm80) (sm80)
#else
#define BNN_ARCH_MINB(sm90, sm80) (sm90)
#endif
// Two floats rounded to fp16 (to nearest even) in one word, lo in the low half.
__device__ __forceinline__ unsigned bnn_f16x2(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
// v - fp16(v), exact in f32: what the hi half of v leaves for the lo half.
__device__ __forceinline__ float bnn_f16_rest(float v) {
    float h;
    asm("{\n .reg .f16 t;\n cvt.rn.f16.f32 t, %1;\n cvt.f32.f16 %0, t;\n}\n" : "=f"(h) : "f"(v));
    return v - h;
}
// The value of an fp16 (its bits), exact in f32.
__device__ __forceinline__ float bnn_f16_float(unsigned short h) {
    float f;
    asm("{\n .reg .b16 t, u;\n mov.b32 {t, u}, %1;\n cvt.f32.f16 %0, t;\n}\n" : "=f"(f) : "r"((unsigned)h));
    return f;
}
__device__ __forceinline__ unsigned bnn_dyn_smem_size() {
    unsigned r;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
    return r;
}


// ---------------------------------------------------------------- tile configuration

// Block tile BM x BN outputs, WM x WN warps (warp tile WTM x WTN; warp w sits at wm = w % WM,
// wn = w / WM), KC 16-byte K chunks (KC*128 bits) per pipeline stage, S stages. Shared memory
// holds each stage chunk-major: chunk c of tile row r at c*CS + r*16, with CS = rows*16 +
// 128/KC: with that pad the 16-byte stores of 8 consecutive threads (KC chunks of 8/KC rows)
// hit 8 different bank groups, and ldmatrix reads 8 consecutive rows of one chunk, which are
// 128 contiguous bytes.
template <int BM_, int BN_, int WM_, int WN_, int KC_, int S_> struct BnnTile {
    static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, KC = KC_, S = S_;
    static constexpr int T = WM * WN * 32;
    static constexpr int WTM = BM / WM, WTN = BN / WN, MI = WTM / 16, NI = WTN / 8;
    static constexpr int CSA = BM * 16 + 128 / KC, CSB = BN * 16 + 128 / KC;
    static constexpr int STAGE = KC * (CSA + CSB);
    static constexpr int AIT = BM * KC / T, BIT = BN * KC / T;
    static constexpr int SMEM = S * STAGE + BM * 4; // + popc(a) of each tile row
    static_assert(KC == 2 || KC == 4 || KC == 8, "KC: 2, 4 or 8 chunks of 128 bits per stage");
    static_assert(S >= 2, "at least 2 stages");
    static_assert(WTM % 16 == 0 && WTN % 16 == 0 && BM == WTM * WM && BN == WTN * WN, "warp tile");
    static_assert(AIT >= 1 && BIT >= 1 && (BM * KC) % T == 0 && (BN * KC) % T == 0, "loader split");
};

// The main loop over nkt stages. load_a(it, r, cg, dst) fills 16-byte chunk cg (global K chunk
// index) of tile row r into shared address dst (by cp.async, or a plain store: its choice);
// load_b likewise. A thread always loads the same (row, chunk-in-stage) pairs, so it counts
// popc(a) over its own A chunks as soon as its own copies completed, with no extra barrier;
// the KC lanes of one row are summed by shuffles at the end into rowpop[BM].
// acc[mi][ni] is the m16n8 tile at (wm*WTM + 16mi, wn*WTN + 8ni), PTX layout (g = lane>>2,
// t = lane&3): d0 = D[g][2t], d1 = D[g][2t+1], d2 = D[g+8][2t], d3 = D[g+8][2t+1].
template <class Cfg, class LA, class LB>
__device__ __forceinline__ void bnn_mainloop(unsigned char *smem, int nkt, const LA &load_a, const LB &load_b,
                                             int (&acc)[Cfg::MI][Cfg::NI][4], int *rowpop) {
    constexpr int T = Cfg::T, MI = Cfg::MI, NI = Cfg::NI, KC = Cfg::KC, S = Cfg::S;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp % Cfg::WM, wn = warp / Cfg::WM;
    const unsigned s0 = bnn_smem(smem);
    int pa[Cfg::AIT];
#pragma unroll
    for (int i = 0; i < Cfg::AIT; ++i) pa[i] = 0;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0;

    auto load = [&](int kt) {
        if (kt < nkt) {
            const unsigned sa = s0 + (kt % S) * Cfg::STAGE, sb = sa + KC * Cfg::CSA;
#pragma unroll
            for (int it = 0; it < Cfg::AIT; ++it) {
                const int i = tid + it * T, r = i / KC, c = i % KC;
                load_a(it, r, kt * KC + c, sa + c * Cfg::CSA + r * 16);
            }
#pragma unroll
            for (int it = 0; it < Cfg::BIT; ++it) {
                const int i = tid + it * T, r = i / KC, c = i % KC;
                load_b(it, r, kt * KC + c, sb + c * Cfg::CSB + r * 16);
            }
        }
        bnn_cp_commit(); // empty groups keep the wait count uniform
    };

#pragma unroll
    for (int s = 0; s < S - 1; ++s) load(s);
    for (int kt = 0; kt < nkt; ++kt) {
        bnn_cp_wait<S - 2>();
        __syncthreads(); // stage kt is in for everyone; slot (kt-1)%S is free to refill
        load(kt + S - 1);
        const unsigned sa = s0 + (kt % S) * Cfg::STAGE, sb = sa + KC * Cfg::CSA;
#pragma unroll
        for (int it = 0; it < Cfg::AIT; ++it) {
            const int i = tid + it * T, r = i / KC, c = i % KC;
            unsigned v[4];
            bnn_ld16(sa + c * Cfg::CSA + r * 16, v);
            pa[it] += __popc(v[0]) + __popc(v[1]) + __popc(v[2]) + __popc(v[3]);
        }
#pragma unroll
        for (int ks = 0; ks < KC / 2; ++ks) {
            unsigned a[MI][4], b[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) // 4 matrices: rows 0-7 / 8-15 (lane bit 3) x chunk lo / hi (lane bit 4)
                bnn_ldsm4(sa + (2 * ks + (lane >> 4)) * Cfg::CSA +
                              (wm * Cfg::WTM + mi * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * 16,
                          a[mi][0], a[mi][1], a[mi][2], a[mi][3]);
#pragma unroll
            for (int nj = 0; nj < NI / 2; ++nj) // 4 matrices: chunk lo / hi (lane bit 3) x n8 tile 2nj / 2nj+1 (lane bit 4)
                bnn_ldsm4(sb + (2 * ks + ((lane >> 3) & 1)) * Cfg::CSB +
                              (wn * Cfg::WTN + nj * 16 + (lane >> 4) * 8 + (lane & 7)) * 16,
                          b[2 * nj][0], b[2 * nj][1], b[2 * nj + 1][0], b[2 * nj + 1][1]);
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int ni = 0; ni < NI; ++ni) bnn_bmma(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
        }
    }
    bnn_cp_wait<0>();
#pragma unroll
    for (int it = 0; it < Cfg::AIT; ++it) { // the KC lanes of a row are neighbours in one warp
        int v = pa[it];
#pragma unroll
        for (int o = 1; o < KC; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        const int i = tid + it * T;
        if (i % KC == 0) rowpop[i / KC] = v;
    }
    __syncthreads();
}

// ---------------------------------------------------------------- epilogue

// x / a rounded to nearest even, without __fdiv_rn's branch to its slow path, so that a caller's
// independent divisions can overlap (a qconv chain epilogue's 16 rows ran one after another,
// each behind its division's branch). y = __frcp_rn(a), the correctly rounded reciprocal,
// computed once a channel. q0 = x * y is within two ulps of x / a; one step q + (x - a q) y
// (the remainder by fma) puts it within one ulp, the next rounds it correctly (Markstein's
// theorem: y within half an ulp of 1 / a, q within one ulp of x / a, so the remainder is exact).
// Every intermediate stays normal, which the theorem needs, where |a| lies in [2^-20, 2^20]
// (bnn_div_fast_ok, checked once a channel) and |x| in [2^-58, 2^105]; a zero x gives q0, the
// zero of the right sign. Otherwise (NaN and infinities too) *ok is cleared and the caller
// divides again with __fdiv_rn. tests/codegen/test_div_fast.cc compares it with IEEE division.
__device__ __forceinline__ bool bnn_div_fast_ok(float a) {
    const float m = fabsf(a);
    return m >= 0x1p-20f && m <= 0x1p20f;
}
__device__ __forceinline__ float bnn_div_fast(float x, float a, float y, bool *ok) {
    const float q0 = __fmul_rn(x, y);
    const float q1 = __fmaf_rn(__fmaf_rn(-a, q0, x), y, q0);
    const float q2 = __fmaf_rn(__fmaf_rn(-a, q1, x), y, q1);
    const float m = fabsf(x);
    *ok = *ok && m <= 0x1p105f && (m >= 0x1p-58f || m == 0.0f);
    return m == 0.0f ? q0 : q2;
}

// Row map of the epilogues: tile row rl -> GEMM row, or -1 for a row that is not stored. The
// plain tiles pass their first row m0 (rows m0 + rl); bconv's halo tiles (BC_HALO) pass a
// functor, since a rectangle of output pixels is not a range of GEMM rows.
__device__ __forceinline__ int bnn_row_of(int m0, int rl) { return m0 + rl; }
template <class RM> __device__ __forceinline__ int bnn_row_of(const RM &rm, int rl) { return rm(rl); }

// The residual words of bits (RESW words a GEMM row) holding the warp's columns, for each row
// the thread holds (m16 tile mi, half h), all loaded before the first is used so that their
// latency is paid once per tile: rw[mi][h][k] = word cw0/32 + k (zero past the row or RESW).
template <class Cfg, int RESW, class RM>
__device__ __forceinline__ void bnn_residual_words(const RM &m0, int M, int cw0, int wm, int g,
                                                   const unsigned *__restrict__ R,
                                                   unsigned (&rw)[RESW ? Cfg::MI : 1][2][RESW ? Cfg::WTN / 32 : 1]) {
    if (RESW)
#pragma unroll
        for (int mi = 0; mi < Cfg::MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = bnn_row_of(m0, wm * Cfg::WTM + mi * 16 + g + 8 * h);
                const bool rok = row >= 0 && row < M;
#pragma unroll
                for (int k = 0; k < (RESW ? Cfg::WTN / 32 : 1); ++k) {
                    const int wd = cw0 / 32 + k;
                    rw[RESW ? mi : 0][h][k] = rok && wd < RESW ? R[(long long)row * RESW + wd] : 0u;
                }
            }
}

// dot(row, col) = 4*acc - 2*popc(a row) + corr, where the kernel family supplies corr through
// E: E::Col col(c) once per column (c < N), E::Row row(m) once per row, and
// int corr(const Row&, const Col&, c). Columns >= N and rows >= M are never stored, except
// that the bit epilogue writes whole words: bits of columns >= N are 0 there, and the block
// of the last column tile also zeroes the words past its tile up to LDY, so the padding of
// the output rows is exact zeros, as the next layer's A expects.
// ep0/ep1: THRESHOLD: int t[N], int dir[N] (+1: bit = dot >= t; -1: bit = dot <= t);
// AFFINE: float scale[N], float bias[N], y = (float)dot * scale + bias rounded after each op.
// POOL (bit output only): tile rows come in groups of 4 that form one 2x2 pooling window
// (the row order of bconv with BC_POOL); POOL 1: the 4 bits are ORed, which is the max of the
// +-1 outputs; POOL 2 (the pool comes before the threshold: a max of the accumulators) ORs
// them where dir >= 0 (max(acc) >= t) and ANDs them where dir < 0 (max(acc) <= t). Window r/4
// is written as output row r/4.
// RESW > 0 (THRESHOLD, no POOL): a threshold by a residual of bits, R NHWC-packed, RESW words
// a pixel row: ep0 = t[2][N], ep1 = dir[2][N], row 1 where the row's residual bit of the
// column is 1, row 0 where it is 0 (bconv's XNOR shortcut with its float chain folded).
template <class Cfg, int EPI, int N, int LDY, int POOL, int RESW = 0, class E, class RM>
__device__ __forceinline__ void bnn_epilogue(const int (&acc)[Cfg::MI][Cfg::NI][4], const int *rowpop, const RM &m0,
                                             int n0, int M, const E &e, const void *__restrict__ ep0,
                                             const void *__restrict__ ep1, void *__restrict__ Y,
                                             const unsigned *__restrict__ R = nullptr) {
    constexpr int MI = Cfg::MI, NI = Cfg::NI;
    static_assert(RESW == 0 || (EPI == BNN_EPI_THRESHOLD && !POOL && Cfg::WTN % 32 == 0), "residual threshold");
    static_assert(EPI == BNN_EPI_THRESHOLD ? LDY * 32 >= N : LDY >= N, "output row stride LDY too small for N");
    static_assert(!POOL || EPI == BNN_EPI_THRESHOLD, "fused pooling needs the bit (threshold) epilogue");
    static_assert(EPI == BNN_EPI_I32 || EPI == BNN_EPI_THRESHOLD || EPI == BNN_EPI_AFFINE, "unknown epilogue");
    // tid within the tile's threads: a warp-tile kernel (bconv BC_HALO 2) passes a one-warp Cfg.
    const int tid = threadIdx.x % Cfg::T, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int wm = warp % Cfg::WM, wn = warp / Cfg::WM;
    const int cw0 = n0 + wn * Cfg::WTN; // first column of the warp
    typename E::Col ci[NI][2];
    // per column epilogue parameters, raw 32-bit; q: the residual threshold's row 1
    int p0[NI][2], p1[NI][2], q0[RESW ? NI : 1][2], q1[RESW ? NI : 1][2];
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int c = cw0 + ni * 8 + 2 * t + j;
            p0[ni][j] = p1[ni][j] = 0;
            if (RESW) q0[RESW ? ni : 0][j] = q1[RESW ? ni : 0][j] = 0;
            if (c < N) {
                ci[ni][j] = e.col(c);
                if (EPI != BNN_EPI_I32) {
                    p0[ni][j] = ((const int *)ep0)[c];
                    p1[ni][j] = ((const int *)ep1)[c];
                    if (EPI == BNN_EPI_THRESHOLD) // dot <= t is ~dot >= ~t: one comparison either way
                        p0[ni][j] ^= p1[ni][j] >> 31;
                }
                if (RESW) {
                    q1[RESW ? ni : 0][j] = ((const int *)ep1)[N + c];
                    q0[RESW ? ni : 0][j] = ((const int *)ep0)[N + c] ^ (q1[RESW ? ni : 0][j] >> 31);
                }
            } else {
                ci[ni][j] = typename E::Col();
            }
        }
    unsigned rw[RESW ? MI : 1][2][RESW ? Cfg::WTN / 32 : 1];
    bnn_residual_words<Cfg, RESW>(m0, M, cw0, wm, g, R, rw);
    // POOL 2: bit b of and_cols[q] marks column cw0 + 32q + b, whose pool is an AND (dir < 0).
    unsigned and_cols[NI / 4 > 0 ? NI / 4 : 1];
#pragma unroll
    for (int q = 0; q < NI / 4; ++q) {
        unsigned m = 0;
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
            for (int j = 0; j < 2; ++j)
                if (POOL == 2 && cw0 + (4 * q + u) * 8 + 2 * t + j < N && p1[4 * q + u][j] < 0)
                    m |= 1u << (u * 8 + 2 * t + j);
        m |= __shfl_xor_sync(0xffffffffu, m, 1);
        and_cols[q] = m | __shfl_xor_sync(0xffffffffu, m, 2);
    }
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int rl = wm * Cfg::WTM + mi * 16 + g + 8 * h, row = bnn_row_of(m0, rl);
            const bool rok = row >= 0 && row < M;
            const typename E::Row ri = e.row(rok ? row : 0);
            const int ra = -2 * rowpop[rl];
            int d[NI][2];
#pragma unroll
            for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                for (int j = 0; j < 2; ++j) {
                    const int c = cw0 + ni * 8 + 2 * t + j;
                    d[ni][j] = 4 * acc[mi][ni][2 * h + j] + ra + (N % Cfg::BN == 0 || c < N ? e.corr(ri, ci[ni][j], c) : 0);
                }
            if (EPI == BNN_EPI_THRESHOLD) {
                static_assert(EPI != BNN_EPI_THRESHOLD || Cfg::WTN % 32 == 0, "bit output needs WTN % 32 == 0");
                unsigned *y = (unsigned *)Y + (long long)(rok ? (POOL ? row >> 2 : row) : 0) * LDY;
#pragma unroll
                for (int q = 0; q < NI / 4; ++q) {
                    unsigned bits = 0;
#pragma unroll
                    for (int u = 0; u < 4; ++u)
#pragma unroll
                        for (int j = 0; j < 2; ++j) {
                            const int ni = 4 * q + u, c = cw0 + ni * 8 + 2 * t + j;
                            // RESW: row 1 of the thresholds where the residual bit is 1
                            const bool r1 = RESW && (rw[RESW ? mi : 0][h][RESW ? q : 0] >> (c % 32)) & 1u;
                            const int dv = d[ni][j], th = r1 ? q0[RESW ? ni : 0][j] : p0[ni][j];
                            const bool on = (dv ^ ((r1 ? q1[RESW ? ni : 0][j] : p1[ni][j]) >> 31)) >= th;
                            if ((N % Cfg::BN == 0 || c < N) && on) bits |= 1u << (u * 8 + 2 * t + j);
                        }
                    bits |= __shfl_xor_sync(0xffffffffu, bits, 1); // the 4 lanes t of row g
                    bits |= __shfl_xor_sync(0xffffffffu, bits, 2);
                    if (POOL) { // rows g = 4j..4j+3 (lane bits 2, 3) are one window
                        unsigned any = bits | __shfl_xor_sync(0xffffffffu, bits, 4);
                        any |= __shfl_xor_sync(0xffffffffu, any, 8);
                        if (POOL == 2) { // max of the accumulators: AND of "acc <= t" bits where dir < 0
                            unsigned all = bits & __shfl_xor_sync(0xffffffffu, bits, 4);
                            all &= __shfl_xor_sync(0xffffffffu, all, 8);
                            any = (any & ~and_cols[q]) | (all & and_cols[q]);
                        }
                        bits = any;
                    }
                    const int wcol = cw0 / 32 + q;
                    if (rok && t == (q & 3) && (!POOL || (g & 3) == 0) && wcol < LDY) y[wcol] = bits;
                }
                // Words past the last column tile (a padded LDY): zeroed by the last tile's first
                // warp column, the 4 lanes of the row taking every 4th word.
                constexpr int NBX = (N + Cfg::BN - 1) / Cfg::BN, W0 = NBX * Cfg::BN / 32;
                if (LDY > W0 && (int)blockIdx.x == NBX - 1 && wn == 0 && rok && (!POOL || (g & 3) == 0))
                    for (int wd = W0 + t; wd < LDY; wd += 4) y[wd] = 0u;
            } else if (rok) {
#pragma unroll
                for (int ni = 0; ni < NI; ++ni) {
                    const int c = cw0 + ni * 8 + 2 * t;
                    if (EPI == BNN_EPI_I32) {
                        int *y = (int *)Y + (long long)row * LDY + c;
                        if (LDY % 2 == 0 && c + 1 < N) {
                            *(int2 *)y = make_int2(d[ni][0], d[ni][1]);
                        } else {
                            if (c < N) y[0] = d[ni][0];
                            if (c + 1 < N) y[1] = d[ni][1];
                        }
                    } else {
                        float *y = (float *)Y + (long long)row * LDY + c;
                        const float v0 = __fadd_rn(__fmul_rn((float)d[ni][0], __int_as_float(p0[ni][0])),
                                                   __int_as_float(p1[ni][0]));
                        const float v1 = __fadd_rn(__fmul_rn((float)d[ni][1], __int_as_float(p0[ni][1])),
                                                   __int_as_float(p1[ni][1]));
                        if (LDY % 2 == 0 && c + 1 < N) {
                            *(float2 *)y = make_float2(v0, v1);
                        } else {
                            if (c < N) y[0] = v0;
                            if (c + 1 < N) y[1] = v1;
                        }
                    }
                }
            }
        }
}

// The float chain of a binary convolution (BNN_EPI_CHAIN), per output (pixel row m, channel c):
//   v = (float)dot; for stage k < NST: v = v * a_k[c] (v / a_k[c] where bit k of DIV), v = v + b_k[c];
//   then RES 1: v = v + r, RES 2: v = r + v, with r = R[i], i the NCHW index of (m, c), or with
//   RESW > 0 r = +1 / -1 by bit c of pixel row m of NHWC-packed bits, RESW words a pixel (an
//   XNOR shortcut: the block input's bits, read as they are);
// every op rounded on its own, the reference interpreter's sequence. ep: float [NST][2][N],
// row 2k = a_k, row 2k+1 = b_k. F32: Y[i] = v, canonical NCHW (PIX pixels an image). LDB > 0:
// the bits of binarize {zero=1} (v >= 0; NaN gives 0) NHWC-packed into Yb, LDB words a
// pixel, padding words zeroed as in bnn_epilogue.
// The stages of column c: ep's 2 * NST constants, loaded once for all of a thread's rows.
template <int NST, int DIV, int N> struct BnnChainStages {
    float a[NST], b[NST];
    __device__ __forceinline__ void load(const float *__restrict__ ep, int c) {
#pragma unroll
        for (int k = 0; k < NST; ++k) a[k] = __ldg(ep + (2 * k) * N + c), b[k] = __ldg(ep + (2 * k + 1) * N + c);
    }
    __device__ __forceinline__ float value(int dot) const {
        float v = (float)dot;
#pragma unroll
        for (int k = 0; k < NST; ++k) {
            v = (DIV >> k) & 1 ? __fdiv_rn(v, a[k]) : __fmul_rn(v, a[k]);
            v = __fadd_rn(v, b[k]);
        }
        return v;
    }
};

template <class Cfg, int N, int PIX, int NST, int DIV, int RES, bool F32, int LDB, int RESW, class E, class RM>
__device__ __forceinline__ void bnn_epilogue_chain(const int (&acc)[Cfg::MI][Cfg::NI][4], const int *rowpop,
                                                   const RM &m0, int n0, int M, const E &e, const float *__restrict__ ep,
                                                   const float *__restrict__ R, float *__restrict__ Y,
                                                   unsigned *__restrict__ Yb) {
    constexpr int MI = Cfg::MI, NI = Cfg::NI;
    static_assert(NST >= 1 && NST <= 8 && RES >= 0 && RES <= 2, "chain: 1..8 stages, residual 0..2");
    static_assert(F32 || LDB > 0, "chain: no output");
    static_assert(LDB == 0 || (LDB * 32 >= N && Cfg::WTN % 32 == 0), "chain: bit output words");
    // tid within the tile's threads: a warp-tile kernel (bconv BC_HALO 2) passes a one-warp Cfg.
    const int tid = threadIdx.x % Cfg::T, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
    const int wm = warp % Cfg::WM, wn = warp / Cfg::WM;
    const int cw0 = n0 + wn * Cfg::WTN;
    typename E::Col ci[NI][2];
#pragma unroll
    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
            const int c = cw0 + ni * 8 + 2 * t + j;
            ci[ni][j] = c < N ? e.col(c) : typename E::Col();
        }
    // The residual (f32, or +-1 from bits): every load of the thread's tile issued before the
    // first is used, so their DRAM latency is paid once per tile, not once per row pair (a
    // Bi-Real 56x56 layer at batch 256 waited on these: 25 % occupancy, 21 % of DRAM
    // bandwidth; prefetched, its four layers went from 2.31 to 1.38 ms).
    // Bits: the WTN / 32 words holding the warp's columns (column ni*8 + 2t + j in word ni / 4).
    constexpr bool RLD = RES && !RESW;
    static_assert(!RESW || (Cfg::WTN % 32 == 0 && Cfg::BN % 32 == 0), "chain: bit residual words");
    float rv[RLD ? MI : 1][2][RLD ? NI : 1][2];
    unsigned rw[RESW ? MI : 1][2][RESW ? Cfg::WTN / 32 : 1];
    if (RES && RESW)
        bnn_residual_words<Cfg, RESW>(m0, M, cw0, wm, g, (const unsigned *)R, rw);
    if (RLD)
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = bnn_row_of(m0, wm * Cfg::WTM + mi * 16 + g + 8 * h);
                const bool rok = row >= 0 && row < M;
                const long long base = (long long)(row / PIX) * N * PIX + row % PIX;
#pragma unroll
                for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                    for (int j = 0; j < 2; ++j) {
                        const int c = cw0 + ni * 8 + 2 * t + j;
                        rv[RLD ? mi : 0][h][RLD ? ni : 0][j] = rok && c < N ? R[base + (long long)c * PIX] : 0.0f;
                    }
            }
    // The thread's rows first, then column by column (each column's stage constants loaded
    // once for all its rows: they were loaded again for every row, 96 of a 2x8 tile's 116
    // global loads), then each row's bits.
    int rowv[MI][2], rav[MI][2];
    typename E::Row riv[MI][2];
    long long basev[MI][2]; // F32: the NCHW index of the row's channel 0
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int rl = wm * Cfg::WTM + mi * 16 + g + 8 * h, row = bnn_row_of(m0, rl);
            rowv[mi][h] = row >= 0 && row < M ? row : -1;
            riv[mi][h] = e.row(row >= 0 && row < M ? row : 0);
            rav[mi][h] = -2 * rowpop[rl];
            basev[mi][h] = (long long)(row / PIX) * N * PIX + row % PIX;
        }
    unsigned on[MI][2] = {}; // bit ni * 2 + j: the column's v >= 0
    // Column k = ni * 2 + j's stage constants are loaded while column k - 1 computes (cs, nx):
    // loaded where they are used, each column's came after the previous column's divisions
    // and branches, one L2 round trip a column (8 of them in a tile's epilogue at batch 1).
    // Past N the last column's are loaded instead (never used).
    auto col = [&](int k) { return cw0 + (k >> 1) * 8 + 2 * t + (k & 1); };
    auto in = [&](int c) { return c < N ? c : N - 1; };
    BnnChainStages<NST, DIV, N> cs, nx;
    cs.load(ep, in(col(0)));
#pragma unroll
    for (int k = 0; k < 2 * NI; ++k) {
        const int ni = k >> 1, j = k & 1, c = col(k);
        if (k + 1 < 2 * NI) nx.load(ep, in(col(k + 1)));
        if (c < N) {
            // Every row's chain first, rows past M too (their values are never stored), so the
            // rows' dependent chains have no branch between them; then the stores.
            float vv[MI][2];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int d = 4 * acc[mi][ni][2 * h + j] + rav[mi][h] + e.corr(riv[mi][h], ci[ni][j], c);
                    float v = cs.value(d);
                    const float r = RESW ? (rw[RESW ? mi : 0][h][ni >> 2] >> (c % 32)) & 1u ? 1.0f : -1.0f
                                    : RLD ? rv[RLD ? mi : 0][h][RLD ? ni : 0][j] : 0.0f;
                    if (RES == 1) v = __fadd_rn(v, r);
                    if (RES == 2) v = __fadd_rn(r, v);
                    vv[mi][h] = v;
                }
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    if (rowv[mi][h] < 0) continue;
                    if (F32) Y[basev[mi][h] + (long long)c * PIX] = vv[mi][h];
                    on[mi][h] |= (unsigned)(vv[mi][h] >= 0.0f) << (ni * 2 + j);
                }
        }
        cs = nx;
    }
    if (LDB > 0) // as bnn_epilogue's bit store: 4 lanes t of row g make 32 columns
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = rowv[mi][h];
                const bool rok = row >= 0;
#pragma unroll
                for (int q = 0; q < NI / 4; ++q) {
                    unsigned bits = 0;
#pragma unroll
                    for (int u = 0; u < 4; ++u)
#pragma unroll
                        for (int j = 0; j < 2; ++j)
                            if ((on[mi][h] >> ((4 * q + u) * 2 + j)) & 1u) bits |= 1u << (u * 8 + 2 * t + j);
                    bits |= __shfl_xor_sync(0xffffffffu, bits, 1);
                    bits |= __shfl_xor_sync(0xffffffffu, bits, 2);
                    const int wcol = cw0 / 32 + q;
                    if (rok && t == (q & 3) && wcol < LDB) Yb[(long long)row * LDB + wcol] = bits;
                }
                // Words past the last column tile: as bnn_epilogue's.
                constexpr int NBX = (N + Cfg::BN - 1) / Cfg::BN, W0 = NBX * Cfg::BN / 32;
                if (LDB > W0 && (int)blockIdx.x == NBX - 1 && wn == 0 && rok)
                    for (int wd = W0 + t; wd < LDB; wd += 4) Yb[(long long)row * LDB + wd] = 0u;
            }
}

// ---------------------------------------------------------------- prep kernels

// popc of each packed row: out[r] = popc(X[r][0..ld)). One warp per row. For bgemm's wpop.
extern "C" __global__ void bnn_row_popc(const unsigned *__restrict__ X, int rows, int ld, int *__restrict__ out) {
    BNN_PDL_ENTER();
    const int r = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
    if (r >= rows) return;
    int s = 0;
    for (int i = lane; i < ld; i += 32) s += __popc(X[(long long)r * ld + i]);
#pragma unroll
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) out[r] = s;
}

// bconv's border table from its weights W[O][KH][KW][cwp] (rows ldw words apart):
// P[i][j][o] = sum over kh < i, kw < j of popc(W[o][kh][kw][*]), i in 0..KH, j in 0..KW,
// layout [(i*(KW+1) + j)*O + o]. One thread per (o, i, j); tiny, run once per weight set.
extern "C" __global__ void bnn_conv_wprefix(const unsigned *__restrict__ W, int O, int KH, int KW, int cwp,
                                            int ldw, int *__restrict__ P) {
    BNN_PDL_ENTER();
    const int x = (int)(blockIdx.x * blockDim.x + threadIdx.x), cells = (KH + 1) * (KW + 1);
    if (x >= O * cells) return;
    const int o = x / cells, cell = x % cells, i = cell / (KW + 1), j = cell % (KW + 1);
    int s = 0;
    for (int kh = 0; kh < i; ++kh)
        for (int kw = 0; kw < j; ++kw)
            for (int w = 0; w < cwp; ++w) s += __popc(W[(long long)o * ldw + (kh * KW + kw) * cwp + w]);
    P[cell * O + o] = s;
}

#endif // BNN_COMMON_CU
