/*
 * Reduction kernels (the plan they follow is in core/reduce.h).
 *
 * The kept dims of x are walked by one iterator, the reduced dims by another, both coalesced;
 * unless the op reports positions, the reduced dims are ordered by stride so the innermost row
 * is the densest. Work comes in tiles: up to RED_COLS consecutive outputs reduced side by side,
 * element by element, so that reducing a strided dim (x.sum(0) of a matrix) reads memory in
 * order and vectorises across outputs. A single output whose innermost reduced row is dense
 * instead runs a lane-parallel loop along that row. Row functions receive a state struct that
 * starts with a copy of the kernel args (the pointer mag_iter_run hands back).
 *
 * Float sums add blocks (RED_SUM_BLOCK elements in 8 lanes along a dense row, RED_TILE_BLOCK
 * per column of a tile) and push each block sum into a cascade (every RED_CASCADE_FAN sums of one
 * level make one of the next): the error grows with the log of the count, like pairwise
 * summation, so 1e8 float32 ones sum to 1e8 exactly.
 */
#include "../../core/reduce.h"
#include "lanes.h"

#include <tgmath.h>

#define RED_COLS 16     /* outputs per tile */
#define RED_ROW_MIN 32  /* a dense innermost reduced row at least this long is walked along instead */

/* ---- geometry and walking ---- */
typedef struct red_geom {
    const mag_kernel_args_t *a;
    mag_iter_t outer; /* x at the start of each unit's reduced block, one step per unit */
    mag_iter_t inner; /* the reduced block of x; base set per unit */
    int64_t n_out, n_red, chunks;
    bool tiles; /* reduce consecutive outputs side by side */
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
    g->n_out = o.numel;
    if (g->chunks > 1) { /* units run chunk by chunk, the chunks of one output sharing its base */
        memmove(o.shape + 1, o.shape, (size_t)o.rank * sizeof(int64_t));
        memmove(o.strides + 1, o.strides, (size_t)o.rank * sizeof(int64_t));
        o.shape[0] = g->chunks;
        o.strides[0] = 0;
        o.numel *= g->chunks;
        ++o.rank;
    }
    g->n_red = r.numel;
    mag_iter_init(&g->outer, &o, 0, NULL);
    mag_iter_init(&g->inner, &r, 0, NULL);
    int64_t last = g->inner.rank - 1, es = (int64_t)mag_dtype_info(x->dtype)->size;
    g->tiles = !(g->inner.strides[0][last] == es && g->inner.shape[last] >= RED_ROW_MIN);
}

/*
 * Reduce the elements [lo, hi) (one chunk) of the reduced blocks of the n consecutive units
 * u, u + 1, ... (outputs of one chunk), whose blocks start at x, x + xs, ...
 */
typedef void (*red_tile_fn)(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t xs, int64_t n, int64_t lo,
                            int64_t hi);

typedef struct red_walk {
    mag_kernel_args_t a; /* first: mag_iter_run hands &a back */
    const red_geom_t *g;
    red_tile_fn fn;
    int64_t u;
} red_walk_t;

static void red_walk_row(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {
    red_walk_t *w = (red_walk_t *)(uintptr_t)a;
    const red_geom_t *g = w->g;
    for (int64_t i = 0; i < n;) {
        int64_t c = w->u / g->n_out, o = w->u - c * g->n_out; /* a tile stays within one chunk */
        int64_t m = g->tiles ? n - i : 1;
        m = m < RED_COLS ? m : RED_COLS;
        m = m < g->n_out - o ? m : g->n_out - o;
        int64_t lo = (int64_t)((__int128)g->n_red * c / g->chunks);
        int64_t hi = (int64_t)((__int128)g->n_red * (c + 1) / g->chunks);
        w->fn(g, w->u, p[0] + i * s[0], s[0], m, lo, hi);
        w->u += m;
        i += m;
    }
}

/* This thread's share of the units. */
static void red_run(const mag_kernel_args_t *a, int64_t ti, int64_t nt, bool keep_order, red_tile_fn fn) {
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

static double red_center(const red_geom_t *g, int64_t u) {
    const mag_tensor_t *c = g->a->in[1];
    int64_t o = u % g->n_out;
    const void *v = mag_tensor_data(c);
    return c->dtype == MAG_DTYPE_FLOAT64 ? ((const double *)v)[o] : ((const float *)v)[o];
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

/* Element j of a tile row: the tile's blocks are xs bytes apart. */
#define RED_TILE_LOAD(ID, ST, xp, xs, j)                                                                               \
    ((xs) == (int64_t)sizeof(ST) ? MAG_LD_##ID(((const ST *)(xp))[j]) : mag_ew_load_##ID((xp) + (j) * (xs)))

/*
 * A dense row as compute-type values, up to RED_SUM_BLOCK at a time: 16-bit floats and booleans
 * are converted into buf first (a simple loop that vectorises), the others are read in place.
 */
#define RED_WIDEN(ID, ST, CT)                                                                                          \
    static inline const CT *red_dense_##ID(const uint8_t *xp, int64_t m, CT *buf) {                                    \
        if (sizeof(ST) == sizeof(CT) && MAG_DTYPE_##ID != MAG_DTYPE_BOOLEAN) return (const CT *)(const void *)xp;      \
        for (int64_t k = 0; k < m; ++k) buf[k] = MAG_LD_##ID(((const ST *)(const void *)xp)[k]);                       \
        return buf;                                                                                                    \
    }
MAG_ALL_DTYPES(RED_WIDEN)
#define RED_SUM_BLOCK 256

/* ---- float sums: sum, mean (x), var/std ((x - c)^2), logsumexp (exp(x - c)) ---- */
#define RED_TILE_BLOCK 16 /* a tile's blocks: each column adds them one element at a time */
#define RED_CASCADE_FAN 16
#define RED_CASCADE_DEPTH 8 /* 16 * 16^8 elements before the top level adds plainly */

#define RED_SUM_STATE(A)                                                                                               \
    typedef struct red_sum_##A {                                                                                       \
        mag_kernel_args_t a;                                                                                           \
        int64_t xs, ncols, blk_n;                                                                                      \
        int cnt[RED_CASCADE_DEPTH];                                                                                    \
        A c[RED_COLS], blk[RED_COLS], lvl[RED_CASCADE_DEPTH][RED_COLS];                                                \
    } red_sum_##A##_t;                                                                                                 \
    /* a full block goes up the cascade */                                                                             \
    static void red_sum_##A##_carry(red_sum_##A##_t *st) {                                                             \
        A *src = st->blk;                                                                                              \
        for (int l = 0; l < RED_CASCADE_DEPTH; ++l) {                                                                  \
            for (int64_t j = 0; j < st->ncols; ++j) {                                                                  \
                st->lvl[l][j] += src[j];                                                                               \
                src[j] = 0;                                                                                            \
            }                                                                                                          \
            if (l + 1 == RED_CASCADE_DEPTH || ++st->cnt[l] < RED_CASCADE_FAN) break;                                   \
            st->cnt[l] = 0;                                                                                            \
            src = st->lvl[l];                                                                                          \
        }                                                                                                              \
        st->blk_n = 0;                                                                                                 \
    }                                                                                                                  \
    static A red_sum_##A##_total(const red_sum_##A##_t *st, int64_t j) {                                               \
        A t = st->blk[j];                                                                                              \
        for (int l = 0; l < RED_CASCADE_DEPTH; ++l) t += st->lvl[l][j];                                                \
        return t;                                                                                                      \
    }
RED_SUM_STATE(float)
RED_SUM_STATE(double)

/* A: accumulator type; expr: the summand, of x (as A) and c (the output's center) */
#define RED_SUM_KERNEL(name, ID, ST, A, expr) RED_SUM_KERNEL_(name, ID, ST, A, expr) /* expands A first */
#define RED_SUM_KERNEL_(name, ID, ST, A, expr)                                                                         \
    static void row_red_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {    \
        red_sum_##A##_t *st = (red_sum_##A##_t *)(uintptr_t)a;                                                         \
        const uint8_t *xp = p[0];                                                                                      \
        if (st->ncols == 1 && s[0] == (int64_t)sizeof(ST)) { /* one dense row: 8 lanes */                              \
            const A c = st->c[0];                                                                                      \
            (void)c;                                                                                                   \
            while (n > 0) {                                                                                            \
                int64_t m = RED_SUM_BLOCK - st->blk_n, i = 0;                                                          \
                m = m < n ? m : n;                                                                                     \
                A buf[RED_SUM_BLOCK], l[8] = {0};                                                                      \
                const A *v = red_dense_##ID(xp, m, buf);                                                               \
                for (; i + 8 <= m; i += 8)                                                                             \
                    for (int j = 0; j < 8; ++j) {                                                                      \
                        A x = v[i + j];                                                                                \
                        l[j] += (expr);                                                                                \
                    }                                                                                                  \
                for (; i < m; ++i) {                                                                                   \
                    A x = v[i];                                                                                        \
                    l[i & 7] += (expr);                                                                                \
                }                                                                                                      \
                st->blk[0] += ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));                       \
                st->blk_n += m;                                                                                        \
                xp += m * s[0];                                                                                        \
                n -= m;                                                                                                \
                if (st->blk_n == RED_SUM_BLOCK) red_sum_##A##_carry(st);                                               \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        A *restrict b = st->blk;                                                                                       \
        const A *restrict cs = st->c;                                                                                  \
        for (int64_t i = 0; i < n; ++i, xp += s[0]) {                                                                  \
            for (int64_t j = 0; j < st->ncols; ++j) {                                                                  \
                A x = RED_TILE_LOAD(ID, ST, xp, st->xs, j), c = cs[j];                                                 \
                (void)c;                                                                                               \
                b[j] += (expr);                                                                                        \
            }                                                                                                          \
            if (++st->blk_n == RED_TILE_BLOCK) red_sum_##A##_carry(st);                                                \
        }                                                                                                              \
    }                                                                                                                  \
    static void tile_red_##name##_##ID(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t xs, int64_t n,        \
                                       int64_t lo, int64_t hi) {                                                       \
        red_sum_##A##_t st = {.a = *g->a, .xs = xs, .ncols = n};                                                       \
        for (int64_t j = 0; j < n && g->a->n_in > 1; ++j) st.c[j] = (A)red_center(g, u + j);                           \
        red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                         \
        for (int64_t j = 0; j < n; ++j) red_store_float(g, u + j, (double)red_sum_##A##_total(&st, j));                \
    }                                                                                                                  \
    static void k_red_##name##_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                              \
        red_run(a, ti, nt, false, tile_red_##name##_##ID);                                                             \
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
/* A: accumulator type; init: the identity; op: the new accumulator, of y (the old one) and x; store: of acc[j] */
#define RED_FOLD_KERNEL(name, ID, ST, A, init, op, store)                                                              \
    typedef struct red_##name##_##ID {                                                                                 \
        mag_kernel_args_t a;                                                                                           \
        int64_t xs, ncols;                                                                                             \
        A acc[RED_COLS];                                                                                               \
    } red_##name##_##ID##_t;                                                                                           \
    static void row_red_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {    \
        red_##name##_##ID##_t *st = (red_##name##_##ID##_t *)(uintptr_t)a;                                             \
        A *restrict acc = st->acc;                                                                                     \
        const uint8_t *xp = p[0];                                                                                      \
        for (int64_t i = 0; i < n; ++i, xp += s[0])                                                                    \
            for (int64_t j = 0; j < st->ncols; ++j) {                                                                  \
                A x = (A)RED_TILE_LOAD(ID, ST, xp, st->xs, j), y = acc[j];                                             \
                acc[j] = (op);                                                                                         \
            }                                                                                                          \
    }                                                                                                                  \
    static void tile_red_##name##_##ID(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t xs, int64_t n,        \
                                       int64_t lo, int64_t hi) {                                                       \
        red_##name##_##ID##_t st = {.a = *g->a, .xs = xs, .ncols = n};                                                 \
        for (int64_t j = 0; j < n; ++j) st.acc[j] = (init);                                                            \
        red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                         \
        for (int64_t j = 0; j < n; ++j) store;                                                                         \
    }                                                                                                                  \
    static void k_red_##name##_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                              \
        red_run(a, ti, nt, false, tile_red_##name##_##ID);                                                             \
    }

#define RED_STORE_INT64 ((int64_t *)mag_tensor_data(g->a->out))[u + j] = st.acc[j]
#define RED_FPROD(ID, ST, CT) RED_FOLD_KERNEL(fprod, ID, ST, CT, 1, y * x, red_store_float(g, u + j, st.acc[j]))
#define RED_ISUM(ID, ST, CT) RED_FOLD_KERNEL(isum, ID, ST, int64_t, 0, y + x, RED_STORE_INT64)
#define RED_IPROD(ID, ST, CT) RED_FOLD_KERNEL(iprod, ID, ST, int64_t, 1, y * x, RED_STORE_INT64)
MAG_FLOAT_DTYPES(RED_FPROD)
MAG_INT_DTYPES(RED_ISUM)
MAG_BOOL_DTYPES(RED_ISUM)
MAG_INT_DTYPES(RED_IPROD)
MAG_BOOL_DTYPES(RED_IPROD)

/* ---- min/max and argmin/argmax: NaN beats every number; the first of equal extremes wins ---- */
#define RED_BEATS_MAX(x, y) (((x) > (y)) | (((x) != (x)) & ((y) == (y))))
#define RED_BEATS_MIN(x, y) (((x) < (y)) | (((x) != (x)) & ((y) == (y))))
/* where a max (lowest) and a min (highest) start: nothing beats it, the first element ties or beats it */
#define RED_LIMITS(X)                                                                                                  \
    X(FLOAT32, float, -INFINITY, INFINITY) X(FLOAT16, float, -INFINITY, INFINITY)                                      \
    X(BFLOAT16, float, -INFINITY, INFINITY) X(FLOAT64, double, -INFINITY, INFINITY) X(BOOLEAN, bool, false, true)      \
    X(INT8, int8_t, INT8_MIN, INT8_MAX) X(UINT8, uint8_t, 0, UINT8_MAX) X(INT16, int16_t, INT16_MIN, INT16_MAX)        \
    X(UINT16, uint16_t, 0, UINT16_MAX) X(INT32, int32_t, INT32_MIN, INT32_MAX) X(UINT32, uint32_t, 0, UINT32_MAX)      \
    X(INT64, int64_t, INT64_MIN, INT64_MAX) X(UINT64, uint64_t, 0, UINT64_MAX)
#define RED_START_FNS(ID, CT, lowest, highest)                                                                         \
    static inline CT red_lowest_##ID(void) { return lowest; }                                                          \
    static inline CT red_highest_##ID(void) { return highest; }
RED_LIMITS(RED_START_FNS)

/* keep_pos: argmin/argmax, which report the flat position of the winner (reduced dims in their order) */
#define RED_EXTREME_KERNEL(name, ID, ST, CT, BEATS, start, keep_pos)                                                   \
    typedef struct red_##name##_##ID {                                                                                 \
        mag_kernel_args_t a;                                                                                           \
        int64_t xs, ncols, pos; /* pos: flat position of the next element */                                           \
        CT best[RED_COLS];                                                                                             \
        int64_t best_pos[RED_COLS];                                                                                    \
    } red_##name##_##ID##_t;                                                                                           \
    static void row_red_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {    \
        red_##name##_##ID##_t *st = (red_##name##_##ID##_t *)(uintptr_t)a;                                             \
        const uint8_t *xp = p[0];                                                                                      \
        if (!(keep_pos) && st->ncols == 1 && s[0] == (int64_t)sizeof(ST)) { /* one dense row: 8 chains */              \
            for (int64_t done = 0; done < n;) {                                                                        \
                int64_t m = n - done < RED_SUM_BLOCK ? n - done : RED_SUM_BLOCK, i = 0;                                \
                CT buf[RED_SUM_BLOCK], l[8];                                                                           \
                const CT *v = red_dense_##ID(xp + done * s[0], m, buf);                                                \
                for (int j = 0; j < 8; ++j) l[j] = start();                                                            \
                for (; i + 8 <= m; i += 8)                                                                             \
                    for (int j = 0; j < 8; ++j) l[j] = BEATS(v[i + j], l[j]) ? v[i + j] : l[j];                        \
                for (; i < m; ++i) l[0] = BEATS(v[i], l[0]) ? v[i] : l[0];                                             \
                for (int j = 0; j < 8; ++j) st->best[0] = BEATS(l[j], st->best[0]) ? l[j] : st->best[0];               \
                done += m;                                                                                             \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        CT *restrict best = st->best;                                                                                  \
        int64_t *restrict best_pos = st->best_pos;                                                                     \
        for (int64_t i = 0; i < n; ++i, xp += s[0])                                                                    \
            for (int64_t j = 0; j < st->ncols; ++j) {                                                                  \
                CT x = RED_TILE_LOAD(ID, ST, xp, st->xs, j);                                                           \
                bool win = BEATS(x, best[j]);                                                                          \
                best[j] = win ? x : best[j];                                                                           \
                if (keep_pos) best_pos[j] = win ? st->pos + i : best_pos[j];                                           \
            }                                                                                                          \
        st->pos += n;                                                                                                  \
    }                                                                                                                  \
    static void tile_red_##name##_##ID(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t xs, int64_t n,        \
                                       int64_t lo, int64_t hi) {                                                       \
        red_##name##_##ID##_t st = {.a = *g->a, .xs = xs, .ncols = n, .pos = lo};                                      \
        for (int64_t j = 0; j < n; ++j) {                                                                              \
            st.best[j] = start();                                                                                      \
            st.best_pos[j] = lo;                                                                                       \
        }                                                                                                              \
        red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                         \
        const mag_kernel_args_t *a = g->a;                                                                             \
        for (int64_t j = 0; j < n; ++j) {                                                                              \
            if (!(keep_pos)) {                                                                                         \
                ((ST *)mag_tensor_data(a->out))[u + j] = MAG_ST_##ID(st.best[j]);                                      \
                continue;                                                                                              \
            }                                                                                                          \
            ((int64_t *)mag_tensor_data(a->out))[u + j] = st.best_pos[j];                                              \
            if (a->n_in > 1) ((ST *)mag_tensor_data(a->in[1]))[u + j] = MAG_ST_##ID(st.best[j]); /* for the combine */ \
        }                                                                                                              \
    }                                                                                                                  \
    static void k_red_##name##_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                              \
        red_run(a, ti, nt, keep_pos, tile_red_##name##_##ID);                                                          \
    }

#define RED_EXTREMES(ID, ST, CT)                                                                                       \
    RED_EXTREME_KERNEL(min, ID, ST, CT, RED_BEATS_MIN, red_highest_##ID, false)                                        \
    RED_EXTREME_KERNEL(max, ID, ST, CT, RED_BEATS_MAX, red_lowest_##ID, false)
#define RED_ARGS(ID, ST, CT)                                                                                           \
    RED_EXTREME_KERNEL(argmin, ID, ST, CT, RED_BEATS_MIN, red_highest_##ID, true)                                      \
    RED_EXTREME_KERNEL(argmax, ID, ST, CT, RED_BEATS_MAX, red_lowest_##ID, true)
MAG_ALL_DTYPES(RED_EXTREMES)
MAG_NUMERIC_DTYPES(RED_ARGS)

/* ---- all/any ---- */
/* decisive: the truth value (x != 0) that settles the result: false for all, true for any */
#define RED_BOOL_KERNEL(name, ID, ST, decisive)                                                                        \
    typedef struct red_##name##_##ID {                                                                                 \
        mag_kernel_args_t a;                                                                                           \
        int64_t xs, ncols;                                                                                             \
        bool decided[RED_COLS];                                                                                        \
    } red_##name##_##ID##_t;                                                                                           \
    static void row_red_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {    \
        red_##name##_##ID##_t *st = (red_##name##_##ID##_t *)(uintptr_t)a;                                             \
        const uint8_t *xp = p[0];                                                                                      \
        if (st->ncols == 1 && s[0] == (int64_t)sizeof(ST)) { /* one dense row: blocks, stop at a decisive one */       \
            const ST *v = (const ST *)(const void *)xp;                                                                \
            for (int64_t i = 0; i < n && !st->decided[0]; i += RED_SUM_BLOCK) {                                        \
                int64_t m = n - i < RED_SUM_BLOCK ? n - i : RED_SUM_BLOCK;                                             \
                bool hit = false;                                                                                      \
                for (int64_t k = 0; k < m; ++k) hit |= (MAG_LD_##ID(v[i + k]) != 0) == (decisive);                     \
                st->decided[0] = hit;                                                                                  \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        for (int64_t i = 0; i < n && !(st->ncols == 1 && st->decided[0]); ++i, xp += s[0])                             \
            for (int64_t j = 0; j < st->ncols; ++j)                                                                    \
                st->decided[j] |= (RED_TILE_LOAD(ID, ST, xp, st->xs, j) != 0) == (decisive);                           \
    }                                                                                                                  \
    static void tile_red_##name##_##ID(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t xs, int64_t n,        \
                                       int64_t lo, int64_t hi) {                                                       \
        red_##name##_##ID##_t st = {.a = *g->a, .xs = xs, .ncols = n};                                                 \
        red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                         \
        for (int64_t j = 0; j < n; ++j) ((uint8_t *)mag_tensor_data(g->a->out))[u + j] = st.decided[j] == (decisive);  \
    }                                                                                                                  \
    static void k_red_##name##_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                              \
        red_run(a, ti, nt, false, tile_red_##name##_##ID);                                                             \
    }

#define RED_ALL_ANY(ID, ST, CT) RED_BOOL_KERNEL(all, ID, ST, false) RED_BOOL_KERNEL(any, ID, ST, true)
MAG_ALL_DTYPES(RED_ALL_ANY)

/* ---- registration ---- */
#define RED_REG(OP, name, ID) t[MAG_OP_##OP][MAG_DTYPE_##ID] = k_red_##name##_##ID;
#define RED_REG_FLOAT(ID, ST, CT)                                                                                      \
    RED_REG(SUM, fsum, ID) RED_REG(MEAN, fsum, ID) RED_REG(VAR, sqdev, ID) RED_REG(STD, sqdev, ID)                     \
    RED_REG(LOGSUMEXP, expsum, ID) RED_REG(PROD, fprod, ID)
#define RED_REG_INTEGRAL(ID, ST, CT) RED_REG(SUM, isum, ID) RED_REG(PROD, iprod, ID)
#define RED_REG_EXTREME(ID, ST, CT)                                                                                    \
    RED_REG(MIN, min, ID) RED_REG(MAX, max, ID) RED_REG(ALL, all, ID) RED_REG(ANY, any, ID)
#define RED_REG_ARG(ID, ST, CT) RED_REG(ARGMIN, argmin, ID) RED_REG(ARGMAX, argmax, ID)

static void register_reduce(mag_kernel_table_t t) {
    MAG_FLOAT_DTYPES(RED_REG_FLOAT)
    MAG_INT_DTYPES(RED_REG_INTEGRAL)
    MAG_BOOL_DTYPES(RED_REG_INTEGRAL)
    MAG_ALL_DTYPES(RED_REG_EXTREME)
    MAG_NUMERIC_DTYPES(RED_REG_ARG)
}
