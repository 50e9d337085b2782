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

/* Output modes: SAME stores the compute dtype, BOOL stores booleans (comparisons, logical ops). */
#define MAG_EW_OT_SAME(ST) ST
#define MAG_EW_OT_BOOL(ST) uint8_t
#define MAG_EW_ST_SAME(ID, v) MAG_ST_##ID(v)
#define MAG_EW_ST_BOOL(ID, v) MAG_ST_BOOLEAN(v)

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

#define MAG_EW_UNARY_ROW(OP, MODE, PREP, expr, ID, ST, CT)                                                             \
    static void row_##OP##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {         \
        typedef MAG_EW_OT_##MODE(ST) out_t;                                                                            \
        int err = MAG_OK;                                                                                              \
        PREP(CT, a)                                                                                                    \
        if (s[0] == sizeof(out_t) && s[1] == sizeof(ST)) {                                                             \
            out_t *o = (out_t *)p[0];                                                                                  \
            const ST *xs = (const ST *)p[1];                                                                           \
            for (int64_t i = 0; i < n; ++i) {                                                                          \
                CT x = MAG_LD_##ID(xs[i]);                                                                             \
                o[i] = MAG_EW_ST_##MODE(ID, expr);                                                                     \
            }                                                                                                          \
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

/* One contiguous loop of a binary row; XI/YI index the operands (i, or 0 for a broadcast one). */
#define MAG_EW_BINARY_LOOP(MODE, expr, ID, ST, CT, XI, YI)                                                             \
    for (int64_t i = 0; i < n; ++i) {                                                                                  \
        CT x = MAG_LD_##ID(xs[XI]), y = MAG_LD_##ID(ys[YI]);                                                           \
        o[i] = MAG_EW_ST_##MODE(ID, expr);                                                                             \
    }

#define MAG_EW_BINARY_ROW(OP, MODE, expr, ID, ST, CT)                                                                  \
    static void row_##OP##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {         \
        typedef MAG_EW_OT_##MODE(ST) out_t;                                                                            \
        int err = MAG_OK;                                                                                              \
        out_t *o = (out_t *)p[0];                                                                                      \
        const ST *xs = (const ST *)p[1], *ys = (const ST *)p[2];                                                       \
        if (s[0] == sizeof(out_t) && s[1] == sizeof(ST) && s[2] == sizeof(ST)) {                                       \
            MAG_EW_BINARY_LOOP(MODE, expr, ID, ST, CT, i, i)                                                           \
        } else if (s[0] == sizeof(out_t) && s[1] == sizeof(ST) && s[2] == 0) {                                         \
            MAG_EW_BINARY_LOOP(MODE, expr, ID, ST, CT, i, 0)                                                           \
        } else if (s[0] == sizeof(out_t) && s[1] == 0 && s[2] == sizeof(ST)) {                                         \
            MAG_EW_BINARY_LOOP(MODE, expr, ID, ST, CT, 0, i)                                                           \
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
