/*
 * Kernels that work along one dim (softmax, cumsum, topk): every operand is walked along its
 * other dims by the strided iterator, one "lane" (a 1-d strided run along dim) at a time. A
 * rank-0 operand is a single lane of length 1.
 */
#ifndef MAG_CPU_KERNELS_LANES_H
#define MAG_CPU_KERNELS_LANES_H

#include "ew.h"

typedef struct mag_lane {
    int64_t len, stride; /* elements along dim, bytes between them */
} mag_lane_t;

static inline mag_lane_t mag_lane_of(const mag_tensor_t *t, int64_t dim) {
    if (t->rank == 0) return (mag_lane_t){1, 0};
    return (mag_lane_t){t->shape[dim], t->strides[dim] * (int64_t)mag_dtype_info(t->dtype)->size};
}

/* A header over t's storage without dim: iterating it visits the first element of every lane. */
static inline void mag_lane_starts(const mag_tensor_t *t, int64_t dim, mag_tensor_t *o) {
    memcpy(o, t, sizeof(*o));
    if (t->rank == 0) return;
    o->rank = t->rank - 1;
    o->numel = 1;
    for (int64_t d = 0; d < o->rank; ++d) {
        o->shape[d] = t->shape[d + (d >= dim)];
        o->strides[d] = t->strides[d + (d >= dim)];
        o->numel *= o->shape[d];
    }
}

/*
 * Run `row` over the lanes of a->out and a->in[0..n_in) that this thread claims: it gets n lanes,
 * operand k's lane i starting at p[k] + i * s[k] (operand 0 is out). `st` starts with a copy of
 * the kernel args and is what `row` receives.
 */
static inline void mag_run_lanes(const mag_kernel_args_t *a, int64_t ti, int64_t nt, int64_t dim, int n_in,
                                 mag_row_fn row, const mag_kernel_args_t *st) {
    mag_tensor_t starts[MAG_ITER_MAX_OPS], *ins[MAG_ITER_MAX_OPS - 1];
    mag_lane_starts(a->out, dim, &starts[0]);
    for (int k = 0; k < n_in; ++k) {
        mag_lane_starts(a->in[k], dim, &starts[k + 1]);
        ins[k] = &starts[k + 1];
    }
    (void)ti;
    mag_iter_t it;
    mag_iter_init(&it, &starts[0], n_in, ins);
    int64_t b, e, lane = mag_lane_of(n_in ? a->in[0] : a->out, dim).len;
    while (mag_claim_items(a, it.numel, nt, lane, &b, &e)) mag_iter_run(&it, b, e, row, st);
}

/* Element access at byte addresses (lanes are strided): loads are ew.h's mag_ew_load_<ID>; stores: */
#define MAG_LANE_PUT(ID, ST, p, v)                                                                                     \
    do {                                                                                                               \
        ST put_ = MAG_ST_##ID(v);                                                                                      \
        memcpy((p), &put_, sizeof(put_));                                                                              \
    } while (0)

#endif
