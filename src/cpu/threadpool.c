/*
 * The thread pool: workers sleep on a condition variable and wake for a new generation of
 * work; each takes its fixed share index, so a job touches only the workers it needs.
 * (Spinning and finer wake-ups are the speed issue's work.)
 */
#include "threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_t *threads;
    uint32_t n_workers;
    uint64_t generation;
    bool stop;
    mag_kernel_fn fn;
    const mag_kernel_args_t *args;
    int64_t nt;
    int64_t pending;
} pool_t;

static pool_t pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};
static uint32_t pool_threads; /* 0 = not initialised yet */
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */


static void *worker_main(void *p) {
    int64_t ti = (int64_t)(intptr_t)p;
    uint64_t seen = 0;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (!pool.stop && pool.generation == seen) pthread_cond_wait(&pool.wake, &pool.mu);
        if (pool.stop) break;
        seen = pool.generation;
        if (ti >= pool.nt) continue;
        mag_kernel_fn fn = pool.fn;
        const mag_kernel_args_t *a = pool.args;
        int64_t nt = pool.nt;
        pthread_mutex_unlock(&pool.mu);
        fn(a, ti, nt);
        pthread_mutex_lock(&pool.mu);
        if (--pool.pending == 0) pthread_cond_signal(&pool.done);
    }
    pthread_mutex_unlock(&pool.mu);
    return NULL;
}

static void pool_stop(void) {
    pthread_mutex_lock(&pool.mu);
    pool.stop = true;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
    for (uint32_t i = 0; i < pool.n_workers; ++i) pthread_join(pool.threads[i], NULL);
    free(pool.threads);
    pool.threads = NULL;
    pool.n_workers = 0;
    pool.stop = false;
    pool.generation = 0; /* new workers start at seen = 0: they must not take the last job for a new one */
}

static uint32_t default_threads(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return (uint32_t)n;
    }
    return 1;
}

static mag_status_t pool_start(uint32_t n) {
    pool.threads = n > 1 ? calloc(n - 1, sizeof(pthread_t)) : NULL;
    if (n > 1 && !pool.threads) return mag_error(MAG_ERR_MEMORY, "thread pool: out of memory");
    for (uint32_t i = 0; i + 1 < n; ++i) {
        if (pthread_create(&pool.threads[i], NULL, worker_main, (void *)(intptr_t)(i + 1)) != 0) {
            pool.n_workers = i;
            pool_stop();
            pool_threads = 1;
            return mag_error(MAG_ERR_RUNTIME, "thread pool: could not start %u threads", n);
        }
        pool.n_workers = i + 1;
    }
    pool_threads = n;
    return MAG_OK;
}

static void ensure_started(void) {
    if (pool_threads) return;
    uint32_t n = default_threads();
    const char *env = getenv("MAGNETRON_NUM_THREADS");
    if (env && atoi(env) > 0) n = (uint32_t)atoi(env);
    if (pool_start(n) != MAG_OK) pool_threads = 1;
}

mag_status_t mag_pool_resize(uint32_t n) {
    if (n == 0 || n > 1024) return mag_error(MAG_ERR_VALUE, "num_threads must be in [1, 1024], got %u", n);
    pthread_mutex_lock(&run_mu);
    ensure_started();
    mag_status_t s = MAG_OK;
    if (n != pool_threads) {
        pool_stop();
        s = pool_start(n);
    }
    pthread_mutex_unlock(&run_mu);
    return s;
}

uint32_t mag_pool_size(void) {
    pthread_mutex_lock(&run_mu);
    ensure_started();
    uint32_t n = pool_threads;
    pthread_mutex_unlock(&run_mu);
    return n;
}

void mag_pool_run(mag_kernel_fn fn, const mag_kernel_args_t *a, int64_t nt) {
    if (nt <= 1) {
        fn(a, 0, 1);
        return;
    }
    pthread_mutex_lock(&run_mu);
    ensure_started();
    if (nt > pool_threads) nt = pool_threads;
    if (nt <= 1) {
        pthread_mutex_unlock(&run_mu);
        fn(a, 0, 1);
        return;
    }
    pthread_mutex_lock(&pool.mu);
    pool.fn = fn;
    pool.args = a;
    pool.nt = nt;
    pool.pending = nt - 1;
    ++pool.generation;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.mu);
    fn(a, 0, nt);
    pthread_mutex_lock(&pool.mu);
    while (pool.pending > 0) pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&run_mu);
}
