/*
 * Unary elementwise ops: X(dtype set, OP, expression of x in the compute type). Integer and
 * boolean inputs of float math never reach these kernels as such: the front end computes them
 * in float32 (MAG_OPF_INT_TO_FLOAT), so the float lines serve them.
 */
#include "ew.h"

#define UNARY_OPS(X)                                                                                                   \
    X(FLOAT, ABS, fabs(x))                                                                                             \
    X(SINT, ABS, x < 0 ? -x : x)                                                                                       \
    X(UINT, ABS, x)                                                                                                    \
    X(FLOAT, SGN, (x > 0) - (x < 0))                                                                                   \
    X(SINT, SGN, (x > 0) - (x < 0))                                                                                    \
    X(UINT, SGN, x != 0)                                                                                               \
    X(BOOL, SGN, x)                                                                                                    \
    X(NUMERIC, NEG, -x)                                                                                                \
    X(NUMERIC, SQR, x * x)                                                                                             \
    X(FLOAT, RCP, 1 / x)                                                                                               \
    X(FLOAT, SQRT, sqrt(x))                                                                                            \
    X(FLOAT, RSQRT, 1 / sqrt(x))                                                                                       \
    X(FLOAT, LOG, MAG_FLT(mag_log, x)(x))                                                                              \
    X(FLOAT, LOG2, MAG_FLT(mag_log2, x)(x))                                                                            \
    X(FLOAT, LOG10, MAG_FLT(mag_log10, x)(x))                                                                          \
    X(FLOAT, LOG1P, MAG_FLT(mag_log1p, x)(x))                                                                          \
    X(FLOAT, EXP, MAG_FLT(mag_exp, x)(x))                                                                              \
    X(FLOAT, EXP2, MAG_FLT(mag_exp2, x)(x))                                                                            \
    X(FLOAT, EXPM1, MAG_FLT(mag_expm1, x)(x))                                                                          \
    X(FLOAT, FLOOR, MAG_FLT(mag_floor, x)(x))                                                                          \
    X(INT, FLOOR, x)                                                                                                   \
    X(FLOAT, CEIL, MAG_FLT(mag_ceil, x)(x))                                                                            \
    X(INT, CEIL, x)                                                                                                    \
    X(FLOAT, ROUND, MAG_FLT(mag_rint, x)(x))                                                                           \
    X(INT, ROUND, x)                                                                                                   \
    X(FLOAT, TRUNC, MAG_FLT(mag_trunc, x)(x))                                                                          \
    X(INT, TRUNC, x)                                                                                                   \
    X(FLOAT, SIN, sin(x))                                                                                              \
    X(FLOAT, COS, cos(x))                                                                                              \
    X(FLOAT, TAN, tan(x))                                                                                              \
    X(FLOAT, ASIN, asin(x))                                                                                            \
    X(FLOAT, ACOS, acos(x))                                                                                            \
    X(FLOAT, ATAN, atan(x))                                                                                            \
    X(FLOAT, SINH, sinh(x))                                                                                            \
    X(FLOAT, COSH, cosh(x))                                                                                            \
    X(FLOAT, TANH, MAG_FLT(mag_tanh, x)(x))                                                                            \
    X(FLOAT, ASINH, asinh(x))                                                                                          \
    X(FLOAT, ACOSH, acosh(x))                                                                                          \
    X(FLOAT, ATANH, atanh(x))                                                                                          \
    X(NUMERIC, STEP, x > 0)                                                                                            \
    X(FLOAT, ERF, MAG_FLT(mag_erf, x)(x))                                                                              \
    X(FLOAT, ERFC, MAG_FLT(mag_erfc, x)(x))                                                                            \
    X(FLOAT, SIGMOID, MAG_FLT(mag_sigmoid, x)(x))                                                                      \
    X(FLOAT, HARD_SIGMOID, MAG_FLT(mag_hard_sigmoid, x)(x))                                                            \
    X(FLOAT, SILU, MAG_FLT(mag_silu, x)(x))                                                                            \
    X(FLOAT, RELU, x < 0 ? 0 : x)                                                                                      \
    X(SINT, RELU, x < 0 ? 0 : x)                                                                                       \
    X(UINT, RELU, x)                                                                                                   \
    X(FLOAT, GELU, MAG_FLT(mag_gelu, x)(x))                                                                            \
    X(FLOAT, GELU_APPROX, MAG_FLT(mag_gelu_approx, x)(x))

/* clamp: the front end passes both bounds (a missing one as the dtype's extreme) in the compute type's kind */
#define CLAMP_PREP(CT, a)                                                                                              \
    CT lo = MAG_EW_SCALAR(CT, a->attrs[0]);                                                                            \
    CT hi = MAG_EW_SCALAR(CT, a->attrs[1]);
#define CLAMP_OPS(X)                                                                                                   \
    X(FLOAT, CLAMP, MAG_FLT(mag_clamp, x)(x, lo, hi))                                                                  \
    X(INT, CLAMP, MAG_IMIN(MAG_IMAX(x, lo), hi))

/* the names below are local to this file: variant.c includes every kernel file into one unit */
#define UNARY_DEFINE(SET, OP, expr) MAG_EW_DEFINE_UNARY(SET, OP, SAME, MAG_EW_NO_PREP, expr)
#define UNARY_DEFINE_CLAMP(SET, OP, expr) MAG_EW_DEFINE_UNARY(SET, OP, SAME, CLAMP_PREP, expr)
#define UNARY_REGISTER(SET, OP, expr) MAG_EW_REGISTER(SET, OP)
UNARY_OPS(UNARY_DEFINE)
CLAMP_OPS(UNARY_DEFINE_CLAMP)

static void register_unary(mag_kernel_table_t t) {
    UNARY_OPS(UNARY_REGISTER)
    CLAMP_OPS(UNARY_REGISTER)
}
#undef UNARY_OPS
#undef CLAMP_OPS
#undef CLAMP_PREP
#undef UNARY_DEFINE
#undef UNARY_DEFINE_CLAMP
#undef UNARY_REGISTER
