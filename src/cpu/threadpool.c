/*
 * The thread pool. Workers persist between ops. A worker waits for work on its own mailbox:
 * it spins briefly (with the pause instruction) so a stream of ops pays no wake-up latency,
 * then sleeps on its own condition variable so an idle process burns no CPU. A job of nt
 * shares posts to workers 1..nt-1 only; share 0 runs on the caller, which then waits for the
 * others the same way. One job runs at a time: a thread that finds the pool busy (another
 * thread's op, or a resize) runs its op alone rather than wait.
 */
#include "threadpool.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_pause() _mm_pause()
#elif defined(__aarch64__)
#define cpu_pause() __asm__ volatile("yield")
#else
#define cpu_pause() ((void)0)
#endif

/* How long a waiter spins before it sleeps: longer than the gap between two ops of a Python loop. */
#define SPIN_NS 100000

/* A counter one thread waits on and another advances, with the sleep path of the waiter. */
typedef struct mailbox {
    _Alignas(64) atomic_uint_fast64_t value;
    atomic_bool sleeping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} mailbox_t;

typedef struct worker {
    mailbox_t box; /* jobs posted to this worker so far */
    pthread_t thread;
    int64_t ti; /* its share index */
} worker_t;

static struct {
    uint32_t n_threads; /* configured, the caller included */
    worker_t *workers;  /* started lazily: workers[i] runs share i + 1 */
    uint32_t n_workers;
    bool stop;
    /* the current job, written before it is posted */
    mag_kernel_fn fn;
    const mag_kernel_args_t *args;
    int64_t nt;
    uint64_t job; /* jobs run so far */
    _Alignas(64) atomic_int_fast64_t pending; /* worker shares of this job still running */
    mailbox_t done;                           /* the caller waits here for `job` */
} pool = {.n_threads = 1};

static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER; /* held while a job runs or the pool changes */

static void mailbox_init(mailbox_t *m) {
    atomic_init(&m->value, 0);
    atomic_init(&m->sleeping, false);
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Wait until m->value == target. The sleeping flag and the value are both seq_cst, so either
 * the waiter sees the new value or the poster sees the flag (and then signals under the mutex
 * the waiter holds until it is inside pthread_cond_wait): no wake-up is lost.
 */
static void mailbox_wait(mailbox_t *m, uint64_t target) {
    uint64_t t0 = 0;
    for (uint32_t i = 0; atomic_load_explicit(&m->value, memory_order_acquire) != target; ++i) {
        cpu_pause();
        if ((i & 255) != 255) continue;
        if (!t0) t0 = now_ns();
        else if (now_ns() - t0 > SPIN_NS) {
            pthread_mutex_lock(&m->mu);
            atomic_store(&m->sleeping, true);
            while (atomic_load(&m->value) != target) pthread_cond_wait(&m->cv, &m->mu);
            atomic_store(&m->sleeping, false);
            pthread_mutex_unlock(&m->mu);
            return;
        }
    }
}

static void mailbox_post(mailbox_t *m, uint64_t value) {
    atomic_store(&m->value, value);
    if (atomic_load(&m->sleeping)) {
        pthread_mutex_lock(&m->mu);
        pthread_cond_signal(&m->cv);
        pthread_mutex_unlock(&m->mu);
    }
}

static void *worker_main(void *p) {
    worker_t *w = p;
    for (uint64_t seen = 0;;) {
        mailbox_wait(&w->box, ++seen);
        if (pool.stop) return NULL;
        /* Copy the job: once this share is counted done, the caller may post the next one. */
        mag_kernel_fn fn = pool.fn;
        const mag_kernel_args_t *a = pool.args;
        int64_t nt = pool.nt;
        uint64_t job = pool.job;
        fn(a, w->ti, nt);
        if (atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel) == 1) mailbox_post(&pool.done, job);
    }
}

static void stop_workers(void) {
    pool.stop = true;
    for (uint32_t i = 0; i < pool.n_workers; ++i) {
        worker_t *w = &pool.workers[i];
        mailbox_post(&w->box, atomic_load(&w->box.value) + 1);
    }
    for (uint32_t i = 0; i < pool.n_workers; ++i) {
        pthread_join(pool.workers[i].thread, NULL);
        pthread_mutex_destroy(&pool.workers[i].box.mu);
        pthread_cond_destroy(&pool.workers[i].box.cv);
    }
    free(pool.workers);
    pool.workers = NULL;
    pool.n_workers = 0;
    pool.stop = false;
}

/* A forked child has only the forking thread: forget the parent's workers (the child starts its own). */
static void after_fork_in_child(void) {
    pool.workers = NULL; /* leaked on purpose: their threads do not exist here */
    pool.n_workers = 0;
    pthread_mutex_init(&run_mu, NULL);
    mailbox_init(&pool.done);
    atomic_store(&pool.done.value, pool.job);
}

static void register_fork_handler(void) {
    pthread_atfork(NULL, NULL, after_fork_in_child);
    mailbox_init(&pool.done);
}

/* Start the configured workers (run_mu held). Fewer may start if the system refuses threads. */
static void start_workers(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_handler);
    uint32_t n = pool.n_threads - 1;
    pool.workers = aligned_alloc(64, n * sizeof(worker_t)); /* sizeof is a multiple of 64 */
    if (!pool.workers) return;
    while (pool.n_workers < n) {
        worker_t *w = &pool.workers[pool.n_workers];
        mailbox_init(&w->box);
        w->ti = pool.n_workers + 1;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) break;
        pool.n_workers++;
    }
}

mag_status_t mag_pool_resize(uint32_t n) {
    if (n == 0 || n > MAG_POOL_MAX_THREADS)
        return mag_error(MAG_ERR_VALUE, "num_threads must be in [1, %d], got %u", MAG_POOL_MAX_THREADS, n);
    pthread_mutex_lock(&run_mu);
    if (n != pool.n_threads) {
        stop_workers();
        pool.n_threads = n;
    }
    pthread_mutex_unlock(&run_mu);
    return MAG_OK;
}

uint32_t mag_pool_size(void) {
    pthread_mutex_lock(&run_mu);
    uint32_t n = pool.n_threads;
    pthread_mutex_unlock(&run_mu);
    return n;
}

void mag_pool_run(mag_kernel_fn fn, const mag_kernel_args_t *a, int64_t nt) {
    if (nt > 1 && pthread_mutex_trylock(&run_mu) == 0) {
        if (pool.n_workers + 1 < pool.n_threads && !pool.workers) start_workers();
        if (nt > (int64_t)pool.n_workers + 1) nt = (int64_t)pool.n_workers + 1;
        if (nt > 1) {
            pool.fn = fn;
            pool.args = a;
            pool.nt = nt;
            uint64_t job = ++pool.job;
            atomic_store_explicit(&pool.pending, nt - 1, memory_order_relaxed);
            for (int64_t i = 0; i < nt - 1; ++i) {
                mailbox_t *box = &pool.workers[i].box;
                mailbox_post(box, atomic_load_explicit(&box->value, memory_order_relaxed) + 1);
            }
            fn(a, 0, nt);
            mailbox_wait(&pool.done, job);
            pthread_mutex_unlock(&run_mu);
            return;
        }
        pthread_mutex_unlock(&run_mu);
    }
    fn(a, 0, 1);
}
