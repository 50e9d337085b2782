/*
 * Advanced indexing. Python lowers x[i, j] (after basic slicing and moving the indexed dims to
 * the front) to INDEX(x, i, j): the int64 index tensors broadcast together to a shape B and
 * select along dims 0..k-1 of x; the result has shape B + x.shape[k:]. INDEX_PUT is the
 * matching write (assignment or accumulation), NONZERO turns boolean masks into indices.
 */
#include "op.h"

#include <string.h>

/* t as the kernels take it as it is: dtype dt, contiguous, of exactly this shape, apart from x (which
   index_put writes). */
static bool usable_as_is(const mag_tensor_t *t, mag_dtype_t dt, int64_t rank, const int64_t *shape,
                         const mag_tensor_t *x) {
    return t->dtype == dt && t->rank == rank && !memcmp(t->shape, shape, (size_t)rank * sizeof(int64_t)) &&
           mag_tensor_is_contiguous(t) && !mag_tensors_overlap(t, x);
}

/* Broadcast the index tensors, check their values, and give them as contiguous int64 of shape B (copied unless they are). */
static mag_status_t prepare_indices(const char *name, const mag_tensor_t *x, mag_tensor_t *const *idx, int64_t k,
                                    mag_tensor_t **dense, int64_t *brank, int64_t *bshape) {
    if (k < 1 || k > x->rank)
        return mag_error(MAG_ERR_INDEX, "%s: too many indices (%lld) for a tensor of shape %s", name, (long long)k,
                         MAG_SHAPE(x));
    *brank = 0;
    for (int64_t j = 0; j < k; ++j) {
        if (!(mag_dtype_info(idx[j]->dtype)->flags & (MAG_DTF_SIGNED_INT | MAG_DTF_UNSIGNED_INT)))
            return mag_error(MAG_ERR_INDEX, "%s: tensors used as indices must be integer, got %s (shape %s)", name,
                             MAG_DTNAME(idx[j]->dtype), MAG_SHAPE(idx[j]));
        int64_t prev_rank = *brank, prev[MAG_MAX_RANK];
        memcpy(prev, bshape, (size_t)prev_rank * sizeof(int64_t));
        if (mag_broadcast_shape(prev_rank, prev, idx[j]->rank, idx[j]->shape, brank, bshape) != MAG_OK)
            return mag_error(MAG_ERR_INDEX,
                             "%s: shape mismatch: index tensors of shapes %s (so far) and %s cannot be broadcast together "
                             "(indexing a tensor of shape %s)",
                             name, mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, prev_rank, prev), MAG_SHAPE(idx[j]),
                             MAG_SHAPE(x));
    }
    for (int64_t j = 0; j < k; ++j) dense[j] = NULL;
    for (int64_t j = 0; j < k; ++j) {
        mag_tensor_t *c = idx[j];
        mag_status_t s = MAG_OK;
        if (usable_as_is(c, MAG_DTYPE_INT64, *brank, bshape, x)) { /* a decode step's position: no copy launch */
            mag_tensor_retain(c);
        } else {
            mag_tensor_t *e;
            s = mag_tensor_expand(c, *brank, bshape, &e);
            if (s == MAG_OK) {
                s = mag_tensor_cast(e, MAG_DTYPE_INT64, &c);
                mag_tensor_release(e);
            }
            if (s != MAG_OK) goto fail;
        }
        dense[j] = c;
        const int64_t *v = mag_tensor_data(c), size = x->shape[j];
        for (int64_t i = 0; i < c->numel; ++i) /* the kernels count negative indices from the end */
            if (v[i] < -size || v[i] >= size) {
                s = mag_error(MAG_ERR_INDEX, "%s: index %lld is out of bounds for dimension %lld with size %lld (shape %s)",
                              name, (long long)v[i], (long long)j, (long long)size, MAG_SHAPE(x));
                goto fail;
            }
        continue;
    fail:
        for (int64_t m = 0; m <= j; ++m) mag_tensor_release(dense[m]);
        return s;
    }
    return MAG_OK;
}

static void release_all(mag_tensor_t **ts, int64_t n) {
    for (int64_t i = 0; i < n; ++i) mag_tensor_release(ts[i]);
}

/* Result/target shape of an indexing: B + x.shape[k:]. */
static mag_status_t indexed_shape(const char *name, const mag_tensor_t *x, int64_t k, int64_t brank,
                                  const int64_t *bshape, int64_t *rank, int64_t *shape) {
    *rank = brank + x->rank - k;
    if (*rank > MAG_MAX_RANK)
        return mag_error(MAG_ERR_VALUE, "%s: the result would have rank %lld > %d", name, (long long)*rank, MAG_MAX_RANK);
    memcpy(shape, bshape, (size_t)brank * sizeof(int64_t));
    memcpy(shape + brank, x->shape + k, (size_t)(x->rank - k) * sizeof(int64_t));
    return MAG_OK;
}

mag_status_t mag_front_index(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                             int64_t n_attrs, mag_tensor_t **out) {
    (void)attrs, (void)n_attrs;
    if (n_in < 2) return mag_error(MAG_ERR_VALUE, "index: expected a source and at least one index tensor");
    mag_tensor_t *x = in[0], *dense[MAG_MAX_RANK + 1] = {x};
    int64_t k = n_in - 1, brank, bshape[MAG_MAX_RANK], rank, shape[MAG_MAX_RANK];
    MAG_TRY(prepare_indices("index", x, in + 1, k, dense + 1, &brank, bshape));
    mag_status_t s = indexed_shape("index", x, k, brank, bshape, &rank, shape);
    mag_tensor_t *res = NULL;
    if (s == MAG_OK) s = mag_tensor_empty(x->dtype, rank, shape, &res);
    if (s == MAG_OK) s = mag_dispatch(op, x->dtype, res, dense, n_in, NULL, 0, res->numel, false);
    release_all(dense + 1, k);
    if (s != MAG_OK) {
        mag_tensor_release(res);
        return s;
    }
    *out = res;
    return MAG_OK;
}

mag_status_t mag_front_index_put(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                                 int64_t n_attrs, mag_tensor_t **out) {
    mag_tensor_t *dst = *out;
    if (!dst) return mag_error(MAG_ERR_VALUE, "index_put: a destination tensor is required");
    if (n_in < 2) return mag_error(MAG_ERR_VALUE, "index_put: expected values and at least one index tensor");
    MAG_TRY(mag_check_writable("index_put", dst));
    mag_tensor_t *dense[MAG_MAX_RANK + 1] = {NULL};
    int64_t k = n_in - 1, brank, bshape[MAG_MAX_RANK], rank, shape[MAG_MAX_RANK];
    MAG_TRY(prepare_indices("index_put", dst, in + 1, k, dense + 1, &brank, bshape));
    mag_status_t s = indexed_shape("index_put", dst, k, brank, bshape, &rank, shape);
    mag_tensor_t *vals = NULL;
    if (s == MAG_OK && usable_as_is(in[0], dst->dtype, rank, shape, dst)) {
        mag_tensor_retain(in[0]); /* a KV-cache write: the new keys as they are */
        vals = in[0];
    } else if (s == MAG_OK) { /* values: broadcast to the indexed shape, in dst's dtype, never aliasing dst */
        mag_tensor_t *e;
        s = mag_tensor_expand(in[0], rank, shape, &e);
        if (s != MAG_OK)
            s = mag_error(MAG_ERR_VALUE, "index_put: values of shape %s cannot be broadcast to the indexed shape %s",
                          MAG_SHAPE(in[0]), mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape));
        else {
            s = mag_tensor_cast(e, dst->dtype, &vals);
            mag_tensor_release(e);
        }
    }
    if (s == MAG_OK) {
        dense[0] = vals;
        mag_scalar_t acc = n_attrs > 0 ? attrs[0] : mag_scalar_bool(false);
        /* one thread: with repeated indices the last write (or every accumulation) must win deterministically */
        s = mag_dispatch(op, dst->dtype, dst, dense, n_in, &acc, 1, vals->numel, true);
    }
    mag_tensor_release(vals);
    release_all(dense + 1, k);
    return s;
}

mag_status_t mag_front_nonzero(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                               int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in, (void)attrs, (void)n_attrs;
    mag_tensor_t *mask;
    MAG_TRY(mag_tensor_cast(in[0], MAG_DTYPE_BOOLEAN, &mask));
    const uint8_t *m = mag_tensor_data(mask);
    int64_t count = 0;
    for (int64_t i = 0; i < mask->numel; ++i) count += m[i] != 0;
    int64_t shape[2] = {count, in[0]->rank};
    mag_tensor_t *res = NULL;
    mag_status_t s = mag_tensor_empty(MAG_DTYPE_INT64, 2, shape, &res);
    if (s == MAG_OK) s = mag_dispatch(op, MAG_DTYPE_BOOLEAN, res, &mask, 1, NULL, 0, mask->numel, true);
    mag_tensor_release(mask);
    if (s != MAG_OK) {
        mag_tensor_release(res);
        return s;
    }
    *out = res;
    return MAG_OK;
}
