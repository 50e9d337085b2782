/*
 * The thread pool. Workers persist between ops. A worker waits for work on its own mailbox:
 * it spins briefly (with the pause instruction) so a stream of ops pays no wake-up latency,
 * then sleeps on its own condition variable so an idle process burns no CPU. A job of nt
 * shares posts to workers 1..nt-1 only and runs share 0 on the caller. Each posted share is
 * claimed by one compare-and-swap, by its worker or, once the caller is done with share 0, by
 * the caller: a worker that is asleep or descheduled (a busy machine) costs at worst the
 * serial time, never a scheduler slice. The caller then waits only for shares being run.
 * One job runs at a time: a thread that finds the pool busy (another thread's op, or a
 * resize) runs its op alone rather than wait.
 */
#include "threadpool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_pause() _mm_pause()
#elif defined(__aarch64__)
#define cpu_pause() __asm__ volatile("yield")
#else
#define cpu_pause() ((void)0)
#endif

/* How long a waiter spins before it sleeps: above the gaps of serial work between two parallel ops
 * (an LLM decode step runs norms, rope and cache writes for ~100 us between its GEMVs: with a
 * 50 us spin the worker slept ~40 times a token and every wake-up cost a syscall and a late
 * start), well below a scheduler slice. */
#define SPIN_NS 1000000

/* A counter one thread waits on and another advances, with the sleep path of the waiter. */
typedef struct mailbox {
    _Alignas(64) atomic_uint_fast64_t value;
    atomic_bool sleeping;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} mailbox_t;

typedef struct worker {
    mailbox_t box; /* (job << 1) | CLAIMED: the last job that has a share for this worker */
    pthread_t thread;
    int64_t ti; /* its share index */
} worker_t;

static struct {
    uint32_t n_threads; /* configured, the caller included */
    worker_t *workers;  /* started lazily: workers[i] runs share i + 1 */
    uint32_t n_workers;
    atomic_bool stop;
    /* the current job, written before it is posted */
    mag_kernel_fn fn;
    const mag_kernel_args_t *args;
    int64_t nt;
    uint64_t job; /* jobs run so far; the first is 1 */
    _Alignas(64) atomic_int_fast64_t pending; /* shares 1..nt-1 of this job not finished */
    mailbox_t done;                           /* the last job finished */
    /* a prefetch in flight (mag_pool_prefetch): a job of one share that nobody waits for until the next */
    uint64_t prefetch_job; /* 0: none */
    mag_byte_range_t prefetch[MAG_POOL_MAX_PREFETCH];
    int n_prefetch;
    atomic_bool prefetch_stop;
} pool = {.n_threads = 1};

#define CLAIMED 1u

static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER; /* held while a job runs or the pool changes */

static void mailbox_init(mailbox_t *m) {
    atomic_init(&m->value, 0);
    atomic_init(&m->sleeping, false);
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
}

/*
 * Wait until m->value != old and return it. The sleeping flag and the value are both seq_cst,
 * so either the waiter sees the new value or the poster sees the flag (and then signals under
 * the mutex the waiter holds until it is inside pthread_cond_wait): no wake-up is lost.
 */
static uint64_t mailbox_wait(mailbox_t *m, uint64_t old) {
    uint64_t v, t0 = 0;
    for (uint32_t i = 0; (v = atomic_load_explicit(&m->value, memory_order_acquire)) == old; ++i) {
        cpu_pause();
        if ((i & 255) != 255) continue;
        if (!t0) t0 = mag_now_ns();
        else if (mag_now_ns() - t0 > SPIN_NS) {
            pthread_mutex_lock(&m->mu);
            atomic_store(&m->sleeping, true);
            while ((v = atomic_load(&m->value)) == old) pthread_cond_wait(&m->cv, &m->mu);
            atomic_store(&m->sleeping, false);
            pthread_mutex_unlock(&m->mu);
            break;
        }
    }
    return v;
}

static void mailbox_post(mailbox_t *m, uint64_t value) {
    atomic_store(&m->value, value);
    if (atomic_load(&m->sleeping)) {
        pthread_mutex_lock(&m->mu);
        pthread_cond_signal(&m->cv);
        pthread_mutex_unlock(&m->mu);
    }
}

/* Claim this worker's share of `job`; exactly one of the worker and the caller succeeds. */
static bool claim(worker_t *w, uint64_t job) {
    uint64_t posted = job << 1;
    return atomic_compare_exchange_strong(&w->box.value, &posted, posted | CLAIMED);
}

static void run_share(int64_t ti, uint64_t job) {
    pool.fn(pool.args, ti, pool.nt);
    if (atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel) == 1) mailbox_post(&pool.done, job);
}

static void *worker_main(void *p) {
    worker_t *w = p;
    for (uint64_t seen = 0;;) {
        seen = mailbox_wait(&w->box, seen);
        if (atomic_load(&pool.stop)) return NULL;
        /* A claimed share keeps its job (and pool.fn, args, nt) in flight until it finishes. */
        if (!(seen & CLAIMED) && claim(w, seen >> 1)) {
            seen |= CLAIMED;
            run_share(w->ti, seen >> 1);
        }
    }
}

/*
 * The prefetch job's share: asks for every cache line in order (the hardware prefetchers then
 * stream ahead as they do for a kernel), looking for the stop flag every 4 KiB. Prefetches, not
 * loads: the serial launches beside it may be writing those bytes.
 */
static void prefetch_share(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {
    (void)a, (void)ti, (void)nt;
    for (int i = 0; i < pool.n_prefetch; ++i) {
        const uint8_t *p = pool.prefetch[i].data;
        for (size_t off = 0, n = pool.prefetch[i].bytes; off < n; off += 4096) {
            if (atomic_load_explicit(&pool.prefetch_stop, memory_order_relaxed)) return;
            for (size_t c = off; c < n && c < off + 4096; c += 64) __builtin_prefetch(p + c, 0, 3);
        }
    }
}

/* End the prefetch in flight, if any (run_mu held): stop it, or run its share here if the worker has not claimed it. */
static void end_prefetch(void) {
    if (!pool.prefetch_job) return;
    atomic_store(&pool.prefetch_stop, true);
    if (claim(&pool.workers[0], pool.prefetch_job)) run_share(1, pool.prefetch_job);
    mailbox_wait(&pool.done, pool.prefetch_job - 1);
    pool.prefetch_job = 0;
}

static void stop_workers(void) {
    atomic_store(&pool.stop, true);
    for (uint32_t i = 0; i < pool.n_workers; ++i) {
        worker_t *w = &pool.workers[i];
        mailbox_post(&w->box, atomic_load(&w->box.value) + 2);
    }
    for (uint32_t i = 0; i < pool.n_workers; ++i) {
        pthread_join(pool.workers[i].thread, NULL);
        pthread_mutex_destroy(&pool.workers[i].box.mu);
        pthread_cond_destroy(&pool.workers[i].box.cv);
    }
    free(pool.workers);
    pool.workers = NULL;
    pool.n_workers = 0;
    atomic_store(&pool.stop, false);
}

/* A forked child has only the forking thread: forget the parent's workers (the child starts its own). */
static void after_fork_in_child(void) {
    pool.workers = NULL; /* leaked on purpose: their threads do not exist here */
    pool.n_workers = 0;
    pool.prefetch_job = 0;
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
        end_prefetch();
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

void mag_pool_prefetch(const mag_byte_range_t *r, int n) {
    if (n <= 0 || pthread_mutex_trylock(&run_mu) != 0) return;
    if (pool.prefetch_job && atomic_load(&pool.done.value) == pool.prefetch_job) pool.prefetch_job = 0; /* finished */
    if (pool.n_workers + 1 < pool.n_threads && !pool.workers) start_workers();
    if (pool.n_workers > 0 && !pool.prefetch_job) {
        pool.n_prefetch = n < MAG_POOL_MAX_PREFETCH ? n : MAG_POOL_MAX_PREFETCH;
        memcpy(pool.prefetch, r, (size_t)pool.n_prefetch * sizeof(*r));
        pool.fn = prefetch_share;
        pool.args = NULL;
        pool.nt = 2;
        pool.prefetch_job = ++pool.job;
        atomic_store(&pool.prefetch_stop, false);
        atomic_store_explicit(&pool.pending, 1, memory_order_relaxed);
        mailbox_post(&pool.workers[0].box, pool.prefetch_job << 1);
    }
    pthread_mutex_unlock(&run_mu);
}

void mag_pool_prefetch_end(void) {
    pthread_mutex_lock(&run_mu);
    end_prefetch();
    pthread_mutex_unlock(&run_mu);
}

void mag_pool_run(mag_kernel_fn fn, const mag_kernel_args_t *a, int64_t nt) {
    if (nt > 1 && pthread_mutex_trylock(&run_mu) == 0) {
        end_prefetch();
        if (pool.n_workers + 1 < pool.n_threads && !pool.workers) start_workers();
        if (nt > (int64_t)pool.n_workers + 1) nt = (int64_t)pool.n_workers + 1;
        if (nt > 1) {
            pool.fn = fn;
            pool.args = a;
            pool.nt = nt;
            uint64_t job = ++pool.job;
            atomic_store_explicit(&pool.pending, nt - 1, memory_order_relaxed);
            for (int64_t i = 0; i < nt - 1; ++i) mailbox_post(&pool.workers[i].box, job << 1);
            fn(a, 0, nt);
            for (int64_t i = 0; i < nt - 1; ++i)
                if (claim(&pool.workers[i], job)) run_share(i + 1, job);
            mailbox_wait(&pool.done, job - 1); /* jobs finish in order: done holds job - 1 until this one ends */
            pthread_mutex_unlock(&run_mu);
            return;
        }
        pthread_mutex_unlock(&run_mu);
    }
    fn(a, 0, 1);
}
