/*
 * The backend interface: the only thing the core knows about a device. A backend looks up
 * the kernel of an (op, dtype) pair and runs it, choosing how many threads to use.
 */
#ifndef MAG_BACKEND_H
#define MAG_BACKEND_H

#include "core/internal.h"

typedef struct mag_kernel_args {
    mag_op_t op;
    mag_tensor_t *out;
    mag_tensor_t *const *in;
    int64_t n_in;
    const mag_scalar_t *attrs;
    int64_t n_attrs;
    mag_philox_key_t rng;  /* counter blocks reserved for random ops */
    atomic_int *status;    /* a kernel stores a mag_status_t here to fail the op (e.g. division by zero) */
    struct mag_run_shared *shared; /* zeroed for each run, seen by all its shares */
} mag_kernel_args_t;

/*
 * What the shares of one run share: kernels that hand out work on demand count it in claimed,
 * and the last share to finish (finished) may combine what the others left in buf, which the
 * first share to need it allocates and the last one frees.
 */
typedef struct mag_run_shared {
    atomic_int_fast64_t claimed;
    atomic_int_fast64_t finished;
    void *_Atomic buf;
} mag_run_shared_t;

/* Bytes a backend may read ahead into its caches. */
typedef struct mag_byte_range {
    const void *data;
    size_t bytes;
} mag_byte_range_t;

/* A kernel does its share [ti of nt] of the op; with nt == 1 it does all of it. */
typedef void (*mag_kernel_fn)(const mag_kernel_args_t *a, int64_t ti, int64_t nt);

typedef struct mag_backend {
    const char *name;
    mag_kernel_fn (*lookup)(mag_op_t op, mag_dtype_t dt);
    /* Run fn over `work` elements' worth of work; single_thread forces one thread (sequential kernels). */
    void (*run)(mag_kernel_fn fn, const mag_kernel_args_t *a, int64_t work, bool single_thread);
    /* Whether run() would use several threads for this work. */
    bool (*parallel)(int64_t work, bool single_thread);
    /* Start reading byte ranges into the caches beside the serial runs that follow (threads the
       next parallel run needs stop first); may do nothing. prefetch_end stops it and waits: the
       ranges may be freed after that. */
    void (*prefetch)(const mag_byte_range_t *r, int n);
    void (*prefetch_end)(void);
} mag_backend_t;

const mag_backend_t *mag_cpu_backend(void);

#endif
