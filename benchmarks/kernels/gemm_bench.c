/*
 * ctypes entry points for benchmarks/gemm.py: run the GEMM engine on the caller's buffers
 * with n threads (this thread plus n - 1 pthreads, a barrier after every multiplication, as
 * an op on a thread pool would), and a STREAM-style read bandwidth probe.
 */
#include "cpu/gemm/gemm.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

int mgb_set_path(const char *name);
const char *mgb_path(void);
double mgb_gemm(int dt, int64_t M, int64_t N, int64_t K, const void *A, int64_t rsa, int64_t csa,
                const void *const *Bs, int64_t n_b, int64_t rsb, int64_t csb, void *C, int64_t rsc, int64_t csc,
                int64_t n_threads, int64_t reps);
double mgb_read_bandwidth(const void *buf, int64_t bytes, int64_t n_threads);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int mgb_set_path(const char *name) {
    for (int p = 0; p < MAG_GEMM__COUNT; ++p)
        if (!strcmp(name, mag_gemm_path_name((mag_gemm_path_t)p))) return mag_gemm_set_path((mag_gemm_path_t)p);
    return 0;
}

const char *mgb_path(void) { return mag_gemm_path_name(mag_gemm_path()); }

/* A reusable barrier: spin briefly, then yield the core (other processes share it). */
typedef struct barrier {
    atomic_int_fast64_t arrived, generation;
    int64_t n;
} barrier_t;

static void barrier_wait(barrier_t *b) {
    int64_t gen = atomic_load(&b->generation);
    if (atomic_fetch_add(&b->arrived, 1) + 1 == b->n) {
        atomic_store(&b->arrived, 0);
        atomic_fetch_add(&b->generation, 1);
        return;
    }
    for (int spin = 0; atomic_load(&b->generation) == gen; ++spin) {
        if (spin >= 20000) sched_yield();
    }
}

typedef struct job {
    mag_dtype_t dt;
    int64_t M, N, K, rsa, csa, n_b, rsb, csb, rsc, csc, nt, reps;
    const void *A;
    const void *const *Bs;
    void *C;
    barrier_t bar;
} job_t;

typedef struct share {
    job_t *job;
    int64_t ti;
} share_t;

static void *worker(void *p) {
    share_t *s = p;
    job_t *j = s->job;
    for (int64_t r = 0; r < j->reps; ++r) {
        mag_gemm(j->dt, j->M, j->N, j->K, j->A, j->rsa, j->csa, j->Bs[r % j->n_b], j->rsb, j->csb, j->C, j->rsc, j->csc,
                 1.0f, 0.0f, s->ti, j->nt);
        if (j->nt > 1) barrier_wait(&j->bar);
    }
    return NULL;
}

enum { MAX_THREADS = 64 };

/* Wall seconds for `reps` multiplications C = A @ B, B rotating through Bs[0 .. n_b). */
double mgb_gemm(int dt, int64_t M, int64_t N, int64_t K, const void *A, int64_t rsa, int64_t csa,
                const void *const *Bs, int64_t n_b, int64_t rsb, int64_t csb, void *C, int64_t rsc, int64_t csc,
                int64_t n_threads, int64_t reps) {
    if (n_threads < 1 || n_threads > MAX_THREADS) return -1.0;
    job_t j = {(mag_dtype_t)dt, M, N, K, rsa, csa, n_b, rsb, csb, rsc, csc, n_threads, reps, A, Bs, C, {0}};
    j.bar.n = n_threads;
    share_t shares[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    for (int64_t t = 0; t < n_threads; ++t) shares[t] = (share_t){&j, t};
    double t0 = now();
    for (int64_t t = 1; t < n_threads; ++t) pthread_create(&th[t], NULL, worker, &shares[t]);
    worker(&shares[0]);
    for (int64_t t = 1; t < n_threads; ++t) pthread_join(th[t], NULL);
    return now() - t0;
}

typedef struct read_share {
    const uint8_t *p;
    int64_t n;
    double sum;
} read_share_t;

/* Scalar loads suffice: two 8-byte loads per cycle far outrun DRAM. */
static void *read_worker(void *p) {
    read_share_t *s = p;
    const uint64_t *w = (const uint64_t *)s->p;
    uint64_t a[8] = {0};
    for (int64_t i = 0; i + 8 <= s->n / 8; i += 8)
        for (int k = 0; k < 8; ++k) a[k] += w[i + k];
    s->sum = (double)(a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7]);
    return NULL;
}

/* Wall seconds to read `bytes` once, split over n_threads. */
double mgb_read_bandwidth(const void *buf, int64_t bytes, int64_t n_threads) {
    if (n_threads < 1 || n_threads > MAX_THREADS) return -1.0;
    read_share_t s[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    int64_t per = bytes / n_threads / 256 * 256;
    for (int64_t t = 0; t < n_threads; ++t) s[t] = (read_share_t){(const uint8_t *)buf + t * per, per, 0.0};
    double t0 = now();
    for (int64_t t = 1; t < n_threads; ++t) pthread_create(&th[t], NULL, read_worker, &s[t]);
    read_worker(&s[0]);
    for (int64_t t = 1; t < n_threads; ++t) pthread_join(th[t], NULL);
    return now() - t0;
}
