/*
 * Recording gradients of table ops: which backward to use (the per-file tables of grad_*.c),
 * what to save during forward, the expression-arena helpers the formulas use, and in-place ops.
 */
#include "grad_expr.h"
#include "op.h"

#include <string.h>

static const grad_entry_t *grad_entry(mag_op_t op) {
    static const grad_entry_t *const tables[] = {mag_grad_table_elementwise, mag_grad_table_struct,
                                                 mag_grad_table_reduce, mag_grad_table_rope, mag_grad_table_norm};
    for (size_t i = 0; i < sizeof(tables) / sizeof(*tables); ++i)
        if (tables[i][op].fn) return &tables[i][op];
    return NULL;
}

bool mag_op_has_grad(mag_op_t op) { return (unsigned)op < MAG_OP__COUNT && grad_entry(op); }

mag_status_t mag_g_op(mag_op_t op, mag_tensor_t *a, mag_tensor_t *b, mag_tensor_t **out) {
    mag_tensor_t *in[2] = {a, b};
    *out = NULL;
    return mag_op(op, in, b ? 2 : 1, NULL, 0, out);
}

/* Sum g over the dims that broadcasting added or stretched, to recover an input's shape. */
mag_status_t mag_g_sum_to(mag_tensor_t *g, int64_t rank, const int64_t *shape, mag_tensor_t **out) {
    if (g->rank == rank && !memcmp(g->shape, shape, (size_t)rank * sizeof(int64_t))) {
        mag_tensor_retain(g);
        *out = g;
        return MAG_OK;
    }
    int64_t lead = g->rank - rank;
    uint64_t mask = 0;
    for (int64_t d = 0; d < g->rank; ++d)
        if (d < lead || (shape[d - lead] == 1 && g->shape[d] != 1)) mask |= 1ull << d;
    mag_tensor_t *s = NULL;
    if (mask) {
        mag_scalar_t attrs[2] = {mag_scalar_int((int64_t)mask), mag_scalar_bool(true)};
        MAG_TRY(mag_op(MAG_OP_SUM, &g, 1, attrs, 2, &s));
    } else {
        mag_tensor_retain(g);
        s = g;
    }
    mag_status_t st = mag_tensor_reshape(s, rank, shape, out);
    mag_tensor_release(s);
    return st;
}

bool gx_wants(const mag_node_t *n, int64_t i) { return n->in[i].node || n->in[i].leaf; }

mag_tensor_t *gx_saved(gx_t *x, mag_node_t *n, int64_t i) {
    if (x->st != MAG_OK) return NULL;
    mag_tensor_t *t = NULL;
    if (i >= n->n_saved) x->st = mag_error(MAG_ERR_RUNTIME, "%s backward: missing saved tensor %lld", n->name, (long long)i);
    else x->st = mag_node_saved(n, i, &t);
    return x->st == MAG_OK ? t : NULL;
}

void gx_give(gx_t *x, mag_node_t *n, int64_t i, mag_tensor_t *v, mag_tensor_t **gi) {
    if (x->st != MAG_OK || !gx_wants(n, i)) return;
    if (!v) {
        x->st = mag_error(MAG_ERR_RUNTIME, "%s backward: no gradient computed", n->name);
        return;
    }
    mag_input_meta_t *m = &n->in[i];
    mag_tensor_t *r = NULL;
    x->st = mag_g_sum_to(v, m->rank, m->shape, &r);
    if (x->st == MAG_OK && r->dtype != m->dtype) {
        mag_tensor_t *c = NULL;
        x->st = mag_tensor_cast(r, m->dtype, &c);
        mag_tensor_release(r);
        r = c;
    }
    if (x->st != MAG_OK) {
        mag_tensor_release(r);
        return;
    }
    mag_tensor_release(gi[i]);
    gi[i] = r;
}

mag_status_t gx_done(gx_t *x) {
    for (int i = 0; i < x->n; ++i) mag_tensor_release(x->t[i]);
    x->n = 0;
    return x->st;
}

static bool is_float(const mag_tensor_t *t) { return mag_dtype_info(t->dtype)->flags & MAG_DTF_FLOAT; }

mag_status_t mag_grad_record_op(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                                int64_t n_attrs, mag_tensor_t *out) {
    const grad_entry_t *e = grad_entry(op);
    if (!e || !is_float(out)) return MAG_OK; /* not differentiable: the result is a constant */
    mag_node_t *node;
    MAG_TRY(mag_node_attach(out, mag_op_info(op)->name, e->fn, in, n_in, attrs, n_attrs, &node));
    for (int64_t i = 0; i < n_in && i < 31; ++i)
        if (e->save & (1u << i)) mag_node_save(node, in[i]);
    if (e->save & GRAD_SAVE_OUT) mag_node_save(node, out);
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
        if (!grad_entry(rec)) s = mag_error(MAG_ERR_RUNTIME, "%s: no gradient is defined for this op", name);
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
