/*
 * Gradients of the data-movement and structure ops: casts, indexing, gather/index_select,
 * masked_fill/where, tril/triu, repeat, cat/stack and matmul.
 */
#include "grad_expr.h"

#include <string.h>

static mag_tensor_t *gx_view(gx_t *x, mag_status_t (*fn)(mag_tensor_t *, int64_t, const int64_t *, mag_tensor_t **),
                             mag_tensor_t *t, int64_t rank, const int64_t *shape) {
    if (x->st != MAG_OK || !t) return NULL;
    mag_tensor_t *o = NULL;
    mag_status_t s_ = fn(t, rank, shape, &o);
    return gx_keep(x, s_, o);
}

#define GX_RESHAPE(t, rank, shape) gx_view(x, mag_tensor_reshape, t, rank, shape)
#define GX_PERMUTE(t, rank, dims) gx_view(x, mag_tensor_permute, t, rank, dims)

static mag_tensor_t *gx_unsqueeze(gx_t *x, mag_tensor_t *t, int64_t dim) {
    if (x->st != MAG_OK || !t) return NULL;
    mag_tensor_t *o = NULL;
    mag_status_t s_ = mag_tensor_unsqueeze(t, dim, &o);
    return gx_keep(x, s_, o);
}

static mag_tensor_t *gx_transpose_last(gx_t *x, mag_tensor_t *t) {
    if (x->st != MAG_OK || !t) return NULL;
    mag_tensor_t *o = NULL;
    mag_status_t s_ = mag_tensor_transpose(t, -1, -2, &o);
    return gx_keep(x, s_, o);
}

static mag_tensor_t *gx_slice(gx_t *x, mag_tensor_t *t, int64_t dim, int64_t start, int64_t len) {
    if (x->st != MAG_OK || !t) return NULL;
    mag_tensor_t *o = NULL;
    mag_status_t s_ = mag_tensor_slice(t, dim, start, len, 1, &o);
    return gx_keep(x, s_, o);
}

/* zeros(shape) with vals added at the index tensors (INDEX_PUT, accumulating repeats). */
static mag_tensor_t *gx_scatter_add(gx_t *x, mag_tensor_t *vals, int64_t rank, const int64_t *shape,
                                    mag_tensor_t *const *idx, int64_t k) {
    mag_tensor_t *z = gx_zeros(x, vals ? vals->dtype : MAG_DTYPE_FLOAT32, rank, shape);
    if (x->st != MAG_OK) return NULL;
    mag_tensor_t *in[MAG_MAX_RANK + 1] = {vals};
    for (int64_t i = 0; i < k; ++i) in[i + 1] = idx[i];
    mag_scalar_t acc = mag_scalar_bool(true);
    x->st = mag_op(MAG_OP_INDEX_PUT, in, k + 1, &acc, 1, &z);
    return x->st == MAG_OK ? z : NULL;
}

static mag_status_t grad_identity(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    gx_give(x, n, 0, g, gi);
    return gx_done(x);
}

/* INDEX: scatter-add the gradient back at the saved indices. */
static mag_status_t grad_index(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *idx[MAG_MAX_RANK];
    for (int64_t i = 0; i < n->n_saved; ++i) idx[i] = gx_saved(x, n, i);
    gx_give(x, n, 0, gx_scatter_add(x, g, n->in[0].rank, n->in[0].shape, idx, n->n_saved), gi);
    return gx_done(x);
}

/* INDEX_PUT, recorded as out = put(old, idx, values): values get g[idx]; old gets g with idx zeroed
 * (or all of g when accumulating). Inputs: values, idx..., old. */
static mag_status_t grad_index_put(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    int64_t k = n->n_saved, old = n->n_in - 1;
    mag_tensor_t *in[MAG_MAX_RANK + 1] = {g};
    for (int64_t i = 0; i < k; ++i) in[i + 1] = gx_saved(x, n, i);
    if (gx_wants(n, 0)) gx_give(x, n, 0, gx_op(x, MAG_OP_INDEX, in, k + 1, NULL, 0), gi);
    if (gx_wants(n, old)) {
        bool accumulate = n->n_attrs > 0 && n->attrs[0].i;
        mag_tensor_t *keep = gx_1(x, MAG_OP_COPY, g);
        if (!accumulate && keep) {
            in[0] = gx_c(x, g, 0.0);
            mag_scalar_t no = mag_scalar_bool(false);
            if (x->st == MAG_OK) x->st = mag_op(MAG_OP_INDEX_PUT, in, k + 1, &no, 1, &keep);
        }
        gx_give(x, n, old, keep, gi);
    }
    return gx_done(x);
}

/* index grids for a scatter along `dim`: arange along every other dim, the saved index along dim */
static void along_dim_indices(gx_t *x, mag_tensor_t *idx, int64_t dim, mag_tensor_t **out) {
    for (int64_t d = 0; d < idx->rank; ++d) {
        if (d == dim) {
            out[d] = idx;
            continue;
        }
        int64_t shape[MAG_MAX_RANK], len = idx->shape[d];
        for (int64_t j = 0; j < idx->rank; ++j) shape[j] = j == d ? len : 1;
        mag_tensor_t *r = gx_zeros(x, MAG_DTYPE_INT64, 1, &len);
        mag_scalar_t a[2] = {mag_scalar_int(0), mag_scalar_int(1)};
        if (r && x->st == MAG_OK) x->st = mag_op(MAG_OP_ARANGE, NULL, 0, a, 2, &r);
        out[d] = GX_RESHAPE(r, idx->rank, shape);
    }
}

/* GATHER (x, idx; dim): scatter-add along dim. Also TOPK's values (x, idx destination; k, dim). */
static mag_status_t scatter_along(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi, int64_t dim) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *idx = gx_saved(x, n, 0), *grid[MAG_MAX_RANK];
    if (idx) {
        if (dim < 0) dim += idx->rank;
        along_dim_indices(x, idx, dim, grid);
        gx_give(x, n, 0, gx_scatter_add(x, g, n->in[0].rank, n->in[0].shape, grid, idx->rank), gi);
    }
    return gx_done(x);
}

static mag_status_t grad_gather(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    return scatter_along(n, g, gi, n->attrs[0].i);
}

mag_status_t mag_grad_topk(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi);
mag_status_t mag_grad_topk(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    return scatter_along(n, g, gi, n->attrs[1].i);
}

/* INDEX_SELECT (x, idx; dim): with dim moved to the front, scatter-add rows. */
static mag_status_t grad_index_select(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    int64_t rank = n->in[0].rank, dim = n->attrs[0].i < 0 ? n->attrs[0].i + rank : n->attrs[0].i;
    int64_t perm[MAG_MAX_RANK], shape[MAG_MAX_RANK], inv[MAG_MAX_RANK];
    for (int64_t d = 0, j = 1; d < rank; ++d) perm[d == dim ? 0 : j++] = d;
    for (int64_t d = 0; d < rank; ++d) shape[d] = n->in[0].shape[perm[d]], inv[perm[d]] = d;
    mag_tensor_t *idx = gx_saved(x, n, 0);
    mag_tensor_t *rows = gx_scatter_add(x, GX_PERMUTE(g, rank, perm), rank, shape, &idx, 1);
    gx_give(x, n, 0, GX_PERMUTE(rows, rank, inv), gi);
    return gx_done(x);
}

/* MASKED_FILL (x, mask): filled places get nothing. */
static mag_status_t grad_masked_fill(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *in[3] = {gx_saved(x, n, 0), gx_c(x, g, 0.0), g};
    gx_give(x, n, 0, gx_op(x, MAG_OP_WHERE, in, 3, NULL, 0), gi);
    return gx_done(x);
}

/* WHERE (cond, a, b) */
static mag_status_t grad_where(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *cond = gx_saved(x, n, 0), *zero = gx_c(x, g, 0.0);
    mag_tensor_t *to_a[3] = {cond, g, zero}, *to_b[3] = {cond, zero, g};
    if (gx_wants(n, 1)) gx_give(x, n, 1, gx_op(x, MAG_OP_WHERE, to_a, 3, NULL, 0), gi);
    if (gx_wants(n, 2)) gx_give(x, n, 2, gx_op(x, MAG_OP_WHERE, to_b, 3, NULL, 0), gi);
    return gx_done(x);
}

/* TRIL/TRIU: the same band of the gradient. */
static mag_status_t grad_tri(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_op_t op = strcmp(n->name, "tril") == 0 ? MAG_OP_TRIL : MAG_OP_TRIU;
    gx_give(x, n, 0, gx_op(x, op, &g, 1, n->attrs, n->n_attrs), gi);
    return gx_done(x);
}

/* REPEAT: sum the tiles, one repeated dim at a time (split it into (repeats, size) and reduce). */
static mag_status_t grad_repeat(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    int64_t r = n->n_attrs, lead = r - n->in[0].rank;
    mag_tensor_t *cur = g;
    for (int64_t d = r - 1; d >= 0 && cur; --d) {
        int64_t reps = n->attrs[d].i, size = d < lead ? 1 : n->in[0].shape[d - lead];
        if (reps == 1) continue;
        int64_t shape[MAG_MAX_RANK + 1], k = 0;
        for (int64_t j = 0; j < cur->rank; ++j) {
            if (j == d) shape[k++] = reps, shape[k++] = size;
            else shape[k++] = cur->shape[j];
        }
        if (k > MAG_MAX_RANK) { /* no room for the split: reduce the tiles by slicing instead */
            mag_tensor_t *acc = gx_slice(x, cur, d, 0, size);
            for (int64_t t = 1; t < reps; ++t) acc = GX_ADD(acc, gx_slice(x, cur, d, t * size, size));
            cur = acc;
            continue;
        }
        mag_scalar_t attrs[2] = {mag_scalar_int((int64_t)1 << d), mag_scalar_bool(false)};
        mag_tensor_t *split = GX_RESHAPE(cur, k, shape);
        cur = gx_op(x, MAG_OP_SUM, &split, 1, attrs, 2);
    }
    gx_give(x, n, 0, cur, gi);
    return gx_done(x);
}

/* CAT: each input's slice of the gradient. STACK: each input's entry. */
static mag_status_t grad_cat(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    bool stack = strcmp(n->name, "stack") == 0;
    int64_t dim = n->attrs[0].i < 0 ? n->attrs[0].i + g->rank : n->attrs[0].i, at = 0;
    for (int64_t i = 0; i < n->n_in && x->st == MAG_OK; ++i) {
        if (stack) {
            mag_tensor_t *sel = NULL;
            if (gx_wants(n, i)) {
                x->st = mag_tensor_select(g, dim, i, &sel);
                gx_give(x, n, i, gx_keep(x, x->st, sel), gi);
            }
            continue;
        }
        int64_t len = n->in[i].rank ? n->in[i].shape[dim] : 0;
        if (gx_wants(n, i)) gx_give(x, n, i, gx_slice(x, g, dim, at, len), gi);
        at += len;
    }
    return gx_done(x);
}

/*
 * MATMUL like torch.matmul: 1-D operands gain a unit dim (a: rows, b: columns) that the gradient
 * gets too; then ga = g @ b^T and gb = a^T @ g, summed over broadcast batch dims by gx_give.
 */
static mag_status_t grad_matmul(mag_node_t *n, mag_tensor_t *g, mag_tensor_t **gi) {
    gx_t xs = {0}, *x = &xs;
    mag_tensor_t *a = gx_saved(x, n, 0), *b = gx_saved(x, n, 1);
    if (!a || !b) return gx_done(x);
    bool a1 = a->rank == 1, b1 = b->rank == 1;
    mag_tensor_t *A = a1 ? gx_unsqueeze(x, a, 0) : a, *B = b1 ? gx_unsqueeze(x, b, 1) : b, *G = g;
    if (a1) G = gx_unsqueeze(x, G, G ? G->rank - (b1 ? 0 : 1) : 0);
    if (b1) G = gx_unsqueeze(x, G, G ? G->rank : 0);
    if (gx_wants(n, 0)) {
        mag_tensor_t *ga = gx_2(x, MAG_OP_MATMUL, G, gx_transpose_last(x, B)), *sum = NULL;
        if (ga && A) x->st = mag_g_sum_to(ga, A->rank, A->shape, &sum);
        gx_give(x, n, 0, GX_RESHAPE(gx_keep(x, x->st, sum), a->rank, a->shape), gi);
    }
    if (gx_wants(n, 1)) {
        mag_tensor_t *gb = gx_2(x, MAG_OP_MATMUL, gx_transpose_last(x, A), G), *sum = NULL;
        if (gb && B && x->st == MAG_OK) x->st = mag_g_sum_to(gb, B->rank, B->shape, &sum);
        gx_give(x, n, 1, GX_RESHAPE(gx_keep(x, x->st, sum), b->rank, b->shape), gi);
    }
    return gx_done(x);
}

const grad_entry_t mag_grad_table_struct[MAG_OP__COUNT] = {
    [MAG_OP_COPY] = {grad_identity, 0},
    [MAG_OP_INDEX] = {grad_index, 0},
    [MAG_OP_INDEX_PUT] = {grad_index_put, 0},
    [MAG_OP_GATHER] = {grad_gather, 0x2},
    [MAG_OP_INDEX_SELECT] = {grad_index_select, 0x2},
    [MAG_OP_MASKED_FILL] = {grad_masked_fill, 0x2},
    [MAG_OP_WHERE] = {grad_where, 0x1},
    [MAG_OP_TRIL] = {grad_tri, 0},
    [MAG_OP_TRIU] = {grad_tri, 0},
    [MAG_OP_REPEAT] = {grad_repeat, 0},
    [MAG_OP_CAT] = {grad_cat, 0},
    [MAG_OP_STACK] = {grad_cat, 0},
    [MAG_OP_MATMUL] = {grad_matmul, 0x3},
};
