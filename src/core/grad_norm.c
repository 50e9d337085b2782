/*
 * Gradients of rms_norm and layer_norm, written with core ops over the normalised (last k) dims;
 * the statistics are recomputed from the saved input, in float32 for 16-bit inputs:
 *   rms_norm:   y = xh w, xh = x s, s = (mean(x^2) + eps)^-1/2:     dx = s (gw - xh mean(gw xh))
 *   layer_norm: y = xh w + b, xh = (x - mean) s, s = (var + eps)^-1/2:
 *                                                 dx = s (gw - mean(gw) - xh mean(gw xh))
 * with gw = g w (g without a weight); dw = sum g xh and db = sum g over the other dims.
 */
#include "grad_expr.h"
#include "reduce.h"

#include <string.h>

/* the mean over the last k dims of t, kept as size 1 */
static mag_tensor_t *mean_last(gx_t *x, mag_tensor_t *t, int64_t k) {
    if (x->st != MAG_OK || !t) return NULL;
    mag_scalar_t a[2] = {mag_scalar_int((int64_t)((((uint64_t)1 << k) - 1) << (t->rank - k))), mag_scalar_bool(true)};
    return gx_op(x, MAG_OP_MEAN, &t, 1, a, 2);
}

static mag_tensor_t *widened(gx_t *x, mag_tensor_t *t) {
    if (x->st != MAG_OK || !t) return NULL;
    mag_dtype_t dt = mag_tensor_dtype(t);
    if (dt != MAG_DTYPE_FLOAT16 && dt != MAG_DTYPE_BFLOAT16) return t;
    mag_tensor_t *f = NULL;
    mag_status_t s = mag_tensor_cast(t, MAG_DTYPE_FLOAT32, &f);
    return gx_keep(x, s, f);
}

static mag_status_t grad_norm(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    const mag_scalar_t *at = n->attrs;
    int64_t k = at[MAG_NORM_DIMS].i;
    double eps = at[MAG_NORM_EPS].kind == MAG_SCALAR_FLOAT ? at[MAG_NORM_EPS].f : (double)at[MAG_NORM_EPS].i;
    bool hw = at[MAG_NORM_HAS_WEIGHT].i != 0, hb = at[MAG_NORM_HAS_BIAS].i != 0;
    bool layer = strcmp(n->name, "layer_norm") == 0;
    mag_tensor_t *X = widened(x, gx_saved(x, n, 0)), *gf = widened(x, g);
    mag_tensor_t *c = layer ? GX_SUB(X, mean_last(x, X, k)) : X;
    mag_tensor_t *s = gx_1(x, MAG_OP_RSQRT, GX_ADDC(mean_last(x, GX_MUL(c, c), k), eps));
    mag_tensor_t *xh = GX_MUL(c, s);
    if (hw && gx_wants(n, 1)) gx_give(x, n, 1, GX_MUL(gf, xh), gi);
    if (hb && gx_wants(n, 1 + hw)) gx_give(x, n, 1 + hw, gf, gi);
    if (gx_wants(n, 0)) {
        mag_tensor_t *gw = hw ? GX_MUL(gf, gx_saved(x, n, 1)) : gf;
        mag_tensor_t *inner = GX_SUB(gw, GX_MUL(xh, mean_last(x, GX_MUL(gw, xh), k)));
        if (layer) inner = GX_SUB(inner, mean_last(x, gw, k));
        gx_give(x, n, 0, GX_MUL(s, inner), gi);
    }
    return gx_done(x);
}

/* x and the weight (or, without one, the bias, which is not read) */
const grad_entry_t mag_grad_table_norm[MAG_OP__COUNT] = {
    [MAG_OP_RMS_NORM] = {grad_norm, 0x3u},
    [MAG_OP_LAYER_NORM] = {grad_norm, 0x3u},
};
