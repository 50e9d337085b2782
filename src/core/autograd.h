/*
 * Reverse-mode autograd in the core. An op whose inputs require grad (while grad mode is on)
 * gets a node on its output: the backward function, edges to the inputs' nodes (or to leaf
 * tensors, whose .grad accumulates), the input shapes/dtypes, the tensors the backward needs
 * (saved as aliases that do not own the graph, with their storage version) and the op's
 * attributes. backward() walks the nodes in reverse topological order without recursion.
 */
#ifndef MAG_AUTOGRAD_H
#define MAG_AUTOGRAD_H

#include "internal.h"

#define MAG_NODE_MAX_SAVED (MAG_MAX_RANK + 2)
#define MAG_NODE_MAX_AUX (4 * MAG_MAX_RANK + 4) /* two layouts: views */

typedef struct mag_node mag_node_t;

/* grads_in[i] receives a new reference to input i's gradient, or stays NULL (no gradient). */
typedef mag_status_t (*mag_backward_fn)(mag_node_t *node, mag_tensor_t *grad_out, mag_tensor_t **grads_in);

typedef struct mag_input_meta {
    mag_node_t *node;   /* the input's producer (retained), or NULL */
    mag_tensor_t *leaf; /* the input itself when it is a leaf requiring grad (retained), or NULL */
    mag_dtype_t dtype;
    int64_t rank;
    int64_t shape[MAG_MAX_RANK];
} mag_input_meta_t;

struct mag_node {
    atomic_int_fast64_t refcount;
    const char *name;
    mag_backward_fn backward;
    int64_t n_in;
    mag_input_meta_t *in;
    int64_t n_saved;
    mag_tensor_t *saved[MAG_NODE_MAX_SAVED];
    uint64_t saved_version[MAG_NODE_MAX_SAVED];
    bool released; /* saved tensors freed by a backward without retain_graph */
    int64_t n_attrs;
    mag_scalar_t attrs[MAG_MAX_ATTRS];
    int64_t n_aux; /* op-specific integers (dims, view geometry) */
    int64_t aux[MAG_NODE_MAX_AUX];
    /* scratch of one backward pass */
    mag_tensor_t *pending;
    int64_t deps;
    uint64_t mark;
    mag_node_t *next_dead; /* intrusive stack while freeing */
};

/* Thread-local recording state. */
bool mag_grad_recording(void);
/* Entered by every public op/view entry point: only the outermost call records a node. */
void mag_autograd_enter(void);
void mag_autograd_leave(void);

int mag_autograd_depth(void);
/* Record the gradient of view v of t (view_grad.c); called by every view outside ops. */
mag_status_t mag_grad_record_view(const char *name, mag_tensor_t *t, mag_tensor_t *v);

/*
 * An in-place write of `result` into view v of base: base's history becomes "base with the
 * region of v replaced by result", and v becomes a fresh view of the new base.
 */
mag_status_t mag_grad_rebase_view(mag_tensor_t *base, mag_tensor_t *v, mag_tensor_t *result);

/* True when an op on these inputs must record a node. */
bool mag_needs_grad(mag_tensor_t *const *in, int64_t n);
/* Make a node for `out` = op(in...); saved tensors are given by the caller with mag_node_save. */
mag_status_t mag_node_attach(mag_tensor_t *out, const char *name, mag_backward_fn fn, mag_tensor_t *const *in,
                             int64_t n_in, const mag_scalar_t *attrs, int64_t n_attrs, mag_node_t **node);
void mag_node_save(mag_node_t *node, mag_tensor_t *t);
/* A saved tensor, checked against in-place modification since it was saved. */
mag_status_t mag_node_saved(mag_node_t *node, int64_t i, mag_tensor_t **out);
void mag_node_release(mag_node_t *node);

/* Record the gradient of table op `op` (grad.c): called by mag_op after a successful forward. */
mag_status_t mag_grad_record_op(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                                int64_t n_attrs, mag_tensor_t *out);

/* Run an in-place op (into dst) on tensors in the graph (grad.c). */
mag_status_t mag_grad_inplace(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                              int64_t n_attrs, mag_tensor_t *dst);
bool mag_op_has_grad(mag_op_t op);

/* Helpers for backward functions (grad.c): run an op without recording, reduce to a shape. */
mag_status_t mag_g_op(mag_op_t op, mag_tensor_t *a, mag_tensor_t *b, mag_tensor_t **out);
mag_status_t mag_g_sum_to(mag_tensor_t *g, int64_t rank, const int64_t *shape, mag_tensor_t **out);

#endif
