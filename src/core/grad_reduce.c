/*
 * Gradients of the reductions, softmax/log_softmax, cumsum and topk. Reductions carry their
 * reduced dims as a bitmask attribute (-1 = all) and keepdim; the gradient is brought back to
 * the input's shape by re-inserting the reduced dims and broadcasting.
 */
#include "grad_expr.h"

#include <string.h>

mag_status_t mag_grad_topk(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi); /* grad_struct.c */

static uint64_t reduced_mask(const mag_node_t *n) {
    int64_t rank = n->in[0].rank, m = n->n_attrs > 0 ? n->attrs[0].i : -1;
    uint64_t all = rank ? (rank == 64 ? ~0ull : (1ull << rank) - 1) : 1;
    return m < 0 ? all : (uint64_t)m & all;
}

/* t (the reduced shape) with the reduced dims back as size 1, broadcast to the input's shape. */
static mag_tensor_t *expand_back(gx_t *x, const mag_node_t *n, mag_tensor_t *t) {
    if (x->st != MAG_OK || !t) return NULL;
    const mag_input_meta_t *in = &n->in[0];
    uint64_t mask = reduced_mask(n);
    int64_t keep[MAG_MAX_RANK];
    for (int64_t d = 0; d < in->rank; ++d) keep[d] = (mask >> d & 1) ? 1 : in->shape[d];
    mag_tensor_t *k = NULL, *e = NULL;
    x->st = mag_tensor_reshape(t, in->rank, keep, &k);
    if (x->st == MAG_OK) x->st = mag_tensor_expand(k, in->rank, in->shape, &e);
    gx_keep(x, MAG_OK, k);
    return gx_keep(x, x->st, e);
}

static double reduced_count(const mag_node_t *n) {
    uint64_t mask = reduced_mask(n);
    double c = 1;
    for (int64_t d = 0; d < n->in[0].rank; ++d)
        if (mask >> d & 1) c *= (double)n->in[0].shape[d];
    return c;
}

static mag_tensor_t *sum_keep(gx_t *x, mag_tensor_t *t, uint64_t mask) {
    mag_scalar_t a[2] = {mag_scalar_int((int64_t)mask), mag_scalar_bool(true)};
    return gx_op(x, MAG_OP_SUM, &t, 1, a, 2);
}

static mag_status_t grad_sum(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    gx_give(x, n, 0, expand_back(x, n, g), gi);
    return gx_done(x);
}

static mag_status_t grad_mean(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    gx_give(x, n, 0, GX_MULC(expand_back(x, n, g), 1.0 / reduced_count(n)), gi);
    return gx_done(x);
}

/* d prod / d x_i = prod / x_i (infinite where x_i == 0, as the formula says) */
static mag_status_t grad_prod(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *X = gx_saved(x, n, 0), *Y = gx_saved(x, n, 1);
    gx_give(x, n, 0, GX_MUL(expand_back(x, n, g), GX_DIV(expand_back(x, n, Y), X)), gi);
    return gx_done(x);
}

/* min/max: the gradient is shared evenly by the elements equal to the result */
static mag_status_t grad_extremum(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *X = gx_saved(x, n, 0), *Y = gx_saved(x, n, 1);
    mag_tensor_t *hit = GX_MUL(gx_2(x, MAG_OP_EQ, X, expand_back(x, n, Y)), gx_c(x, g, 1.0));
    mag_tensor_t *count = sum_keep(x, hit, reduced_mask(n));
    gx_give(x, n, 0, GX_DIV(GX_MUL(expand_back(x, n, g), hit), count), gi);
    return gx_done(x);
}

/* var: 2 (x - mean) / (n - correction); std: var's gradient / (2 std) */
static mag_status_t grad_var_std(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    bool is_std = strcmp(n->name, "std") == 0;
    double corr = n->n_attrs > 2 ? (n->attrs[2].kind == MAG_SCALAR_FLOAT ? n->attrs[2].f : (double)n->attrs[2].i) : 1.0;
    double denom = reduced_count(n) - corr;
    mag_tensor_t *X = gx_saved(x, n, 0);
    mag_tensor_t *mean = GX_MULC(sum_keep(x, X, reduced_mask(n)), 1.0 / reduced_count(n));
    mag_tensor_t *dev = GX_SUB(X, mean);
    mag_tensor_t *scale = expand_back(x, n, g);
    if (is_std) scale = GX_DIV(scale, expand_back(x, n, GX_MULC(gx_saved(x, n, 1), 2.0)));
    gx_give(x, n, 0, GX_MUL(scale, GX_MULC(dev, 2.0 / (denom > 0 ? denom : 0.0))), gi);
    return gx_done(x);
}

/* logsumexp: g * exp(x - y) = g * softmax(x) */
static mag_status_t grad_logsumexp(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *X = gx_saved(x, n, 0), *Y = gx_saved(x, n, 1);
    gx_give(x, n, 0, GX_MUL(expand_back(x, n, g), gx_1(x, MAG_OP_EXP, GX_SUB(X, expand_back(x, n, Y)))), gi);
    return gx_done(x);
}

static uint64_t dim_mask(const mag_node_t *n, const mag_tensor_t *t) {
    int64_t d = n->attrs[0].i;
    if (d < 0) d += t->rank ? t->rank : 1;
    return 1ull << d;
}

/* softmax: y * (g - sum(g * y)) along dim */
static mag_status_t grad_softmax(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *Y = gx_saved(x, n, 0), *gy = GX_MUL(g, Y);
    gx_give(x, n, 0, GX_MUL(Y, GX_SUB(g, sum_keep(x, gy, Y ? dim_mask(n, Y) : 0))), gi);
    return gx_done(x);
}

/* log_softmax: g - exp(y) * sum(g) along dim */
static mag_status_t grad_log_softmax(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *Y = gx_saved(x, n, 0);
    gx_give(x, n, 0, GX_SUB(g, GX_MUL(gx_1(x, MAG_OP_EXP, Y), sum_keep(x, g, dim_mask(n, g)))), gi);
    return gx_done(x);
}

/* cumsum: the reversed running sum of g = total - cumsum(g) + g */
static mag_status_t grad_cumsum(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *run = gx_op(x, MAG_OP_CUMSUM, &g, 1, n->attrs, n->n_attrs);
    gx_give(x, n, 0, GX_ADD(GX_SUB(sum_keep(x, g, dim_mask(n, g)), run), g), gi);
    return gx_done(x);
}

#define SAVE_XY (1u | GRAD_SAVE_OUT)

const grad_entry_t mag_grad_table_reduce[MAG_OP__COUNT] = {
    [MAG_OP_SUM] = {grad_sum, 0},
    [MAG_OP_MEAN] = {grad_mean, 0},
    [MAG_OP_PROD] = {grad_prod, SAVE_XY},
    [MAG_OP_MIN] = {grad_extremum, SAVE_XY},
    [MAG_OP_MAX] = {grad_extremum, SAVE_XY},
    [MAG_OP_VAR] = {grad_var_std, 1u},
    [MAG_OP_STD] = {grad_var_std, SAVE_XY},
    [MAG_OP_LOGSUMEXP] = {grad_logsumexp, SAVE_XY},
    [MAG_OP_SOFTMAX] = {grad_softmax, GRAD_SAVE_OUT},
    [MAG_OP_LOG_SOFTMAX] = {grad_log_softmax, GRAD_SAVE_OUT},
    [MAG_OP_CUMSUM] = {grad_cumsum, 0},
    [MAG_OP_TOPK] = {mag_grad_topk, 0x2},
};
