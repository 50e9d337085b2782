/*
 * Comparisons and logical ops: boolean results from operands of any dtype, compared in their
 * promoted dtype. Logical ops read any non-zero value (NaN included) as true, like PyTorch.
 */
#include "ew.h"

#define COMPARE_OPS(X)                                                                                                 \
    X(ALL, EQ, x == y)                                                                                                 \
    X(ALL, NE, x != y)                                                                                                 \
    X(ALL, LT, x < y)                                                                                                  \
    X(ALL, LE, x <= y)                                                                                                 \
    X(ALL, GT, x > y)                                                                                                  \
    X(ALL, GE, x >= y)                                                                                                 \
    X(ALL, LOGICAL_AND, x && y)                                                                                        \
    X(ALL, LOGICAL_OR, x || y)                                                                                         \
    X(ALL, LOGICAL_XOR, !x != !y)
#define LOGICAL_UNARY_OPS(X) X(ALL, LOGICAL_NOT, !x)

/* the names below are local to this file: variant.c includes every kernel file into one unit */
#define COMPARE_DEFINE(SET, OP, expr) MAG_EW_DEFINE_BINARY(SET, OP, BOOL, expr)
#define COMPARE_DEFINE_UNARY(SET, OP, expr) MAG_EW_DEFINE_UNARY(SET, OP, BOOL, MAG_EW_NO_PREP, expr)
#define COMPARE_REGISTER(SET, OP, expr) MAG_EW_REGISTER(SET, OP)
COMPARE_OPS(COMPARE_DEFINE)
LOGICAL_UNARY_OPS(COMPARE_DEFINE_UNARY)

static void register_compare(mag_kernel_table_t t) {
    COMPARE_OPS(COMPARE_REGISTER)
    LOGICAL_UNARY_OPS(COMPARE_REGISTER)
}
#undef COMPARE_OPS
#undef LOGICAL_UNARY_OPS
#undef COMPARE_DEFINE
#undef COMPARE_DEFINE_UNARY
#undef COMPARE_REGISTER
