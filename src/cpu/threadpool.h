/* A persistent pool of worker threads that run kernel shares. */
#ifndef MAG_CPU_THREADPOOL_H
#define MAG_CPU_THREADPOOL_H

#include "../backend.h"

/* Run fn(a, ti, nt) for ti in [0, nt): share 0 on the calling thread, the rest on workers. */
void mag_pool_run(mag_kernel_fn fn, const mag_kernel_args_t *a, int64_t nt);
/* Resize the pool to n threads in all (the caller counts as one). */
mag_status_t mag_pool_resize(uint32_t n);
uint32_t mag_pool_size(void);

#endif
