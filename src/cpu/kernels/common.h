/* Shared drivers for kernels: an elementwise kernel is a row function run over the iterator. */
#ifndef MAG_CPU_KERNELS_COMMON_H
#define MAG_CPU_KERNELS_COMMON_H

#include "../iter.h"
#include "dtype_ops.h"

typedef mag_kernel_fn mag_kernel_table_t[MAG_OP__COUNT][MAG_DTYPE__COUNT];

/* Elements of work per claim (mag_claim): 64 KiB of float32. */
#define MAG_CLAIM_ELEMS 16384

/* The next items [b, e) of the op's n for this thread, each item_elems elements of work: whole items of at least
 * MAG_CLAIM_ELEMS elements per claim, from the run's shared counter. */
static inline bool mag_claim_items(const mag_kernel_args_t *a, int64_t n, int64_t nt, int64_t item_elems, int64_t *b,
                                   int64_t *e) {
    int64_t unit = item_elems < MAG_CLAIM_ELEMS ? MAG_CLAIM_ELEMS / (item_elems > 0 ? item_elems : 1) : 1;
    return mag_claim(&a->shared->claimed, n, nt, unit, b, e);
}

/* Run `row` over the parts of out = f(in[0..n_in)) this thread claims. */
static inline void mag_run_rows(const mag_kernel_args_t *a, int64_t ti, int64_t nt, int n_in, mag_row_fn row) {
    (void)ti;
    mag_iter_t it;
    mag_iter_init(&it, a->out, n_in, a->in);
    int64_t b, e;
    while (mag_claim_items(a, it.numel, nt, 1, &b, &e)) mag_iter_run(&it, b, e, row, a);
}

/* Define kernel `k_<name>` that runs row function `row_<name>` with n_in inputs. */
#define MAG_ROW_KERNEL(name, n_in)                                                                                     \
    static void k_##name(const mag_kernel_args_t *a, int64_t ti, int64_t nt) { mag_run_rows(a, ti, nt, n_in, row_##name); }

/* A double in [0, 1) with 53 random bits from one Philox block (random kernels in fill.c, struct.c). */
static inline double uniform01_53(const uint32_t w[4]) {
    uint64_t bits = ((uint64_t)w[0] << 21) ^ (w[1] >> 11);
    return (double)(bits & ((1ull << 53) - 1)) * 0x1.0p-53;
}

#endif
