/* nvrtc.h: compile CUDA C source to CUBIN with NVRTC, loaded at run time with dlopen, so
 * that bnncc builds and starts on a machine without the CUDA toolkit and needs no GPU to
 * compile; several targets at once on several threads, through a cache of CUBINs keyed by
 * what NVRTC compiles. Errors go through diag_error (ir.h) and include NVRTC's log. */
#ifndef BNN_NVRTC_H
#define BNN_NVRTC_H

#include <stdbool.h>
#include <stddef.h>

typedef struct NvrtcOutput {
    unsigned char *cubin; /* NULL when arch is a virtual one ("compute_90a") */
    size_t cubin_size;
    char *ptx;            /* only when asked for; NUL-terminated */
    size_t ptx_size;      /* without the NUL */
    char *log;            /* NVRTC's log (warnings; for an sm_ target ptxas's registers, stack and
                           * spills of each kernel), NUL-terminated; the cached one on a cache hit */
} NvrtcOutput;

/* Load libnvrtc (once per process). 0 ok; -1 with a diagnostic saying what to install. */
int nvrtc_load(void);

/* NVRTC's version. 0 ok, -1 with a diagnostic. */
int nvrtc_version(int *major, int *minor);

/* Compile one translation unit `source` (named `name` in messages) for `arch` ("sm_90a",
 * "sm_80", or "compute_90a" for PTX only) with --std=c++17 -default-device, -I<cuda>/include
 * when a toolkit is found, and `options[0..noptions)` (e.g. "-DBG_N=10"). With want_ptx the
 * PTX is returned too. 0 ok (free *out with nvrtc_output_free); -1 with a diagnostic that
 * names the failing call and holds NVRTC's log, *out zeroed. */
int nvrtc_compile(const char *name, const char *source, const char *arch, const char *const *options,
                  int noptions, bool want_ptx, NvrtcOutput *out);

void nvrtc_output_free(NvrtcOutput *out);

/* One compile of nvrtc_compile_jobs (CUBIN only). */
typedef struct NvrtcJob {
    const char *name, *source, *arch; /* as for nvrtc_compile; arch a real one, sm_XY[a] */
    const char *const *options;
    int noptions;
    NvrtcOutput out; /* the result (free it with nvrtc_output_free) */
    bool cached;     /* out came from the cache: nothing to compile */
    bool keyed;      /* private: key is set */
    unsigned char key[32];
} NvrtcJob;

/* The CUBIN cache's folder: $BNNCC_CACHE_DIR, else $XDG_CACHE_HOME/bnncc, else
 * $HOME/.cache/bnncc (malloc'ed); NULL when none of them is set. */
char *nvrtc_cache_dir(void);

/* Fill jobs[i].out from the cache in cache_dir (NULL: no cache, all miss) where it holds an
 * intact entry for exactly this NVRTC (version and library file), name, options and source:
 * the key is a SHA-256 of them. A damaged or truncated entry is a miss. Returns how many
 * jobs still need compiling, or -1 with a diagnostic when NVRTC cannot be loaded. */
int nvrtc_cache_lookup(NvrtcJob *jobs, int n, const char *cache_dir);

/* Compile every job that nvrtc_cache_lookup left uncached, on up to one thread per job and
 * CPU: the results are the CUBINs nvrtc_compile gives one at a time. Then store each new
 * CUBIN in cache_dir (NULL: none) atomically; a cache that cannot be written gives one
 * warning on stderr and changes nothing else. 0 ok; -1 with the diagnostic of the first
 * failing job in order, its index in *failed, every job's out freed. */
int nvrtc_compile_jobs(NvrtcJob *jobs, int n, const char *cache_dir, int *failed);

#endif
