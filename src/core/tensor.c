/* Tensors and their reference-counted storage. */
#include "autograd.h"

#include <stdlib.h>
#include <string.h>

static void storage_release(mag_storage_t *st) {
    if (atomic_fetch_sub(&st->refcount, 1) != 1) return;
    if (st->deleter)
        st->deleter(st->deleter_ctx);
    else
        mag_free(st->data, st->nbytes);
    free(st);
}

void mag_contiguous_strides(int64_t rank, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int64_t i = rank - 1; i >= 0; --i) {
        strides[i] = s;
        s *= shape[i] > 1 ? shape[i] : 1;
    }
}

mag_status_t mag_checked_numel(const char *op, int64_t rank, const int64_t *shape, int64_t *numel) {
    if (rank < 0 || rank > MAG_MAX_RANK)
        return mag_error(MAG_ERR_VALUE, "%s: rank %lld is out of range [0, %d]", op, (long long)rank, MAG_MAX_RANK);
    int64_t n = 1;
    bool overflow = false;
    for (int64_t i = 0; i < rank; ++i) {
        if (shape[i] < 0)
            return mag_error(MAG_ERR_VALUE, "%s: negative dimension %lld in shape %s", op, (long long)shape[i],
                             mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape));
        if (!overflow && __builtin_mul_overflow(n, shape[i], &n)) overflow = true;
    }
    for (int64_t i = 0; i < rank; ++i)
        if (shape[i] == 0) overflow = false, n = 0; /* a zero dim makes any product empty */
    if (overflow)
        return mag_error(MAG_ERR_MEMORY, "%s: shape %s has more elements than can be addressed", op,
                         mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape));
    *numel = n;
    return MAG_OK;
}

mag_tensor_t *mag_tensor_new_view(mag_storage_t *st, mag_dtype_t dt, int64_t rank, const int64_t *shape,
                                  const int64_t *strides, int64_t offset) {
    mag_tensor_t *t = malloc(sizeof(*t));
    if (!t) return NULL;
    atomic_init(&t->refcount, 1);
    atomic_fetch_add(&st->refcount, 1);
    t->storage = st;
    t->dtype = dt;
    t->rank = rank;
    t->offset = offset;
    t->is_view = false;
    t->requires_grad = false;
    t->grad = NULL;
    t->node = NULL;
    t->view_base = NULL;
    t->numel = 1;
    for (int64_t i = 0; i < rank; ++i) {
        t->shape[i] = shape[i];
        t->strides[i] = strides[i];
        t->numel *= shape[i];
    }
    return t;
}

static mag_status_t tensor_from_storage(mag_storage_t *st, mag_dtype_t dt, int64_t rank, const int64_t *shape,
                                        const int64_t *strides, mag_tensor_t **out) {
    int64_t contiguous[MAG_MAX_RANK];
    if (!strides) {
        mag_contiguous_strides(rank, shape, contiguous);
        strides = contiguous;
    }
    mag_tensor_t *t = mag_tensor_new_view(st, dt, rank, shape, strides, 0);
    storage_release(st); /* the tensor holds the only reference now */
    if (!t) return mag_error(MAG_ERR_MEMORY, "out of memory allocating a tensor header");
    *out = t;
    return MAG_OK;
}

static mag_storage_t *storage_new(void) {
    mag_storage_t *st = calloc(1, sizeof(*st));
    if (st) atomic_init(&st->refcount, 1);
    return st;
}

mag_status_t mag_tensor_empty(mag_dtype_t dt, int64_t rank, const int64_t *shape, mag_tensor_t **out) {
    if (!mag_dtype_info(dt)) return mag_error(MAG_ERR_TYPE, "empty: invalid dtype %d", (int)dt);
    int64_t numel;
    MAG_TRY(mag_checked_numel("empty", rank, shape, &numel));
    size_t nbytes;
    if (__builtin_mul_overflow((size_t)numel, mag_dtype_info(dt)->size, &nbytes) || nbytes > ((size_t)1 << 62))
        return mag_error(MAG_ERR_MEMORY, "empty: cannot allocate a %s tensor of shape %s", MAG_DTNAME(dt),
                         mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape));
    mag_storage_t *st = storage_new();
    void *data = st ? mag_alloc(nbytes) : NULL;
    if (!data) {
        free(st);
        return mag_error(MAG_ERR_MEMORY, "empty: out of memory allocating %zu bytes for a %s tensor of shape %s",
                         nbytes, MAG_DTNAME(dt), mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape));
    }
    st->data = data;
    st->nbytes = nbytes;
    st->owner = MAG_OWNER_HEAP;
    return tensor_from_storage(st, dt, rank, shape, NULL, out);
}

mag_status_t mag_tensor_borrow(void *data, size_t nbytes, mag_dtype_t dt, int64_t rank, const int64_t *shape,
                               const int64_t *strides, bool read_only, mag_owner_t owner, mag_deleter_fn deleter,
                               void *ctx, mag_tensor_t **out) {
    /* on failure the caller keeps ownership of the memory: the deleter is not called */
    if (!mag_dtype_info(dt)) return mag_error(MAG_ERR_TYPE, "borrow: invalid dtype %d", (int)dt);
    int64_t numel, st_[MAG_MAX_RANK];
    MAG_TRY(mag_checked_numel("borrow", rank, shape, &numel));
    if (!strides) {
        mag_contiguous_strides(rank, shape, st_);
        strides = st_;
    }
    mag_tensor_t probe = {.dtype = dt, .rank = rank, .numel = numel};
    memcpy(probe.shape, shape, (size_t)rank * sizeof(int64_t));
    memcpy(probe.strides, strides, (size_t)rank * sizeof(int64_t));
    if (!mag_layout_in_bounds(&probe, nbytes))
        return mag_error(MAG_ERR_VALUE, "borrow: shape %s with the given strides exceeds the %zu-byte buffer",
                         mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape), nbytes);
    mag_storage_t *st = storage_new();
    mag_tensor_t *t = st ? mag_tensor_new_view(st, dt, rank, shape, strides, 0) : NULL;
    if (!t) {
        free(st);
        return mag_error(MAG_ERR_MEMORY, "borrow: out of memory");
    }
    atomic_fetch_sub(&st->refcount, 1); /* the tensor holds the only reference */
    st->data = data;
    st->nbytes = nbytes;
    st->owner = owner;
    st->read_only = read_only;
    st->deleter = deleter;
    st->deleter_ctx = ctx;
    *out = t;
    return MAG_OK;
}

void mag_tensor_retain(mag_tensor_t *t) { atomic_fetch_add(&t->refcount, 1); }

void mag_tensor_release(mag_tensor_t *t) {
    if (!t || atomic_fetch_sub(&t->refcount, 1) != 1) return;
    mag_tensor_release(t->grad);
    mag_node_release(t->node);
    mag_tensor_release(t->view_base);
    storage_release(t->storage);
    free(t);
}

mag_dtype_t mag_tensor_dtype(const mag_tensor_t *t) { return t->dtype; }
int64_t mag_tensor_rank(const mag_tensor_t *t) { return t->rank; }
const int64_t *mag_tensor_shape(const mag_tensor_t *t) { return t->shape; }
const int64_t *mag_tensor_strides(const mag_tensor_t *t) { return t->strides; }
int64_t mag_tensor_offset(const mag_tensor_t *t) { return t->offset; }
int64_t mag_tensor_numel(const mag_tensor_t *t) { return t->numel; }
bool mag_tensor_is_view(const mag_tensor_t *t) { return t->is_view; }
bool mag_tensor_is_read_only(const mag_tensor_t *t) { return t->storage->read_only; }
bool mag_tensor_requires_grad(const mag_tensor_t *t) { return t->requires_grad; }

mag_status_t mag_tensor_set_requires_grad(mag_tensor_t *t, bool on) {
    if (on && !(mag_dtype_info(t->dtype)->flags & MAG_DTF_FLOAT))
        return mag_error(MAG_ERR_RUNTIME, "requires_grad: only floating-point tensors can require gradients, got %s",
                         MAG_DTNAME(t->dtype));
    if (!on && t->node)
        return mag_error(MAG_ERR_RUNTIME, "requires_grad: only leaf tensors can stop requiring grad; use detach()");
    t->requires_grad = on;
    return MAG_OK;
}

bool mag_tensor_is_leaf(const mag_tensor_t *t) { return !t->node; }
mag_tensor_t *mag_tensor_grad(const mag_tensor_t *t) { return t->grad; }
const char *mag_tensor_grad_fn(const mag_tensor_t *t) { return t->node ? t->node->name : NULL; }

mag_status_t mag_tensor_set_grad(mag_tensor_t *t, mag_tensor_t *g) {
    if (g && (g->rank != t->rank || memcmp(g->shape, t->shape, (size_t)t->rank * sizeof(int64_t))))
        return mag_error(MAG_ERR_VALUE, "grad: a gradient of shape %s does not fit a tensor of shape %s", MAG_SHAPE(g),
                         MAG_SHAPE(t));
    if (g) mag_tensor_retain(g);
    mag_tensor_release(t->grad);
    t->grad = g;
    return MAG_OK;
}

mag_status_t mag_tensor_detach(mag_tensor_t *t, mag_tensor_t **out) {
    mag_tensor_t *d = mag_tensor_new_view(t->storage, t->dtype, t->rank, t->shape, t->strides, t->offset);
    if (!d) return mag_error(MAG_ERR_MEMORY, "detach: out of memory");
    d->is_view = t->is_view;
    *out = d;
    return MAG_OK;
}
mag_owner_t mag_tensor_owner(const mag_tensor_t *t) { return t->storage->owner; }
const void *mag_tensor_storage_id(const mag_tensor_t *t) { return t->storage; }

void mag_tensor_storage_bytes(const mag_tensor_t *t, void **base, size_t *nbytes) {
    *base = t->storage->data;
    *nbytes = t->storage->nbytes;
}

void *mag_tensor_data(const mag_tensor_t *t) {
    return t->storage->data + t->offset * (int64_t)mag_dtype_info(t->dtype)->size;
}

bool mag_tensor_is_contiguous(const mag_tensor_t *t) {
    int64_t expected = 1;
    for (int64_t i = t->rank - 1; i >= 0; --i) {
        if (t->shape[i] == 1) continue;
        if (t->shape[i] == 0) return true;
        if (t->strides[i] != expected) return false;
        expected *= t->shape[i];
    }
    return true;
}

mag_status_t mag_norm_dim(const char *op, int64_t dim, int64_t rank, int64_t *out) {
    int64_t r = rank ? rank : 1;
    if (dim < -r || dim >= r)
        return mag_error(MAG_ERR_INDEX, "%s: dimension %lld is out of range for a tensor of rank %lld (expected [%lld, %lld])",
                         op, (long long)dim, (long long)rank, (long long)-r, (long long)r - 1);
    *out = dim < 0 ? dim + r : dim;
    return MAG_OK;
}

void mag_tensor_byte_span(const mag_tensor_t *t, int64_t *lo, int64_t *hi) {
    int64_t es = (int64_t)mag_dtype_info(t->dtype)->size;
    int64_t a = t->offset, b = t->offset;
    if (t->numel == 0) {
        *lo = *hi = a * es;
        return;
    }
    for (int64_t i = 0; i < t->rank; ++i) {
        int64_t ext = (t->shape[i] - 1) * t->strides[i];
        if (ext < 0) a += ext;
        else b += ext;
    }
    *lo = a * es;
    *hi = (b + 1) * es;
}

bool mag_layout_in_bounds(const mag_tensor_t *t, size_t nbytes) {
    if (t->numel == 0) return true; /* touches no memory */
    int64_t lo = t->offset, hi = t->offset, es = (int64_t)mag_dtype_info(t->dtype)->size, end;
    for (int64_t i = 0; i < t->rank; ++i) {
        int64_t ext;
        if (__builtin_mul_overflow(t->shape[i] - 1, t->strides[i], &ext)) return false;
        if (__builtin_add_overflow(ext < 0 ? lo : hi, ext, ext < 0 ? &lo : &hi)) return false;
    }
    if (lo < 0 || __builtin_add_overflow(hi, 1, &end) || __builtin_mul_overflow(end, es, &end)) return false;
    return (uint64_t)end <= nbytes;
}

bool mag_tensors_overlap(const mag_tensor_t *a, const mag_tensor_t *b) {
    if (a->storage != b->storage || !a->numel || !b->numel) return false;
    int64_t alo, ahi, blo, bhi;
    mag_tensor_byte_span(a, &alo, &ahi);
    mag_tensor_byte_span(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

bool mag_tensor_same_layout(const mag_tensor_t *a, const mag_tensor_t *b) {
    if (a->storage != b->storage || a->offset != b->offset || a->rank != b->rank || a->dtype != b->dtype) return false;
    for (int64_t i = 0; i < a->rank; ++i)
        if (a->shape[i] != b->shape[i] || (a->shape[i] > 1 && a->strides[i] != b->strides[i])) return false;
    return true;
}

bool mag_tensor_has_internal_overlap(const mag_tensor_t *t) {
    /* sort the non-trivial dims by |stride|; each must step past the extent of the smaller ones */
    int64_t n = 0, st[MAG_MAX_RANK], sh[MAG_MAX_RANK];
    for (int64_t i = 0; i < t->rank; ++i) {
        if (t->shape[i] < 2) continue;
        if (t->strides[i] == 0) return true;
        int64_t s = llabs(t->strides[i]), j = n++;
        for (; j > 0 && st[j - 1] > s; --j) st[j] = st[j - 1], sh[j] = sh[j - 1];
        st[j] = s, sh[j] = t->shape[i];
    }
    int64_t extent = 1;
    for (int64_t i = 0; i < n; ++i) {
        if (st[i] < extent) return true;
        extent = st[i] * (sh[i] - 1) + extent;
    }
    return false;
}
