// gpu_kernels.cu: plain CUDA versions of every plan step kind, one thread per output element
// (or per output word for bits), written from docs/blob-format.md for the runtime's GPU test
// (test_gpu.c). They check the runtime's GPU machinery (CUBIN choice, arguments, the arena,
// graph capture and replay) end to end, not speed: the tensor-core kernels are
// codegen/cuda/kernels/*. test_gpu.c appends one wrapper per plan step that bakes the step's
// parameters in as constants. Compiled by NVRTC with --fmad=false, so float results round
// exactly as the CPU path's do.
typedef long long i64;
typedef unsigned u32;

#define EPI_I32 1
#define EPI_THRESHOLD 2
#define EPI_AFFINE 3

// Slot s of item n: arena slots advance by their per-item bytes b[s]; weights (b[s] == 0) do not.
#define ITEM(ptr, s, n) ((char *)(ptr) + (n) * bytes[s])

__device__ int popc_words(const u32 *a, i64 n) {
    int s = 0;
    for (i64 i = 0; i < n; ++i) s += __popc(a[i]);
    return s;
}

__device__ i64 pm1_dot(const u32 *a, const u32 *w, i64 words, i64 k) {
    int pand = 0, pa = 0, pw = 0;
    for (i64 i = 0; i < words; ++i) {
        pand += __popc(a[i] & w[i]);
        pa += __popc(a[i]);
        pw += __popc(w[i]);
    }
    return 4ll * pand - 2ll * pa - 2ll * pw + k;
}

__device__ bool threshold_bit(const char *p0, const char *p1, i64 o, i64 dot) {
    const int t = ((const int *)p0)[o], dir = ((const int *)p1)[o];
    return dir < 0 ? dot <= t : dot >= t;
}

__device__ float affine_value(const char *p0, const char *p1, i64 o, i64 dot) {
    const float prod = __fmul_rn((float)dot, ((const float *)p0)[o]);
    return __fadd_rn(prod, ((const float *)p1)[o]);
}

// params: channels, spatial, words, zero, layout
__device__ void k_pack(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *, char *out,
                       char *, char *, char *) {
    const i64 per = p[1] * p[2];
    if (t >= batch * per) return;
    const i64 n = t / per, e = t % per, s = e / p[2], wi = e % p[2];
    const float *x = (const float *)ITEM(in, 0, n);
    u32 word = 0;
    for (int b = 0; b < 32; ++b) {
        const i64 ch = wi * 32 + b;
        if (ch >= p[0]) break;
        const float v = p[4] == 0 ? x[ch * p[1] + s] : x[s * p[0] + ch];
        if (v > 0.0f || (v == 0.0f && p[3] > 0)) word |= 1u << b;
    }
    ((u32 *)ITEM(out, 2, n))[e] = word;
}

// params: channels, spatial, words, layout
__device__ void k_unpack(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *, char *out,
                         char *, char *, char *) {
    const i64 per = p[0] * p[1];
    if (t >= batch * per) return;
    const i64 n = t / per, e = t % per;
    const i64 ch = p[3] == 0 ? e / p[1] : e % p[0], s = p[3] == 0 ? e % p[1] : e / p[0];
    const u32 *bits = (const u32 *)ITEM(in, 0, n);
    ((float *)ITEM(out, 2, n))[e] = (bits[s * p[2] + ch / 32] >> (ch % 32)) & 1 ? 1.0f : -1.0f;
}

// params: rows, n, k, words, out_words
__device__ void k_bgemm(const i64 *p, const i64 *bytes, int epi, i64 t, int batch, char *in, char *out,
                        char *w, char *p0, char *p1) {
    const bool bits = epi == EPI_THRESHOLD;
    const i64 per = p[0] * (bits ? p[4] : p[1]);
    if (t >= batch * per) return;
    const i64 n = t / per, e = t % per, r = e / (bits ? p[4] : p[1]);
    const u32 *a = (const u32 *)ITEM(in, 0, n) + r * p[3];
    char *y = ITEM(out, 2, n);
    if (bits) {
        const i64 wi = e % p[4];
        u32 word = 0;
        for (int b = 0; b < 32; ++b) {
            const i64 o = wi * 32 + b;
            if (o < p[1] && threshold_bit(p0, p1, o, pm1_dot(a, (const u32 *)w + o * p[3], p[3], p[2])))
                word |= 1u << b;
        }
        ((u32 *)y)[e] = word;
        return;
    }
    const i64 o = e % p[1], dot = pm1_dot(a, (const u32 *)w + o * p[3], p[3], p[2]);
    if (epi == EPI_I32) ((int *)y)[e] = (int)dot;
    else ((float *)y)[e] = affine_value(p0, p1, o, dot);
}

// params: h w c words o kh kw sh sw pt pl pb pr pad_value dh dw oh ow pool out_words out_layout
__device__ i64 bconv_dot(const i64 *p, const u32 *in, const u32 *w, i64 o, i64 oy, i64 ox) {
    i64 dot = 0;
    for (i64 ky = 0; ky < p[5]; ++ky)
        for (i64 kx = 0; kx < p[6]; ++kx) {
            const i64 iy = oy * p[7] - p[9] + ky * p[14], ix = ox * p[8] - p[10] + kx * p[15];
            const u32 *wt = w + ((o * p[5] + ky) * p[6] + kx) * p[3];
            if (iy >= 0 && iy < p[0] && ix >= 0 && ix < p[1]) {
                dot += pm1_dot(in + (iy * p[1] + ix) * p[3], wt, p[3], p[2]);
            } else if (p[13] != 0) {
                const i64 sum_w = 2ll * popc_words(wt, p[3]) - p[2];
                dot += p[13] > 0 ? sum_w : -sum_w;
            }
        }
    return dot;
}

__device__ void k_bconv(const i64 *p, const i64 *bytes, int epi, i64 t, int batch, char *in, char *out,
                        char *w, char *p0, char *p1) {
    const i64 f = p[18] ? 2 : 1, ch = p[16] / f, cw = p[17] / f, cells = ch * cw;
    const bool bits = epi == EPI_THRESHOLD;
    const i64 per = cells * (bits ? p[19] : p[4]);
    if (t >= batch * per) return;
    const i64 n = t / per, e = t % per;
    const u32 *x = (const u32 *)ITEM(in, 0, n);
    char *y = ITEM(out, 2, n);
    if (bits) {
        const i64 cell = e / p[19], wi = e % p[19], cy = cell / cw, cx = cell % cw;
        u32 word = 0;
        for (int b = 0; b < 32; ++b) {
            const i64 o = wi * 32 + b;
            if (o >= p[4]) break;
            bool on = false;
            for (i64 dy = 0; dy < f && !on; ++dy)
                for (i64 dx = 0; dx < f && !on; ++dx)
                    on = threshold_bit(p0, p1, o, bconv_dot(p, x, (const u32 *)w, o, cy * f + dy, cx * f + dx));
            if (on) word |= 1u << b;
        }
        ((u32 *)y)[e] = word;
        return;
    }
    const i64 cell = e / p[4], o = e % p[4];
    const i64 dot = bconv_dot(p, x, (const u32 *)w, o, cell / cw, cell % cw);
    const i64 at = p[20] == 0 ? o * cells + cell : cell * p[4] + o;
    if (epi == EPI_I32) ((int *)y)[at] = (int)dot;
    else ((float *)y)[at] = affine_value(p0, p1, o, dot);
}

// params: rows, n, k
__device__ void k_dense(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *, char *out,
                        char *w, char *p0, char *) {
    const i64 per = p[0] * p[1];
    if (t >= batch * per) return;
    const i64 n = t / per, e = t % per, r = e / p[1], o = e % p[1];
    const float *x = (const float *)ITEM(in, 0, n) + r * p[2], *wr = (const float *)w + o * p[2];
    float acc = 0.0f;
    for (i64 k = 0; k < p[2]; ++k) acc += x[k] * wr[k];
    ((float *)ITEM(out, 2, n))[e] = p0 ? ((const float *)p0)[o] + acc : acc;
}

// params: c h w o kh kw sh sw pt pl pb pr dh dw groups oh ow
__device__ void k_conv2d(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *, char *out,
                         char *w, char *p0, char *) {
    const i64 per = p[3] * p[15] * p[16];
    if (t >= batch * per) return;
    const i64 n = t / per, e = t % per, o = e / (p[15] * p[16]), oy = e / p[16] % p[15], ox = e % p[16];
    const i64 cg = p[0] / p[14], g = o / (p[3] / p[14]);
    const float *x = (const float *)ITEM(in, 0, n), *wf = (const float *)w;
    float acc = 0.0f;
    for (i64 ci = 0; ci < cg; ++ci)
        for (i64 ky = 0; ky < p[4]; ++ky) {
            const i64 iy = oy * p[6] - p[8] + ky * p[12];
            if (iy < 0 || iy >= p[1]) continue;
            for (i64 kx = 0; kx < p[5]; ++kx) {
                const i64 ix = ox * p[7] - p[9] + kx * p[13];
                if (ix < 0 || ix >= p[2]) continue;
                acc += x[((g * cg + ci) * p[1] + iy) * p[2] + ix] * wf[((o * cg + ci) * p[4] + ky) * p[5] + kx];
            }
        }
    ((float *)ITEM(out, 2, n))[e] = p0 ? ((const float *)p0)[o] + acc : acc;
}

// params: channels, spatial, layout
__device__ void k_affine(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *, char *out,
                         char *, char *p0, char *p1) {
    const i64 per = p[0] * p[1];
    if (t >= batch * per) return;
    const i64 n = t / per, e = t % per, ch = p[2] == 0 ? e / p[1] : e % p[0];
    const float v = ((const float *)ITEM(in, 0, n))[e];
    ((float *)ITEM(out, 2, n))[e] = __fadd_rn(__fmul_rn(v, ((const float *)p0)[ch]), ((const float *)p1)[ch]);
}

// params: c h w kh kw sh sw pt pl pb pr oh ow count_include_pad
__device__ void k_pool(const i64 *p, const i64 *bytes, bool max, i64 t, int batch, char *in, char *out) {
    const i64 per = p[0] * p[11] * p[12];
    if (t >= batch * per) return;
    const i64 n = t / per, e = t % per, c = e / (p[11] * p[12]), oy = e / p[12] % p[11], ox = e % p[12];
    i64 y0 = oy * p[5] - p[7], x0 = ox * p[6] - p[8], y1 = y0 + p[3], x1 = x0 + p[4];
    const i64 py1 = y1 < p[1] + p[9] ? y1 : p[1] + p[9], px1 = x1 < p[2] + p[10] ? x1 : p[2] + p[10];
    const i64 padded = (py1 - y0) * (px1 - x0);
    y0 = y0 < 0 ? 0 : y0, x0 = x0 < 0 ? 0 : x0, y1 = y1 < p[1] ? y1 : p[1], x1 = x1 < p[2] ? x1 : p[2];
    const float *x = (const float *)ITEM(in, 0, n);
    float acc = max ? -__int_as_float(0x7f800000) : 0.0f;
    for (i64 iy = y0; iy < y1; ++iy)
        for (i64 ix = x0; ix < x1; ++ix) {
            const float v = x[(c * p[1] + iy) * p[2] + ix];
            if (!max) acc += v;
            else if (v > acc) acc = v;
        }
    if (!max) acc = acc / (float)(p[13] ? padded : (y1 - y0) * (x1 - x0));
    ((float *)ITEM(out, 2, n))[e] = acc;
}

__device__ void k_maxpool(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *, char *out,
                          char *, char *, char *) {
    k_pool(p, bytes, true, t, batch, in, out);
}
__device__ void k_avgpool(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *, char *out,
                          char *, char *, char *) {
    k_pool(p, bytes, false, t, batch, in, out);
}

// params: channels, spatial
__device__ void k_globalavgpool(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *,
                                char *out, char *, char *, char *) {
    if (t >= batch * p[0]) return;
    const i64 n = t / p[0], c = t % p[0];
    const float *x = (const float *)ITEM(in, 0, n) + c * p[1];
    float acc = 0.0f;
    for (i64 s = 0; s < p[1]; ++s) acc += x[s];
    ((float *)ITEM(out, 2, n))[c] = acc / (float)p[1];
}

// params: count, dtype (1 f32, 4 i32)
__device__ void k_add(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *in2, char *out,
                      char *, char *, char *) {
    if (t >= batch * p[0]) return;
    const i64 n = t / p[0], e = t % p[0];
    const char *a = ITEM(in, 0, n), *b = ITEM(in2, 1, n);
    if (p[1] == 1) ((float *)ITEM(out, 2, n))[e] = ((const float *)a)[e] + ((const float *)b)[e];
    else ((int *)ITEM(out, 2, n))[e] = (int)((u32)((const int *)a)[e] + (u32)((const int *)b)[e]);
}

// params: count
__device__ void k_relu(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *, char *out,
                       char *, char *, char *) {
    if (t >= batch * p[0]) return;
    const i64 n = t / p[0], e = t % p[0];
    const float v = ((const float *)ITEM(in, 0, n))[e];
    ((float *)ITEM(out, 2, n))[e] = v < 0.0f ? 0.0f : v;
}

// params: bytes
__device__ void k_copy(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *, char *out,
                       char *, char *, char *) {
    if (t >= batch * p[0]) return;
    out[t] = in[t]; // items are contiguous: one byte per thread over the whole batch
}

// params: rows, n
__device__ void k_argmax(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *, char *out,
                         char *, char *, char *) {
    if (t >= batch * p[0]) return;
    const i64 n = t / p[0], r = t % p[0];
    const float *x = (const float *)ITEM(in, 0, n) + r * p[1];
    i64 best = 0;
    for (i64 i = 1; i < p[1]; ++i)
        if (x[i] > x[best]) best = i;
    ((i64 *)ITEM(out, 2, n))[r] = best;
}

// params: count, from (4 i32, 5 i8, 6 u8), to (1 f32)
__device__ void k_cast(const i64 *p, const i64 *bytes, i64 t, int batch, char *in, char *, char *out,
                       char *, char *, char *) {
    if (t >= batch * p[0]) return;
    const i64 n = t / p[0], e = t % p[0];
    const char *x = ITEM(in, 0, n);
    const float v = p[1] == 4 ? (float)((const int *)x)[e]
                    : p[1] == 5 ? (float)((const signed char *)x)[e] : (float)((const unsigned char *)x)[e];
    ((float *)ITEM(out, 2, n))[e] = v;
}
