/*
 * INDEX / INDEX_PUT / NONZERO kernels. The front end hands over contiguous int64 indices of
 * the broadcast shape B; each index position selects one "tail" block x[i0, i1, ..., :, :] that
 * is copied to or from contiguous memory. The front end has checked the indices, but a replayed
 * graph (core/graph.c) runs these kernels on new index values without it: they check again.
 */
#include "common.h"

typedef struct tail {
    int64_t rank, numel; /* of the blocks */
    int64_t run;         /* bytes per block: one element, or the whole innermost dim when it is contiguous */
    int64_t shape[MAG_MAX_RANK];
    int64_t stride[MAG_MAX_RANK]; /* bytes, in the indexed tensor */
} tail_t;

static tail_t make_tail(const mag_tensor_t *x, int64_t k, bool whole_rows) {
    int64_t es = (int64_t)mag_dtype_info(x->dtype)->size;
    tail_t t = {.rank = x->rank - k, .numel = 1, .run = es};
    for (int64_t d = 0; d < t.rank; ++d) {
        t.shape[d] = x->shape[k + d];
        t.stride[d] = x->strides[k + d] * es;
        t.numel *= t.shape[d];
    }
    if (whole_rows && t.rank > 0 && t.stride[t.rank - 1] == es) {
        t.rank--;
        t.run = es * t.shape[t.rank];
        t.numel = t.run ? t.numel / t.shape[t.rank] : 0;
    }
    return t;
}

/* Address in x of index position `pos` of B (negative indices count from the end), or NULL when
 * an index is out of bounds. */
static uint8_t *row_base(const mag_tensor_t *x, mag_tensor_t *const *idx, int64_t k, int64_t pos) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
        int64_t v = ((const int64_t *)mag_tensor_data(idx[j]))[pos], n = x->shape[j];
        if (v < 0) v += n;
        if (v < 0 || v >= n) return NULL;
        off += v * x->strides[j];
    }
    return (uint8_t *)mag_tensor_data(x) + off * (int64_t)mag_dtype_info(x->dtype)->size;
}

/* Visit the tail block at x: element e of the block (in row-major order) is at xp, contiguous at cp. */
#define FOR_TAIL(tl, xbase, cbase, es, body)                                                                           \
    do {                                                                                                               \
        int64_t ctr_[MAG_MAX_RANK] = {0};                                                                              \
        uint8_t *xp = (xbase), *cp = (cbase);                                                                          \
        for (int64_t e_ = 0; e_ < (tl).numel; ++e_, cp += (es)) {                                                      \
            body;                                                                                                      \
            for (int64_t d_ = (tl).rank - 1; d_ >= 0; --d_) {                                                          \
                xp += (tl).stride[d_];                                                                                 \
                if (++ctr_[d_] < (tl).shape[d_]) break;                                                                \
                xp -= (tl).stride[d_] * (tl).shape[d_];                                                                \
                ctr_[d_] = 0;                                                                                          \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

static void k_index(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {
    const mag_tensor_t *x = a->in[0];
    int64_t k = a->n_in - 1;
    tail_t tl = make_tail(x, k, true);
    int64_t n_rows = a->in[1]->numel, b, e;
    mag_partition(n_rows, ti, nt, &b, &e);
    uint8_t *out = mag_tensor_data(a->out);
    for (int64_t r = b; r < e; ++r) {
        uint8_t *base = row_base(x, a->in + 1, k, r);
        if (!base) {
            atomic_store(a->status, MAG_ERR_INDEX);
            return;
        }
        FOR_TAIL(tl, base, out + r * tl.numel * tl.run, tl.run, memcpy(cp, xp, (size_t)tl.run));
    }
}

#define ACCUMULATE(ID, ST, CT)                                                                                         \
    static void acc_##ID(uint8_t *dst, const uint8_t *src) {                                                           \
        ST d, s;                                                                                                       \
        memcpy(&d, dst, sizeof(d));                                                                                    \
        memcpy(&s, src, sizeof(s));                                                                                    \
        d = MAG_ST_##ID(MAG_LD_##ID(d) + MAG_LD_##ID(s));                                                              \
        memcpy(dst, &d, sizeof(d));                                                                                    \
    }
MAG_ALL_DTYPES(ACCUMULATE)

#define ACC_ENTRY(ID, ST, CT) [MAG_DTYPE_##ID] = acc_##ID,
static void (*const accumulators[MAG_DTYPE__COUNT])(uint8_t *, const uint8_t *) = {MAG_ALL_DTYPES(ACC_ENTRY)};

static void k_index_put(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {
    (void)ti, (void)nt; /* sequential: repeated indices resolve in order */
    mag_tensor_t *x = a->out;
    int64_t k = a->n_in - 1;
    bool accumulate = mag_scalar_as_int(a->attrs[0]) != 0;
    tail_t tl = make_tail(x, k, !accumulate);
    void (*acc)(uint8_t *, const uint8_t *) = accumulators[x->dtype];
    uint8_t *vals = mag_tensor_data(a->in[0]);
    for (int64_t r = 0, n = a->in[1]->numel; r < n; ++r) {
        uint8_t *base = row_base(x, a->in + 1, k, r), *vrow = vals + r * tl.numel * tl.run;
        if (!base) {
            atomic_store(a->status, MAG_ERR_INDEX);
            return;
        }
        if (accumulate) FOR_TAIL(tl, base, vrow, tl.run, acc(xp, cp));
        else FOR_TAIL(tl, base, vrow, tl.run, memcpy(xp, cp, (size_t)tl.run));
    }
}

static void k_nonzero(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {
    (void)ti, (void)nt;
    const mag_tensor_t *m = a->in[0];
    const uint8_t *v = mag_tensor_data(m);
    int64_t *out = mag_tensor_data(a->out), ctr[MAG_MAX_RANK] = {0}, rank = m->rank;
    for (int64_t i = 0; i < m->numel; ++i) {
        if (v[i]) {
            memcpy(out, ctr, (size_t)rank * sizeof(int64_t));
            out += rank;
        }
        for (int64_t d = rank - 1; d >= 0; --d) {
            if (++ctr[d] < m->shape[d]) break;
            ctr[d] = 0;
        }
    }
}

static void register_index(mag_kernel_table_t t) {
    for (int d = 0; d < MAG_DTYPE__COUNT; ++d) {
        t[MAG_OP_INDEX][d] = k_index;
        t[MAG_OP_INDEX_PUT][d] = k_index_put;
    }
    t[MAG_OP_NONZERO][MAG_DTYPE_BOOLEAN] = k_nonzero;
}
