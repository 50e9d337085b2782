/*
 * Gradients of the table ops. Each backward is written with core ops (so it runs on any
 * backend) and receives the node with the inputs' shapes, attributes and saved tensors.
 * The table below says, per op, which backward to use and what to save during forward.
 */
#include "autograd.h"
#include "op.h"

#include <string.h>

enum { SAVE_OUT = 1u << 31 }; /* besides input bits (1 << i) */

typedef struct grad_entry {
    mag_backward_fn fn;
    uint32_t save; /* input bitmask | SAVE_OUT */
} grad_entry_t;

mag_status_t mag_g_op(mag_op_t op, mag_tensor_t *a, mag_tensor_t *b, mag_tensor_t **out) {
    mag_tensor_t *in[2] = {a, b};
    *out = NULL;
    return mag_op(op, in, b ? 2 : 1, NULL, 0, out);
}

/* TEMPORARY until the SUM op lands: sum over dim d, keeping it, by adding slices. */
static mag_status_t sum_dim_keep(mag_tensor_t *g, int64_t d, mag_tensor_t **out) {
    mag_tensor_t *acc = NULL, *sl = NULL;
    MAG_TRY(mag_tensor_slice(g, d, 0, 1, 1, &sl));
    mag_status_t s = mag_tensor_cast(sl, g->dtype, &acc);
    mag_tensor_release(sl);
    for (int64_t i = 1; s == MAG_OK && i < g->shape[d]; ++i) {
        mag_tensor_t *in[2] = {acc, NULL};
        s = mag_tensor_slice(g, d, i, 1, 1, &in[1]);
        if (s == MAG_OK) s = mag_op(MAG_OP_ADD, in, 2, NULL, 0, &acc);
        mag_tensor_release(in[1]);
    }
    if (s != MAG_OK) {
        mag_tensor_release(acc);
        return s;
    }
    *out = acc;
    return MAG_OK;
}

/* Sum g over the dims that broadcasting added or stretched, to recover an input's shape. */
mag_status_t mag_g_sum_to(mag_tensor_t *g, int64_t rank, const int64_t *shape, mag_tensor_t **out) {
    int64_t lead = g->rank - rank;
    mag_tensor_t *cur = g;
    mag_tensor_retain(cur);
    for (int64_t d = 0; d < g->rank; ++d) {
        if (!(d < lead || (shape[d - lead] == 1 && g->shape[d] != 1))) continue;
        mag_tensor_t *next;
        mag_status_t s = sum_dim_keep(cur, d, &next);
        mag_tensor_release(cur);
        MAG_TRY(s);
        cur = next;
    }
    if (cur->rank == rank && !memcmp(cur->shape, shape, (size_t)rank * sizeof(int64_t))) {
        *out = cur;
        return MAG_OK;
    }
    mag_status_t s = mag_tensor_reshape(cur, rank, shape, out);
    mag_tensor_release(cur);
    return s;
}

/* The gradient for input i: g reduced to its shape and cast to its dtype (NULL when it needs none). */
static mag_status_t to_input(mag_node_t *n, int64_t i, mag_tensor_t *g, mag_tensor_t **out) {
    mag_input_meta_t *m = &n->in[i];
    if (!m->node && !m->leaf) return MAG_OK;
    mag_tensor_t *r;
    MAG_TRY(mag_g_sum_to(g, m->rank, m->shape, &r));
    if (r->dtype != m->dtype) {
        mag_tensor_t *c;
        mag_status_t s = mag_tensor_cast(r, m->dtype, &c);
        mag_tensor_release(r);
        MAG_TRY(s);
        r = c;
    }
    *out = r;
    return MAG_OK;
}

/* to_input of op(a, b), releasing the intermediate. */
static mag_status_t input_grad(mag_node_t *n, int64_t i, mag_op_t op, mag_tensor_t *a, mag_tensor_t *b,
                               mag_tensor_t **out) {
    if (!n->in[i].node && !n->in[i].leaf) return MAG_OK; /* input i needs no gradient */
    mag_tensor_t *t;
    MAG_TRY(mag_g_op(op, a, b, &t));
    mag_status_t s = to_input(n, i, t, out);
    mag_tensor_release(t);
    return s;
}

static mag_status_t grad_identity(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) { return to_input(n, 0, g, &gi[0]); }

static mag_status_t grad_neg(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    return input_grad(n, 0, MAG_OP_NEG, g, NULL, &gi[0]);
}

static mag_status_t grad_exp(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    mag_tensor_t *y;
    MAG_TRY(mag_node_saved(n, 0, &y));
    return input_grad(n, 0, MAG_OP_MUL, g, y, &gi[0]);
}

static mag_status_t grad_add(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    MAG_TRY(to_input(n, 0, g, &gi[0]));
    return to_input(n, 1, g, &gi[1]);
}

static mag_status_t grad_sub(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    MAG_TRY(to_input(n, 0, g, &gi[0]));
    return input_grad(n, 1, MAG_OP_NEG, g, NULL, &gi[1]);
}

static bool wants(const mag_node_t *n, int64_t i) { return n->in[i].node || n->in[i].leaf; }

/* A saved tensor is only checked (and read) when the gradient that needs it is wanted. */
static mag_status_t grad_mul(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    mag_tensor_t *a, *b;
    if (wants(n, 0)) {
        MAG_TRY(mag_node_saved(n, 1, &b));
        MAG_TRY(input_grad(n, 0, MAG_OP_MUL, g, b, &gi[0]));
    }
    if (!wants(n, 1)) return MAG_OK;
    MAG_TRY(mag_node_saved(n, 0, &a));
    return input_grad(n, 1, MAG_OP_MUL, g, a, &gi[1]);
}

static mag_status_t grad_div(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    mag_tensor_t *a, *b, *q = NULL, *t = NULL;
    MAG_TRY(mag_node_saved(n, 1, &b));
    MAG_TRY(mag_g_op(MAG_OP_DIV, g, b, &q)); /* g / b */
    mag_status_t s = to_input(n, 0, q, &gi[0]);
    if (s == MAG_OK && wants(n, 1)) { /* -(g / b) * (a / b) */
        mag_tensor_t *ab = NULL, *neg = NULL;
        s = mag_node_saved(n, 0, &a);
        if (s == MAG_OK) s = mag_g_op(MAG_OP_DIV, a, b, &ab);
        if (s == MAG_OK) s = mag_g_op(MAG_OP_MUL, q, ab, &t);
        if (s == MAG_OK) s = mag_g_op(MAG_OP_NEG, t, NULL, &neg);
        if (s == MAG_OK) s = to_input(n, 1, neg, &gi[1]);
        mag_tensor_release(ab);
        mag_tensor_release(neg);
    }
    mag_tensor_release(q);
    mag_tensor_release(t);
    return s;
}

/* INDEX: scatter-add the gradient into zeros of the source's shape at the saved indices. */
static mag_status_t grad_index(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    mag_input_meta_t *m = &n->in[0];
    if (!m->node && !m->leaf) return MAG_OK;
    mag_tensor_t *in[MAG_MAX_RANK + 1] = {g}, *z = NULL;
    for (int64_t i = 0; i < n->n_saved; ++i) MAG_TRY(mag_node_saved(n, i, &in[i + 1]));
    MAG_TRY(mag_tensor_empty(g->dtype, m->rank, m->shape, &z));
    mag_scalar_t acc = mag_scalar_bool(true);
    mag_status_t s = mag_tensor_fill(z, mag_scalar_float(0.0));
    if (s == MAG_OK) s = mag_op(MAG_OP_INDEX_PUT, in, n->n_saved + 1, &acc, 1, &z);
    if (s == MAG_OK) s = to_input(n, 0, z, &gi[0]);
    mag_tensor_release(z);
    return s;
}

/* INDEX_PUT (recorded out of place as out = put(old, idx, values)): values get g[idx], old gets g with idx zeroed. */
static mag_status_t grad_index_put(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    int64_t k = n->n_saved, old = n->n_in - 1;
    mag_tensor_t *idx[MAG_MAX_RANK + 1] = {g};
    for (int64_t i = 0; i < k; ++i) MAG_TRY(mag_node_saved(n, i, &idx[i + 1]));
    mag_status_t s = MAG_OK;
    if (n->in[0].node || n->in[0].leaf) {
        mag_tensor_t *picked = NULL;
        s = mag_op(MAG_OP_INDEX, idx, k + 1, NULL, 0, &picked);
        if (s == MAG_OK) s = to_input(n, 0, picked, &gi[0]);
        mag_tensor_release(picked);
    }
    if (s == MAG_OK && (n->in[old].node || n->in[old].leaf)) {
        bool accumulate = n->n_attrs > 0 && n->attrs[0].i;
        mag_tensor_t *keep = NULL, *zero = NULL;
        s = mag_tensor_cast(g, g->dtype, &keep);
        if (s == MAG_OK && !accumulate) s = mag_tensor_empty(g->dtype, 0, NULL, &zero);
        if (s == MAG_OK && !accumulate) s = mag_tensor_fill(zero, mag_scalar_float(0.0));
        if (s == MAG_OK && !accumulate) {
            idx[0] = zero;
            mag_scalar_t no = mag_scalar_bool(false);
            s = mag_op(MAG_OP_INDEX_PUT, idx, k + 1, &no, 1, &keep);
        }
        if (s == MAG_OK) s = to_input(n, old, keep, &gi[old]);
        mag_tensor_release(keep);
        mag_tensor_release(zero);
    }
    return s;
}

static const grad_entry_t grad_table[MAG_OP__COUNT] = {
    [MAG_OP_COPY] = {grad_identity, 0},
    [MAG_OP_NEG] = {grad_neg, 0},
    [MAG_OP_EXP] = {grad_exp, SAVE_OUT},
    [MAG_OP_ADD] = {grad_add, 0},
    [MAG_OP_SUB] = {grad_sub, 0},
    [MAG_OP_MUL] = {grad_mul, 0x3},
    [MAG_OP_DIV] = {grad_div, 0x3},
    [MAG_OP_INDEX] = {grad_index, 0},
    [MAG_OP_INDEX_PUT] = {grad_index_put, 0},
};

bool mag_op_has_grad(mag_op_t op) { return (unsigned)op < MAG_OP__COUNT && grad_table[op].fn; }

static bool is_float(const mag_tensor_t *t) { return mag_dtype_info(t->dtype)->flags & MAG_DTF_FLOAT; }

mag_status_t mag_grad_record_op(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                                int64_t n_attrs, mag_tensor_t *out) {
    const grad_entry_t *e = &grad_table[op];
    if (!e->fn || !is_float(out)) return MAG_OK; /* not differentiable: the result is a constant */
    mag_node_t *node;
    MAG_TRY(mag_node_attach(out, mag_op_info(op)->name, e->fn, in, n_in, attrs, n_attrs, &node));
    for (int64_t i = 0; i < n_in && i < 31; ++i)
        if (e->save & (1u << i)) mag_node_save(node, in[i]);
    if (e->save & SAVE_OUT) mag_node_save(node, out);
    if (op == MAG_OP_INDEX || op == MAG_OP_INDEX_PUT) { /* the integer indices: inputs 1..k */
        int64_t last = op == MAG_OP_INDEX ? n_in : n_in - 1; /* INDEX_PUT's last input is the old destination */
        for (int64_t i = 1; i < last; ++i) mag_node_save(node, in[i]);
    }
    return MAG_OK;
}

/* A node that cuts history: the tensor keeps requiring grad but nothing flows to what it was. */
static mag_status_t grad_none(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    (void)n, (void)g, (void)gi;
    return MAG_OK;
}

/*
 * In-place ops on tensors in the graph run as their out-of-place twin and write the result
 * back: the destination's old value becomes a private copy that inherits its node, so tensors
 * saved by the twin are never the ones being overwritten. Leaves that require grad refuse.
 */
mag_status_t mag_grad_inplace(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                              int64_t n_attrs, mag_tensor_t *dst) {
    const char *name = mag_op_info(op)->name;
    mag_tensor_t *base = dst->view_base;
    if ((dst->requires_grad && !dst->node) || (base && base->requires_grad && !base->node))
        return mag_error(MAG_ERR_RUNTIME, "%s: a leaf tensor that requires grad (shape %s), or a view of one, cannot "
                                          "be modified in place; use mag.no_grad() or clone() it", name,
                         MAG_SHAPE(base ? base : dst));
    if (!is_float(dst)) return mag_error(MAG_ERR_RUNTIME, "%s: an in-place result with a gradient needs a "
                                                          "floating-point destination, got %s", name, MAG_DTNAME(dst->dtype));
    mag_tensor_t *old = NULL, *result = NULL, *args[MAG_MAX_RANK + 2];
    if (n_in > MAG_MAX_RANK + 1) return mag_error(MAG_ERR_VALUE, "%s: too many inputs", name);
    MAG_TRY(mag_tensor_cast(dst, dst->dtype, &old));
    old->node = dst->node, old->requires_grad = dst->requires_grad;
    dst->node = NULL;
    for (int64_t i = 0; i < n_in; ++i) args[i] = in[i] == dst ? old : in[i];
    mag_status_t s = MAG_OK;
    mag_op_t rec = op;
    int64_t n_rec = n_in;
    if (op == MAG_OP_COPY) { /* copy_: the source broadcast to the destination, in its dtype */
        mag_tensor_t *e = NULL;
        s = mag_tensor_expand(args[0], dst->rank, dst->shape, &e);
        if (s == MAG_OK) s = mag_tensor_cast(e, dst->dtype, &result);
        mag_tensor_release(e);
    } else if (op == MAG_OP_INDEX_PUT) { /* put into a copy of the old value; old is the last input */
        s = mag_tensor_cast(old, old->dtype, &result);
        if (s == MAG_OK) s = mag_op(op, args, n_in, attrs, n_attrs, &result);
        args[n_rec++] = old;
    } else if (mag_op_info(op)->flags & MAG_OPF_NOGRAD) {
        s = mag_tensor_cast(old, old->dtype, &result);
        if (s == MAG_OK) s = mag_op(op, args, n_in, attrs, n_attrs, &result);
        rec = MAG_OP__COUNT;
    } else {
        s = mag_op(op, args, n_in, attrs, n_attrs, &result);
    }
    if (s == MAG_OK && rec == MAG_OP__COUNT) {
        s = mag_node_attach(result, name, grad_none, NULL, 0, NULL, 0, NULL);
    } else if (s == MAG_OK) {
        if (!grad_table[rec].fn) s = mag_error(MAG_ERR_RUNTIME, "%s: no gradient is defined for this op", name);
        else s = mag_grad_record_op(rec, args, n_rec, attrs, n_attrs, result);
    }
    if (s == MAG_OK && base) /* dst is a view: the write becomes part of its base's history */
        s = mag_grad_rebase_view(base, dst, result);
    if (s == MAG_OK) s = mag_tensor_copy_(dst, result);
    if (s == MAG_OK && !base) {
        dst->node = result->node, dst->requires_grad = true;
        result->node = NULL;
    } else if (s != MAG_OK) { /* put the history back */
        dst->node = old->node;
        old->node = NULL;
    }
    mag_tensor_release(result);
    mag_tensor_release(old);
    return s;
}
