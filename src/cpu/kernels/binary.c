/*
 * Binary arithmetic: X(dtype set, OP, expression of x and y in the compute type). Both operands
 * arrive in the compute dtype (the front end promotes and casts). Integer overflow wraps
 * (-fwrapv); booleans add as "or" and multiply as "and", like PyTorch.
 */
#include "blocks.h"

/* V: the expression also computes on float32 vectors (ew.h's LANES mode) */
#define BINARY_OPS(X, V)                                                                                               \
    V(ALL, ADD, x + y)                                                                                                 \
    V(NUMERIC, SUB, x - y)                                                                                             \
    V(ALL, MUL, x * y)                                                                                                 \
    V(FLOAT, DIV, x / y)                                                                                               \
    X(FLOAT, FLOORDIV, MAG_FLT(mag_floordiv, x)(x, y))                                                                 \
    X(INT, FLOORDIV, MAG_INT(mag_floordiv, x)(x, y, &err))                                                             \
    X(FLOAT, MOD, MAG_FLT(mag_mod, x)(x, y))                                                                           \
    X(INT, MOD, MAG_INT(mag_mod, x)(x, y, &err))                                                                       \
    X(FLOAT, POW, pow(x, y))                                                                                           \
    X(SINT, POW, mag_ipow_i64(x, y))                                                                                   \
    X(UINT, POW, mag_ipow_u64(x, y))                                                                                   \
    X(FLOAT, MAXIMUM, MAG_FLT(mag_maximum, x)(x, y))                                                                   \
    X(INTEGRAL, MAXIMUM, MAG_IMAX(x, y))                                                                               \
    X(FLOAT, MINIMUM, MAG_FLT(mag_minimum, x)(x, y))                                                                   \
    X(INTEGRAL, MINIMUM, MAG_IMIN(x, y))

/* the names below are local to this file: variant.c includes every kernel file into one unit */
#define BINARY_DEFINE(SET, OP, expr) MAG_EW_DEFINE_BINARY(SET, OP, SAME, expr)
#define BINARY_DEFINE_LANES(SET, OP, expr) MAG_EW_DEFINE_BINARY(SET, OP, LANES, expr)
#define BINARY_REGISTER(SET, OP, expr) MAG_EW_REGISTER(SET, OP)
BINARY_OPS(BINARY_DEFINE, BINARY_DEFINE_LANES)

static void register_binary(mag_kernel_table_t t) { BINARY_OPS(BINARY_REGISTER, BINARY_REGISTER) }
#undef BINARY_OPS
#undef BINARY_DEFINE
#undef BINARY_DEFINE_LANES
#undef BINARY_REGISTER
