/* nvrtc.c: see nvrtc.h. libnvrtc is opened with dlopen and its few entry points are declared
 * here with built-in types, so neither the toolkit's headers nor the library are needed to
 * build bnncc; only compiling kernels needs the library. */
#include "nvrtc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
 * failure it records the call, file, line and NVRTC's message (plus the program log when there
 * is one) and jumps to the caller's `fail`. */
#define NVRTC_CHECK(fn, args)                                                                      \
    do {                                                                                           \
        NvrtcResult r_ = nv.fn args;                                                               \
        if (r_ != 0) {                                                                             \
            nvrtc_fail("nvrtc" #fn #args, __FILE__, __LINE__, r_, prog);                           \
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

static void nvrtc_fail(const char *call, const char *file, int line, NvrtcResult r, NvrtcProg prog) {
    char *log = program_log(prog);
    diag_error("NVRTC: %s failed at %s:%d: %s (%d)%s%.3000s", call, file, line, nv.GetErrorString(r), r,
               *log ? "\nNVRTC log:\n" : "", log);
    free(log);
}

int nvrtc_version(int *major, int *minor) {
    NvrtcProg prog = NULL;
    if (nvrtc_load() != 0)
        return -1;
    NVRTC_CHECK(Version, (major, minor));
    return 0;
fail:
    return -1;
}

int nvrtc_compile(const char *name, const char *source, const char *arch, const char *const *options,
                  int noptions, bool want_ptx, NvrtcOutput *out) {
    memset(out, 0, sizeof *out);
    if (nvrtc_load() != 0)
        return -1;
    const bool real = strncmp(arch, "sm_", 3) == 0;
    if (!real && strncmp(arch, "compute_", 8) != 0) {
        diag_error("NVRTC: bad architecture '%s' (expected sm_XY[a] or compute_XY[a])", arch);
        return -1;
    }
    /* Our options first, the caller's after them, so a caller can add but never needs to. */
    const char **opts = xcalloc((size_t)noptions + 4, sizeof *opts);
    char *archopt = NULL, *incopt = NULL;
    Buf b = {0};
    buf_printf(&b, "--gpu-architecture=%s", arch);
    archopt = buf_take(&b);
    int n = 0;
    opts[n++] = archopt;
    opts[n++] = "-default-device";
    opts[n++] = "--std=c++17";
    const char *root = cuda_root();
    if (root) {
        buf_printf(&b, "-I%s/include", root);
        incopt = buf_take(&b);
        opts[n++] = incopt;
    }
    for (int i = 0; i < noptions; i++)
        opts[n++] = options[i];

    NvrtcProg prog = NULL;
    NVRTC_CHECK(CreateProgram, (&prog, source, name, 0, NULL, NULL));
    NVRTC_CHECK(CompileProgram, (prog, n, opts));
    out->log = program_log(prog);
    if (real) {
        NVRTC_CHECK(GetCUBINSize, (prog, &out->cubin_size));
        out->cubin = xmalloc(out->cubin_size);
        NVRTC_CHECK(GetCUBIN, (prog, (char *)out->cubin));
        if (out->cubin_size == 0) {
            diag_error("NVRTC: empty CUBIN for %s (%s)", name, arch);
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
    free(archopt);
    free(incopt);
    free(opts);
    return 0;
fail:
    if (prog)
        nv.DestroyProgram(&prog);
    free(archopt);
    free(incopt);
    free(opts);
    nvrtc_output_free(out);
    return -1;
}

void nvrtc_output_free(NvrtcOutput *out) {
    free(out->cubin);
    free(out->ptx);
    free(out->log);
    memset(out, 0, sizeof *out);
}
