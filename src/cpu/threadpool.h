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
/* Use n threads in all (the caller counts as one); safe at any time, workers restart lazily. */
mag_status_t mag_pool_resize(uint32_t n);
uint32_t mag_pool_size(void);

#endif
