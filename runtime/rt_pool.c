/* rt_pool.c: the CPU path's worker threads. A pool of T threads runs one job at a time as T
 * parts: the calling thread runs part 0 and T - 1 workers the others, and rt_pool_run returns
 * when every part is done. Each part writes outputs no other part writes (rt_cpu.c splits a
 * step by output rows), so results do not depend on the number of threads. */
#include <pthread.h>

#include "rt.h"

typedef struct Worker {
    struct RtPool *pool;
    int part;
} Worker;

struct RtPool {
    int parts; /* the calling thread and the workers */
    pthread_t *workers;
    Worker *worker; /* what each worker thread is given */
    pthread_mutex_t lock;
    pthread_cond_t start, finished;
    unsigned long generation; /* counts jobs: a worker runs each generation once */
    int done;                 /* workers finished with the current job */
    bool quit;
    RtPoolFn fn;
    void *arg;
};

static void *worker_main(void *p) {
    Worker w = *(Worker *)p;
    RtPool *pool = w.pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (pool->generation == seen && !pool->quit)
            pthread_cond_wait(&pool->start, &pool->lock);
        if (pool->quit)
            break;
        seen = pool->generation;
        RtPoolFn fn = pool->fn;
        void *arg = pool->arg;
        pthread_mutex_unlock(&pool->lock);
        fn(arg, w.part, pool->parts);
        pthread_mutex_lock(&pool->lock);
        if (++pool->done == pool->parts - 1)
            pthread_cond_signal(&pool->finished);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

static void stop_workers(RtPool *pool, int started) {
    pthread_mutex_lock(&pool->lock);
    pool->quit = true;
    pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < started; i++)
        pthread_join(pool->workers[i], NULL);
}

bnn_status rt_pool_create(int threads, RtPool **out) {
    *out = NULL;
    RtPool *pool = rt_calloc(1, sizeof *pool);
    if (!pool || !(pool->workers = rt_calloc((size_t)threads, sizeof *pool->workers)) ||
        !(pool->worker = rt_calloc((size_t)threads, sizeof *pool->worker))) {
        if (pool)
            rt_free(pool->workers);
        rt_free(pool);
        return rt_error(BNN_STATUS_OUT_OF_MEMORY, "out of memory creating %d CPU threads", threads);
    }
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->start, NULL);
    pthread_cond_init(&pool->finished, NULL);
    int started = 0;
    bnn_status st = BNN_STATUS_OK;
    while (started < threads - 1) {
        pool->worker[started] = (Worker){pool, started + 1};
        int err = pthread_create(&pool->workers[started], NULL, worker_main, &pool->worker[started]);
        if (err) {
            st = rt_error(BNN_STATUS_OUT_OF_MEMORY, "cannot start CPU thread %d of %d (error %d): "
                          "ask for fewer threads", started + 2, threads, err);
            break;
        }
        started++;
    }
    pool->parts = started + 1;
    if (st != BNN_STATUS_OK) {
        rt_pool_free(pool);
        return st;
    }
    *out = pool;
    return BNN_STATUS_OK;
}

int rt_pool_threads(const RtPool *pool) { return pool ? pool->parts : 1; }

void rt_pool_run(RtPool *pool, RtPoolFn fn, void *arg) {
    if (!pool || pool->parts == 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&pool->lock);
    pool->fn = fn;
    pool->arg = arg;
    pool->done = 0;
    pool->generation++;
    pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->lock);
    fn(arg, 0, pool->parts);
    pthread_mutex_lock(&pool->lock);
    while (pool->done < pool->parts - 1)
        pthread_cond_wait(&pool->finished, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}

void rt_pool_free(RtPool *pool) {
    if (!pool)
        return;
    stop_workers(pool, pool->parts - 1);
    pthread_cond_destroy(&pool->finished);
    pthread_cond_destroy(&pool->start);
    pthread_mutex_destroy(&pool->lock);
    rt_free(pool->workers);
    rt_free(pool->worker);
    rt_free(pool);
}
