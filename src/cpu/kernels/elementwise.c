/*
 * Elementwise kernels: one line per op and dtype set. A row function loads operands into the
 * compute type (float32 for 16-bit floats), applies the expression and stores the result.
 * Contiguous rows take a plain indexed loop the compiler vectorises; strided rows step bytes.
 */
#include "common.h"

#include <tgmath.h>

#define UNARY_OP(name, ID, ST, CT, expr)                                                                               \
    static void row_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {      \
        (void)a;                                                                                                       \
        if (s[0] == sizeof(ST) && s[1] == sizeof(ST)) {                                                                \
            ST *o = (ST *)p[0];                                                                                        \
            const ST *xs = (const ST *)p[1];                                                                           \
            for (int64_t i = 0; i < n; ++i) {                                                                          \
                CT x = MAG_LD_##ID(xs[i]);                                                                             \
                o[i] = MAG_ST_##ID(expr);                                                                              \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        uint8_t *o = p[0];                                                                                             \
        const uint8_t *xp = p[1];                                                                                      \
        for (int64_t i = 0; i < n; ++i, o += s[0], xp += s[1]) {                                                       \
            ST xv;                                                                                                     \
            memcpy(&xv, xp, sizeof(xv));                                                                               \
            CT x = MAG_LD_##ID(xv);                                                                                    \
            ST r = MAG_ST_##ID(expr);                                                                                  \
            memcpy(o, &r, sizeof(r));                                                                                  \
        }                                                                                                              \
    }                                                                                                                  \
    MAG_ROW_KERNEL(name##_##ID, 1)

/* OT: output storage type, OID: its dtype (compare ops write booleans) */
#define BINARY_OP_TO(name, ID, ST, CT, OID, OT, expr)                                                                  \
    static void row_##name##_##ID(uint8_t *const *p, const int64_t *s, int64_t n, const mag_kernel_args_t *a) {      \
        (void)a;                                                                                                       \
        if (s[0] == sizeof(OT) && s[1] == sizeof(ST) && s[2] == sizeof(ST)) {                                          \
            OT *o = (OT *)p[0];                                                                                        \
            const ST *as = (const ST *)p[1], *bs = (const ST *)p[2];                                                   \
            for (int64_t i = 0; i < n; ++i) {                                                                          \
                CT x = MAG_LD_##ID(as[i]), y = MAG_LD_##ID(bs[i]);                                                     \
                o[i] = MAG_ST_##OID(expr);                                                                             \
            }                                                                                                          \
            return;                                                                                                    \
        }                                                                                                              \
        uint8_t *o = p[0];                                                                                             \
        const uint8_t *ap = p[1], *bp = p[2];                                                                          \
        for (int64_t i = 0; i < n; ++i, o += s[0], ap += s[1], bp += s[2]) {                                           \
            ST av, bv;                                                                                                 \
            memcpy(&av, ap, sizeof(av));                                                                               \
            memcpy(&bv, bp, sizeof(bv));                                                                               \
            CT x = MAG_LD_##ID(av), y = MAG_LD_##ID(bv);                                                               \
            OT r = MAG_ST_##OID(expr);                                                                                 \
            memcpy(o, &r, sizeof(r));                                                                                  \
        }                                                                                                              \
    }                                                                                                                  \
    MAG_ROW_KERNEL(name##_##ID, 2)
#define BINARY_OP(name, ID, ST, CT, expr) BINARY_OP_TO(name, ID, ST, CT, ID, ST, expr)

/* ---- the ops: one line each, fanned out over their dtype sets ---- */
#define NEG(ID, ST, CT) UNARY_OP(neg, ID, ST, CT, -x)
#define EXP(ID, ST, CT) UNARY_OP(exp, ID, ST, CT, exp(x))
#define ADD(ID, ST, CT) BINARY_OP(add, ID, ST, CT, x + y)
#define SUB(ID, ST, CT) BINARY_OP(sub, ID, ST, CT, x - y)
#define MUL(ID, ST, CT) BINARY_OP(mul, ID, ST, CT, x * y)
#define DIV(ID, ST, CT) BINARY_OP(div, ID, ST, CT, x / y)
#define EQ(ID, ST, CT) BINARY_OP_TO(eq, ID, ST, CT, BOOLEAN, uint8_t, x == y)

MAG_NUMERIC_DTYPES(NEG)
MAG_FLOAT_DTYPES(EXP)
MAG_ALL_DTYPES(ADD)
MAG_NUMERIC_DTYPES(SUB)
MAG_ALL_DTYPES(MUL)
MAG_FLOAT_DTYPES(DIV)
MAG_ALL_DTYPES(EQ)

#define REG_ONE(OP, name, ID) t[MAG_OP_##OP][MAG_DTYPE_##ID] = k_##name##_##ID;
#define REG_NEG(ID, ST, CT) REG_ONE(NEG, neg, ID)
#define REG_EXP(ID, ST, CT) REG_ONE(EXP, exp, ID)
#define REG_ADD(ID, ST, CT) REG_ONE(ADD, add, ID)
#define REG_SUB(ID, ST, CT) REG_ONE(SUB, sub, ID)
#define REG_MUL(ID, ST, CT) REG_ONE(MUL, mul, ID)
#define REG_DIV(ID, ST, CT) REG_ONE(DIV, div, ID)
#define REG_EQ(ID, ST, CT) REG_ONE(EQ, eq, ID)

static void register_elementwise(mag_kernel_table_t t) {
    MAG_NUMERIC_DTYPES(REG_NEG)
    MAG_FLOAT_DTYPES(REG_EXP)
    MAG_ALL_DTYPES(REG_ADD)
    MAG_NUMERIC_DTYPES(REG_SUB)
    MAG_ALL_DTYPES(REG_MUL)
    MAG_FLOAT_DTYPES(REG_DIV)
    MAG_ALL_DTYPES(REG_EQ)
}
