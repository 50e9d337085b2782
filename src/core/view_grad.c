/*
 * One gradient for every view. A view v of t is a new (shape, strides, offset) over t's
 * storage; its backward maps each element of v back to the element of t at the same address.
 * t's layout is inverted (a mixed-radix decomposition of storage offsets into t indices), which
 * expresses v as a strided view G of a contiguous tensor of t's shape. The gradient is then
 * written into zeros through G, accumulating where G repeats elements (expand).
 * Dims of t with stride 0 (t itself broadcast) take index 0: the gradient reaching t is summed
 * over them anyway by the backward of whatever broadcast t.
 */
#include "autograd.h"
#include "op.h"

#include <stdlib.h>
#include <string.h>

typedef struct layout {
    int64_t rank, offset;
    int64_t shape[MAG_MAX_RANK], strides[MAG_MAX_RANK];
} layout_t;

static void put_layout(int64_t *aux, const mag_tensor_t *t) {
    aux[0] = t->rank;
    aux[1] = t->offset;
    memcpy(aux + 2, t->shape, sizeof(t->shape));
    memcpy(aux + 2 + MAG_MAX_RANK, t->strides, sizeof(t->strides));
}

static layout_t get_layout(const int64_t *aux) {
    layout_t l;
    l.rank = aux[0];
    l.offset = aux[1];
    memcpy(l.shape, aux + 2, sizeof(l.shape));
    memcpy(l.strides, aux + 2 + MAG_MAX_RANK, sizeof(l.strides));
    return l;
}

#define LAYOUT_AUX (2 + 2 * MAG_MAX_RANK)

/* Indices into t of the element at storage position pos; false when pos is not an element of t. */
static bool decompose(const layout_t *t, int64_t pos, int64_t *idx) {
    int64_t order[MAG_MAX_RANK], n = 0, d0 = pos - t->offset;
    for (int64_t d = 0; d < t->rank; ++d) {
        idx[d] = 0;
        if (t->shape[d] < 2 || t->strides[d] == 0) continue;
        if (t->strides[d] < 0) d0 -= (t->shape[d] - 1) * t->strides[d]; /* count reversed dims from their end */
        int64_t j = n++;
        for (; j > 0 && llabs(t->strides[order[j - 1]]) < llabs(t->strides[d]); --j) order[j] = order[j - 1];
        order[j] = d;
    }
    for (int64_t j = 0; j < n; ++j) {
        int64_t d = order[j], s = llabs(t->strides[d]);
        int64_t q = d0 / s;
        if (d0 < 0 || q >= t->shape[d]) return false;
        d0 -= q * s;
        idx[d] = t->strides[d] < 0 ? t->shape[d] - 1 - q : q;
    }
    return d0 == 0;
}

static int64_t linear(const layout_t *t, const int64_t *idx) {
    int64_t off = 0, s = 1;
    for (int64_t d = t->rank - 1; d >= 0; --d) {
        off += idx[d] * s;
        s *= t->shape[d];
    }
    return off;
}

/* v as a strided view (G) of a contiguous tensor with t's shape. */
static mag_status_t rebase(const layout_t *t, const layout_t *v, layout_t *g) {
    int64_t base[MAG_MAX_RANK], step[MAG_MAX_RANK];
    *g = *v;
    if (!decompose(t, v->offset, base)) goto fail;
    g->offset = linear(t, base);
    for (int64_t k = 0; k < v->rank; ++k) {
        if (v->shape[k] < 2) {
            g->strides[k] = 0;
            continue;
        }
        if (!decompose(t, v->offset + v->strides[k], step)) goto fail;
        g->strides[k] = linear(t, step) - g->offset;
    }
    return MAG_OK;
fail:
    return mag_error(MAG_ERR_RUNTIME, "view backward: the view is not expressible in its base's indices (a base "
                                      "whose elements overlap); clone() the base first");
}

static bool overlaps(const layout_t *g) {
    mag_tensor_t probe = {.rank = g->rank};
    memcpy(probe.shape, g->shape, sizeof(g->shape));
    memcpy(probe.strides, g->strides, sizeof(g->strides));
    return mag_tensor_has_internal_overlap(&probe);
}

/* flat[i] = g.offset + sum_k index_k(i) * g.strides[k], an int64 tensor of g's shape. */
static mag_status_t flat_indices(const layout_t *g, mag_tensor_t **out) {
    mag_tensor_t *acc = NULL;
    MAG_TRY(mag_tensor_empty(MAG_DTYPE_INT64, 0, NULL, &acc));
    mag_status_t s = mag_tensor_fill(acc, mag_scalar_int(g->offset));
    for (int64_t k = 0; s == MAG_OK && k < g->rank; ++k) {
        mag_tensor_t *r = NULL, *rv = NULL, *next = NULL;
        int64_t shape[MAG_MAX_RANK];
        for (int64_t j = 0; j < g->rank; ++j) shape[j] = j == k ? g->shape[k] : 1;
        mag_scalar_t a[2] = {mag_scalar_int(0), mag_scalar_int(g->strides[k])};
        s = mag_tensor_empty(MAG_DTYPE_INT64, 1, &g->shape[k], &r);
        if (s == MAG_OK) s = mag_op(MAG_OP_ARANGE, NULL, 0, a, 2, &r);
        if (s == MAG_OK) s = mag_tensor_view(r, g->rank, shape, &rv);
        if (s == MAG_OK) s = mag_g_op(MAG_OP_ADD, acc, rv, &next);
        mag_tensor_release(r);
        mag_tensor_release(rv);
        if (s == MAG_OK) {
            mag_tensor_release(acc);
            acc = next;
        }
    }
    if (s == MAG_OK && acc->rank != g->rank) { /* rank-0 views */
        mag_tensor_t *e = NULL;
        s = mag_tensor_reshape(acc, g->rank, g->shape, &e);
        mag_tensor_release(acc);
        acc = e;
    }
    if (s != MAG_OK) {
        mag_tensor_release(acc);
        return s;
    }
    *out = acc;
    return MAG_OK;
}

static mag_status_t grad_view(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    layout_t t = get_layout(n->aux), v = get_layout(n->aux + LAYOUT_AUX), geo;
    MAG_TRY(rebase(&t, &v, &geo));
    mag_tensor_t *z = NULL, *dst = NULL;
    MAG_TRY(mag_tensor_empty(g->dtype, t.rank, t.shape, &z));
    mag_status_t s = mag_tensor_fill(z, mag_scalar_float(0.0));
    if (s == MAG_OK && !overlaps(&geo)) {
        s = mag_tensor_as_strided(z, geo.rank, geo.shape, geo.strides, geo.offset, &dst);
        if (s == MAG_OK) s = mag_tensor_copy_(dst, g);
    } else if (s == MAG_OK) { /* repeated elements (expand): accumulate */
        mag_tensor_t *idx = NULL, *flat = NULL;
        int64_t numel = z->numel;
        s = flat_indices(&geo, &idx);
        if (s == MAG_OK) s = mag_tensor_view(z, 1, &numel, &flat);
        if (s == MAG_OK) {
            mag_tensor_t *in[2] = {g, idx};
            mag_scalar_t acc = mag_scalar_bool(true);
            s = mag_op(MAG_OP_INDEX_PUT, in, 2, &acc, 1, &flat);
        }
        mag_tensor_release(idx);
        mag_tensor_release(flat);
    }
    mag_tensor_release(dst);
    if (s == MAG_OK && z->dtype != n->in[0].dtype) {
        mag_tensor_t *c = NULL;
        s = mag_tensor_cast(z, n->in[0].dtype, &c);
        mag_tensor_release(z);
        z = c;
    }
    if (s != MAG_OK) {
        mag_tensor_release(z);
        return s;
    }
    gi[0] = z;
    return MAG_OK;
}

static mag_status_t attach_view(const char *name, mag_tensor_t *t, mag_tensor_t *v) {
    mag_node_t *node;
    MAG_TRY(mag_node_attach(v, name, grad_view, &t, 1, NULL, 0, &node));
    put_layout(node->aux, t);
    put_layout(node->aux + LAYOUT_AUX, v);
    node->n_aux = 2 * LAYOUT_AUX;
    return MAG_OK;
}

mag_status_t mag_grad_record_view(const char *name, mag_tensor_t *t, mag_tensor_t *v) {
    if (!t->requires_grad || !mag_grad_enabled() || mag_autograd_depth() != 0) return MAG_OK;
    return attach_view(name, t, v);
}

/* inputs: [old base, written values]; the region of v in the base gets the values' gradient. */
static mag_status_t grad_copy_slices(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    layout_t t = get_layout(n->aux), v = get_layout(n->aux + LAYOUT_AUX), geo;
    MAG_TRY(rebase(&t, &v, &geo));
    mag_tensor_t *gc = NULL, *region = NULL;
    MAG_TRY(mag_tensor_cast(g, g->dtype, &gc)); /* a private contiguous copy */
    mag_status_t s = mag_tensor_as_strided(gc, geo.rank, geo.shape, geo.strides, geo.offset, &region);
    if (s == MAG_OK && (n->in[1].node || n->in[1].leaf)) s = mag_tensor_cast(region, n->in[1].dtype, &gi[1]);
    if (s == MAG_OK && (n->in[0].node || n->in[0].leaf)) {
        s = mag_tensor_fill(region, mag_scalar_float(0.0));
        if (s == MAG_OK) s = mag_tensor_cast(gc, n->in[0].dtype, &gi[0]);
    }
    mag_tensor_release(region);
    mag_tensor_release(gc);
    return s;
}

mag_status_t mag_grad_rebase_view(mag_tensor_t *base, mag_tensor_t *v, mag_tensor_t *result) {
    mag_tensor_t *old = NULL;
    MAG_TRY(mag_tensor_cast(base, base->dtype, &old)); /* the base before the write, with its history */
    old->node = base->node, old->requires_grad = base->requires_grad;
    base->node = NULL;
    mag_tensor_t *in[2] = {old, result};
    mag_node_t *node;
    mag_status_t s = mag_node_attach(base, "copy_slices", grad_copy_slices, in, 2, NULL, 0, &node);
    if (s == MAG_OK) {
        put_layout(node->aux, base);
        put_layout(node->aux + LAYOUT_AUX, v);
        node->n_aux = 2 * LAYOUT_AUX;
        s = attach_view("view", base, v);
    } else {
        base->node = old->node;
        old->node = NULL;
    }
    mag_tensor_release(old);
    return s;
}
