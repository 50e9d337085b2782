/*
 * Gradients of the elementwise ops, one formula each. In the formulas g is the output's
 * gradient, X the saved input, Y the saved output (see the save flags in the table below).
 */
#include "grad_expr.h"

#include <math.h>

#define SAVE_X 1u
#define SAVE_Y GRAD_SAVE_OUT
#define SAVE_XY (1u | GRAD_SAVE_OUT)

/* Unary formulas: X is saved slot 0 when the input is saved, Y is the last saved slot. */
#define UNARY_GRAD(name, expr)                                                                                         \
    static mag_status_t grad_##name(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {                              \
        gx_t xs = {0}, *x = &xs;                                                                                       \
        mag_tensor_t *X = n->n_saved ? gx_saved(x, n, 0) : NULL;                                                       \
        mag_tensor_t *Y = n->n_saved ? gx_saved(x, n, n->n_saved - 1) : NULL;                                          \
        (void)X, (void)Y;                                                                                              \
        gx_give(x, n, 0, (expr), gi); return gx_done(x);                                                                           \
    }

#define ONE(t) gx_c(x, t, 1.0)
#define SQ(t) GX_MUL(t, t)

UNARY_GRAD(abs, GX_MUL(g, gx_1(x, MAG_OP_SGN, X)))
UNARY_GRAD(neg, gx_1(x, MAG_OP_NEG, g))
UNARY_GRAD(zero, GX_MULC(g, 0.0)) /* piecewise-constant ops: sgn, floor, ceil, round, trunc, step */
UNARY_GRAD(sqr, GX_MUL(g, GX_MULC(X, 2.0)))
UNARY_GRAD(rcp, gx_1(x, MAG_OP_NEG, GX_MUL(g, SQ(Y))))
UNARY_GRAD(sqrt, GX_DIV(GX_MULC(g, 0.5), Y))
UNARY_GRAD(rsqrt, GX_MUL(GX_MULC(g, -0.5), GX_MUL(Y, SQ(Y))))
UNARY_GRAD(log, GX_DIV(g, X))
UNARY_GRAD(log2, GX_DIV(g, GX_MULC(X, M_LN2)))
UNARY_GRAD(log10, GX_DIV(g, GX_MULC(X, M_LN10)))
UNARY_GRAD(log1p, GX_DIV(g, GX_ADDC(X, 1.0)))
UNARY_GRAD(exp, GX_MUL(g, Y))
UNARY_GRAD(exp2, GX_MUL(g, GX_MULC(Y, M_LN2)))
UNARY_GRAD(expm1, GX_MUL(g, GX_ADDC(Y, 1.0)))
UNARY_GRAD(sin, GX_MUL(g, gx_1(x, MAG_OP_COS, X)))
UNARY_GRAD(cos, gx_1(x, MAG_OP_NEG, GX_MUL(g, gx_1(x, MAG_OP_SIN, X))))
UNARY_GRAD(tan, GX_MUL(g, GX_ADDC(SQ(Y), 1.0)))
UNARY_GRAD(asin, GX_MUL(g, gx_1(x, MAG_OP_RSQRT, GX_SUB(ONE(X), SQ(X)))))
UNARY_GRAD(acos, gx_1(x, MAG_OP_NEG, GX_MUL(g, gx_1(x, MAG_OP_RSQRT, GX_SUB(ONE(X), SQ(X))))))
UNARY_GRAD(atan, GX_DIV(g, GX_ADDC(SQ(X), 1.0)))
UNARY_GRAD(sinh, GX_MUL(g, gx_1(x, MAG_OP_COSH, X)))
UNARY_GRAD(cosh, GX_MUL(g, gx_1(x, MAG_OP_SINH, X)))
UNARY_GRAD(tanh, GX_MUL(g, GX_SUB(ONE(Y), SQ(Y))))
UNARY_GRAD(asinh, GX_MUL(g, gx_1(x, MAG_OP_RSQRT, GX_ADDC(SQ(X), 1.0))))
UNARY_GRAD(acosh, GX_MUL(g, gx_1(x, MAG_OP_RSQRT, GX_ADDC(SQ(X), -1.0))))
UNARY_GRAD(atanh, GX_DIV(g, GX_SUB(ONE(X), SQ(X))))
/* d erf = 2 / sqrt(pi) * exp(-x^2) */
UNARY_GRAD(erf, GX_MUL(g, GX_MULC(gx_1(x, MAG_OP_EXP, GX_MULC(SQ(X), -1.0)), M_2_SQRTPI)))
UNARY_GRAD(erfc, GX_MUL(g, GX_MULC(gx_1(x, MAG_OP_EXP, GX_MULC(SQ(X), -1.0)), -M_2_SQRTPI)))
UNARY_GRAD(sigmoid, GX_MUL(g, GX_MUL(Y, GX_SUB(ONE(Y), Y))))
/* 1/6 inside (-3, 3), else 0 */
UNARY_GRAD(hard_sigmoid, GX_MUL(GX_MULC(g, 1.0 / 6.0),
                                gx_2(x, MAG_OP_LOGICAL_AND, gx_2(x, MAG_OP_GT, X, gx_c(x, X, -3.0)),
                                     gx_2(x, MAG_OP_LT, X, gx_c(x, X, 3.0)))))
UNARY_GRAD(relu, GX_MUL(g, gx_2(x, MAG_OP_GT, X, gx_c(x, X, 0.0))))

/* silu' = s * (1 + x * (1 - s)), s = sigmoid(x) */
static mag_status_t grad_silu(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *X = gx_saved(x, n, 0), *s = gx_1(x, MAG_OP_SIGMOID, X);
    gx_give(x, n, 0, GX_MUL(g, GX_MUL(s, GX_ADDC(GX_MUL(X, GX_SUB(ONE(s), s)), 1.0))), gi); return gx_done(x);
}

/* gelu' = Phi(x) + x * phi(x) */
static mag_status_t grad_gelu(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *X = gx_saved(x, n, 0);
    mag_tensor_t *cdf = GX_MULC(GX_ADDC(gx_1(x, MAG_OP_ERF, GX_MULC(X, M_SQRT1_2)), 1.0), 0.5);
    mag_tensor_t *pdf = GX_MULC(gx_1(x, MAG_OP_EXP, GX_MULC(SQ(X), -0.5)), 0.5 * M_2_SQRTPI * M_SQRT1_2);
    gx_give(x, n, 0, GX_MUL(g, GX_ADD(cdf, GX_MUL(X, pdf))), gi); return gx_done(x);
}

/* tanh form: u = k (x + c x^3), t = tanh(u); d = (1 + t) / 2 + x (1 - t^2) k (1 + 3 c x^2) / 2 */
static mag_status_t grad_gelu_approx(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    const double k = M_2_SQRTPI * M_SQRT1_2, c = 0.044715;
    mag_tensor_t *X = gx_saved(x, n, 0), *x2 = SQ(X);
    mag_tensor_t *t = gx_1(x, MAG_OP_TANH, GX_MULC(GX_ADD(X, GX_MULC(GX_MUL(x2, X), c)), k));
    mag_tensor_t *left = GX_MULC(GX_ADDC(t, 1.0), 0.5);
    mag_tensor_t *right = GX_MUL(GX_MUL(X, GX_SUB(ONE(t), SQ(t))), GX_MULC(GX_ADDC(GX_MULC(x2, 3.0 * c), 1.0), 0.5 * k));
    gx_give(x, n, 0, GX_MUL(g, GX_ADD(left, right)), gi); return gx_done(x);
}

/* the gradient passes where lo <= x <= hi (PyTorch's mask) */
static mag_status_t grad_clamp(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *X = gx_saved(x, n, 0), *pass = NULL;
    int64_t given = n->n_attrs > 2 ? n->attrs[2].i : 0;
    if (given & 1) pass = gx_2(x, MAG_OP_GE, X, gx_c(x, X, n->attrs[0].kind == MAG_SCALAR_FLOAT ? n->attrs[0].f : (double)n->attrs[0].i));
    if (given & 2) {
        mag_tensor_t *hi = gx_2(x, MAG_OP_LE, X, gx_c(x, X, n->attrs[1].kind == MAG_SCALAR_FLOAT ? n->attrs[1].f : (double)n->attrs[1].i));
        pass = pass ? gx_2(x, MAG_OP_LOGICAL_AND, pass, hi) : hi;
    }
    gx_give(x, n, 0, pass ? GX_MUL(g, pass) : g, gi); return gx_done(x);
}

/* ---- binary ---- */
static mag_status_t grad_add(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    gx_give(x, n, 0, g, gi);
    gx_give(x, n, 1, g, gi); return gx_done(x);
}

static mag_status_t grad_sub(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    gx_give(x, n, 0, g, gi);
    gx_give(x, n, 1, gx_1(x, MAG_OP_NEG, g), gi); return gx_done(x);
}

/* Saved tensors are only read for gradients that are wanted (PyTorch saves lazily the same way). */
static mag_status_t grad_mul(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    if (gx_wants(n, 0)) gx_give(x, n, 0, GX_MUL(g, gx_saved(x, n, 1)), gi);
    if (gx_wants(n, 1)) gx_give(x, n, 1, GX_MUL(g, gx_saved(x, n, 0)), gi);
    return gx_done(x);
}

static mag_status_t grad_div(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *b = gx_saved(x, n, 1), *q = GX_DIV(g, b);
    if (gx_wants(n, 0)) gx_give(x, n, 0, q, gi);
    if (!gx_wants(n, 1)) return gx_done(x);
    gx_give(x, n, 1, gx_1(x, MAG_OP_NEG, GX_MUL(q, GX_DIV(gx_saved(x, n, 0), b))), gi); return gx_done(x);
}

/* a % b = a - floor(a / b) * b */
static mag_status_t grad_mod(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    if (gx_wants(n, 0)) gx_give(x, n, 0, g, gi);
    if (!gx_wants(n, 1)) return gx_done(x);
    mag_tensor_t *a = gx_saved(x, n, 0), *b = gx_saved(x, n, 1);
    gx_give(x, n, 1, gx_1(x, MAG_OP_NEG, GX_MUL(g, gx_2(x, MAG_OP_FLOORDIV, a, b))), gi); return gx_done(x);
}

/* d/da = b a^(b-1); d/db = a^b log(a), taken as 0 where a == 0 (PyTorch's convention) */
static mag_status_t grad_pow(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *a = gx_saved(x, n, 0), *b = gx_saved(x, n, 1);
    if (gx_wants(n, 0)) gx_give(x, n, 0, GX_MUL(g, GX_MUL(b, gx_2(x, MAG_OP_POW, a, GX_ADDC(b, -1.0)))), gi);
    if (!gx_wants(n, 1)) return gx_done(x);
    mag_tensor_t *y = gx_saved(x, n, 2), *zero = gx_c(x, a, 0.0);
    mag_tensor_t *logs = gx_1(x, MAG_OP_LOG, gx_2(x, MAG_OP_MAXIMUM, a, zero));
    mag_tensor_t *cond[3] = {gx_2(x, MAG_OP_EQ, a, zero), zero, GX_MUL(y, logs)};
    gx_give(x, n, 1, GX_MUL(g, gx_op(x, MAG_OP_WHERE, cond, 3, NULL, 0)), gi); return gx_done(x);
}

/* the larger input gets the gradient; ties split it evenly (PyTorch) */
static mag_status_t grad_extremum(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi, mag_op_t wins) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *a = gx_saved(x, n, 0), *b = gx_saved(x, n, 1);
    mag_tensor_t *tie = GX_MUL(gx_2(x, MAG_OP_EQ, a, b), gx_c(x, g, 0.5));
    mag_tensor_t *to_a = GX_ADD(gx_2(x, wins, a, b), tie), *to_b = GX_ADD(gx_2(x, wins, b, a), tie);
    if (gx_wants(n, 0)) gx_give(x, n, 0, GX_MUL(g, to_a), gi);
    if (gx_wants(n, 1)) gx_give(x, n, 1, GX_MUL(g, to_b), gi);
    return gx_done(x);
}

static mag_status_t grad_maximum(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    return grad_extremum(n, g, gi, MAG_OP_GT);
}

static mag_status_t grad_minimum(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    return grad_extremum(n, g, gi, MAG_OP_LT);
}

const grad_entry_t mag_grad_table_elementwise[MAG_OP__COUNT] = {
    [MAG_OP_ABS] = {grad_abs, SAVE_X},         [MAG_OP_SGN] = {grad_zero, 0},
    [MAG_OP_NEG] = {grad_neg, 0},              [MAG_OP_SQR] = {grad_sqr, SAVE_X},
    [MAG_OP_RCP] = {grad_rcp, SAVE_Y},         [MAG_OP_SQRT] = {grad_sqrt, SAVE_Y},
    [MAG_OP_RSQRT] = {grad_rsqrt, SAVE_Y},     [MAG_OP_LOG] = {grad_log, SAVE_X},
    [MAG_OP_LOG2] = {grad_log2, SAVE_X},       [MAG_OP_LOG10] = {grad_log10, SAVE_X},
    [MAG_OP_LOG1P] = {grad_log1p, SAVE_X},     [MAG_OP_EXP] = {grad_exp, SAVE_Y},
    [MAG_OP_EXP2] = {grad_exp2, SAVE_Y},       [MAG_OP_EXPM1] = {grad_expm1, SAVE_Y},
    [MAG_OP_FLOOR] = {grad_zero, 0},           [MAG_OP_CEIL] = {grad_zero, 0},
    [MAG_OP_ROUND] = {grad_zero, 0},           [MAG_OP_TRUNC] = {grad_zero, 0},
    [MAG_OP_SIN] = {grad_sin, SAVE_X},         [MAG_OP_COS] = {grad_cos, SAVE_X},
    [MAG_OP_TAN] = {grad_tan, SAVE_Y},         [MAG_OP_ASIN] = {grad_asin, SAVE_X},
    [MAG_OP_ACOS] = {grad_acos, SAVE_X},       [MAG_OP_ATAN] = {grad_atan, SAVE_X},
    [MAG_OP_SINH] = {grad_sinh, SAVE_X},       [MAG_OP_COSH] = {grad_cosh, SAVE_X},
    [MAG_OP_TANH] = {grad_tanh, SAVE_Y},       [MAG_OP_ASINH] = {grad_asinh, SAVE_X},
    [MAG_OP_ACOSH] = {grad_acosh, SAVE_X},     [MAG_OP_ATANH] = {grad_atanh, SAVE_X},
    [MAG_OP_STEP] = {grad_zero, 0},            [MAG_OP_ERF] = {grad_erf, SAVE_X},
    [MAG_OP_ERFC] = {grad_erfc, SAVE_X},       [MAG_OP_SIGMOID] = {grad_sigmoid, SAVE_Y},
    [MAG_OP_HARD_SIGMOID] = {grad_hard_sigmoid, SAVE_X},
    [MAG_OP_SILU] = {grad_silu, SAVE_X},       [MAG_OP_RELU] = {grad_relu, SAVE_X},
    [MAG_OP_GELU] = {grad_gelu, SAVE_X},       [MAG_OP_GELU_APPROX] = {grad_gelu_approx, SAVE_X},
    [MAG_OP_CLAMP] = {grad_clamp, SAVE_X},     [MAG_OP_ADD] = {grad_add, 0},
    [MAG_OP_SUB] = {grad_sub, 0},              [MAG_OP_MUL] = {grad_mul, 0x3},
    [MAG_OP_DIV] = {grad_div, 0x3},            [MAG_OP_MOD] = {grad_mod, 0x3},
    [MAG_OP_POW] = {grad_pow, 0x3 | SAVE_Y},   [MAG_OP_MAXIMUM] = {grad_maximum, 0x3},
    [MAG_OP_MINIMUM] = {grad_minimum, 0x3},
};
