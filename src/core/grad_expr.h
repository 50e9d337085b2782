/*
 * A tiny expression arena for writing backward formulas: every helper returns a tensor kept in
 * the arena (released together at the end) or NULL once any step failed, so a formula reads
 * like math and errors surface once, from gx_done().
 */
#ifndef MAG_GRAD_EXPR_H
#define MAG_GRAD_EXPR_H

#include "autograd.h"

#define GX_MAX 48

typedef struct gx {
    mag_status_t st;
    int n;
    mag_tensor_t *t[GX_MAX];
} gx_t;

typedef struct grad_entry {
    mag_backward_fn fn;
    uint32_t save; /* bitmask of inputs to save, | GRAD_SAVE_OUT for the output */
} grad_entry_t;

#define GRAD_SAVE_OUT (1u << 31)

static inline mag_tensor_t *gx_keep(gx_t *x, mag_status_t s, mag_tensor_t *t) {
    if (s != MAG_OK || !t) {
        if (x->st == MAG_OK) x->st = s != MAG_OK ? s : mag_error(MAG_ERR_RUNTIME, "backward: an intermediate is missing");
        mag_tensor_release(t);
        return NULL;
    }
    if (x->n == GX_MAX) {
        mag_tensor_release(t);
        x->st = mag_error(MAG_ERR_RUNTIME, "backward: expression too long");
        return NULL;
    }
    return x->t[x->n++] = t;
}

static inline mag_tensor_t *gx_op(gx_t *x, mag_op_t op, mag_tensor_t *const *in, int64_t n, const mag_scalar_t *attrs,
                                  int64_t n_attrs) {
    if (x->st != MAG_OK) return NULL;
    for (int64_t i = 0; i < n; ++i)
        if (!in[i]) {
            x->st = mag_error(MAG_ERR_RUNTIME, "backward: input %lld of %s is missing", (long long)i, mag_op_info(op)->name);
            return NULL;
        }
    mag_tensor_t *o = NULL;
    mag_status_t s_ = mag_op(op, in, n, attrs, n_attrs, &o);
    return gx_keep(x, s_, o);
}

static inline mag_tensor_t *gx_1(gx_t *x, mag_op_t op, mag_tensor_t *a) { return gx_op(x, op, &a, 1, NULL, 0); }

static inline mag_tensor_t *gx_2(gx_t *x, mag_op_t op, mag_tensor_t *a, mag_tensor_t *b) {
    mag_tensor_t *in[2] = {a, b};
    return gx_op(x, op, in, 2, NULL, 0);
}

/* A rank-0 tensor of like's dtype holding v. */
static inline mag_tensor_t *gx_c(gx_t *x, const mag_tensor_t *like, double v) {
    if (x->st != MAG_OK || !like) return NULL;
    mag_tensor_t *o = NULL;
    mag_status_t s = mag_tensor_empty(mag_tensor_dtype(like), 0, NULL, &o);
    if (s == MAG_OK) s = mag_tensor_fill(o, mag_scalar_float(v));
    return gx_keep(x, s, o);
}

static inline mag_tensor_t *gx_zeros(gx_t *x, mag_dtype_t dt, int64_t rank, const int64_t *shape) {
    if (x->st != MAG_OK) return NULL;
    mag_tensor_t *o = NULL;
    mag_status_t s = mag_tensor_empty(dt, rank, shape, &o);
    if (s == MAG_OK) s = mag_tensor_fill(o, mag_scalar_float(0.0));
    return gx_keep(x, s, o);
}

#define GX_ADD(a, b) gx_2(x, MAG_OP_ADD, a, b)
#define GX_SUB(a, b) gx_2(x, MAG_OP_SUB, a, b)
#define GX_MUL(a, b) gx_2(x, MAG_OP_MUL, a, b)
#define GX_DIV(a, b) gx_2(x, MAG_OP_DIV, a, b)
#define GX_MULC(a, c) GX_MUL(a, gx_c(x, a, c))
#define GX_ADDC(a, c) GX_ADD(a, gx_c(x, a, c))

/* Hand v, summed to input i's shape and cast to its dtype, to gi[i] (when input i wants a gradient). */
void gx_give(gx_t *x, mag_node_t *n, int64_t i, mag_tensor_t *v, mag_tensor_t **gi);
/* Release the arena; the status of the whole formula. */
mag_status_t gx_done(gx_t *x);
bool gx_wants(const mag_node_t *n, int64_t i);
/* A saved tensor (checked for in-place changes), kept by the node: not added to the arena. */
mag_tensor_t *gx_saved(gx_t *x, mag_node_t *n, int64_t i);

/* Per-file gradient tables (sparse, indexed by op), searched in turn by grad.c. */
extern const grad_entry_t mag_grad_table_elementwise[MAG_OP__COUNT];
extern const grad_entry_t mag_grad_table_struct[MAG_OP__COUNT];
extern const grad_entry_t mag_grad_table_reduce[MAG_OP__COUNT];
extern const grad_entry_t mag_grad_table_rope[MAG_OP__COUNT];
extern const grad_entry_t mag_grad_table_norm[MAG_OP__COUNT];

#endif
