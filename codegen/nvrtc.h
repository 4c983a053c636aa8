/* nvrtc.h: compile CUDA C source to CUBIN with NVRTC, loaded at run time with dlopen, so
 * that bnncc builds and starts on a machine without the CUDA toolkit and needs no GPU to
 * compile. Errors go through diag_error (ir.h) and include NVRTC's log. */
#ifndef BNN_NVRTC_H
#define BNN_NVRTC_H

#include <stdbool.h>
#include <stddef.h>

typedef struct NvrtcOutput {
    unsigned char *cubin; /* NULL when arch is a virtual one ("compute_90a") */
    size_t cubin_size;
    char *ptx;            /* only when asked for; NUL-terminated */
    size_t ptx_size;      /* without the NUL */
    char *log;            /* NVRTC's log (warnings), NUL-terminated, may be "" */
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

#endif
