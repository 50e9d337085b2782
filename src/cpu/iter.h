/*
 * The strided N-d iterator. Operand 0 is the output; inputs are broadcast to its shape
 * (stride 0). Size-1 dims are dropped and adjacent dims that are contiguous for every operand
 * are merged, so most calls end up 1-d. Walking a range costs one division per call (to find
 * the start), never one per element: rows are advanced with carry counters.
 */
#ifndef MAG_CPU_ITER_H
#define MAG_CPU_ITER_H

#include "../backend.h"

#define MAG_ITER_MAX_OPS 4

typedef struct mag_iter {
    int64_t rank; /* >= 1; shape[rank-1] is the innermost (row) dim */
    int64_t numel;
    int n_ops;
    int64_t shape[MAG_MAX_RANK];
    int64_t strides[MAG_ITER_MAX_OPS][MAG_MAX_RANK]; /* bytes */
    uint8_t *base[MAG_ITER_MAX_OPS];
} mag_iter_t;

/* Processes one row: n elements, operand k at p[k] advancing by s[k] bytes. */
typedef void (*mag_row_fn)(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a);

static inline void mag_iter_init(mag_iter_t *it, const mag_tensor_t *out, int n_in, mag_tensor_t *const *in) {
    const mag_tensor_t *ops[MAG_ITER_MAX_OPS] = {out};
    for (int k = 0; k < n_in; ++k) ops[k + 1] = in[k];
    it->n_ops = n_in + 1;
    it->numel = out->numel;
    int64_t r = 0;
    for (int64_t d = 0; d < out->rank; ++d) { /* keep dims > 1, broadcast inputs right-aligned */
        if (out->shape[d] == 1) continue;
        it->shape[r] = out->shape[d];
        for (int k = 0; k < it->n_ops; ++k) {
            const mag_tensor_t *t = ops[k];
            int64_t td = d - (out->rank - t->rank);
            int64_t es = (int64_t)mag_dtype_info(t->dtype)->size;
            it->strides[k][r] = (td < 0 || t->shape[td] == 1) ? 0 : t->strides[td] * es;
        }
        ++r;
    }
    for (int k = 0; k < it->n_ops; ++k) it->base[k] = mag_tensor_data(ops[k]);
    if (r == 0) { /* a single element */
        it->shape[0] = 1;
        for (int k = 0; k < it->n_ops; ++k) it->strides[k][0] = 0;
        r = 1;
    }
    int64_t m = r - 1; /* merge outer dims into the inner one while every operand stays linear */
    for (int64_t d = r - 2; d >= 0; --d) {
        bool merge = true;
        for (int k = 0; k < it->n_ops && merge; ++k) merge = it->strides[k][d] == it->strides[k][m] * it->shape[m];
        if (merge) {
            it->shape[m] *= it->shape[d];
        } else {
            --m;
            it->shape[m] = it->shape[d];
            for (int k = 0; k < it->n_ops; ++k) it->strides[k][m] = it->strides[k][d];
        }
    }
    it->rank = r - m;
    for (int64_t d = 0; d < it->rank; ++d) {
        it->shape[d] = it->shape[d + m];
        for (int k = 0; k < it->n_ops; ++k) it->strides[k][d] = it->strides[k][d + m];
    }
}

/* Visit elements [begin, end) in row-major order of the output, one row segment per call. */
static inline void mag_iter_run(const mag_iter_t *it, int64_t begin, int64_t end, mag_row_fn fn,
                                const mag_kernel_args_t *a) {
    if (begin >= end) return;
    int64_t idx[MAG_MAX_RANK], rem = begin, inner = it->shape[it->rank - 1];
    uint8_t *p[MAG_ITER_MAX_OPS];
    for (int64_t d = it->rank - 1; d >= 0; --d) {
        idx[d] = rem % it->shape[d];
        rem /= it->shape[d];
    }
    for (int k = 0; k < it->n_ops; ++k) {
        p[k] = it->base[k];
        for (int64_t d = 0; d < it->rank; ++d) p[k] += idx[d] * it->strides[k][d];
    }
    int64_t row_stride[MAG_ITER_MAX_OPS];
    for (int k = 0; k < it->n_ops; ++k) row_stride[k] = it->strides[k][it->rank - 1];
    for (int64_t pos = begin; pos < end;) {
        int64_t n = inner - idx[it->rank - 1];
        if (n > end - pos) n = end - pos;
        fn(p, row_stride, n, a);
        pos += n;
        if (pos >= end) break;
        /* next row: reset the inner index, carry into the outer dims */
        for (int k = 0; k < it->n_ops; ++k) p[k] += n * row_stride[k];
        idx[it->rank - 1] += n;
        for (int64_t d = it->rank - 1; d > 0 && idx[d] == it->shape[d]; --d) {
            idx[d] = 0;
            ++idx[d - 1];
            for (int k = 0; k < it->n_ops; ++k) p[k] += it->strides[k][d - 1] - it->shape[d] * it->strides[k][d];
        }
    }
}

/*
 * The next part [begin, end) of n items for one of nt threads sharing the counter: 1/(2 nt) of
 * what is left, in whole units, so the first claims are long runs and the last ones short
 * enough for the threads to finish together, however unevenly they run (a thread that starts
 * late or streams slower takes less).
 */
static inline bool mag_claim(atomic_int_fast64_t *claimed, int64_t n, int64_t nt, int64_t unit, int64_t *begin,
                             int64_t *end) {
    int64_t cur = atomic_load_explicit(claimed, memory_order_relaxed), len;
    do {
        if (cur >= n) return false;
        len = ((n - cur) / (2 * nt) + unit) / unit * unit;
    } while (!atomic_compare_exchange_weak_explicit(claimed, &cur, cur + len, memory_order_relaxed,
                                                    memory_order_relaxed));
    *begin = cur, *end = cur + len < n ? cur + len : n;
    return true;
}

/* This thread's share [begin, end) of n items. */
static inline void mag_partition(int64_t n, int64_t ti, int64_t nt, int64_t *begin, int64_t *end) {
    *begin = (int64_t)((__int128)n * ti / nt);
    *end = (int64_t)((__int128)n * (ti + 1) / nt);
}

#endif
