/* emu_fiber.h: cooperative threads for the block emulators (tests/lowbit/warp_emu.h,
 * tests/codegen/bconv_emu.h and the others that run CUDA kernels as host C or C++).
 *
 * The CUDA threads of an emulated block run as fibers on the calling OS thread, and switch only
 * where a thread waits: at a barrier, a warp collective, an mbarrier's phase. With one POSIX
 * thread per CUDA thread, every barrier woke 32 to 512 OS threads through the kernel on a
 * machine of two cores, and the emulator tests spent most of their time in the system; a switch
 * here saves six registers and a stack pointer.
 *
 * Fibers are scheduled round robin. A waiting fiber polls its condition each time its turn comes.
 * A fiber runs code only after passing a wait, arriving at a barrier or starting, so when every
 * live fiber has failed a poll since the last of those, nothing can change any more: the block
 * is deadlocked, and the run aborts naming the wait.
 * Each fiber runs on its own stack of EMU_FIBER_STACK bytes with a guard page below it. Under
 * AddressSanitizer the switches are announced to it (its fiber-switch interface), so that it
 * checks the stacks it is on. */
#ifndef BNN_EMU_FIBER_H
#define BNN_EMU_FIBER_H
#ifdef __cplusplus
extern "C" {
#endif

enum { EMU_FIBER_MAX = 1024, EMU_FIBER_STACK = 1 << 20 };

/* A barrier of `count` fibers, reusable: the count-th arrival opens it and closes it again. */
typedef struct EmuFiberBarrier {
    unsigned count, arrived;
    unsigned long long generation;
} EmuFiberBarrier;

/* Runs body(tid, arg) for tid 0..n-1, each on its own fiber, until all have returned.
 * resume(tid), when not null, runs each time fiber tid is switched to, before it goes on: it
 * points the emulator's per-thread state (threadIdx, queued copies) at that thread's. */
void emu_fibers_run(unsigned n, void (*body)(unsigned tid, void *arg), void *arg, void (*resume)(unsigned tid));

/* The running fiber's tid; 0 outside emu_fibers_run. */
unsigned emu_fiber_self(void);

void emu_fiber_barrier_init(EmuFiberBarrier *b, unsigned count);
void emu_fiber_barrier_wait(EmuFiberBarrier *b);

/* Returns once ready(arg) is non-zero, letting the other fibers run meanwhile; aborts with
 * `what` if no fiber can make progress. */
void emu_fiber_wait_until(int (*ready)(const void *arg), const void *arg, const char *what);

#ifdef __cplusplus
}
#endif
#endif
