/*
 * Elementwise row functions, generated from op lists. A kernel file keeps one list whose
 * lines read X(dtype set, OP, expression): the expression computes one element from `x` (and
 * `y`) in the compute type, and the same list both defines the row functions k_<OP>_<dtype>
 * and registers them in the kernel table, so each op is written once.
 *
 * Rows load operands into the compute type (float32 for 16-bit floats), apply the expression
 * and store with the conversion rules of dtype_ops.h. Contiguous rows, and rows against one
 * broadcast operand (stride 0), take plain indexed loops the compiler vectorises; other rows
 * step bytes. An expression may report a failure (e.g. integer division by zero) by setting
 * the row's local `err` to a mag_status_t; the op then fails with that status.
 */
#ifndef MAG_CPU_KERNELS_EW_H
#define MAG_CPU_KERNELS_EW_H

#include "common.h"
#include "ew_math.h"
#include "stream.h"

/*
 * Output modes: SAME stores the compute dtype, BOOL stores booleans (comparisons, logical ops).
 * LANES is SAME for an expression that also computes on float32 vectors (+ - * /): 16-bit float
 * rows then take MAG_EW_BINARY_LOOP_LANES (blocks.h; the kernel file includes it).
 */
#define MAG_EW_OT_SAME(ST) ST
#define MAG_EW_OT_BOOL(ST) uint8_t
#define MAG_EW_OT_LANES MAG_EW_OT_SAME
#define MAG_EW_ST_SAME(ID, v) MAG_ST_##ID(v)
#define MAG_EW_ST_BOOL(ID, v) MAG_ST_BOOLEAN(v)
#define MAG_EW_ST_LANES MAG_EW_ST_SAME

/* Rows may use per-op values prepared once per row from the op's attributes (see clamp). */
#define MAG_EW_NO_PREP(CT, a)
/* An attribute as a compute-type value (the front end gives it the kind matching the compute dtype). */
#define MAG_EW_SCALAR(CT, s)                                                                                           \
    ((s).kind == MAG_SCALAR_FLOAT ? (CT)(s).f : (s).kind == MAG_SCALAR_UINT ? (CT)(s).u : (CT)(s).i)

/* Strided rows: operand loads from unaligned bytes, one helper per dtype. */
#define MAG_EW_LOAD_FN(ID, ST, CT)                                                                                     \
    static inline CT mag_ew_load_##ID(const uint8_t *p) {                                                              \
        ST v;                                                                                                          \
        memcpy(&v, p, sizeof(v));                                                                                      \
        return MAG_LD_##ID(v);                                                                                         \
    }
MAG_ALL_DTYPES(MAG_EW_LOAD_FN)
#undef MAG_EW_LOAD_FN

#define MAG_EW_FINISH(a, err)                                                                                          \
    if (err) atomic_store((a)->status, err)

/*
 * Contiguous loops. Most dtypes load, compute and store in one loop. The 16-bit floats go
 * through float32 chunks instead: float16 for F16C (mag_f16_to_f32_n, which the compiler does
 * not use on its own), bfloat16 because the float32 math vectorises better on its own than
 * fused with the conversions. MAG_EW_PATH(ID) names the loop kind: HALF for the dtypes that
 * define MAG_EW_PATH_<ID> as "~, HALF", PLAIN for the rest.
 */
#define MAG_EW_PATH_FLOAT16 ~, HALF
#define MAG_EW_PATH_BFLOAT16 ~, HALF
#define MAG_EW_SECOND_(a, b, ...) b
#define MAG_EW_SECOND(...) MAG_EW_SECOND_(__VA_ARGS__)
#define MAG_EW_PATH(ID) MAG_EW_SECOND(MAG_EW_PATH_##ID, PLAIN, ~)
#define MAG_EW_CAT_(a, b) a##b
#define MAG_EW_CAT(a, b) MAG_EW_CAT_(a, b)
#define MAG_EW_CHUNK 512

/* chunk results: SAME overwrites the float32 operand buffer `in` (then converted), BOOL has its own */
#define MAG_EW_RES_SAME(name, in) float *name = (in)
#define MAG_EW_RES_BOOL(name, in) uint8_t name[MAG_EW_CHUNK]
#define MAG_EW_BUFST_SAME(v) ((float)(v))
#define MAG_EW_BUFST_BOOL(v) MAG_ST_BOOLEAN(v)
#define MAG_EW_PUT_SAME(ID, o, b, m) MAG_ST_N_##ID(o, b, m)
#define MAG_EW_PUT_BOOL(ID, o, b, m) memcpy(o, b, (size_t)(m))
/* a chunk's results go into o, or for a large row (`stream`) through a buffer streamed out */
#define MAG_EW_PUT(MODE, ID, o, b, m)                                                                                  \
    if (stream) {                                                                                                      \
        out_t put_[MAG_EW_CHUNK] __attribute__((aligned(64)));                                                         \
        MAG_EW_PUT_##MODE(ID, put_, b, m);                                                                             \
        mag_stream_store(o, put_, (size_t)(m) * sizeof(out_t));                                                        \
    } else {                                                                                                           \
        MAG_EW_PUT_##MODE(ID, o, b, m);                                                                                \
    }

/*
 * The plain binary loops: the body (the macro arguments) computes dst[i] for i in [0, m) from
 * the operands at i0 + i. A row of small output goes straight into o; a large one goes through a
 * chunk buffer in L1 that is then streamed out (stream.h).
 */
#define MAG_EW_STORE_LOOP(...)                                                                                         \
    if (!mag_stream_worth((size_t)n * sizeof(out_t))) {                                                                \
        const int64_t i0 = 0, m = n;                                                                                   \
        out_t *dst = o;                                                                                                \
        __VA_ARGS__                                                                                                    \
    } else {                                                                                                           \
        for (int64_t i0 = 0; i0 < n; i0 += MAG_EW_CHUNK) {                                                             \
            const int64_t m = n - i0 < MAG_EW_CHUNK ? n - i0 : MAG_EW_CHUNK;                                           \
            out_t dst[MAG_EW_CHUNK] __attribute__((aligned(64)));                                                      \
            __VA_ARGS__                                                                                                \
            mag_stream_store(o + i0, dst, (size_t)m * sizeof(out_t));                                                  \
        }                                                                                                              \
        mag_stream_fence();                                                                                            \
    }
/* Unary rows store plainly: streaming measured slower for silu/sigmoid (6.1 vs 4.9 ms on 1e7 float32) */
#define MAG_EW_UNARY_LOOP_PLAIN(MODE, expr, ID, ST, CT)                                                                \
    for (int64_t i = 0; i < n; ++i) {                                                                                  \
        CT x = MAG_LD_##ID(xs[i]);                                                                                     \
        o[i] = MAG_EW_ST_##MODE(ID, expr);                                                                             \
    }
#define MAG_EW_UNARY_LOOP_HALF(MODE, expr, ID, ST, CT)                                                                 \
    for (int64_t i0 = 0; i0 < n; i0 += MAG_EW_CHUNK) {                                                                 \
        int64_t m = n - i0 < MAG_EW_CHUNK ? n - i0 : MAG_EW_CHUNK;                                                     \
        float xb[MAG_EW_CHUNK];                                                                                        \
        MAG_EW_RES_##MODE(rb, xb);                                                                                     \
        xb[0] = 0; /* for -Wmaybe-uninitialized, which cannot see that the conversion fills xb[0, m) */                \
        MAG_LD_N_##ID(xb, xs + i0, m);                                                                                 \
        for (int64_t i = 0; i < m; ++i) {                                                                              \
            CT x = xb[i];                                                                                              \
            rb[i] = MAG_EW_BUFST_##MODE(expr);                                                                         \
        }                                                                                                              \
        MAG_EW_PUT_##MODE(ID, o + i0, rb, m);                                                                          \
    }

/* Element i of a contiguous binary row into d[di]; XS/YS are 1 for an operand that advances, 0 for a broadcast one. */
#define MAG_EW_BINARY_ONE(MODE, expr, ID, CT, XS, YS, i, d, di)                                                        \
    do {                                                                                                               \
        CT x = MAG_LD_##ID(xs[(XS) * (i)]), y = MAG_LD_##ID(ys[(YS) * (i)]);                                           \
        (d)[di] = MAG_EW_ST_##MODE(ID, expr);                                                                          \
    } while (0)
/* One contiguous loop of a binary row. */
#define MAG_EW_BINARY_LOOP_PLAIN(MODE, expr, ID, ST, CT, XS, YS)                                                       \
    MAG_EW_STORE_LOOP(for (int64_t i = 0; i < m; ++i) MAG_EW_BINARY_ONE(MODE, expr, ID, CT, XS, YS, i0 + i, dst, i);)
#define MAG_EW_BINARY_LOOP_HALF(MODE, expr, ID, ST, CT, XS, YS)                                                        \
    const bool stream = mag_stream_worth((size_t)n * sizeof(out_t));                                                   \
    for (int64_t i0 = 0; i0 < n; i0 += MAG_EW_CHUNK) {                                                                 \
        int64_t m = n - i0 < MAG_EW_CHUNK ? n - i0 : MAG_EW_CHUNK;                                                     \
        float xb[MAG_EW_CHUNK], yb[MAG_EW_CHUNK];                                                                      \
        MAG_EW_RES_##MODE(rb, (XS) ? xb : yb);                                                                         \
        xb[0] = yb[0] = 0; /* see MAG_EW_UNARY_LOOP_HALF */                                                            \
        MAG_LD_N_##ID(xb, xs + (XS) * i0, (XS) ? m : 1);                                                               \
        MAG_LD_N_##ID(yb, ys + (YS) * i0, (YS) ? m : 1);                                                               \
        for (int64_t i = 0; i < m; ++i) {                                                                              \
            CT x = xb[(XS) * i], y = yb[(YS) * i];                                                                     \
            rb[i] = MAG_EW_BUFST_##MODE(expr);                                                                         \
        }                                                                                                              \
        MAG_EW_PUT(MODE, ID, o + i0, rb, m)                                                                            \
    }                                                                                                                  \
    if (stream) mag_stream_fence();
/* the loop kind of a binary row: LANES for a LANES-mode op on a 16-bit float, else the dtype's path */
#define MAG_EW_KIND_LANES_BFLOAT16 ~, LANES
#define MAG_EW_KIND_LANES_FLOAT16 ~, LANES
#define MAG_EW_BINARY_KIND(MODE, ID) MAG_EW_SECOND(MAG_EW_KIND_##MODE##_##ID, MAG_EW_PATH(ID), ~)
#define MAG_EW_BINARY_LOOP(MODE, expr, ID, ST, CT, XS, YS)                                                             \
    MAG_EW_CAT(MAG_EW_BINARY_LOOP_, MAG_EW_BINARY_KIND(MODE, ID))(MODE, expr, ID, ST, CT, XS, YS)

#define MAG_EW_UNARY_ROW(OP, MODE, PREP, expr, ID, ST, CT)                                                             \
    static void row_##OP##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {          \
        typedef MAG_EW_OT_##MODE(ST) out_t;                                                                            \
        int err = MAG_OK;                                                                                              \
        PREP(CT, a)                                                                                                    \
        if (s[0] == sizeof(out_t) && s[1] == sizeof(ST)) {                                                             \
            out_t *o = (out_t *)p[0];                                                                                  \
            const ST *xs = (const ST *)p[1];                                                                           \
            MAG_EW_CAT(MAG_EW_UNARY_LOOP_, MAG_EW_PATH(ID))(MODE, expr, ID, ST, CT)                                    \
        } else {                                                                                                       \
            for (int64_t i = 0; i < n; ++i) {                                                                          \
                CT x = mag_ew_load_##ID(p[1] + i * s[1]);                                                              \
                out_t r = MAG_EW_ST_##MODE(ID, expr);                                                                  \
                memcpy(p[0] + i * s[0], &r, sizeof(r));                                                                \
            }                                                                                                          \
        }                                                                                                              \
        MAG_EW_FINISH(a, err);                                                                                         \
    }                                                                                                                  \
    MAG_ROW_KERNEL(OP##_##ID, 1)

#define MAG_EW_BINARY_ROW(OP, MODE, expr, ID, ST, CT)                                                                  \
    static void row_##OP##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {          \
        typedef MAG_EW_OT_##MODE(ST) out_t;                                                                            \
        int err = MAG_OK;                                                                                              \
        out_t *o = (out_t *)p[0];                                                                                      \
        const ST *xs = (const ST *)p[1], *ys = (const ST *)p[2];                                                       \
        if (s[0] == sizeof(out_t) && s[1] == sizeof(ST) && s[2] == sizeof(ST)) {                                       \
            MAG_EW_BINARY_LOOP(MODE, expr, ID, ST, CT, 1, 1)                                                           \
        } else if (s[0] == sizeof(out_t) && s[1] == sizeof(ST) && s[2] == 0) {                                         \
            MAG_EW_BINARY_LOOP(MODE, expr, ID, ST, CT, 1, 0)                                                           \
        } else if (s[0] == sizeof(out_t) && s[1] == 0 && s[2] == sizeof(ST)) {                                         \
            MAG_EW_BINARY_LOOP(MODE, expr, ID, ST, CT, 0, 1)                                                           \
        } else {                                                                                                       \
            for (int64_t i = 0; i < n; ++i) {                                                                          \
                CT x = mag_ew_load_##ID(p[1] + i * s[1]), y = mag_ew_load_##ID(p[2] + i * s[2]);                       \
                out_t r = MAG_EW_ST_##MODE(ID, expr);                                                                  \
                memcpy(p[0] + i * s[0], &r, sizeof(r));                                                                \
            }                                                                                                          \
        }                                                                                                              \
        MAG_EW_FINISH(a, err);                                                                                         \
    }                                                                                                                  \
    MAG_ROW_KERNEL(OP##_##ID, 2)

/*
 * Fan an op line out over its dtype set. `args` is the parenthesised tail of the row macro's
 * arguments, e.g. (ABS, SAME, MAG_EW_NO_PREP, fabs(x)); the dtype list appends ID, ST, CT.
 */
#define MAG_EW_UNPACK_(...) __VA_ARGS__
#define MAG_EW_CALL_(m, ...) m(__VA_ARGS__)
#define MAG_EW_UNARY_A_(args, ID, ST, CT) MAG_EW_CALL_(MAG_EW_UNARY_ROW, MAG_EW_UNPACK_ args, ID, ST, CT)
#define MAG_EW_BINARY_A_(args, ID, ST, CT) MAG_EW_CALL_(MAG_EW_BINARY_ROW, MAG_EW_UNPACK_ args, ID, ST, CT)
#define MAG_EW_DEFINE_UNARY(SET, OP, MODE, PREP, expr) MAG_##SET##_DTYPES_A(MAG_EW_UNARY_A_, (OP, MODE, PREP, expr))
#define MAG_EW_DEFINE_BINARY(SET, OP, MODE, expr) MAG_##SET##_DTYPES_A(MAG_EW_BINARY_A_, (OP, MODE, expr))

/* Registration: `t` is the kernel table being filled. */
#define MAG_EW_REG_A_(OP, ID, ST, CT) t[MAG_OP_##OP][MAG_DTYPE_##ID] = k_##OP##_##ID;
#define MAG_EW_REGISTER(SET, OP) MAG_##SET##_DTYPES_A(MAG_EW_REG_A_, OP)

#endif
