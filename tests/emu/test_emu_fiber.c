/* test_emu_fiber: the fibers the block emulators run on (emu_fiber.h). Barriers hold every fiber
 * until the last arrives, warp-sized barriers only their own group, resume() always names the
 * fiber that runs, a wait_until returns only once its condition holds, fibers get deep stacks,
 * the order of a barrier's released fibers varies, and a block that can never go on (a barrier
 * a fiber never reaches, a wait nothing ends) aborts naming it instead of hanging. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check.h"
#include "emu_fiber.h"

enum { N = 96 }; /* three warps */

static EmuFiberBarrier block_bar, warp_bar[3];
static unsigned resumed;  /* the tid resume() was last given */
static int wrong_resume;  /* a fiber ran under another's tid */
static int slot[N], seen[N][8];

static void resume(unsigned tid) { resumed = tid; }

static void note_running(unsigned tid) {
    if (resumed != tid || emu_fiber_self() != tid)
        wrong_resume++;
}

/* Phase p: every fiber writes p * 1000 + tid, meets the others, reads its neighbour's. */
static void barrier_body(unsigned tid, void *arg) {
    (void)arg;
    for (int p = 0; p < 8; p++) {
        slot[tid] = p * 1000 + (int)tid;
        note_running(tid);
        if (p % 2)
            emu_fiber_barrier_wait(&block_bar);
        else
            emu_fiber_barrier_wait(&warp_bar[tid / 32]);
        note_running(tid);
        /* block phases read across warps, warp phases within the warp */
        const unsigned other = p % 2 ? (tid + 37) % N : tid / 32 * 32 + (tid + 5) % 32;
        seen[tid][p] = slot[other];
        emu_fiber_barrier_wait(&block_bar); /* nobody writes the next phase before all read */
    }
}

static int counter;
static int counter_at_least(const void *arg) { return counter >= *(const int *)arg; }

/* Fiber 0 waits for the others' increments; the others count only after a barrier among them. */
static void wait_body(unsigned tid, void *arg) {
    int *got = arg;
    if (tid == 0) {
        const int want = N - 1;
        emu_fiber_wait_until(counter_at_least, &want, "the counter");
        *got = counter;
        return;
    }
    emu_fiber_barrier_wait(&warp_bar[0]); /* count N - 1 here */
    counter++;
}

/* Deep recursion on each fiber's own stack: 128 frames of 4 KiB. */
static unsigned deep(unsigned n) {
    volatile unsigned char frame[4096];
    frame[0] = (unsigned char)n;
    frame[4095] = 1;
    return n ? deep(n - 1) + frame[4095] : frame[0];
}
static unsigned depth[4];
static void stack_body(unsigned tid, void *arg) {
    (void)arg;
    depth[tid] = deep(128);
    emu_fiber_barrier_wait(&block_bar);
}

static unsigned order[2][N], norder[2];
static void order_body(unsigned tid, void *arg) {
    (void)arg;
    for (int k = 0; k < 2; k++) {
        emu_fiber_barrier_wait(&block_bar);
        order[k][norder[k]++] = tid;
    }
}

static void missing_arrival(unsigned tid, void *arg) {
    (void)arg;
    if (tid != 7)
        emu_fiber_barrier_wait(&block_bar);
}
static int never(const void *arg) {
    (void)arg;
    return 0;
}
static void endless_wait(unsigned tid, void *arg) {
    (void)arg;
    if (tid == 0)
        emu_fiber_wait_until(never, NULL, "the test's endless wait");
}

/* Runs body on n fibers in a child process; returns its stderr and whether it aborted. */
static int aborts(void (*body)(unsigned, void *), unsigned n, char *err, size_t size) {
    int fds[2];
    if (pipe(fds))
        return 0;
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        emu_fiber_barrier_init(&block_bar, n);
        alarm(20); /* a hang shows as SIGALRM, not as the expected abort */
        emu_fibers_run(n, body, NULL, NULL);
        _exit(0);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < size && (r = read(fds[0], err + got, size - 1 - got)) > 0)
        got += (size_t)r;
    err[got] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

int main(void) {
    emu_fiber_barrier_init(&block_bar, N);
    for (int w = 0; w < 3; w++)
        emu_fiber_barrier_init(&warp_bar[w], 32);
    emu_fibers_run(N, barrier_body, NULL, resume);
    int bad = 0;
    for (unsigned t = 0; t < N; t++)
        for (int p = 0; p < 8; p++) {
            const unsigned other = p % 2 ? (t + 37) % N : t / 32 * 32 + (t + 5) % 32;
            bad += seen[t][p] != p * 1000 + (int)other;
        }
    CHECK_MSG(bad == 0, "%d reads saw another phase's value", bad);
    CHECK_MSG(wrong_resume == 0, "%d times a fiber ran under another tid", wrong_resume);

    int got = -1;
    emu_fiber_barrier_init(&warp_bar[0], N - 1);
    emu_fibers_run(N, wait_body, &got, NULL);
    CHECK_MSG(got == N - 1, "wait_until returned at %d of %d", got, N - 1);

    emu_fiber_barrier_init(&block_bar, 4);
    emu_fibers_run(4, stack_body, NULL, NULL);
    for (int t = 0; t < 4; t++)
        CHECK_MSG(depth[t] == 128, "fiber %d's recursion gave %u", t, depth[t]);

    emu_fiber_barrier_init(&block_bar, N);
    emu_fibers_run(N, order_body, NULL, NULL);
    CHECK(norder[0] == N && norder[1] == N);
    int first[2] = {0, 0}; /* whether fiber 0 ran before fiber 1 after barrier k */
    for (int k = 0; k < 2; k++)
        for (unsigned i = N; i-- > 0;)
            if (order[k][i] <= 1)
                first[k] = order[k][i] == 0;
    CHECK_MSG(first[0] != first[1], "fibers 0 and 1 ran in the same order after both barriers");

    char err[4096];
    CHECK(aborts(missing_arrival, 32, err, sizeof err));
    CHECK_STR_CONTAINS(err, "deadlock");
    CHECK_STR_CONTAINS(err, "a barrier");
    CHECK(aborts(endless_wait, 32, err, sizeof err));
    CHECK_STR_CONTAINS(err, "the test's endless wait");
    return check_report("test_emu_fiber");
}
