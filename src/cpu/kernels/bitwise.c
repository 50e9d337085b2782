/*
 * Bitwise ops on integers and booleans, and shifts on integers. Shift counts outside
 * [0, width) follow PyTorch (0, or the sign fill for right shifts) instead of C's undefined
 * behaviour; `8 * sizeof(x)` is the width of the compute type.
 */
#include "ew.h"

#define BITWISE_OPS(X)                                                                                                 \
    X(INTEGRAL, BITWISE_AND, x & y)                                                                                    \
    X(INTEGRAL, BITWISE_OR, x | y)                                                                                     \
    X(INTEGRAL, BITWISE_XOR, x ^ y)                                                                                    \
    X(SINT, LSHIFT, mag_shl_i64(x, y, 8 * (int64_t)sizeof(x)))                                                         \
    X(UINT, LSHIFT, mag_shl_u64(x, y, 8 * (int64_t)sizeof(x)))                                                         \
    X(SINT, RSHIFT, mag_shr_i64(x, y, 8 * (int64_t)sizeof(x)))                                                         \
    X(UINT, RSHIFT, mag_shr_u64(x, y, 8 * (int64_t)sizeof(x)))
#define BITWISE_UNARY_OPS(X)                                                                                           \
    X(INT, BITWISE_NOT, ~x)                                                                                            \
    X(BOOL, BITWISE_NOT, !x)

/* the names below are local to this file: variant.c includes every kernel file into one unit */
#define BITWISE_DEFINE(SET, OP, expr) MAG_EW_DEFINE_BINARY(SET, OP, SAME, expr)
#define BITWISE_DEFINE_UNARY(SET, OP, expr) MAG_EW_DEFINE_UNARY(SET, OP, SAME, MAG_EW_NO_PREP, expr)
#define BITWISE_REGISTER(SET, OP, expr) MAG_EW_REGISTER(SET, OP)
BITWISE_OPS(BITWISE_DEFINE)
BITWISE_UNARY_OPS(BITWISE_DEFINE_UNARY)

static void register_bitwise(mag_kernel_table_t t) {
    BITWISE_OPS(BITWISE_REGISTER)
    BITWISE_UNARY_OPS(BITWISE_REGISTER)
}
#undef BITWISE_OPS
#undef BITWISE_UNARY_OPS
#undef BITWISE_DEFINE
#undef BITWISE_DEFINE_UNARY
#undef BITWISE_REGISTER
