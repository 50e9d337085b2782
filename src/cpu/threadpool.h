/* A persistent pool of worker threads that run kernel shares. */
#ifndef MAG_CPU_THREADPOOL_H
#define MAG_CPU_THREADPOOL_H

#include "../backend.h"

#define MAG_POOL_MAX_THREADS 1024

/*
 * Run fn(a, ti, nt) for ti in [0, nt): share 0 on the calling thread, the rest on workers.
 * nt is capped by the pool size; nt <= 1 (or a busy pool) runs fn(a, 0, 1) on the caller.
 */
void mag_pool_run(mag_kernel_fn fn, const mag_kernel_args_t *a, int64_t nt);
#define MAG_POOL_MAX_PREFETCH 8

/*
 * Read up to MAG_POOL_MAX_PREFETCH byte ranges into the caches on worker 1 while the caller goes
 * on with serial ops; the next run on several threads (or a resize) stops it first. Does nothing
 * without an idle worker or while an earlier prefetch still runs.
 */
void mag_pool_prefetch(const mag_byte_range_t *r, int n);
/* Stop the prefetch in flight, if any, and wait until it no longer reads. */
void mag_pool_prefetch_end(void);
/* Use n threads in all (the caller counts as one); safe at any time, workers restart lazily. */
mag_status_t mag_pool_resize(uint32_t n);
uint32_t mag_pool_size(void);

#endif
