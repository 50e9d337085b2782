/*
 * Reduction kernels (the plan they follow is in core/reduce.h).
 *
 * The kept dims of x are walked by one iterator (one step per unit: an output, or a chunk of
 * one), the reduced dims by another, whose dims are coalesced and, unless the op reports
 * positions, ordered by stride so the innermost row is the densest. Row functions get a state
 * struct that starts with a copy of the kernel args, the pointer mag_iter_run hands back.
 *
 * Float sums accumulate blocks of RED_SUM_BLOCK elements in 8 lanes and push each block into a
 * cascade (every RED_CASCADE_FAN sums of one level make one of the next): the error grows with the
 * log of the count, like pairwise summation, so 1e8 float32 ones sum to 1e8 exactly.
 */
#include "common.h"
#include "../../core/reduce.h"

#include <tgmath.h>

/* ---- geometry and walking ---- */
typedef struct red_geom {
    const mag_kernel_args_t *a;
    mag_iter_t outer; /* x at the start of each unit's reduced block, one step per unit */
    mag_iter_t inner; /* the reduced block of x; base set per unit */
    int64_t n_red, chunks;
} red_geom_t;

static int64_t red_abs64(int64_t v) { return v < 0 ? -v : v; }

static void red_geom_init(red_geom_t *g, const mag_kernel_args_t *a, bool keep_order) {
    const mag_tensor_t *x = a->in[0];
    uint64_t mask = (uint64_t)mag_scalar_as_int(a->attrs[MAG_RED_MASK]);
    mag_tensor_t o, r; /* headers over x's storage: the kept dims, the reduced dims */
    memcpy(&o, x, sizeof(o));
    memcpy(&r, x, sizeof(r));
    o.rank = r.rank = 0;
    o.numel = r.numel = 1;
    for (int64_t d = 0; d < x->rank; ++d) {
        mag_tensor_t *t = (mask >> d & 1) ? &r : &o;
        t->shape[t->rank] = x->shape[d];
        t->strides[t->rank] = x->strides[d];
        t->numel *= x->shape[d];
        ++t->rank;
    }
    for (int64_t i = 1; i < r.rank && !keep_order; ++i) /* insertion sort, largest |stride| first */
        for (int64_t j = i; j > 0 && red_abs64(r.strides[j]) > red_abs64(r.strides[j - 1]); --j) {
            int64_t sh = r.shape[j], st = r.strides[j];
            r.shape[j] = r.shape[j - 1], r.strides[j] = r.strides[j - 1];
            r.shape[j - 1] = sh, r.strides[j - 1] = st;
        }
    g->a = a;
    g->chunks = mag_scalar_as_int(a->attrs[MAG_RED_CHUNKS]);
    if (g->chunks > 1) { /* the chunks of one output share its base */
        o.shape[o.rank] = g->chunks;
        o.strides[o.rank++] = 0;
        o.numel *= g->chunks;
    }
    g->n_red = r.numel;
    mag_iter_init(&g->outer, &o, 0, NULL);
    mag_iter_init(&g->inner, &r, 0, NULL);
}

/* Work on unit u (output u / chunks): the reduced elements [lo, hi) of the block at x. */
typedef void (*red_unit_fn)(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t lo, int64_t hi);

typedef struct red_walk {
    mag_kernel_args_t a; /* first: mag_iter_run hands &a back */
    const red_geom_t *g;
    red_unit_fn fn;
    int64_t u;
} red_walk_t;

static void red_walk_row(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {
    red_walk_t *w = (red_walk_t *)(uintptr_t)a;
    const red_geom_t *g = w->g;
    for (int64_t i = 0; i < n; ++i, ++w->u) {
        int64_t c = g->chunks == 1 ? 0 : w->u % g->chunks;
        int64_t lo = (int64_t)((__int128)g->n_red * c / g->chunks);
        int64_t hi = (int64_t)((__int128)g->n_red * (c + 1) / g->chunks);
        w->fn(g, w->u, p[0] + i * s[0], lo, hi);
    }
}

/* This thread's share of the units. */
static void red_run(const mag_kernel_args_t *a, int64_t ti, int64_t nt, bool keep_order, red_unit_fn fn) {
    red_geom_t g;
    red_geom_init(&g, a, keep_order);
    int64_t b, e;
    mag_partition(g.outer.numel, ti, nt, &b, &e);
    red_walk_t w = {.a = *a, .g = &g, .fn = fn, .u = b};
    mag_iter_run(&g.outer, b, e, red_walk_row, &w.a);
}

/* Feed the reduced elements [lo, hi) of the block at x to `row`, in order; st starts with the kernel args. */
static void red_visit(const red_geom_t *g, const uint8_t *x, int64_t lo, int64_t hi, mag_row_fn row,
                      mag_kernel_args_t *st) {
    if (lo >= hi) return;
    if (g->inner.rank == 1) { /* the common case: one strided row, no iterator set-up */
        int64_t s = g->inner.strides[0][0];
        uint8_t *p = (uint8_t *)(uintptr_t)x + lo * s;
        row(&p, &s, hi - lo, st);
        return;
    }
    mag_iter_t it = g->inner;
    it.base[0] = (uint8_t *)(uintptr_t)x;
    mag_iter_run(&it, lo, hi, row, st);
}

static int64_t red_output(const red_geom_t *g, int64_t u) { return g->chunks == 1 ? u : u / g->chunks; }

static double red_center(const red_geom_t *g, int64_t u) {
    const mag_tensor_t *c = g->a->in[1];
    int64_t o = red_output(g, u);
    return c->dtype == MAG_DTYPE_FLOAT64 ? ((const double *)mag_tensor_data(c))[o] : ((const float *)mag_tensor_data(c))[o];
}

/* A float result: finished by the plan's step when no chunks are pending, stored in out's dtype. */
static void red_store_float(const red_geom_t *g, int64_t u, double v) {
    const mag_kernel_args_t *a = g->a;
    if (g->chunks == 1) {
        double arg = mag_scalar_as_double(a->attrs[MAG_RED_ARG]);
        switch (mag_scalar_as_int(a->attrs[MAG_RED_POST])) {
        case MAG_RED_POST_DIV: v /= arg; break;
        case MAG_RED_POST_DIV_SQRT: v = sqrt(v / arg); break;
        case MAG_RED_POST_LOG_ADD: v = log(v) + red_center(g, u); break;
        default: break;
        }
    }
    void *o = mag_tensor_data(a->out);
    switch (a->out->dtype) {
    case MAG_DTYPE_FLOAT64: ((double *)o)[u] = v; break;
    case MAG_DTYPE_FLOAT16: ((uint16_t *)o)[u] = mag_f32_to_f16((float)v); break;
    case MAG_DTYPE_BFLOAT16: ((uint16_t *)o)[u] = mag_f32_to_bf16((float)v); break;
    default: ((float *)o)[u] = (float)v; break;
    }
}

/* ---- float sums: sum, mean (x), var/std ((x - c)^2), logsumexp (exp(x - c)) ---- */
#define RED_SUM_BLOCK 256
#define RED_CASCADE_FAN 16
#define RED_CASCADE_DEPTH 6 /* 256 * 16^6 elements before the top level adds plainly */

#define RED_SUM_STATE(A)                                                                                                   \
    typedef struct red_sum_##A {                                                                                           \
        mag_kernel_args_t a;                                                                                           \
        A center, blk;                                                                                                 \
        int64_t blk_n;                                                                                                 \
        A lvl[RED_CASCADE_DEPTH];                                                                                          \
        int cnt[RED_CASCADE_DEPTH];                                                                                        \
    } red_sum_##A##_t;                                                                                                     \
    static void red_sum_##A##_push(red_sum_##A##_t *st) {                                                                      \
        A v = st->blk;                                                                                                 \
        st->blk = 0;                                                                                                   \
        st->blk_n = 0;                                                                                                 \
        for (int l = 0;; ++l) {                                                                                        \
            st->lvl[l] += v;                                                                                           \
            if (l + 1 == RED_CASCADE_DEPTH || ++st->cnt[l] < RED_CASCADE_FAN) return;                                          \
            v = st->lvl[l];                                                                                            \
            st->lvl[l] = 0;                                                                                            \
            st->cnt[l] = 0;                                                                                            \
        }                                                                                                              \
    }                                                                                                                  \
    static A red_sum_##A##_total(const red_sum_##A##_t *st) {                                                                  \
        A t = st->blk;                                                                                                 \
        for (int l = 0; l < RED_CASCADE_DEPTH; ++l) t += st->lvl[l];                                                       \
        return t;                                                                                                      \
    }
RED_SUM_STATE(float)
RED_SUM_STATE(double)

/* A: accumulator type; expr: the summand, of x (as A) and c (the center) */
/* (the extra level expands A before it is pasted) */
#define RED_SUM_KERNEL(name, ID, ST, A, expr) RED_SUM_KERNEL_(name, ID, ST, A, expr)
#define RED_SUM_KERNEL_(name, ID, ST, A, expr)                                                                              \
    static void row_red_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {      \
        red_sum_##A##_t *st = (red_sum_##A##_t *)(uintptr_t)a;                                                                 \
        const A c = st->center;                                                                                        \
        (void)c;                                                                                                       \
        const uint8_t *xp = p[0];                                                                                      \
        const int64_t es = s[0];                                                                                       \
        while (n > 0) {                                                                                                \
            int64_t m = RED_SUM_BLOCK - st->blk_n, i = 0;                                                                  \
            if (m > n) m = n;                                                                                          \
            A l[8] = {0};                                                                                              \
            if (es == (int64_t)sizeof(ST)) {                                                                           \
                const ST *xs = (const ST *)xp;                                                                         \
                for (; i + 8 <= m; i += 8)                                                                             \
                    for (int j = 0; j < 8; ++j) {                                                                      \
                        A x = MAG_LD_##ID(xs[i + j]);                                                                  \
                        l[j] += (expr);                                                                                \
                    }                                                                                                  \
            }                                                                                                          \
            for (; i < m; ++i) {                                                                                       \
                ST v;                                                                                                  \
                memcpy(&v, xp + i * es, sizeof(v));                                                                    \
                A x = MAG_LD_##ID(v);                                                                                  \
                l[i & 7] += (expr);                                                                                    \
            }                                                                                                          \
            st->blk += ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));                              \
            st->blk_n += m;                                                                                            \
            xp += m * es;                                                                                              \
            n -= m;                                                                                                    \
            if (st->blk_n == RED_SUM_BLOCK) red_sum_##A##_push(st);                                                            \
        }                                                                                                              \
    }                                                                                                                  \
    static void unit_red_##name##_##ID(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t lo, int64_t hi) {       \
        red_sum_##A##_t st = {.a = *g->a};                                                                                 \
        if (g->a->n_in > 1) st.center = (A)red_center(g, u);                                                           \
        red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                             \
        red_store_float(g, u, (double)red_sum_##A##_total(&st));                                                           \
    }                                                                                                                  \
    static void k_red_##name##_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                  \
        red_run(a, ti, nt, false, unit_red_##name##_##ID);                                                                 \
    }

/* 16-bit floats accumulate in float32 like float32 itself; float64 in float64 */
#define RED_ACC_FLOAT32 float
#define RED_ACC_FLOAT16 float
#define RED_ACC_BFLOAT16 float
#define RED_ACC_FLOAT64 double
#define RED_FSUM(ID, ST, CT) RED_SUM_KERNEL(fsum, ID, ST, RED_ACC_##ID, x)
#define RED_SQDEV(ID, ST, CT) RED_SUM_KERNEL(sqdev, ID, ST, RED_ACC_##ID, (x - c) * (x - c))
#define RED_EXPSUM(ID, ST, CT) RED_SUM_KERNEL(expsum, ID, ST, RED_ACC_##ID, exp(x - c))
MAG_FLOAT_DTYPES(RED_FSUM)
MAG_FLOAT_DTYPES(RED_SQDEV)
MAG_FLOAT_DTYPES(RED_EXPSUM)

/* ---- float products, and integer/boolean sums and products (int64, wrapping like torch) ---- */
typedef struct red_acc {
    mag_kernel_args_t a;
    union {
        double f;
        int64_t i;
    };
} red_acc_t;

/* A: accumulator type, F: its red_acc_t field; init: the identity; op: combines acc and x */
#define RED_FOLD_KERNEL(name, ID, ST, A, F, init, op, store)                                                               \
    static void row_red_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {      \
        red_acc_t *st = (red_acc_t *)(uintptr_t)a;                                                                 \
        A acc = (A)st->F;                                                                                              \
        const uint8_t *xp = p[0];                                                                                      \
        if (s[0] == (int64_t)sizeof(ST)) {                                                                             \
            const ST *xs = (const ST *)xp;                                                                             \
            for (int64_t i = 0; i < n; ++i) {                                                                          \
                A x = (A)MAG_LD_##ID(xs[i]);                                                                           \
                acc = (op);                                                                                            \
            }                                                                                                          \
        } else {                                                                                                       \
            for (int64_t i = 0; i < n; ++i, xp += s[0]) {                                                              \
                ST v;                                                                                                  \
                memcpy(&v, xp, sizeof(v));                                                                             \
                A x = (A)MAG_LD_##ID(v);                                                                               \
                acc = (op);                                                                                            \
            }                                                                                                          \
        }                                                                                                              \
        st->F = acc;                                                                                                   \
    }                                                                                                                  \
    static void unit_red_##name##_##ID(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t lo, int64_t hi) {       \
        red_acc_t st = {.a = *g->a, .F = (init)};                                                                    \
        red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                             \
        store;                                                                                                         \
    }                                                                                                                  \
    static void k_red_##name##_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                  \
        red_run(a, ti, nt, false, unit_red_##name##_##ID);                                                                 \
    }

#define RED_STORE_INT64 ((int64_t *)mag_tensor_data(g->a->out))[u] = st.i
#define RED_FPROD(ID, ST, CT) RED_FOLD_KERNEL(fprod, ID, ST, RED_ACC_##ID, f, 1.0, acc * x, red_store_float(g, u, st.f))
#define RED_ISUM(ID, ST, CT) RED_FOLD_KERNEL(isum, ID, ST, int64_t, i, 0, acc + x, RED_STORE_INT64)
#define RED_IPROD(ID, ST, CT) RED_FOLD_KERNEL(iprod, ID, ST, int64_t, i, 1, acc * x, RED_STORE_INT64)
MAG_FLOAT_DTYPES(RED_FPROD)
MAG_INT_DTYPES(RED_ISUM)
MAG_BOOL_DTYPES(RED_ISUM)
MAG_INT_DTYPES(RED_IPROD)
MAG_BOOL_DTYPES(RED_IPROD)

/* ---- min/max and argmin/argmax: NaN beats every number; the first of equal extremes wins ---- */
#define RED_BEATS_MAX(x, y) ((x) > (y) || ((x) != (x) && (y) == (y)))
#define RED_BEATS_MIN(x, y) ((x) < (y) || ((x) != (x) && (y) == (y)))

/* keep_pos: argmin/argmax, which report the flat position of the winner (reduced dims in their order) */
#define RED_EXTREME_KERNEL(name, ID, ST, CT, BEATS, keep_pos)                                                              \
    typedef struct red_ext_##name##_##ID {                                                                                 \
        mag_kernel_args_t a;                                                                                           \
        CT best;                                                                                                       \
        int64_t best_pos, pos; /* pos: flat position of the next element */                                           \
        bool has;                                                                                                      \
    } red_ext_##name##_##ID##_t;                                                                                           \
    static void row_red_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {      \
        red_ext_##name##_##ID##_t *st = (red_ext_##name##_##ID##_t *)(uintptr_t)a;                                             \
        const uint8_t *xp = p[0];                                                                                      \
        for (int64_t i = 0; i < n; ++i, xp += s[0]) {                                                                  \
            ST v;                                                                                                      \
            memcpy(&v, xp, sizeof(v));                                                                                 \
            CT x = MAG_LD_##ID(v);                                                                                     \
            if (!st->has || BEATS(x, st->best)) {                                                                      \
                st->best = x;                                                                                          \
                st->best_pos = st->pos + i;                                                                            \
                st->has = true;                                                                                        \
            }                                                                                                          \
        }                                                                                                              \
        st->pos += n;                                                                                                  \
    }                                                                                                                  \
    static void unit_red_##name##_##ID(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t lo, int64_t hi) {       \
        red_ext_##name##_##ID##_t st = {.a = *g->a, .pos = lo};                                                            \
        red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                             \
        ST best = MAG_ST_##ID(st.best);                                                                                \
        if (!(keep_pos)) {                                                                                             \
            ((ST *)mag_tensor_data(g->a->out))[u] = best;                                                              \
            return;                                                                                                    \
        }                                                                                                              \
        ((int64_t *)mag_tensor_data(g->a->out))[u] = st.best_pos;                                                      \
        if (g->a->n_in > 1) ((ST *)mag_tensor_data(g->a->in[1]))[u] = best; /* partial values for the combine */      \
    }                                                                                                                  \
    static void k_red_##name##_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                  \
        red_run(a, ti, nt, keep_pos, unit_red_##name##_##ID);                                                              \
    }

#define RED_MIN_K(ID, ST, CT) RED_EXTREME_KERNEL(min, ID, ST, CT, RED_BEATS_MIN, false)
#define RED_MAX_K(ID, ST, CT) RED_EXTREME_KERNEL(max, ID, ST, CT, RED_BEATS_MAX, false)
#define RED_ARGMIN_K(ID, ST, CT) RED_EXTREME_KERNEL(argmin, ID, ST, CT, RED_BEATS_MIN, true)
#define RED_ARGMAX_K(ID, ST, CT) RED_EXTREME_KERNEL(argmax, ID, ST, CT, RED_BEATS_MAX, true)
MAG_ALL_DTYPES(RED_MIN_K)
MAG_ALL_DTYPES(RED_MAX_K)
MAG_NUMERIC_DTYPES(RED_ARGMIN_K)
MAG_NUMERIC_DTYPES(RED_ARGMAX_K)

/* ---- all/any: stop at the first element that decides ---- */
typedef struct red_bool {
    mag_kernel_args_t a;
    bool decided;
} red_bool_t;

/* decisive: the truth value (x != 0) that settles the result: false for all, true for any */
#define RED_BOOL_KERNEL(name, ID, ST, decisive)                                                                            \
    static void row_red_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {      \
        red_bool_t *st = (red_bool_t *)(uintptr_t)a;                                                               \
        const uint8_t *xp = p[0];                                                                                      \
        for (int64_t i = 0; i < n && !st->decided; ++i, xp += s[0]) {                                                  \
            ST v;                                                                                                      \
            memcpy(&v, xp, sizeof(v));                                                                                 \
            st->decided = (MAG_LD_##ID(v) != 0) == (decisive);                                                         \
        }                                                                                                              \
    }                                                                                                                  \
    static void unit_red_##name##_##ID(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t lo, int64_t hi) {       \
        red_bool_t st = {.a = *g->a};                                                                                \
        red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                             \
        ((uint8_t *)mag_tensor_data(g->a->out))[u] = st.decided == (decisive);                                         \
    }                                                                                                                  \
    static void k_red_##name##_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                                  \
        red_run(a, ti, nt, false, unit_red_##name##_##ID);                                                                 \
    }

#define RED_ALL_K(ID, ST, CT) RED_BOOL_KERNEL(all, ID, ST, false)
#define RED_ANY_K(ID, ST, CT) RED_BOOL_KERNEL(any, ID, ST, true)
MAG_ALL_DTYPES(RED_ALL_K)
MAG_ALL_DTYPES(RED_ANY_K)

/* ---- registration ---- */
#define RED_REG(OP, name, ID) t[MAG_OP_##OP][MAG_DTYPE_##ID] = k_red_##name##_##ID;
#define RED_REG_FLOAT(ID, ST, CT)                                                                                          \
    RED_REG(SUM, fsum, ID) RED_REG(MEAN, fsum, ID) RED_REG(VAR, sqdev, ID) RED_REG(STD, sqdev, ID)                    \
    RED_REG(LOGSUMEXP, expsum, ID) RED_REG(PROD, fprod, ID)
#define RED_REG_INTEGRAL(ID, ST, CT) RED_REG(SUM, isum, ID) RED_REG(PROD, iprod, ID)
#define RED_REG_EXTREME(ID, ST, CT)                                                                                        \
    RED_REG(MIN, min, ID) RED_REG(MAX, max, ID) RED_REG(ALL, all, ID) RED_REG(ANY, any, ID)
#define RED_REG_ARG(ID, ST, CT) RED_REG(ARGMIN, argmin, ID) RED_REG(ARGMAX, argmax, ID)

static void register_reduce(mag_kernel_table_t t) {
    MAG_FLOAT_DTYPES(RED_REG_FLOAT)
    MAG_INT_DTYPES(RED_REG_INTEGRAL)
    MAG_BOOL_DTYPES(RED_REG_INTEGRAL)
    MAG_ALL_DTYPES(RED_REG_EXTREME)
    MAG_NUMERIC_DTYPES(RED_REG_ARG)
}
