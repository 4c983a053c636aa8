/* nvrtc.c: see nvrtc.h. libnvrtc is opened with dlopen and its few entry points are declared
 * here with built-in types, so neither the toolkit's headers nor the library are needed to
 * build bnncc; only compiling kernels needs the library. Below the wrapper: the CUBIN cache
 * (keyed by SHA-256) and the parallel compilation of several targets. */
#define _GNU_SOURCE /* dladdr: which libnvrtc file is loaded (part of the cache key) */
#include "nvrtc.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir.h"
#include "util.h"

/* NVRTC's ABI: nvrtcResult is an int-sized enum (0 = NVRTC_SUCCESS); nvrtcProgram a pointer. */
typedef int NvrtcResult;
typedef struct NvrtcProg *NvrtcProg;

static struct {
    void *lib;
    const char *(*GetErrorString)(NvrtcResult);
    NvrtcResult (*Version)(int *, int *);
    NvrtcResult (*CreateProgram)(NvrtcProg *, const char *, const char *, int, const char *const *,
                                 const char *const *);
    NvrtcResult (*DestroyProgram)(NvrtcProg *);
    NvrtcResult (*CompileProgram)(NvrtcProg, int, const char *const *);
    NvrtcResult (*GetPTXSize)(NvrtcProg, size_t *);
    NvrtcResult (*GetPTX)(NvrtcProg, char *);
    NvrtcResult (*GetCUBINSize)(NvrtcProg, size_t *);
    NvrtcResult (*GetCUBIN)(NvrtcProg, char *);
    NvrtcResult (*GetProgramLogSize)(NvrtcProg, size_t *);
    NvrtcResult (*GetProgramLog)(NvrtcProg, char *);
} nv;

/* The CUDA toolkit root: $CUDA_HOME, $CUDA_PATH, then /usr/local/cuda; NULL if none exists. */
static const char *cuda_root(void) {
    static const char *const envs[] = {"CUDA_HOME", "CUDA_PATH"};
    struct stat st;
    for (size_t i = 0; i < sizeof envs / sizeof *envs; i++) {
        const char *v = getenv(envs[i]);
        if (v && *v && stat(v, &st) == 0 && S_ISDIR(st.st_mode))
            return v;
    }
    if (stat("/usr/local/cuda", &st) == 0 && S_ISDIR(st.st_mode))
        return "/usr/local/cuda";
    return NULL;
}

int nvrtc_load(void) {
    if (nv.lib)
        return 0;
    static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
    Buf tried = {0};
    void *lib = NULL;
    for (size_t i = 0; !lib && i < sizeof names / sizeof *names; i++) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        buf_printf(&tried, "%s%s", i ? ", " : "", names[i]);
    }
    const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t r = 0; !lib && r < sizeof roots / sizeof *roots; r++) {
        if (!roots[r] || !*roots[r])
            continue;
        for (size_t i = 0; !lib && i < sizeof names / sizeof *names; i++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/lib64/%s", roots[r], names[i]);
            lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            buf_printf(&tried, ", %s", path);
        }
    }
    if (!lib) {
        diag_error("NVRTC not found (tried %s). Install the CUDA toolkit's NVRTC (Debian/Ubuntu: the "
                   "'cuda-nvrtc-13-0' or 'libnvrtc12' package; pip: 'nvidia-cuda-nvrtc'), then add its "
                   "lib folder to LD_LIBRARY_PATH or set CUDA_HOME",
                   tried.data);
        buf_free(&tried);
        return -1;
    }
    buf_free(&tried);
    struct {
        const char *sym;
        void **slot;
    } fns[] = {
        {"nvrtcGetErrorString", (void **)&nv.GetErrorString},
        {"nvrtcVersion", (void **)&nv.Version},
        {"nvrtcCreateProgram", (void **)&nv.CreateProgram},
        {"nvrtcDestroyProgram", (void **)&nv.DestroyProgram},
        {"nvrtcCompileProgram", (void **)&nv.CompileProgram},
        {"nvrtcGetPTXSize", (void **)&nv.GetPTXSize},
        {"nvrtcGetPTX", (void **)&nv.GetPTX},
        {"nvrtcGetCUBINSize", (void **)&nv.GetCUBINSize},
        {"nvrtcGetCUBIN", (void **)&nv.GetCUBIN},
        {"nvrtcGetProgramLogSize", (void **)&nv.GetProgramLogSize},
        {"nvrtcGetProgramLog", (void **)&nv.GetProgramLog},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        /* POSIX allows the object-to-function pointer conversion dlsym implies. */
        void *p = dlsym(lib, fns[i].sym);
        if (!p) {
            diag_error("libnvrtc has no %s: NVRTC 11.1 or newer is needed (nvrtcGetCUBIN)", fns[i].sym);
            dlclose(lib);
            memset(&nv, 0, sizeof nv);
            return -1;
        }
        memcpy(fns[i].slot, &p, sizeof p);
    }
    nv.lib = lib;
    return 0;
}

/* Every NVRTC call goes through here, written NVRTC_CHECK(Name, (args)) for nvrtcName(args): on
 * failure it writes the call, file, line and NVRTC's message (plus the program log when there
 * is one) into the caller's Buf `err` and jumps to the caller's `fail`. Not diag_error: the
 * compiles run on several threads and diag_error's message is one global. */
#define NVRTC_CHECK(fn, args)                                                                      \
    do {                                                                                           \
        NvrtcResult r_ = nv.fn args;                                                               \
        if (r_ != 0) {                                                                             \
            nvrtc_fail(err, "nvrtc" #fn #args, __FILE__, __LINE__, r_, prog);                      \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

static char *program_log(NvrtcProg prog) {
    size_t n = 0;
    if (!prog || nv.GetProgramLogSize(prog, &n) != 0 || n == 0)
        return xstrdup("");
    char *log = xcalloc(n + 1, 1);
    if (nv.GetProgramLog(prog, log) != 0)
        log[0] = '\0';
    return log;
}

static void nvrtc_fail(Buf *err, const char *call, const char *file, int line, NvrtcResult r, NvrtcProg prog) {
    char *log = program_log(prog);
    buf_printf(err, "NVRTC: %s failed at %s:%d: %s (%d)%s%.3000s", call, file, line, nv.GetErrorString(r), r,
               *log ? "\nNVRTC log:\n" : "", log);
    free(log);
}

int nvrtc_version(int *major, int *minor) {
    NvrtcProg prog = NULL;
    Buf e = {0}, *err = &e;
    if (nvrtc_load() != 0)
        return -1;
    NVRTC_CHECK(Version, (major, minor));
    return 0;
fail:
    diag_error("%s", e.data);
    buf_free(&e);
    return -1;
}

/* The options NVRTC gets: ours first, the caller's after them, so a caller can add but never
 * needs to. */
typedef struct Options {
    const char **v;
    int n;
    char *arch, *include; /* owned */
} Options;

static void make_options(Options *o, const char *arch, const char *const *options, int noptions) {
    o->v = xcalloc((size_t)noptions + 5, sizeof *o->v);
    o->n = 0;
    o->include = NULL;
    Buf b = {0};
    buf_printf(&b, "--gpu-architecture=%s", arch);
    o->arch = buf_take(&b);
    o->v[o->n++] = o->arch;
    o->v[o->n++] = "-default-device";
    o->v[o->n++] = "--std=c++17";
    if (strncmp(arch, "sm_", 3) == 0) /* ptxas's registers, stack and spills per kernel, into the log */
        o->v[o->n++] = "--ptxas-options=-v";
    const char *root = cuda_root();
    if (root) {
        buf_printf(&b, "-I%s/include", root);
        o->include = buf_take(&b);
        o->v[o->n++] = o->include;
    }
    for (int i = 0; i < noptions; i++)
        o->v[o->n++] = options[i];
}

static void free_options(Options *o) {
    free(o->v);
    free(o->arch);
    free(o->include);
}

static bool bad_arch(const char *arch, Buf *err) {
    if (strncmp(arch, "sm_", 3) == 0 || strncmp(arch, "compute_", 8) == 0)
        return false;
    buf_printf(err, "NVRTC: bad architecture '%s' (expected sm_XY[a] or compute_XY[a])", arch);
    return true;
}

/* Remove ptxas's "Compile time = ..." lines from a log, in place: the rest is a function of
 * the source and options, so a cached log (and its entry) is the same whenever it is made. */
static void drop_timing_lines(char *log) {
    char *w = log;
    for (const char *l = log; *l;) {
        const char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) + 1 : strlen(l);
        bool timing = false;
        for (const char *c = l; c + 14 <= l + len && !timing; c++)
            timing = !strncmp(c, "Compile time =", 14);
        if (!timing) {
            memmove(w, l, len);
            w += len;
        }
        l += len;
    }
    *w = '\0';
}

/* nvrtc_compile without diag_error (safe on any thread once nvrtc_load has run): a failure
 * goes to err. */
static int compile_into(const char *name, const char *source, const char *arch, const char *const *options,
                        int noptions, bool want_ptx, NvrtcOutput *out, Buf *err) {
    memset(out, 0, sizeof *out);
    if (bad_arch(arch, err))
        return -1;
    const bool real = strncmp(arch, "sm_", 3) == 0;
    Options o;
    make_options(&o, arch, options, noptions);
    NvrtcProg prog = NULL;
    NVRTC_CHECK(CreateProgram, (&prog, source, name, 0, NULL, NULL));
    NVRTC_CHECK(CompileProgram, (prog, o.n, o.v));
    out->log = program_log(prog);
    drop_timing_lines(out->log);
    if (real) {
        NVRTC_CHECK(GetCUBINSize, (prog, &out->cubin_size));
        out->cubin = xmalloc(out->cubin_size ? out->cubin_size : 1);
        NVRTC_CHECK(GetCUBIN, (prog, (char *)out->cubin));
        if (out->cubin_size == 0) {
            buf_printf(err, "NVRTC: empty CUBIN for %s (%s)", name, arch);
            goto fail;
        }
    }
    if (want_ptx || !real) {
        size_t sz = 0;
        NVRTC_CHECK(GetPTXSize, (prog, &sz));
        out->ptx = xcalloc(sz + 1, 1);
        NVRTC_CHECK(GetPTX, (prog, out->ptx));
        out->ptx_size = strlen(out->ptx);
    }
    nv.DestroyProgram(&prog);
    free_options(&o);
    return 0;
fail:
    if (prog)
        nv.DestroyProgram(&prog);
    free_options(&o);
    nvrtc_output_free(out);
    return -1;
}

int nvrtc_compile(const char *name, const char *source, const char *arch, const char *const *options,
                  int noptions, bool want_ptx, NvrtcOutput *out) {
    memset(out, 0, sizeof *out);
    if (nvrtc_load() != 0)
        return -1;
    Buf err = {0};
    int rc = compile_into(name, source, arch, options, noptions, want_ptx, out, &err);
    if (rc != 0)
        diag_error("%s", err.data);
    buf_free(&err);
    return rc;
}

void nvrtc_output_free(NvrtcOutput *out) {
    free(out->cubin);
    free(out->ptx);
    free(out->log);
    memset(out, 0, sizeof *out);
}

/* ---------------------------------------------------------------- SHA-256 (FIPS 180-4) */

/* The cache key and the entries' checksum. Written from the standard for this file. */
typedef struct Sha256 {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char block[64];
    size_t fill;
} Sha256;

static uint32_t rotr(uint32_t x, int n) { return x >> n | x << (32 - n); }

static void sha256_block(uint32_t h[8], const unsigned char *p) {
    /* The first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    };
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

static void sha256_init(Sha256 *s) {
    /* The first 32 bits of the fractional parts of the square roots of the first 8 primes. */
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->bytes = 0;
    s->fill = 0;
}

static void sha256_put(Sha256 *s, const void *data, size_t n) {
    const unsigned char *p = data;
    s->bytes += n;
    while (n) {
        size_t take = 64 - s->fill < n ? 64 - s->fill : n;
        memcpy(s->block + s->fill, p, take);
        s->fill += take;
        p += take;
        n -= take;
        if (s->fill == 64) {
            sha256_block(s->h, s->block);
            s->fill = 0;
        }
    }
}

/* A string with its NUL, so that consecutive fields cannot run into each other. */
static void sha256_str(Sha256 *s, const char *str) { sha256_put(s, str, strlen(str) + 1); }

static void sha256_done(Sha256 *s, unsigned char out[32]) {
    uint64_t bits = s->bytes * 8;
    unsigned char pad[72] = {0x80};
    size_t npad = (s->fill < 56 ? 56 : 120) - s->fill;
    for (int i = 0; i < 8; i++)
        pad[npad + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_put(s, pad, npad + 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (unsigned char)(s->h[i] >> (24 - 8 * j));
}

static void sha256(const void *data, size_t n, unsigned char out[32]) {
    Sha256 s;
    sha256_init(&s);
    sha256_put(&s, data, n);
    sha256_done(&s, out);
}

/* ---------------------------------------------------------------- the CUBIN cache */

/* An entry, <dir>/<key in hex>.cubin: a header, the CUBIN, then NVRTC's log (ptxas's resource
 * lines: bnncc --report gives them for a cached CUBIN too). Everything is checked on read; an
 * entry that fails a check is ignored (and rewritten after the compile). */
#define CACHE_MAGIC "BNNCUBIN"
#define CACHE_FORMAT 2u
#define CACHE_HEADER_SIZE 96u /* magic 8, format u32, header size u32, CUBIN bytes u64, log bytes
                               * u64, key 32, SHA-256 of the CUBIN and the log 32 */

char *nvrtc_cache_dir(void) {
    const char *dir = getenv("BNNCC_CACHE_DIR");
    if (dir && *dir)
        return xstrdup(dir);
    Buf b = {0};
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg)
        buf_printf(&b, "%s/bnncc", xdg);
    else if (home && *home)
        buf_printf(&b, "%s/.cache/bnncc", home);
    else
        return NULL;
    return buf_take(&b);
}

/* What makes NVRTC's output what it is: its version and the library file itself (a patch
 * release keeps the version), the name, every option (the architecture among them) and the
 * whole source. 0 ok; -1 when NVRTC's version cannot be read (diagnostic). */
static int cache_key(const NvrtcJob *j, unsigned char key[32]) {
    int major = 0, minor = 0;
    if (nvrtc_version(&major, &minor) != 0)
        return -1;
    Sha256 s;
    sha256_init(&s);
    char line[512];
    snprintf(line, sizeof line, "bnncc CUBIN cache %u, NVRTC %d.%d", CACHE_FORMAT, major, minor);
    sha256_str(&s, line);
    Dl_info info;
    struct stat st;
    void *sym;
    memcpy(&sym, &nv.Version, sizeof sym);
    if (dladdr(sym, &info) && info.dli_fname && stat(info.dli_fname, &st) == 0) {
        snprintf(line, sizeof line, "%s %lld %lld", info.dli_fname, (long long)st.st_size,
                 (long long)st.st_mtime);
        sha256_str(&s, line);
    }
    sha256_str(&s, j->name);
    Options o;
    make_options(&o, j->arch, j->options, j->noptions);
    for (int i = 0; i < o.n; i++)
        sha256_str(&s, o.v[i]);
    free_options(&o);
    sha256_str(&s, j->source);
    sha256_done(&s, key);
    return 0;
}

static char *entry_path(const char *dir, const unsigned char key[32]) {
    Buf b = {0};
    buf_printf(&b, "%s/", dir);
    for (int i = 0; i < 32; i++)
        buf_printf(&b, "%02x", key[i]);
    buf_puts(&b, ".cubin");
    return buf_take(&b);
}

static void put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The whole file, or NULL (missing, unreadable: a miss, never an error). */
static unsigned char *read_entry(const char *path, size_t *len) {
    char *data = read_file(path, len);
    if (!data)
        diag_clear();
    return (unsigned char *)data;
}

/* The CUBIN of an intact entry for key (malloc'ed), its size and its log (malloc'ed), or NULL. */
static unsigned char *load_entry(const char *path, const unsigned char key[32], size_t *size, char **log) {
    size_t len = 0;
    unsigned char *e = read_entry(path, &len), sum[32];
    if (!e)
        return NULL;
    uint64_t cubin = len >= CACHE_HEADER_SIZE ? get_le(e + 16, 8) : 0, logn = len >= CACHE_HEADER_SIZE ? get_le(e + 24, 8) : 0;
    bool ok = len > CACHE_HEADER_SIZE && !memcmp(e, CACHE_MAGIC, 8) && get_le(e + 8, 4) == CACHE_FORMAT &&
              get_le(e + 12, 4) == CACHE_HEADER_SIZE && cubin > 0 && cubin <= len - CACHE_HEADER_SIZE &&
              logn == len - CACHE_HEADER_SIZE - cubin && !memcmp(e + 32, key, 32);
    if (ok) {
        sha256(e + CACHE_HEADER_SIZE, len - CACHE_HEADER_SIZE, sum);
        ok = !memcmp(e + 64, sum, 32);
    }
    if (!ok) {
        free(e);
        return NULL;
    }
    *size = (size_t)cubin;
    *log = xstrndup((const char *)e + CACHE_HEADER_SIZE + cubin, (size_t)logn);
    memmove(e, e + CACHE_HEADER_SIZE, *size);
    return e;
}

/* mkdir -p. 0 ok (the folder exists); -1 with errno. */
static int make_dirs(const char *dir) {
    char *p = xstrdup(dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        mkdir(p, 0755); /* failures show at the last level */
        *s = '/';
    }
    struct stat st;
    int rc = mkdir(p, 0755) == 0 || (errno == EEXIST && stat(p, &st) == 0 && S_ISDIR(st.st_mode)) ? 0 : -1;
    if (rc != 0 && errno == EEXIST)
        errno = ENOTDIR;
    free(p);
    return rc;
}

/* One warning per process for a cache that cannot be written: the compile goes on. */
static void warn_unwritable(const char *dir, const char *why) {
    static bool warned;
    if (warned)
        return;
    warned = true;
    fprintf(stderr, "bnncc: warning: cannot write the kernel cache in %s (%s); going on without it "
                    "(set BNNCC_CACHE_DIR to a writable folder, or give --no-cache)\n", dir, why);
}

/* Store out's CUBIN under key: to a file of this process, then renamed into place, so that
 * processes storing the same entry at once never mix their bytes. */
static void store_entry(const char *dir, const unsigned char key[32], const NvrtcOutput *out) {
    if (make_dirs(dir) != 0) {
        warn_unwritable(dir, strerror(errno));
        return;
    }
    size_t logn = out->log ? strlen(out->log) : 0, len = CACHE_HEADER_SIZE + out->cubin_size + logn;
    unsigned char *e = xmalloc(len);
    memcpy(e, CACHE_MAGIC, 8);
    put_le(e + 8, CACHE_FORMAT, 4);
    put_le(e + 12, CACHE_HEADER_SIZE, 4);
    put_le(e + 16, out->cubin_size, 8);
    put_le(e + 24, logn, 8);
    memcpy(e + 32, key, 32);
    memcpy(e + CACHE_HEADER_SIZE, out->cubin, out->cubin_size);
    if (logn)
        memcpy(e + CACHE_HEADER_SIZE + out->cubin_size, out->log, logn);
    sha256(e + CACHE_HEADER_SIZE, out->cubin_size + logn, e + 64);
    char *path = entry_path(dir, key);
    Buf mine = {0};
    buf_printf(&mine, "%s.%ld", path, (long)getpid());
    if (write_file_atomic(mine.data, e, len) != 0)
        warn_unwritable(dir, diag_message());
    else if (rename(mine.data, path) != 0) {
        warn_unwritable(dir, strerror(errno));
        remove(mine.data);
    }
    buf_free(&mine);
    free(path);
    free(e);
}

int nvrtc_cache_lookup(NvrtcJob *jobs, int n, const char *cache_dir) {
    int misses = 0;
    for (int i = 0; i < n; i++) {
        NvrtcJob *j = &jobs[i];
        memset(&j->out, 0, sizeof j->out);
        j->cached = false;
        j->keyed = false;
        if (cache_dir && strncmp(j->arch, "sm_", 3) == 0) {
            if (cache_key(j, j->key) != 0) {
                for (int k = 0; k < i; k++)
                    nvrtc_output_free(&jobs[k].out);
                return -1;
            }
            j->keyed = true;
            char *path = entry_path(cache_dir, j->key);
            j->out.cubin = load_entry(path, j->key, &j->out.cubin_size, &j->out.log);
            free(path);
            j->cached = j->out.cubin != NULL;
        }
        misses += !j->cached;
    }
    return misses;
}

/* ---------------------------------------------------------------- parallel compiles */

typedef struct Pool {
    NvrtcJob *jobs;
    Buf *errors; /* per job */
    int *rcs;    /* per job */
    int n, next;
    pthread_mutex_t lock;
} Pool;

/* Take the next job not done and compile it, until none is left. */
static void *compile_worker(void *arg) {
    Pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        int i = p->next++;
        pthread_mutex_unlock(&p->lock);
        if (i >= p->n)
            return NULL;
        NvrtcJob *j = &p->jobs[i];
        if (!j->cached)
            p->rcs[i] = compile_into(j->name, j->source, j->arch, j->options, j->noptions, false, &j->out,
                                     &p->errors[i]);
    }
}

int nvrtc_compile_jobs(NvrtcJob *jobs, int n, const char *cache_dir, int *failed) {
    *failed = -1;
    if (nvrtc_load() != 0) {
        for (int i = 0; i < n; i++)
            nvrtc_output_free(&jobs[i].out);
        return -1;
    }
    Pool p = {jobs, xcalloc((size_t)n + 1, sizeof *p.errors), xcalloc((size_t)n + 1, sizeof *p.rcs), n, 0,
              PTHREAD_MUTEX_INITIALIZER};
    int todo = 0;
    for (int i = 0; i < n; i++)
        todo += !jobs[i].cached;
    /* One thread per job, at most one per CPU; this thread is one of them. A thread that
     * cannot start only means fewer in parallel. */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int extra = (int)((cpus > 0 && cpus < todo ? cpus : todo) - 1);
    pthread_t *threads = xcalloc((size_t)(extra > 0 ? extra : 1), sizeof *threads);
    int started = 0;
    while (started < extra && pthread_create(&threads[started], NULL, compile_worker, &p) == 0)
        started++;
    compile_worker(&p);
    for (int t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    free(threads);
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        if (p.rcs[i] != 0) {
            diag_error("%s", p.errors[i].data);
            *failed = i;
            rc = -1;
        }
    }
    for (int i = 0; i < n; i++) {
        if (rc == 0 && cache_dir && jobs[i].keyed && !jobs[i].cached)
            store_entry(cache_dir, jobs[i].key, &jobs[i].out);
        buf_free(&p.errors[i]);
    }
    free(p.errors);
    free(p.rcs);
    pthread_mutex_destroy(&p.lock);
    if (rc != 0)
        for (int i = 0; i < n; i++)
            nvrtc_output_free(&jobs[i].out);
    return rc;
}
