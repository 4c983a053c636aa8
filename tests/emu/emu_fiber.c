/* emu_fiber.c: the fibers of emu_fiber.h. On x86-64 a switch is a few instructions of its own
 * (the System V callee-saved registers and the stack pointer); elsewhere, or with
 * EMU_FIBER_UCONTEXT defined (test_emu_fiber_ucontext), it is ucontext's.
 * Valid C and C++: the emulators that tests compile with a C++ compiler compile it with them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "emu_fiber.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__x86_64__) && !defined(EMU_FIBER_UCONTEXT)
#define EMU_FIBER_X86 1
#endif

#ifdef EMU_FIBER_X86
/* emu_switch(save, load): pushes the callee-saved registers, stores the stack pointer in *save,
 * takes load as the stack pointer and pops that context's registers and return address. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl emu_switch\n"
        ".hidden emu_switch\n"
        ".type emu_switch, @function\n"
        "emu_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size emu_switch, .-emu_switch\n");
#ifdef __cplusplus
extern "C" void emu_switch(void **save, void *load);
#else
void emu_switch(void **save, void *load);
#endif
typedef void *EmuContext;
#else
#include <ucontext.h>
typedef ucontext_t EmuContext;
#endif

typedef struct Fiber {
    EmuContext ctx;
    unsigned char *stack; /* EMU_FIBER_STACK bytes above a guard page, kept between runs */
    int done;
#ifdef EMU_ASAN
    void *fake_stack;
#endif
} Fiber;

static Fiber fibers[EMU_FIBER_MAX];
static EmuContext main_ctx;
static unsigned current, live;
static unsigned stalls; /* failed polls since a fiber last passed a wait, arrived or started */
static int running;
static void (*run_body)(unsigned, void *);
static void *run_arg;
static void (*run_resume)(unsigned);
#ifdef EMU_ASAN
static void *main_fake_stack;
static const void *main_stack_bottom;
static size_t main_stack_size;
#endif

static void emu_fiber_fail(const char *what) {
    fprintf(stderr, "emu_fiber: %s, thread %u\n", what, current);
    abort();
}

static unsigned char *stack_of(Fiber *f) {
    if (!f->stack) {
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        unsigned char *m = (unsigned char *)mmap(NULL, EMU_FIBER_STACK + page, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED || mprotect(m, page, PROT_NONE))
            emu_fiber_fail("cannot map a fiber stack");
        f->stack = m + page;
    }
    return f->stack;
}

/* The running fiber gives the OS thread back to emu_fibers_run's loop. */
static void to_main(void) {
    Fiber *f = &fibers[current];
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(f->done ? NULL : &f->fake_stack, main_stack_bottom, main_stack_size);
#endif
#ifdef EMU_FIBER_X86
    emu_switch(&f->ctx, main_ctx);
#else
    swapcontext(&f->ctx, &main_ctx);
#endif
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(f->fake_stack, &main_stack_bottom, &main_stack_size);
#endif
    if (run_resume)
        run_resume(current);
}

static void fiber_entry(void) {
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &main_stack_bottom, &main_stack_size);
#endif
    const unsigned tid = current;
    stalls = 0;
    if (run_resume)
        run_resume(tid);
    run_body(tid, run_arg);
    fibers[tid].done = 1;
    live--;
    stalls = 0;
    to_main();
    emu_fiber_fail("a finished fiber resumed");
}

static void start(Fiber *f) {
    unsigned char *top = stack_of(f) + EMU_FIBER_STACK;
#ifdef EMU_FIBER_X86
    /* What emu_switch pops: six registers, then fiber_entry as the return address, above which
     * a zero return address leaves the stack as a call would (rsp + 8 a multiple of 16). */
    void **sp = (void **)top;
    *--sp = NULL;
    *--sp = (void *)(uintptr_t)fiber_entry;
    for (int i = 0; i < 6; i++)
        *--sp = NULL;
    f->ctx = sp;
#else
    if (getcontext(&f->ctx))
        emu_fiber_fail("getcontext");
    f->ctx.uc_stack.ss_sp = top - EMU_FIBER_STACK;
    f->ctx.uc_stack.ss_size = EMU_FIBER_STACK;
    f->ctx.uc_link = NULL;
    makecontext(&f->ctx, fiber_entry, 0);
#endif
    f->done = 0;
}

void emu_fibers_run(unsigned n, void (*body)(unsigned, void *), void *arg, void (*resume)(unsigned)) {
    if (running)
        emu_fiber_fail("emu_fibers_run called from a fiber");
    if (n == 0 || n > EMU_FIBER_MAX)
        emu_fiber_fail("fiber count out of range");
    run_body = body, run_arg = arg, run_resume = resume;
    for (unsigned i = 0; i < n; i++)
        start(&fibers[i]);
    live = n;
    stalls = 0;
    running = 1;
    /* Passes alternate between ascending and descending tid, so that the threads a barrier
     * releases do not always run in the same order: a thread that reads shared memory another
     * writes without a barrier in between sees the old bytes in some of the runs. */
    for (unsigned pass = 0; live; pass++)
        for (unsigned k = 0; k < n; k++) {
            const unsigned i = pass & 1 ? n - 1 - k : k;
            Fiber *f = &fibers[i];
            if (f->done)
                continue;
            current = i;
#ifdef EMU_ASAN
            __sanitizer_start_switch_fiber(&main_fake_stack, f->stack, EMU_FIBER_STACK);
#endif
#ifdef EMU_FIBER_X86
            emu_switch(&main_ctx, f->ctx);
#else
            swapcontext(&main_ctx, &f->ctx);
#endif
#ifdef EMU_ASAN
            __sanitizer_finish_switch_fiber(main_fake_stack, NULL, NULL);
#endif
        }
    running = 0;
    current = 0;
}

unsigned emu_fiber_self(void) { return current; }

/* A poll that failed: lets the others run, or aborts once none of them can move. */
static void stall(const char *what) {
    if (!running)
        emu_fiber_fail("a wait outside emu_fibers_run");
    if (++stalls > 2 * live + 2) {
        fprintf(stderr, "emu_fiber: every thread of the block waits, none can go on (a deadlock): %s\n", what);
        emu_fiber_fail("deadlock");
    }
    to_main();
}

void emu_fiber_barrier_init(EmuFiberBarrier *b, unsigned count) {
    b->count = count;
    b->arrived = 0;
    b->generation = 0;
}

void emu_fiber_barrier_wait(EmuFiberBarrier *b) {
    const unsigned long long generation = b->generation;
    stalls = 0;
    if (++b->arrived == b->count) {
        b->arrived = 0;
        b->generation++;
        return;
    }
    while (b->generation == generation)
        stall("a barrier");
    stalls = 0;
}

void emu_fiber_wait_until(int (*ready)(const void *), const void *arg, const char *what) {
    while (!ready(arg))
        stall(what);
    stalls = 0;
}
