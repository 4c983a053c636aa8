/* cudrv.h: the CUDA driver API opened with dlopen (as the runtime does), for the GPU tests
 * of the kernels: the few types and entry points they use, one checking macro, and
 * load_driver. Include once per test program. */
#ifndef BNN_TEST_CUDRV_H
#define BNN_TEST_CUDRV_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

enum {
    CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    CU_ATTR_CC_MAJOR = 75,
    CU_ATTR_CC_MINOR = 76,
    CU_ATTR_SMEM_OPTIN = 97,
    CU_FUNC_MAX_DYNAMIC_SMEM = 8,
};

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*GetErrorString)(CUresult, const char **);
    /* optional (NULL in drivers before CUDA 12): cuTensorMapEncodeTiled, enums as ints (the
     * type of blob.h's BlobTmapEncodeFn) */
    CUresult (*TensorMapEncodeTiled)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *,
                                     const uint32_t *, const uint32_t *, int, int, int, int);
} cu;

/* Every driver call: on failure print the call, file, line and the driver's message; exit 1. */
#define CU(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != 0) {                                                                             \
            const char *s_ = "?";                                                                  \
            if (cu.GetErrorString)                                                                 \
                cu.GetErrorString(r_, &s_);                                                        \
            fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call, s_, r_);     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* 0 ok; 77 when there is no driver or no GPU (message printed, naming the test). */
static int load_driver(const char *test, CUdevice *dev) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("%s: skipped: no CUDA driver (libcuda.so.1: %s)\n", test, dlerror());
        return 77;
    }
    struct {
        const char *sym, *alt;
        void **slot;
    } fns[] = {
        {"cuInit", NULL, (void **)&cu.Init},
        {"cuDeviceGetCount", NULL, (void **)&cu.DeviceGetCount},
        {"cuDeviceGet", NULL, (void **)&cu.DeviceGet},
        {"cuDeviceGetAttribute", NULL, (void **)&cu.DeviceGetAttribute},
        {"cuDeviceGetName", NULL, (void **)&cu.DeviceGetName},
        {"cuDevicePrimaryCtxRetain", NULL, (void **)&cu.DevicePrimaryCtxRetain},
        {"cuCtxSetCurrent", NULL, (void **)&cu.CtxSetCurrent},
        {"cuCtxSynchronize", NULL, (void **)&cu.CtxSynchronize},
        {"cuMemAlloc_v2", NULL, (void **)&cu.MemAlloc},
        {"cuMemFree_v2", NULL, (void **)&cu.MemFree},
        {"cuMemcpyHtoD_v2", NULL, (void **)&cu.MemcpyHtoD},
        {"cuMemcpyDtoH_v2", NULL, (void **)&cu.MemcpyDtoH},
        {"cuMemsetD8_v2", NULL, (void **)&cu.MemsetD8},
        {"cuModuleLoadData", NULL, (void **)&cu.ModuleLoadData},
        {"cuModuleUnload", NULL, (void **)&cu.ModuleUnload},
        {"cuModuleGetFunction", NULL, (void **)&cu.ModuleGetFunction},
        {"cuFuncSetAttribute", NULL, (void **)&cu.FuncSetAttribute},
        {"cuLaunchKernel", NULL, (void **)&cu.LaunchKernel},
        {"cuEventCreate", NULL, (void **)&cu.EventCreate},
        {"cuEventRecord", NULL, (void **)&cu.EventRecord},
        {"cuEventSynchronize", NULL, (void **)&cu.EventSynchronize},
        {"cuEventElapsedTime_v2", "cuEventElapsedTime", (void **)&cu.EventElapsedTime},
        {"cuEventDestroy_v2", "cuEventDestroy", (void **)&cu.EventDestroy},
        {"cuGetErrorString", NULL, (void **)&cu.GetErrorString},
    };
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
        void *p = dlsym(lib, fns[i].sym);
        if (!p && fns[i].alt)
            p = dlsym(lib, fns[i].alt);
        if (!p) {
            fprintf(stderr, "%s: libcuda.so.1 has no %s\n", test, fns[i].sym);
            return 1;
        }
        memcpy(fns[i].slot, &p, sizeof p);
    }
    void *tm = dlsym(lib, "cuTensorMapEncodeTiled");
    memcpy(&cu.TensorMapEncodeTiled, &tm, sizeof tm);
    CUresult r = cu.Init(0);
    int n = 0;
    if (r != 0 || cu.DeviceGetCount(&n) != 0 || n == 0) {
        printf("%s: skipped: no GPU (cuInit: %d, devices: %d)\n", test, r, n);
        return 77;
    }
    CU(cu.DeviceGet(dev, 0));
    CUcontext ctx;
    CU(cu.DevicePrimaryCtxRetain(&ctx, *dev));
    CU(cu.CtxSetCurrent(ctx));
    return 0;
}

#endif
