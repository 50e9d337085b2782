/*
 * Gradient of ROPE. Each pair (a, b) becomes (a c - b s, b c + a s): a rotation, whose
 * transpose rotates back, so dx = rope(g, cos, -sin). Per pair, dcos = g_a a + g_b b and
 * dsin = g_b a - g_a b: the pair sums of g * x and of g * rope(x, 0, 1), since rope(x, 0, 1)
 * maps (a, b) to (-b, a). gx_give then sums over the dims cos/sin were broadcast along.
 */
#include "grad_expr.h"

#include <string.h>

/* t (..., D) -> (..., D/2): the sum of each pair's two features. */
static mag_tensor_t *pair_sum(gx_t *x, mag_tensor_t *t, bool interleaved) {
    if (x->st != MAG_OK || !t) return NULL;
    int64_t r = t->rank, d = t->shape[r - 1], shape[MAG_MAX_RANK];
    memcpy(shape, t->shape, sizeof(shape));
    shape[r - 1] = interleaved ? d / 2 : 2; /* interleaved: (..., D/2, 2); rotate-half: (..., 2, D/2) */
    shape[r] = interleaved ? 2 : d / 2;
    mag_tensor_t *split = NULL, *sum = NULL;
    mag_status_t s = mag_tensor_reshape(t, r + 1, shape, &split);
    if (s == MAG_OK) {
        mag_scalar_t attrs[2] = {mag_scalar_int((int64_t)1 << (interleaved ? r : r - 1)), mag_scalar_bool(false)};
        s = mag_op(MAG_OP_SUM, &split, 1, attrs, 2, &sum);
    }
    mag_tensor_release(split);
    return gx_keep(x, s, sum);
}

static mag_tensor_t *rope(gx_t *x, mag_tensor_t *t, mag_tensor_t *cos, mag_tensor_t *sin, const mag_scalar_t *attr) {
    mag_tensor_t *in[3] = {t, cos, sin};
    return gx_op(x, MAG_OP_ROPE, in, 3, attr, 1);
}

static mag_status_t grad_rope(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_scalar_t attr = n->n_attrs ? n->attrs[0] : mag_scalar_int(0);
    bool interleaved = attr.kind == MAG_SCALAR_FLOAT ? attr.f != 0 : attr.i != 0;
    mag_tensor_t *X = gx_saved(x, n, 0), *C = gx_saved(x, n, 1), *S = gx_saved(x, n, 2);
    if (gx_wants(n, 0)) gx_give(x, n, 0, rope(x, g, C, gx_1(x, MAG_OP_NEG, S), &attr), gi);
    if (gx_wants(n, 1)) gx_give(x, n, 1, pair_sum(x, GX_MUL(g, X), interleaved), gi);
    if (gx_wants(n, 2)) {
        mag_tensor_t *turned = rope(x, X, gx_c(x, X, 0.0), gx_c(x, X, 1.0), &attr); /* (a, b) -> (-b, a) */
        gx_give(x, n, 2, pair_sum(x, GX_MUL(g, turned), interleaved), gi);
    }
    return gx_done(x);
}

const grad_entry_t mag_grad_table_rope[MAG_OP__COUNT] = {
    [MAG_OP_ROPE] = {grad_rope, 0x7},
};
