/*
 * Kernels of the selection and structure ops (fronts in src/core/ops_struct.c). `where` and
 * `gather` only move elements, so they have one row function per element size, not per dtype;
 * masked_fill and tril/triu run `where`, and repeat/cat/stack run the copy kernel (copy.c).
 */
#include "common.h"

#include <stdlib.h>

/* out = c ? x : y (operands: out, c (boolean), x, y) */
#define WHERE_ROW(T)                                                                                                   \
    static void row_where_##T(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {          \
        (void)a;                                                                                                       \
        if (s[0] == sizeof(T) && s[1] == 1 && s[2] == sizeof(T) && s[3] == sizeof(T)) {                                \
            T *o = (T *)p[0];                                                                                          \
            const uint8_t *c = p[1];                                                                                   \
            const T *x = (const T *)p[2], *y = (const T *)p[3];                                                        \
            for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? x[i] : y[i];                                                 \
            return;                                                                                                    \
        }                                                                                                              \
        for (int64_t i = 0; i < n; ++i)                                                                                \
            *(T *)(p[0] + i * s[0]) = p[1][i * s[1]] ? *(const T *)(p[2] + i * s[2]) : *(const T *)(p[3] + i * s[3]);  \
    }

/*
 * out[i] = x[i + idx[i] * step] (operands: out, x with a zero stride along the gathered dim,
 * int64 idx; attr: that dim's stride in bytes). index_select rows along an outer dim use one
 * index for the whole row, which makes them plain copies.
 */
#define GATHER_ROW(T)                                                                                                  \
    static void row_gather_##T(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {         \
        int64_t step = a->attrs[0].i;                                                                                  \
        if (s[2] == 0) {                                                                                               \
            const uint8_t *x = p[1] + *(const int64_t *)p[2] * step;                                                   \
            if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                                              \
                memcpy(p[0], x, (size_t)n * sizeof(T));                                                                \
                return;                                                                                                \
            }                                                                                                          \
            for (int64_t i = 0; i < n; ++i) *(T *)(p[0] + i * s[0]) = *(const T *)(x + i * s[1]);                      \
            return;                                                                                                    \
        }                                                                                                              \
        for (int64_t i = 0; i < n; ++i)                                                                                \
            *(T *)(p[0] + i * s[0]) = *(const T *)(p[1] + i * s[1] + *(const int64_t *)(p[2] + i * s[2]) * step);      \
    }

WHERE_ROW(uint8_t)
WHERE_ROW(uint16_t)
WHERE_ROW(uint32_t)
WHERE_ROW(uint64_t)
GATHER_ROW(uint8_t)
GATHER_ROW(uint16_t)
GATHER_ROW(uint32_t)
GATHER_ROW(uint64_t)

/* The row function for the output's element size (1, 2, 4 or 8 bytes). */
static mag_row_fn by_size(const mag_tensor_t *out, mag_row_fn r1, mag_row_fn r2, mag_row_fn r4, mag_row_fn r8) {
    switch (mag_dtype_info(out->dtype)->size) {
    case 1: return r1;
    case 2: return r2;
    case 4: return r4;
    default: return r8;
    }
}

static void k_where(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {
    mag_run_rows(a, ti, nt, 3, by_size(a->out, row_where_uint8_t, row_where_uint16_t, row_where_uint32_t, row_where_uint64_t));
}

static void k_gather(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {
    mag_run_rows(a, ti, nt, 2,
                 by_size(a->out, row_gather_uint8_t, row_gather_uint16_t, row_gather_uint32_t, row_gather_uint64_t));
}

/* one_hot: the front end hands over the class values as contiguous, checked int64; out is contiguous int64. */
static void k_one_hot(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {
    const int64_t *v = mag_tensor_data(a->in[0]);
    int64_t *o = mag_tensor_data(a->out), c = a->out->shape[a->out->rank - 1], b, e;
    mag_partition(a->in[0]->numel, ti, nt, &b, &e);
    if (b >= e) return;
    memset(o + b * c, 0, (size_t)((e - b) * c) * sizeof(int64_t));
    for (int64_t i = b; i < e; ++i) o[i * c + v[i]] = 1;
}

/*
 * multinomial: the front end hands over contiguous, checked float64 probabilities. Row r draws
 * from Philox blocks r * (draws per row) + k, so results do not depend on the thread count.
 */
static void draw_with_replacement(const double *p, int64_t n, int64_t *out, int64_t ns, double *cdf,
                                  mag_philox_key_t key, uint64_t first) {
    double total = 0;
    int64_t last = 0; /* the last category with p > 0: the answer when rounding puts u * total at the very top */
    for (int64_t j = 0; j < n; ++j) {
        total += p[j];
        cdf[j] = total;
        if (p[j] > 0) last = j;
    }
    for (int64_t s = 0; s < ns; ++s) {
        uint32_t w[4];
        mag_philox4x32(key, first + (uint64_t)s, w);
        double t = uniform01_53(w) * total;
        int64_t lo = 0, hi = last; /* the first category whose cumulative sum exceeds t */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (cdf[mid] > t) hi = mid;
            else lo = mid + 1;
        }
        out[s] = lo;
    }
}

typedef struct keyed {
    double key;
    int64_t idx;
} keyed_t;

static int keyed_cmp(const void *pa, const void *pb) {
    const keyed_t *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/*
 * Without replacement: category j gets the key E_j / p_j with E_j ~ Exp(1); sorting by key gives
 * the order of sequential draws without replacement. Zero-probability categories come last, in
 * index order (as in PyTorch, they are returned once the others are used up).
 */
static void draw_without_replacement(const double *p, int64_t n, int64_t *out, int64_t ns, keyed_t *keys,
                                     mag_philox_key_t key, uint64_t first) {
    for (int64_t j = 0; j < n; ++j) {
        uint32_t w[4];
        mag_philox4x32(key, first + (uint64_t)j, w);
        keys[j].key = p[j] > 0 ? -log1p(-uniform01_53(w)) / p[j] : INFINITY;
        keys[j].idx = j;
    }
    qsort(keys, (size_t)n, sizeof(*keys), keyed_cmp);
    for (int64_t s = 0; s < ns; ++s) out[s] = keys[s].idx;
}

static void k_multinomial(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {
    const mag_tensor_t *p = a->in[0];
    int64_t n = p->shape[p->rank - 1], rows = p->rank == 2 ? p->shape[0] : 1, ns = a->attrs[0].i, b, e;
    bool replacement = a->attrs[1].i != 0;
    mag_partition(rows, ti, nt, &b, &e);
    if (b >= e) return;
    size_t bytes = (size_t)n * (replacement ? sizeof(double) : sizeof(keyed_t));
    void *scratch = mag_alloc(bytes);
    if (!scratch) {
        atomic_store(a->status, MAG_ERR_MEMORY);
        return;
    }
    const double *prob = mag_tensor_data(p);
    int64_t *out = mag_tensor_data(a->out);
    for (int64_t r = b; r < e; ++r) {
        if (replacement)
            draw_with_replacement(prob + r * n, n, out + r * ns, ns, scratch, a->rng, (uint64_t)(r * ns));
        else
            draw_without_replacement(prob + r * n, n, out + r * ns, ns, scratch, a->rng, (uint64_t)(r * n));
    }
    mag_free(scratch, bytes);
}

static void register_struct(mag_kernel_table_t t) {
    for (int d = 0; d < MAG_DTYPE__COUNT; ++d) {
        t[MAG_OP_WHERE][d] = t[MAG_OP_MASKED_FILL][d] = t[MAG_OP_TRIL][d] = t[MAG_OP_TRIU][d] = k_where;
        t[MAG_OP_GATHER][d] = t[MAG_OP_INDEX_SELECT][d] = k_gather;
        t[MAG_OP_REPEAT][d] = t[MAG_OP_CAT][d] = t[MAG_OP_STACK][d] = k_copy;
        uint32_t f = mag_dtype_info((mag_dtype_t)d)->flags;
        if (f & (MAG_DTF_SIGNED_INT | MAG_DTF_UNSIGNED_INT)) t[MAG_OP_ONE_HOT][d] = k_one_hot;
        if (f & MAG_DTF_FLOAT) t[MAG_OP_MULTINOMIAL][d] = k_multinomial;
    }
}
