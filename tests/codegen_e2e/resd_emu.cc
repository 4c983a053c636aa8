// resd_emu.cc: the halo bconv with a threshold by a residual dot (bconv.cu BC_RESD, lower.c
// lower_bconv_resd) run without a GPU, driven by resd_emu.py. kernels.inc (written by the
// script) holds, for each kernel step of bnncc's blobs, its #define block as --emit=cuda prints
// it followed by bconv.cu, so the kernel is compiled as host C++ under tests/codegen/bconv_emu.h's
// block emulator (a fiber per CUDA thread, warp collectives, cp.async queued until its wait),
// and a launcher; then the table resd_kernels[].
//     resd_emu MANIFEST
// runs the launches MANIFEST lists, one a line:
//     LABEL KERNEL GX GY THREADS SMEM NB YWORDS X W P EP0 EP1 R YOUT
// the kernel's arguments read from the files named (each its own allocation of the file's size:
// X, W and P registered as cp.async sources), Y (YWORDS words) poisoned and followed by a guard,
// and writes Y to YOUT for the script to compare. Prints a FAIL line (and exits 1 at the end)
// where a block changed the shared memory past the launch's or Y's guard changed; the emulator
// aborts on a misaligned or out-of-bounds shared access or cp.async source.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common_emu.h"

extern "C" {
alignas(128) unsigned char bnn_dsmem[EMU_DSMEM];
}

struct ResdKernel {
    const char *name;
    EmuCall call;
};

#include "kernels.inc" // the kernels and resd_kernels[]

namespace {

enum : uint32_t { POISON = 0x5EADBEEFu, GUARD = 0xC0FFEE11u, GUARD_WORDS = 64 };

// The file's bytes in an allocation of their own (16-byte aligned: cp.async's sources).
void *load(const char *path, size_t &bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "resd_emu: cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    bytes = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = aligned_alloc(16, bytes ? (bytes + 15) / 16 * 16 : 16);
    if (!p || fread(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "resd_emu: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    return p;
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: resd_emu MANIFEST\n");
        return 2;
    }
    FILE *m = fopen(argv[1], "r");
    if (!m) {
        fprintf(stderr, "resd_emu: cannot open %s\n", argv[1]);
        return 2;
    }
    char label[256], kernel[128], px[1024], pw[1024], pp[1024], p0[1024], p1[1024], pr[1024], py[1024];
    unsigned gx, gy, threads, smem;
    int nb;
    size_t ywords;
    int failed = 0;
    while (fscanf(m, "%255s %127s %u %u %u %u %d %zu %1023s %1023s %1023s %1023s %1023s %1023s %1023s", label, kernel,
                  &gx, &gy, &threads, &smem, &nb, &ywords, px, pw, pp, p0, p1, pr, py) == 15) {
        const ResdKernel *k = nullptr;
        for (const ResdKernel &r : resd_kernels)
            if (strcmp(r.name, kernel) == 0) k = &r;
        if (!k) {
            fprintf(stderr, "resd_emu: no kernel %s\n", kernel);
            return 2;
        }
        size_t bx, bw, bp, b0, b1, br;
        void *X = load(px, bx), *W = load(pw, bw), *P = load(pp, bp), *E0 = load(p0, b0), *E1 = load(p1, b1);
        void *R = load(pr, br);
        std::vector<uint32_t> y(ywords + GUARD_WORDS, POISON);
        for (size_t i = ywords; i < y.size(); i++) y[i] = GUARD;
        EmuArgs a{};
        a.X = (const unsigned *)X;
        a.W = (const unsigned *)W;
        a.P = (const int *)P;
        a.ep0 = E0;
        a.ep1 = E1;
        a.Y = y.data();
        a.R = R;
        a.nb = nb;
        emu_global_base[0] = X, emu_global_bytes[0] = bx;
        emu_global_base[1] = W, emu_global_bytes[1] = bw;
        emu_global_base[2] = P, emu_global_bytes[2] = bp;
        emu_nglobal = 3;
        emu_what = label;
        const unsigned long long overrun = emu_launch(k->call, a, gx, gy, threads, smem);
        size_t guard = 0;
        for (size_t i = ywords; i < y.size(); i++) guard += y[i] != GUARD;
        if (overrun || guard) {
            printf("FAIL: %s: %llu bytes of shared memory past the launch's changed, %zu words past Y written\n", label,
                   overrun, guard);
            failed = 1;
        }
        FILE *o = fopen(py, "wb");
        if (!o || fwrite(y.data(), 4, ywords, o) != ywords || fclose(o)) {
            fprintf(stderr, "resd_emu: cannot write %s\n", py);
            return 2;
        }
        free(X), free(W), free(P), free(E0), free(E1), free(R);
    }
    fclose(m);
    return failed;
}
