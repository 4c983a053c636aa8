// resd_emu.cc: the halo bconv with a threshold by a residual dot (bconv.cu BC_RESD, lower.c
// lower_bconv_resd) run without a GPU, driven by resd_emu.py. kernels.inc (written by the
// script) holds, for each kernel step of bnncc's blobs, its #define block as --emit=cuda prints
// it followed by bconv.cu, so the kernel is compiled as host C++ under tests/codegen/bconv_emu.h's
// block emulator (a fiber per CUDA thread, warp collectives, cp.async queued until its wait),
// and a launcher; then the table emu_kernels[] (emu_driver.h: the manifest, files, guards).
//     resd_emu MANIFEST
// runs the launches MANIFEST lists, one a line:
//     LABEL KERNEL GX GY THREADS SMEM NB YWORDS X W P EP0 EP1 R YOUT
// the kernel's arguments read from the files named (each its own allocation of the file's size:
// X, W and P registered as cp.async sources), Y (YWORDS words) poisoned and followed by a guard,
// and writes Y to YOUT for the script to compare. Prints a FAIL line (and exits 1 at the end)
// where a block changed the shared memory past the launch's or Y's guard changed; the emulator
// aborts on a misaligned or out-of-bounds shared access or cp.async source.
#include "common_emu.h"
#include "emu_driver.h"

#include "kernels.inc" // the kernels and emu_kernels[]

int main(int argc, char **argv) {
    FILE *m = emu_manifest(argc, argv, "resd_emu");
    char label[256], kernel[128], px[1024], pw[1024], pp[1024], p0[1024], p1[1024], pr[1024], py[1024];
    unsigned gx, gy, threads, smem;
    int nb;
    size_t ywords;
    int failed = 0;
    while (fscanf(m, "%255s %127s %u %u %u %u %d %zu %1023s %1023s %1023s %1023s %1023s %1023s %1023s", label, kernel,
                  &gx, &gy, &threads, &smem, &nb, &ywords, px, pw, pp, p0, p1, pr, py) == 15) {
        const EmuCall call = emu_kernel(emu_kernels, kernel);
        const EmuFile X(px), W(pw), P(pp), E0(p0), E1(p1), R(pr);
        EmuGuarded y(ywords);
        EmuArgs a = emu_args(X, W, P, E0, E1, nb);
        a.Y = y.data();
        a.R = R.p;
        emu_sources({&X, &W, &P});
        emu_what = label;
        const unsigned long long overrun = emu_launch(call, a, gx, gy, threads, smem);
        const size_t guard = y.guard_changed();
        if (overrun || guard) {
            printf("FAIL: %s: %llu bytes of shared memory past the launch's changed, %zu words past Y written\n", label,
                   overrun, guard);
            failed = 1;
        }
        y.store(py);
    }
    fclose(m);
    return failed;
}
