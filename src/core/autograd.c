/* Autograd machinery: grad mode, nodes, saved tensors and the backward pass. */
#include "autograd.h"

#include <stdlib.h>
#include <string.h>

static _Thread_local bool grad_disabled;
static _Thread_local int entry_depth;
static atomic_uint_fast64_t backward_generation;

bool mag_grad_enabled(void) { return !grad_disabled; }

bool mag_set_grad_enabled(bool on) {
    bool prev = !grad_disabled;
    grad_disabled = !on;
    return prev;
}

void mag_autograd_enter(void) { ++entry_depth; }
void mag_autograd_leave(void) { --entry_depth; }
bool mag_grad_recording(void) { return !grad_disabled && entry_depth == 1; }
int mag_autograd_depth(void) { return entry_depth; }

bool mag_needs_grad(mag_tensor_t *const *in, int64_t n) {
    if (!mag_grad_recording()) return false;
    for (int64_t i = 0; i < n; ++i)
        if (in[i] && in[i]->requires_grad) return true;
    return false;
}

static void node_retain(mag_node_t *n) { atomic_fetch_add(&n->refcount, 1); }

static void release_saved(mag_node_t *n) {
    for (int64_t i = 0; i < n->n_saved; ++i) {
        mag_tensor_release(n->saved[i]);
        n->saved[i] = NULL;
    }
}

/*
 * Releasing a node may release its input nodes in turn; a long chain (10k ops) must not
 * recurse, so dead nodes are threaded onto an intrusive stack (no allocation while freeing).
 */
void mag_node_release(mag_node_t *node) {
    mag_node_t *dead = NULL;
    if (node && atomic_fetch_sub(&node->refcount, 1) == 1) node->next_dead = NULL, dead = node;
    while (dead) {
        mag_node_t *n = dead;
        dead = n->next_dead;
        for (int64_t i = 0; i < n->n_in; ++i) {
            mag_tensor_release(n->in[i].leaf);
            mag_node_t *m = n->in[i].node;
            if (m && atomic_fetch_sub(&m->refcount, 1) == 1) m->next_dead = dead, dead = m;
        }
        release_saved(n);
        mag_tensor_release(n->pending);
        free(n->in);
        free(n);
    }
}

mag_status_t mag_node_attach(mag_tensor_t *out, const char *name, mag_backward_fn fn, mag_tensor_t *const *in,
                             int64_t n_in, const mag_scalar_t *attrs, int64_t n_attrs, mag_node_t **node) {
    mag_node_t *n = calloc(1, sizeof(*n));
    mag_input_meta_t *meta = n ? calloc((size_t)(n_in ? n_in : 1), sizeof(*meta)) : NULL;
    if (!meta) {
        free(n);
        return mag_error(MAG_ERR_MEMORY, "%s: out of memory recording the autograd node", name);
    }
    atomic_init(&n->refcount, 1);
    n->name = name;
    n->backward = fn;
    n->n_in = n_in;
    n->in = meta;
    for (int64_t i = 0; i < n_in; ++i) {
        mag_tensor_t *t = in[i];
        if (!t) continue;
        meta[i].dtype = t->dtype;
        meta[i].rank = t->rank;
        memcpy(meta[i].shape, t->shape, sizeof(t->shape));
        if (!t->requires_grad) continue;
        if (t->node) {
            node_retain(t->node);
            meta[i].node = t->node;
        } else {
            mag_tensor_retain(t);
            meta[i].leaf = t;
        }
    }
    n->n_attrs = n_attrs < MAG_MAX_ATTRS ? n_attrs : MAG_MAX_ATTRS;
    if (n_attrs > 0) memcpy(n->attrs, attrs, (size_t)n->n_attrs * sizeof(*attrs));
    mag_node_release(out->node);
    out->node = n;
    out->requires_grad = true;
    if (node) *node = n;
    return MAG_OK;
}

void mag_node_save(mag_node_t *node, mag_tensor_t *t) {
    /* an alias without the node: saving an op's own output must not make a reference cycle */
    mag_tensor_t *alias = mag_tensor_new_view(t->storage, t->dtype, t->rank, t->shape, t->strides, t->offset);
    node->saved_version[node->n_saved] = atomic_load(&t->storage->version);
    node->saved[node->n_saved++] = alias; /* NULL on OOM: reported when backward asks for it */
}

mag_status_t mag_node_saved(mag_node_t *node, int64_t i, mag_tensor_t **out) {
    if (node->released)
        return mag_error(MAG_ERR_RUNTIME, "backward through %s a second time: its saved tensors were freed; pass "
                                          "retain_graph=True to the first backward", node->name);
    mag_tensor_t *t = node->saved[i];
    if (!t) return mag_error(MAG_ERR_MEMORY, "%s: a tensor saved for backward could not be kept (out of memory)", node->name);
    uint64_t now = atomic_load(&t->storage->version);
    if (now != node->saved_version[i])
        return mag_error(MAG_ERR_RUNTIME,
                         "one of the tensors needed for the gradient of %s (shape %s, %s) has been modified by an "
                         "in-place operation: it is at version %llu, expected %llu",
                         node->name, MAG_SHAPE(t), MAG_DTNAME(t->dtype), (unsigned long long)now,
                         (unsigned long long)node->saved_version[i]);
    *out = t;
    return MAG_OK;
}

/* acc = acc + g (new tensor), casting g to acc's dtype; *acc NULL takes g. */
static mag_status_t accumulate(mag_tensor_t **acc, mag_tensor_t *g) {
    if (!*acc) {
        mag_tensor_retain(g);
        *acc = g;
        return MAG_OK;
    }
    mag_tensor_t *sum = NULL;
    MAG_TRY(mag_g_op(MAG_OP_ADD, *acc, g, &sum));
    if (sum->dtype != (*acc)->dtype) {
        mag_tensor_t *c;
        mag_status_t s = mag_tensor_cast(sum, (*acc)->dtype, &c);
        mag_tensor_release(sum);
        MAG_TRY(s);
        sum = c;
    }
    mag_tensor_release(*acc);
    *acc = sum;
    return MAG_OK;
}

static mag_status_t accumulate_leaf(mag_tensor_t *leaf, mag_tensor_t *g) {
    if (g->rank != leaf->rank || memcmp(g->shape, leaf->shape, (size_t)g->rank * sizeof(int64_t)))
        return mag_error(MAG_ERR_RUNTIME, "backward: gradient of shape %s for a leaf of shape %s", MAG_SHAPE(g),
                         MAG_SHAPE(leaf));
    mag_tensor_t *c = g;
    if (g->dtype != leaf->dtype) MAG_TRY(mag_tensor_cast(g, leaf->dtype, &c));
    else mag_tensor_retain(c);
    mag_status_t s = accumulate(&leaf->grad, c);
    mag_tensor_release(c);
    return s;
}

typedef struct node_list {
    mag_node_t **v;
    size_t n, cap;
} node_list_t;

static bool list_push(node_list_t *l, mag_node_t *n) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        mag_node_t **v = realloc(l->v, cap * sizeof(*v));
        if (!v) return false;
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = n;
    return true;
}

/* Every node reachable from root, each counted once, with deps = edges into it from the graph. */
static mag_status_t collect(mag_node_t *root, node_list_t *all) {
    uint64_t gen = atomic_fetch_add(&backward_generation, 1) + 1;
    node_list_t stack = {0};
    root->mark = gen;
    root->deps = 0;
    if (!list_push(&stack, root) || !list_push(all, root)) goto oom;
    while (stack.n) {
        mag_node_t *n = stack.v[--stack.n];
        for (int64_t i = 0; i < n->n_in; ++i) {
            mag_node_t *m = n->in[i].node;
            if (!m) continue;
            if (m->mark != gen) {
                m->mark = gen;
                m->deps = 0;
                if (!list_push(&stack, m) || !list_push(all, m)) goto oom;
            }
            ++m->deps;
        }
    }
    free(stack.v);
    return MAG_OK;
oom:
    free(stack.v);
    return mag_error(MAG_ERR_MEMORY, "backward: out of memory ordering the graph");
}

mag_status_t mag_tensor_backward(mag_tensor_t *t, mag_tensor_t *grad, bool retain_graph) {
    if (!t->requires_grad)
        return mag_error(MAG_ERR_RUNTIME, "backward: the tensor (shape %s) does not require grad and has no grad_fn",
                         MAG_SHAPE(t));
    mag_tensor_t *seed = NULL;
    if (grad) {
        if (grad->rank != t->rank || memcmp(grad->shape, t->shape, (size_t)t->rank * sizeof(int64_t)))
            return mag_error(MAG_ERR_VALUE, "backward: grad of shape %s does not match the tensor's shape %s",
                             MAG_SHAPE(grad), MAG_SHAPE(t));
        MAG_TRY(mag_tensor_cast(grad, t->dtype, &seed));
    } else {
        if (t->numel != 1)
            return mag_error(MAG_ERR_RUNTIME, "backward: grad can be implicitly created only for one-element tensors, "
                                              "got shape %s; pass a gradient", MAG_SHAPE(t));
        MAG_TRY(mag_tensor_empty(t->dtype, t->rank, t->shape, &seed));
        MAG_TRY(mag_tensor_fill(seed, mag_scalar_float(1.0)));
    }
    bool prev = mag_set_grad_enabled(false);
    mag_status_t s = MAG_OK;
    if (!t->node) {
        s = accumulate_leaf(t, seed);
        mag_tensor_release(seed);
        mag_set_grad_enabled(prev);
        return s;
    }
    node_list_t all = {0}, ready = {0};
    s = collect(t->node, &all);
    t->node->pending = seed;
    if (s == MAG_OK && !list_push(&ready, t->node)) s = mag_error(MAG_ERR_MEMORY, "backward: out of memory");
    while (s == MAG_OK && ready.n) {
        mag_node_t *n = ready.v[--ready.n];
        mag_tensor_t *stack_grads[8], **grads = n->n_in <= 8 ? stack_grads : calloc((size_t)n->n_in, sizeof(*grads));
        if (!grads) {
            s = mag_error(MAG_ERR_MEMORY, "backward: out of memory");
            break;
        }
        memset(grads, 0, (size_t)n->n_in * sizeof(*grads));
        s = n->pending ? n->backward(n, n->pending, grads) : MAG_OK;
        mag_tensor_release(n->pending);
        n->pending = NULL;
        for (int64_t i = 0; i < n->n_in; ++i) {
            mag_input_meta_t *e = &n->in[i];
            if (s == MAG_OK && grads[i]) {
                if (e->leaf) s = accumulate_leaf(e->leaf, grads[i]);
                else if (e->node) s = accumulate(&e->node->pending, grads[i]);
            }
            mag_tensor_release(grads[i]);
            if (e->node && --e->node->deps == 0 && s == MAG_OK && !list_push(&ready, e->node))
                s = mag_error(MAG_ERR_MEMORY, "backward: out of memory");
        }
        if (grads != stack_grads) free(grads);
    }
    for (size_t i = 0; i < all.n; ++i) { /* drop leftovers of a failed pass; free saved tensors */
        mag_tensor_release(all.v[i]->pending);
        all.v[i]->pending = NULL;
        if (!retain_graph) {
            release_saved(all.v[i]);
            all.v[i]->released = true;
        }
    }
    free(all.v);
    free(ready.v);
    mag_set_grad_enabled(prev);
    return s;
}
