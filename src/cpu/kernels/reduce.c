/*
 * Reduction kernels (the plan they follow is in core/reduce.h).
 *
 * The kept dims of x are walked by one iterator, the reduced dims by another, both coalesced;
 * unless the op reports positions, the reduced dims are ordered by stride so the innermost row
 * is the densest. Work comes in tiles: up to RED_COLS consecutive outputs reduced side by side,
 * so that reducing a strided dim (x.sum(0) of a matrix) reads memory in order and runs SIMD
 * across the outputs, RED_TILE_ROWS tile rows per pass over the running values (one load and
 * store of them per pass, not per row). A single output whose innermost reduced row is dense
 * instead runs SIMD along that row. Either way 16-bit floats are converted in registers
 * (blocks.h); strided tile rows are gathered into a buffer first. Row functions receive a
 * state struct that starts with a copy of the kernel args (the pointer mag_iter_run hands back);
 * only its first ncols columns are ever initialised.
 *
 * Float sums add blocks (RED_BLOCK elements of a dense row in SIMD lanes, RED_TILE_BLOCK rows
 * per column of a tile) and push each block sum into a cascade (every RED_CASCADE_FAN sums of
 * one level make one of the next): the error grows with the log of the count, like pairwise
 * summation, so 1e8 float32 ones sum to 1e8 exactly. min/max propagate NaN and argmin/argmax
 * report the first extreme (NaN counting as the most extreme), like torch.
 */
#include "../../core/reduce.h"
#include "blocks.h"

#include <tgmath.h>

#define RED_COLS 1024   /* outputs per tile: a tile row of float32 spans 4 KiB */
#define RED_ROW_MIN 32  /* a dense innermost reduced row at least this long is walked along instead */
#define RED_BLOCK 1024  /* elements of a dense row per SIMD step */
#define RED_TILE_ROWS 4 /* tile rows combined per pass over the tile's running values */
#define RED_SPAN 32     /* whole blocks of a dense row summed as two streams half of them apart (128 KiB of f32) */

/* ---- geometry and walking ---- */
typedef struct red_geom {
    const mag_kernel_args_t *a;
    mag_iter_t outer; /* x at the start of each unit's reduced block, one step per unit */
    mag_iter_t inner; /* the reduced block of x; base set per unit */
    int64_t n_out, n_red, chunks;
    bool tiles; /* reduce consecutive outputs side by side */
    /* read once per share, not once per output: what a float result is finished with and where it goes */
    uint8_t *out;
    void *in1; /* in[1]'s data when the op has one: the sums' centers, the values an arg reduction leaves its combine */
    int64_t post;
    double post_arg;
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
    g->out = mag_tensor_data(a->out);
    g->in1 = a->n_in > 1 ? mag_tensor_data(a->in[1]) : NULL;
    g->post = mag_scalar_as_int(a->attrs[MAG_RED_POST]);
    g->post_arg = mag_scalar_as_double(a->attrs[MAG_RED_ARG]);
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
        /* one chunk (the usual case) needs no divisions (one per output: 32768x32 sum(-1) 7.3 -> 5.9 ns a row) */
        int64_t o = w->u, lo = 0, hi = g->n_red;
        if (g->chunks > 1) {
            int64_t c = w->u / g->n_out; /* a tile stays within one chunk */
            o = w->u - c * g->n_out;
            lo = (int64_t)((__int128)g->n_red * c / g->chunks);
            hi = (int64_t)((__int128)g->n_red * (c + 1) / g->chunks);
        }
        int64_t m = g->tiles ? n - i : 1;
        m = m < RED_COLS ? m : RED_COLS;
        m = m < g->n_out - o ? m : g->n_out - o;
        w->fn(g, w->u, p[0] + i * s[0], s[0], m, lo, hi);
        w->u += m;
        i += m;
    }
}

/* The units this thread claims. */
static void red_run(const mag_kernel_args_t *a, int64_t ti, int64_t nt, bool keep_order, red_tile_fn fn) {
    red_geom_t g;
    (void)ti;
    red_geom_init(&g, a, keep_order);
    int64_t b, e;
    red_walk_t w = {.a = *a, .g = &g, .fn = fn};
    while (mag_claim_items(a, g.outer.numel, nt, g.n_red / g.chunks, &b, &e)) {
        w.u = b;
        mag_iter_run(&g.outer, b, e, red_walk_row, &w.a);
    }
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

/* A tile of one output whose reduced elements are one contiguous row of es-byte values. */
static bool red_one_dense_row(const red_geom_t *g, int64_t n, size_t es) {
    return n == 1 && g->inner.rank == 1 && g->inner.strides[0][0] == (int64_t)es;
}

static double red_center(const red_geom_t *g, int64_t u) {
    int64_t o = u % g->n_out;
    return g->a->in[1]->dtype == MAG_DTYPE_FLOAT64 ? ((const double *)g->in1)[o] : ((const float *)g->in1)[o];
}

/* A float result: finished by the plan's step when no chunks are pending, stored in out's dtype. */
static void red_store_float(const red_geom_t *g, int64_t u, double v) {
    if (g->chunks == 1) {
        switch (g->post) {
        case MAG_RED_POST_DIV: v /= g->post_arg; break;
        case MAG_RED_POST_DIV_SQRT: v = sqrt(v / g->post_arg); break;
        case MAG_RED_POST_LOG_ADD: v = log(v) + red_center(g, u); break;
        default: break;
        }
    }
    void *o = g->out;
    switch (g->a->out->dtype) {
    case MAG_DTYPE_FLOAT64: ((double *)o)[u] = v; break;
    case MAG_DTYPE_FLOAT16: ((uint16_t *)o)[u] = mag_f32_to_f16((float)v); break;
    case MAG_DTYPE_BFLOAT16: ((uint16_t *)o)[u] = mag_f32_to_bf16((float)v); break;
    default: ((float *)o)[u] = (float)v; break;
    }
}

/* Element j of a tile row: the tile's blocks are xs bytes apart. */
#define RED_TILE_LOAD(ID, ST, xp, xs, j)                                                                               \
    ((xs) == (int64_t)sizeof(ST) ? MAG_LD_##ID(((const ST *)(xp))[j]) : mag_ew_load_##ID((xp) + (j) * (xs)))

/* The n values of one tile row as compute-type values: in place, converted or gathered into buf. */
#define RED_TILE_VALS(ID, ST, CT)                                                                                      \
    static inline const CT *red_tile_vals_##ID(const uint8_t *xp, int64_t xs, int64_t n, CT *buf) {                    \
        if (xs == (int64_t)sizeof(ST)) return mag_block_view_##ID(xp, n, buf);                                         \
        for (int64_t j = 0; j < n; ++j) buf[j] = mag_ew_load_##ID(xp + j * xs);                                        \
        return buf;                                                                                                    \
    }
MAG_ALL_DTYPES(RED_TILE_VALS)

/* ---- float sums: sum, mean (x), var/std ((x - c)^2), logsumexp (exp(x - c)) ---- */
#define RED_TILE_BLOCK 16 /* a tile's blocks: each column adds them one element at a time */
#define RED_CASCADE_FAN 16
#define RED_CASCADE_DEPTH 6 /* 16^6 blocks before the top level adds plainly */

#define RED_SUM_STATE(A)                                                                                               \
    typedef struct red_sum_##A {                                                                                       \
        mag_kernel_args_t a;                                                                                           \
        int64_t xs, ncols, blk_n;                                                                                      \
        int depth, cnt[RED_CASCADE_DEPTH]; /* depth: levels in use (and initialised) */                                \
        A c[RED_COLS], blk[RED_COLS], lvl[RED_CASCADE_DEPTH][RED_COLS];                                                \
    } red_sum_##A##_t;                                                                                                 \
    static void red_sum_##A##_init(red_sum_##A##_t *st, const red_geom_t *g, int64_t u, int64_t xs, int64_t n) {       \
        st->a = *g->a;                                                                                                 \
        st->xs = xs, st->ncols = n, st->blk_n = 0, st->depth = 0;                                                      \
        memset(st->cnt, 0, sizeof(st->cnt));                                                                           \
        for (int64_t j = 0; j < n; ++j) {                                                                              \
            st->blk[j] = 0;                                                                                            \
            st->c[j] = g->a->n_in > 1 ? (A)red_center(g, u + j) : 0;                                                   \
        }                                                                                                              \
    }                                                                                                                  \
    /* a full block goes up the cascade */                                                                             \
    static void red_sum_##A##_carry(red_sum_##A##_t *st) {                                                             \
        A *restrict src = st->blk;                                                                                     \
        for (int l = 0; l < RED_CASCADE_DEPTH; ++l) {                                                                  \
            A *restrict dst = st->lvl[l];                                                                              \
            bool fresh = l == st->depth;                                                                               \
            st->depth += fresh;                                                                                        \
            for (int64_t j = 0; j < st->ncols; ++j) {                                                                  \
                dst[j] = fresh ? src[j] : dst[j] + src[j];                                                             \
                src[j] = 0;                                                                                            \
            }                                                                                                          \
            if (l + 1 == RED_CASCADE_DEPTH || ++st->cnt[l] < RED_CASCADE_FAN) break;                                   \
            st->cnt[l] = 0;                                                                                            \
            src = dst;                                                                                                 \
        }                                                                                                              \
        st->blk_n = 0;                                                                                                 \
    }                                                                                                                  \
    static A red_sum_##A##_total(const red_sum_##A##_t *st, int64_t j) {                                               \
        A t = st->blk[j];                                                                                              \
        for (int l = 0; l < st->depth; ++l) t += st->lvl[l][j];                                                        \
        return t;                                                                                                      \
    }
RED_SUM_STATE(float)
RED_SUM_STATE(double)

/*
 * k tile rows (LID values at rows[r]) added into the tile's block sums: SIMD across the columns,
 * the k rows summed first so the running sums are loaded and stored once per k rows.
 */
#define RED_SUM_TILE(A, LID, rows, k, st, expr, vexpr, pre) RED_SUM_TILE_(A, LID, rows, k, st, expr, vexpr, pre)
#define RED_SUM_TILE_(A, LID, rows, k, st, expr, vexpr, pre)                                                           \
    do {                                                                                                               \
        typedef A vec_t __attribute__((vector_size(MAG_VBYTES)));                                                      \
        enum { L = MAG_VBYTES / sizeof(A) };                                                                           \
        int64_t j = 0;                                                                                                 \
        for (; !(pre) && j + L <= (st)->ncols; j += L) {                                                               \
            vec_t x, c, acc, t;                                                                                        \
            MAG_VLOAD(c, (st)->c + j);                                                                                 \
            MAG_VLOAD_##LID(x, rows[0] + j);                                                                           \
            t = (vexpr);                                                                                               \
            for (int64_t r = 1; r < (k); ++r) {                                                                        \
                MAG_VLOAD_##LID(x, rows[r] + j);                                                                       \
                t += (vexpr);                                                                                          \
            }                                                                                                          \
            MAG_VLOAD(acc, (st)->blk + j);                                                                             \
            acc += t;                                                                                                  \
            MAG_VSTORE((st)->blk + j, acc);                                                                            \
        }                                                                                                              \
        for (; j < (st)->ncols; ++j)                                                                                   \
            for (int64_t r = 0; r < (k); ++r) {                                                                        \
                A x = MAG_LD_##LID(rows[r][j]), c = (st)->c[j];                                                        \
                (void)c;                                                                                               \
                (st)->blk[j] += (expr);                                                                                \
            }                                                                                                          \
    } while (0)

/* the dtype of a buffer of accumulators */
#define RED_AID_float FLOAT32
#define RED_AID_double FLOAT64

/*
 * A: accumulator type; expr: the summand, of x (as A) and c (the output's center); vexpr: the
 * same in SIMD lanes (x a vector, c a scalar or a vector); pre: 1 when expr has no vector form,
 * so dense blocks are mapped through expr into a buffer first (vexpr just adds) and tiles loop.
 */
#define RED_SUM_KERNEL(name, ID, ST, A, expr, vexpr, pre) RED_SUM_KERNEL_(name, ID, ST, A, expr, vexpr, pre)
#define RED_SUM_KERNEL_(name, ID, ST, A, expr, vexpr, pre)                                                             \
    /* The sums of n whole blocks from v. With two streams, block b and block b + h (h: half of them) are summed   \
       side by side, which one core reads faster than one stream; an odd last block alone. Each sum keeps its bits. */ \
    static void red_##name##_##ID##_blocks(const ST *v, int64_t n, bool two_streams, A c, A *sums) {                   \
        (void)c;                                                                                                       \
        const int64_t h = two_streams ? n / 2 : 0;                                                                     \
        for (int64_t b = 0; b < h; ++b) {                                                                              \
            A two[2];                                                                                                  \
            MAG_VSUM_STREAMS(A, ID, 2, v + b * RED_BLOCK, h * RED_BLOCK, RED_BLOCK, vexpr, two);                       \
            sums[b] = two[0], sums[b + h] = two[1];                                                                    \
        }                                                                                                              \
        for (int64_t b = 2 * h; b < n; ++b) MAG_VSUM(A, ID, v + b * RED_BLOCK, RED_BLOCK, vexpr, sums[b]);             \
    }                                                                                                                  \
    /* An even number (<= RED_SPAN) of whole blocks of a dense row from v, their sums carried in order. Returns the    \
       elements taken. */                                                                                              \
    static int64_t red_##name##_##ID##_span(red_sum_##A##_t *st, const ST *v, int64_t n) {                             \
        const int64_t span = (n / RED_BLOCK < RED_SPAN ? n / RED_BLOCK : RED_SPAN) / 2 * 2;                            \
        A sums[RED_SPAN];                                                                                              \
        red_##name##_##ID##_blocks(v, span, true, st->c[0], sums);                                                     \
        for (int64_t b = 0; b < span; ++b) {                                                                           \
            st->blk[0] += sums[b];                                                                                     \
            red_sum_##A##_carry(st);                                                                                   \
        }                                                                                                              \
        return span * RED_BLOCK;                                                                                       \
    }                                                                                                                  \
    static void row_red_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {    \
        red_sum_##A##_t *st = (red_sum_##A##_t *)(uintptr_t)a;                                                         \
        const uint8_t *xp = p[0];                                                                                      \
        A buf[RED_TILE_ROWS * RED_COLS]; /* >= RED_BLOCK */                                                            \
        if (st->ncols == 1 && s[0] == (int64_t)sizeof(ST)) { /* one dense row: SIMD blocks */                          \
            const A c = st->c[0];                                                                                      \
            (void)c;                                                                                                   \
            while (n > 0) {                                                                                            \
                if (!(pre) && st->blk_n == 0 && n >= 2 * RED_BLOCK) { /* whole blocks: two streams */                  \
                    int64_t took = red_##name##_##ID##_span(st, (const ST *)(const void *)xp, n);                      \
                    xp += took * s[0];                                                                                 \
                    n -= took;                                                                                         \
                    continue;                                                                                          \
                }                                                                                                      \
                int64_t m = RED_BLOCK - st->blk_n;                                                                     \
                m = m < n ? m : n;                                                                                     \
                const ST *v = (const ST *)(const void *)xp;                                                            \
                A t;                                                                                                   \
                if (pre) {                                                                                             \
                    for (int64_t k = 0; k < m; ++k) {                                                                  \
                        A x = MAG_LD_##ID(v[k]);                                                                       \
                        buf[k] = (expr);                                                                               \
                    }                                                                                                  \
                    MAG_VSUM(A, RED_AID_##A, buf, m, x, t);                                                            \
                } else {                                                                                               \
                    MAG_VSUM(A, ID, v, m, vexpr, t);                                                                   \
                }                                                                                                      \
                st->blk[0] += t;                                                                                       \
                st->blk_n += m;                                                                                        \
                xp += m * s[0];                                                                                        \
                n -= m;                                                                                                \
                if (st->blk_n == RED_BLOCK) red_sum_##A##_carry(st);                                                   \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        for (int64_t i = 0, k; i < n; i += k, xp += k * s[0]) { /* up to RED_TILE_ROWS rows of the tile */             \
            k = RED_TILE_BLOCK - st->blk_n;                                                                            \
            k = k < RED_TILE_ROWS ? k : RED_TILE_ROWS;                                                                 \
            k = k < n - i ? k : n - i;                                                                                 \
            if (st->xs == (int64_t)sizeof(ST)) { /* rows read in place */                                              \
                const ST *rows[RED_TILE_ROWS];                                                                         \
                for (int64_t r = 0; r < k; ++r) rows[r] = (const ST *)(const void *)(xp + r * s[0]);                   \
                RED_SUM_TILE(A, ID, rows, k, st, expr, vexpr, pre);                                                    \
            } else { /* rows gathered */                                                                               \
                const A *rows[RED_TILE_ROWS];                                                                          \
                for (int64_t r = 0; r < k; ++r)                                                                        \
                    rows[r] = red_tile_vals_##ID(xp + r * s[0], st->xs, st->ncols, buf + r * RED_COLS);                \
                RED_SUM_TILE(A, RED_AID_##A, rows, k, st, expr, vexpr, pre);                                           \
            }                                                                                                          \
            if ((st->blk_n += k) == RED_TILE_BLOCK) red_sum_##A##_carry(st);                                           \
        }                                                                                                              \
    }                                                                                                                  \
    static __attribute__((noinline)) void tile_sum_##name##_##ID(const red_geom_t *g, int64_t u, const uint8_t *x,    \
                                                                 int64_t xs, int64_t n, int64_t lo, int64_t hi) {      \
        red_sum_##A##_t st;                                                                                            \
        red_sum_##A##_init(&st, g, u, xs, n);                                                                          \
        red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                         \
        for (int64_t j = 0; j < n; ++j) red_store_float(g, u + j, (double)red_sum_##A##_total(&st, j));                \
    }                                                                                                                  \
    /* A dense row of fewer than 16 blocks (a short last dim): the block sums added as the cascade adds them           \
       (each block 0 + t, level 0 taken then added to, the total blk + level 0), without the cascade's state */        \
    static void tile_red_##name##_##ID(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t xs, int64_t n,        \
                                       int64_t lo, int64_t hi) {                                                       \
        if (pre || !red_one_dense_row(g, n, sizeof(ST)) || hi - lo >= RED_CASCADE_FAN * RED_BLOCK) {                   \
            tile_sum_##name##_##ID(g, u, x, xs, n, lo, hi);                                                            \
            return;                                                                                                    \
        }                                                                                                              \
        const A c = g->a->n_in > 1 ? (A)red_center(g, u) : 0;                                                          \
        const ST *v = (const ST *)(const void *)x + lo;                                                                \
        const int64_t len = hi - lo, full = len / RED_BLOCK;                                                           \
        A level0 = 0, blk = 0, t, sums[RED_CASCADE_FAN];                                                               \
        /* a short row of 16-bit values reads faster as one stream (Zen 3, bfloat16 4096 x 4096 sum(-1):               \
           1.36-1.52 of torch as one, 0.90-1.14 as two; float32 1.0 -> 1.08-1.21 as two) */                            \
        red_##name##_##ID##_blocks(v, full, sizeof(ST) >= 4, c, sums);                                                 \
        for (int64_t b = 0; b < full; ++b) level0 = b ? level0 + ((A)0 + sums[b]) : (A)0 + sums[b];                    \
        if (len > full * RED_BLOCK) {                                                                                  \
            MAG_VSUM(A, ID, v + full * RED_BLOCK, len - full * RED_BLOCK, vexpr, t);                                   \
            blk = (A)0 + t;                                                                                            \
        }                                                                                                              \
        red_store_float(g, u, (double)(full ? blk + level0 : blk));                                                    \
    }                                                                                                                  \
    static void k_red_##name##_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                              \
        red_run(a, ti, nt, false, tile_red_##name##_##ID);                                                             \
    }

/* 16-bit floats accumulate in float32 like float32 itself; float64 in float64 */
#define RED_ACC_FLOAT32 float
#define RED_ACC_FLOAT16 float
#define RED_ACC_BFLOAT16 float
#define RED_ACC_FLOAT64 double
#define RED_FSUM(ID, ST, CT) RED_SUM_KERNEL(fsum, ID, ST, RED_ACC_##ID, x, x, 0)
#define RED_SQDEV(ID, ST, CT) RED_SUM_KERNEL(sqdev, ID, ST, RED_ACC_##ID, (x - c) * (x - c), (x - c) * (x - c), 0)
#define RED_EXPSUM(ID, ST, CT) RED_SUM_KERNEL(expsum, ID, ST, RED_ACC_##ID, exp(x - c), x, 1)
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
        red_##name##_##ID##_t st;                                                                                      \
        st.a = *g->a, st.xs = xs, st.ncols = n;                                                                        \
        for (int64_t j = 0; j < n; ++j) st.acc[j] = (init);                                                            \
        red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                         \
        for (int64_t j = 0; j < n; ++j) store;                                                                         \
    }                                                                                                                  \
    static void k_red_##name##_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                              \
        red_run(a, ti, nt, false, tile_red_##name##_##ID);                                                             \
    }

#define RED_STORE_INT64 ((int64_t *)(void *)g->out)[u + j] = st.acc[j]
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
#define RED_GT_MAX(x, y) ((x) > (y))
#define RED_GT_MIN(x, y) ((x) < (y))
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

/*
 * SIMD extremes, read straight from storage: X(ID, storage, compute type, I) where I is the signed
 * integer of the compute type's width (the lane masks). The value form keeps a NaN once a lane
 * has seen one: x replaces the lane's best when it is greater or NaN, nothing is greater than NaN.
 */
#define RED_SIMD_DTYPES(X)                                                                                             \
    X(FLOAT32, float, float, int32_t) X(FLOAT16, uint16_t, float, int32_t) X(BFLOAT16, uint16_t, float, int32_t)       \
    X(FLOAT64, double, double, int64_t) X(INT8, int8_t, int8_t, int8_t) X(UINT8, uint8_t, uint8_t, int8_t)             \
    X(INT16, int16_t, int16_t, int16_t) X(UINT16, uint16_t, uint16_t, int16_t) X(INT32, int32_t, int32_t, int32_t)     \
    X(UINT32, uint32_t, uint32_t, int32_t) X(INT64, int64_t, int64_t, int64_t) X(UINT64, uint64_t, uint64_t, int64_t)
#define RED_VSEL(x, b, w) (__typeof__(b))(((__typeof__(w))(x) & (w)) | ((__typeof__(w))(b) & ~(w)))

/*
 * The extreme of best and the m values at src: four plain running extremes, with any NaN only
 * noted on the way (off the extremes' dependency chains); the rare block that holds one is then
 * walked again to return its first NaN.
 */
#define RED_VEXT_FNS(ID, ST, CT, I, dir)                                                                               \
    static CT red_vext_##dir##_##ID(const ST *src, int64_t m, CT best) {                                               \
        typedef CT vec_t __attribute__((vector_size(MAG_VBYTES)));                                                     \
        typedef I mask_t __attribute__((vector_size(MAG_VBYTES)));                                                     \
        enum { L = MAG_VBYTES / sizeof(CT) };                                                                          \
        vec_t b[4], x[4];                                                                                              \
        mask_t nan = {0};                                                                                              \
        for (int u = 0; u < 4; ++u) b[u] = (vec_t){0} + best;                                                          \
        int64_t i = 0;                                                                                                 \
        for (; i + 4 * L <= m; i += 4 * L) /* unrolled, so b and x stay in registers (not spilled in halves) */        \
            _Pragma("GCC unroll 4") for (int u = 0; u < 4; ++u) {                                                      \
                MAG_AHEAD(src + i + u * L, u * L * sizeof(ST));                                                        \
                MAG_VLOAD_##ID(x[u], src + i + u * L);                                                                 \
                b[u] = RED_VSEL(x[u], b[u], RED_GT_##dir(x[u], b[u]));                                                 \
                nan |= x[u] != x[u];                                                                                   \
            }                                                                                                          \
        for (; i + L <= m; i += L) { /* what is left in whole vectors (all of a short row) */                          \
            MAG_VLOAD_##ID(x[0], src + i);                                                                             \
            b[0] = RED_VSEL(x[0], b[0], RED_GT_##dir(x[0], b[0]));                                                     \
            nan |= x[0] != x[0];                                                                                       \
        }                                                                                                              \
        uint64_t w[MAG_VBYTES / 8], any = 0;                                                                           \
        MAG_VSTORE(w, nan);                                                                                            \
        for (int k = 0; k < MAG_VBYTES / 8; ++k) any |= w[k];                                                          \
        if (any) {                                                                                                     \
            i = 0;                                                                                                     \
        } else if (i > 0) {                                                                                            \
            for (int u = 0; u < 2; ++u) b[u] = RED_VSEL(b[u + 2], b[u], RED_GT_##dir(b[u + 2], b[u]));                 \
            b[0] = RED_VSEL(b[1], b[0], RED_GT_##dir(b[1], b[0]));                                                     \
            CT l[L];                                                                                                   \
            MAG_VSTORE(l, b[0]);                                                                                       \
            for (int k = 0; k < L; ++k) best = RED_GT_##dir(l[k], best) ? l[k] : best; /* l holds no NaN */          \
        }                                                                                                              \
        for (; i < m; ++i) {                                                                                           \
            CT v = MAG_LD_##ID(src[i]);                                                                                \
            best = RED_BEATS_##dir(v, best) ? v : best;                                                                \
        }                                                                                                              \
        return best;                                                                                                   \
    }                                                                                                                  \
    /* k tile rows of n values each folded into the n running extremes */                                              \
    static void red_vtile_##dir##_##ID(const ST *const *rows, int64_t k, CT *best, int64_t n) {                        \
        typedef CT vec_t __attribute__((vector_size(MAG_VBYTES)));                                                     \
        typedef I mask_t __attribute__((vector_size(MAG_VBYTES)));                                                     \
        enum { L = MAG_VBYTES / sizeof(CT) };                                                                          \
        int64_t j = 0;                                                                                                 \
        for (; j + L <= n; j += L) {                                                                                   \
            vec_t x, b;                                                                                                \
            MAG_VLOAD(b, best + j);                                                                                    \
            for (int64_t r = 0; r < k; ++r) {                                                                          \
                MAG_VLOAD_##ID(x, rows[r] + j);                                                                        \
                mask_t w = RED_GT_##dir(x, b) | (x != x);                                                              \
                b = RED_VSEL(x, b, w);                                                                                 \
            }                                                                                                          \
            MAG_VSTORE(best + j, b);                                                                                   \
        }                                                                                                              \
        for (; j < n; ++j)                                                                                             \
            for (int64_t r = 0; r < k; ++r) {                                                                          \
                CT x = MAG_LD_##ID(rows[r][j]);                                                                        \
                best[j] = RED_BEATS_##dir(x, best[j]) ? x : best[j];                                                   \
            }                                                                                                          \
    }
#define RED_VEXT_BOTH(ID, ST, CT, I) RED_VEXT_FNS(ID, ST, CT, I, MAX) RED_VEXT_FNS(ID, ST, CT, I, MIN)
RED_SIMD_DTYPES(RED_VEXT_BOTH)

/*
 * The arg form folds m dense values (the first at flat position pos) into the running winner
 * (*best, *pos_best): each lane keeps its first winner and its index (relative, so m < 2^31
 * for 32-bit lanes), the lanes then pick the winner with the smallest index, and the running
 * winner yields only to a strictly better one.
 */
#define RED_VARG_FNS(ID, ST, CT, I, dir)                                                                               \
    static void red_varg_##dir##_##ID(const ST *src, int64_t m, int64_t pos, CT *best, int64_t *pos_best) {            \
        typedef CT vec_t __attribute__((vector_size(MAG_VBYTES)));                                                     \
        typedef I mask_t __attribute__((vector_size(MAG_VBYTES)));                                                     \
        enum { L = MAG_VBYTES / sizeof(CT) };                                                                          \
        int64_t i = 0;                                                                                                 \
        if (m >= L) {                                                                                                  \
            vec_t b, x;                                                                                                \
            mask_t bi, cur;                                                                                            \
            MAG_VLOAD_##ID(b, src);                                                                                    \
            for (int k = 0; k < L; ++k) bi[k] = (I)k;                                                                  \
            cur = bi;                                                                                                  \
            for (i = L; i + L <= m; i += L) {                                                                          \
                MAG_VLOAD_##ID(x, src + i);                                                                            \
                cur += (I)L;                                                                                           \
                mask_t w = RED_BEATS_##dir(x, b);                                                                      \
                b = RED_VSEL(x, b, w);                                                                                 \
                bi = (cur & w) | (bi & ~w);                                                                            \
            }                                                                                                          \
            /* lanes read by subscript: copying b and bi out to arrays kept both in memory through the loop above      \
               (GCC 12, with a second call site: 8192x128 f32 argmax(-1) 105 against 67-72 ns) */                      \
            CT wv = b[0];                                                                                              \
            I wi = bi[0];                                                                                              \
            for (int k = 1; k < L; ++k)                                                                                \
                if (RED_BEATS_##dir(b[k], wv) || (!RED_BEATS_##dir(wv, b[k]) && bi[k] < wi)) wv = b[k], wi = bi[k];    \
            if (RED_BEATS_##dir(wv, *best)) *best = wv, *pos_best = pos + wi;                                          \
        }                                                                                                              \
        for (; i < m; ++i) {                                                                                           \
            CT x = MAG_LD_##ID(src[i]);                                                                                \
            if (RED_BEATS_##dir(x, *best)) *best = x, *pos_best = pos + i;                                             \
        }                                                                                                              \
    }
#define RED_VARG_BOTH(ID, ST, CT)                                                                                      \
    RED_VARG_FNS(ID, ST, CT, RED_LANE_INT_##ID, MAX) RED_VARG_FNS(ID, ST, CT, RED_LANE_INT_##ID, MIN)
#define RED_LANE_INT_FLOAT32 int32_t
#define RED_LANE_INT_FLOAT16 int32_t
#define RED_LANE_INT_BFLOAT16 int32_t
#define RED_LANE_INT_FLOAT64 int64_t
MAG_FLOAT_DTYPES(RED_VARG_BOTH)

/*
 * VX, how a kernel walks: VAL/ARG (the value/arg form of a SIMD dtype) run dense rows through
 * the SIMD helpers; VAL also tiles whose rows are read in place. SVAL/SARG (booleans; integer
 * argmin/argmax) and the rest loop over the tile columns.
 */
#define RED_DENSE_VAL(dir, ID, v, m, pos, st) (st)->best[0] = red_vext_##dir##_##ID(v, m, (st)->best[0])
#define RED_DENSE_ARG(dir, ID, v, m, pos, st) red_varg_##dir##_##ID(v, m, pos, &(st)->best[0], &(st)->best_pos[0])
#define RED_DENSE_SVAL(dir, ID, v, m, pos, st) (void)(v)
#define RED_DENSE_SARG RED_DENSE_SVAL
#define RED_VTILE_VAL(dir, ID, rows, k, st) red_vtile_##dir##_##ID(rows, k, (st)->best, (st)->ncols)
#define RED_VTILE_ARG(dir, ID, rows, k, st) (void)(rows)
#define RED_VTILE_SVAL RED_VTILE_ARG
#define RED_VTILE_SARG RED_VTILE_ARG
#define RED_HAS_DENSE_VAL 1
#define RED_HAS_DENSE_ARG 1
#define RED_HAS_DENSE_SVAL 0
#define RED_HAS_DENSE_SARG 0
#define RED_HAS_VTILE_VAL 1
#define RED_HAS_VTILE_ARG 0
#define RED_HAS_VTILE_SVAL 0
#define RED_HAS_VTILE_SARG 0
#define RED_DENSE_SPAN (INT64_C(1) << 24) /* elements per dense SIMD call */

/* keep_pos: argmin/argmax, which report the flat position of the winner (reduced dims in their order) */
#define RED_EXTREME_KERNEL(name, ID, ST, CT, dir, keep_pos, VX)                                                        \
    typedef struct red_##name##_##ID {                                                                                 \
        mag_kernel_args_t a;                                                                                           \
        int64_t xs, ncols, pos; /* pos: flat position of the next element */                                           \
        CT best[RED_COLS];                                                                                             \
        int64_t best_pos[RED_COLS];                                                                                    \
    } red_##name##_##ID##_t;                                                                                           \
    static void row_red_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {    \
        red_##name##_##ID##_t *st = (red_##name##_##ID##_t *)(uintptr_t)a;                                             \
        const uint8_t *xp = p[0];                                                                                      \
        if (RED_HAS_DENSE_##VX && st->ncols == 1 && s[0] == (int64_t)sizeof(ST)) { /* one dense row */                 \
            for (int64_t done = 0; done < n;) {                                                                        \
                int64_t m = n - done < RED_DENSE_SPAN ? n - done : RED_DENSE_SPAN;                                     \
                RED_DENSE_##VX(dir, ID, (const ST *)(const void *)xp + done, m, st->pos + done, st);                   \
                done += m;                                                                                             \
            }                                                                                                          \
            st->pos += n;                                                                                              \
            return;                                                                                                    \
        }                                                                                                              \
        CT buf[RED_TILE_ROWS * RED_COLS];                                                                              \
        for (int64_t i = 0, k; i < n; i += k, xp += k * s[0]) {                                                        \
            k = n - i < RED_TILE_ROWS ? n - i : RED_TILE_ROWS;                                                         \
            if (RED_HAS_VTILE_##VX && st->xs == (int64_t)sizeof(ST)) { /* rows read in place */                        \
                const ST *rows[RED_TILE_ROWS];                                                                         \
                for (int64_t r = 0; r < k; ++r) rows[r] = (const ST *)(const void *)(xp + r * s[0]);                   \
                RED_VTILE_##VX(dir, ID, rows, k, st);                                                                  \
                continue;                                                                                              \
            }                                                                                                          \
            for (int64_t r = 0; r < k; ++r) {                                                                          \
                const CT *v = red_tile_vals_##ID(xp + r * s[0], st->xs, st->ncols, buf);                               \
                for (int64_t j = 0; j < st->ncols; ++j) {                                                              \
                    bool win = RED_BEATS_##dir(v[j], st->best[j]);                                                     \
                    st->best[j] = win ? v[j] : st->best[j];                                                            \
                    if (keep_pos) st->best_pos[j] = win ? st->pos + i + r : st->best_pos[j];                           \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
        st->pos += n;                                                                                                  \
    }                                                                                                                  \
    static void tile_red_##name##_##ID(const red_geom_t *g, int64_t u, const uint8_t *x, int64_t xs, int64_t n,        \
                                       int64_t lo, int64_t hi) {                                                       \
        red_##name##_##ID##_t st;                                                                                      \
        for (int64_t j = 0; j < n; ++j) {                                                                              \
            st.best[j] = RED_START_##dir(ID);                                                                          \
            st.best_pos[j] = lo;                                                                                       \
        }                                                                                                              \
        if (RED_HAS_DENSE_##VX && red_one_dense_row(g, n, sizeof(ST)) && hi - lo <= RED_DENSE_SPAN) {                  \
            /* one dense row (a short last dim): straight to the SIMD helper */                                        \
            RED_DENSE_##VX(dir, ID, (const ST *)(const void *)x + lo, hi - lo, lo, &st);                               \
        } else {                                                                                                       \
            st.a = *g->a, st.xs = xs, st.ncols = n, st.pos = lo;                                                       \
            red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                     \
        }                                                                                                              \
        const mag_kernel_args_t *a = g->a;                                                                             \
        for (int64_t j = 0; j < n; ++j) {                                                                              \
            if (!(keep_pos)) {                                                                                         \
                ((ST *)(void *)g->out)[u + j] = MAG_ST_##ID(st.best[j]);                                               \
                continue;                                                                                              \
            }                                                                                                          \
            ((int64_t *)(void *)g->out)[u + j] = st.best_pos[j];                                                       \
            if (a->n_in > 1) ((ST *)g->in1)[u + j] = MAG_ST_##ID(st.best[j]); /* for the combine */                   \
        }                                                                                                              \
    }                                                                                                                  \
    static void k_red_##name##_##ID(const mag_kernel_args_t *a, int64_t ti, int64_t nt) {                              \
        red_run(a, ti, nt, keep_pos, tile_red_##name##_##ID);                                                          \
    }
#define RED_START_MAX(ID) red_lowest_##ID()
#define RED_START_MIN(ID) red_highest_##ID()

#define RED_EXTREMES_(ID, ST, CT, VX)                                                                                  \
    RED_EXTREME_KERNEL(min, ID, ST, CT, MIN, false, VX) RED_EXTREME_KERNEL(max, ID, ST, CT, MAX, false, VX)
#define RED_ARGS_(ID, ST, CT, VX)                                                                                      \
    RED_EXTREME_KERNEL(argmin, ID, ST, CT, MIN, true, VX) RED_EXTREME_KERNEL(argmax, ID, ST, CT, MAX, true, VX)
#define RED_EXTREMES_V(ID, ST, CT) RED_EXTREMES_(ID, ST, CT, VAL)
#define RED_EXTREMES_S(ID, ST, CT) RED_EXTREMES_(ID, ST, CT, SVAL)
#define RED_ARGS_V(ID, ST, CT) RED_ARGS_(ID, ST, CT, ARG)
#define RED_ARGS_S(ID, ST, CT) RED_ARGS_(ID, ST, CT, SARG)
MAG_NUMERIC_DTYPES(RED_EXTREMES_V)
MAG_BOOL_DTYPES(RED_EXTREMES_S)
MAG_FLOAT_DTYPES(RED_ARGS_V)
MAG_INT_DTYPES(RED_ARGS_S)

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
            for (int64_t i = 0; i < n && !st->decided[0]; i += RED_BLOCK) {                                            \
                int64_t m = n - i < RED_BLOCK ? n - i : RED_BLOCK;                                                     \
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
        red_##name##_##ID##_t st;                                                                                      \
        st.a = *g->a, st.xs = xs, st.ncols = n;                                                                        \
        memset(st.decided, 0, (size_t)n * sizeof(bool));                                                               \
        red_visit(g, x, lo, hi, row_red_##name##_##ID, &st.a);                                                         \
        for (int64_t j = 0; j < n; ++j) g->out[u + j] = st.decided[j] == (decisive);                                   \
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
