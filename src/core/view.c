/* Views: new shape/stride/offset headers over the same storage; the view solver lives here. */
#include "autograd.h"

#include <string.h>

static mag_status_t make_view(mag_tensor_t *t, int64_t rank, const int64_t *shape, const int64_t *strides,
                              int64_t offset, mag_tensor_t **out) {
    mag_tensor_t *v = mag_tensor_new_view(t->storage, t->dtype, rank, shape, strides, offset);
    if (!v) return mag_error(MAG_ERR_MEMORY, "out of memory allocating a view");
    v->is_view = true;
    v->view_base = t->view_base ? t->view_base : t;
    mag_tensor_retain(v->view_base);
    mag_status_t s = mag_grad_record_view("view", t, v);
    if (s != MAG_OK) {
        mag_tensor_release(v);
        return s;
    }
    *out = v;
    return MAG_OK;
}

/* A dim of t (negative counts from the end); the IndexError names the op and t's shape. */
static mag_status_t tensor_dim(const char *op, const mag_tensor_t *t, int64_t dim, int64_t extra, int64_t *out) {
    int64_t r = t->rank + extra ? t->rank + extra : 1;
    *out = 0;
    if (dim < -r || dim >= r)
        return mag_error(MAG_ERR_INDEX, "%s: dimension %lld is out of range for a tensor of shape %s (expected [%lld, %lld])",
                         op, (long long)dim, MAG_SHAPE(t), (long long)-r, (long long)r - 1);
    *out = dim < 0 ? dim + r : dim;
    return MAG_OK;
}

/* Resolve one -1 and check the element count; shape_out gets the final sizes. */
static mag_status_t infer_shape(const char *op, const mag_tensor_t *t, int64_t rank, const int64_t *shape,
                                int64_t *shape_out) {
    if (rank < 0 || rank > MAG_MAX_RANK)
        return mag_error(MAG_ERR_VALUE, "%s: rank %lld is out of range [0, %d]", op, (long long)rank, MAG_MAX_RANK);
    int64_t infer = -1, known = 1;
    for (int64_t i = 0; i < rank; ++i) {
        shape_out[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0)
                return mag_error(MAG_ERR_VALUE, "%s: only one dimension can be -1 in shape %s (tensor of shape %s)", op,
                                 mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape), MAG_SHAPE(t));
            infer = i;
        } else if (shape[i] < 0) {
            return mag_error(MAG_ERR_VALUE, "%s: invalid size %lld in shape %s", op, (long long)shape[i],
                             mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape));
        } else if (__builtin_mul_overflow(known, shape[i], &known)) {
            return mag_error(MAG_ERR_VALUE, "%s: shape %s is too large", op,
                             mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape));
        }
    }
    if (infer >= 0) {
        if (known == 0 || t->numel % known != 0)
            return mag_error(MAG_ERR_VALUE, "%s: cannot infer the -1 in shape %s for a tensor of shape %s (%lld elements)",
                             op, mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape), MAG_SHAPE(t),
                             (long long)t->numel);
        shape_out[infer] = t->numel / known;
    } else if (known != t->numel) {
        return mag_error(MAG_ERR_VALUE, "%s: shape %s is invalid for a tensor of shape %s (%lld elements)", op,
                         mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape), MAG_SHAPE(t), (long long)t->numel);
    }
    return MAG_OK;
}

/*
 * The view solver (PyTorch's rule): walk the old dims from the innermost, grouping runs that
 * are contiguous with each other ("chunks"); the new dims must split every chunk exactly.
 */
static bool solve_view_strides(const mag_tensor_t *t, int64_t rank, const int64_t *shape, int64_t *strides) {
    if (t->numel == 0 || t->rank == 0) {
        mag_contiguous_strides(rank, shape, strides);
        return true;
    }
    int64_t view_d = rank - 1;
    int64_t chunk_base = t->strides[t->rank - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int64_t d = t->rank - 1; d >= 0; --d) {
        tensor_numel *= t->shape[d];
        if (d == 0 || (t->shape[d - 1] != 1 && t->strides[d - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base;
                view_numel *= shape[view_d];
                --view_d;
            }
            if (view_numel != tensor_numel) return false;
            if (d > 0) {
                chunk_base = t->strides[d - 1];
                tensor_numel = view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

mag_status_t mag_tensor_view(mag_tensor_t *t, int64_t rank, const int64_t *shape, mag_tensor_t **out) {
    int64_t sh[MAG_MAX_RANK], st[MAG_MAX_RANK];
    MAG_TRY(infer_shape("view", t, rank, shape, sh));
    if (!solve_view_strides(t, rank, sh, st))
        return mag_error(MAG_ERR_RUNTIME,
                         "view: shape %s is not compatible with the strides of a tensor of shape %s; use reshape "
                         "(which copies) or contiguous() first",
                         mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, sh), MAG_SHAPE(t));
    return make_view(t, rank, sh, st, t->offset, out);
}

mag_status_t mag_tensor_reshape(mag_tensor_t *t, int64_t rank, const int64_t *shape, mag_tensor_t **out) {
    int64_t sh[MAG_MAX_RANK], st[MAG_MAX_RANK];
    MAG_TRY(infer_shape("reshape", t, rank, shape, sh));
    if (solve_view_strides(t, rank, sh, st)) return make_view(t, rank, sh, st, t->offset, out);
    mag_tensor_t *c;
    MAG_TRY(mag_tensor_cast(t, t->dtype, &c));
    mag_status_t s = mag_tensor_view(c, rank, sh, out);
    mag_tensor_release(c);
    if (s == MAG_OK) (*out)->is_view = false; /* the copy is private to the result */
    return s;
}

mag_status_t mag_tensor_permute(mag_tensor_t *t, int64_t rank, const int64_t *dims, mag_tensor_t **out) {
    if (rank != t->rank)
        return mag_error(MAG_ERR_VALUE, "permute: got %lld dims for a tensor of rank %lld (shape %s)", (long long)rank,
                         (long long)t->rank, MAG_SHAPE(t));
    int64_t sh[MAG_MAX_RANK], st[MAG_MAX_RANK];
    bool seen[MAG_MAX_RANK] = {0};
    for (int64_t i = 0; i < rank; ++i) {
        int64_t d;
        MAG_TRY(tensor_dim("permute", t, dims[i], 0, &d));
        if (seen[d])
            return mag_error(MAG_ERR_VALUE, "permute: dimension %lld repeats in %s (tensor of shape %s)", (long long)dims[i],
                             mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, dims), MAG_SHAPE(t));
        seen[d] = true;
        sh[i] = t->shape[d];
        st[i] = t->strides[d];
    }
    return make_view(t, rank, sh, st, t->offset, out);
}

mag_status_t mag_tensor_transpose(mag_tensor_t *t, int64_t d0, int64_t d1, mag_tensor_t **out) {
    int64_t a, b, dims[MAG_MAX_RANK];
    MAG_TRY(tensor_dim("transpose", t, d0, 0, &a));
    MAG_TRY(tensor_dim("transpose", t, d1, 0, &b));
    if (t->rank == 0) return make_view(t, 0, t->shape, t->strides, t->offset, out);
    for (int64_t i = 0; i < t->rank; ++i) dims[i] = i;
    dims[a] = b;
    dims[b] = a;
    return mag_tensor_permute(t, t->rank, dims, out);
}

mag_status_t mag_tensor_slice(mag_tensor_t *t, int64_t dim, int64_t start, int64_t length, int64_t step,
                              mag_tensor_t **out) {
    int64_t d;
    if (t->rank == 0) return mag_error(MAG_ERR_INDEX, "slice: cannot slice a rank-0 tensor");
    MAG_TRY(tensor_dim("slice", t, dim, 0, &d));
    int64_t size = t->shape[d];
    if (step == 0) return mag_error(MAG_ERR_VALUE, "slice: step must not be zero (tensor of shape %s)", MAG_SHAPE(t));
    if (length < 0)
        return mag_error(MAG_ERR_VALUE, "slice: negative length %lld (tensor of shape %s)", (long long)length, MAG_SHAPE(t));
    if (length > 0) {
        bool fits = start >= 0 && start < size &&
                    (step > 0 ? (length - 1) <= (size - 1 - start) / step : (length - 1) <= start / -step);
        if (!fits)
            return mag_error(MAG_ERR_INDEX,
                             "slice: start %lld, length %lld, step %lld is out of range for dimension %lld of size %lld "
                             "(shape %s)",
                             (long long)start, (long long)length, (long long)step, (long long)d, (long long)size,
                             MAG_SHAPE(t));
    } else if (start < 0 || start > size) {
        return mag_error(MAG_ERR_INDEX, "slice: start %lld is out of range for dimension %lld of size %lld (shape %s)",
                         (long long)start, (long long)d, (long long)size, MAG_SHAPE(t));
    }
    int64_t sh[MAG_MAX_RANK], st[MAG_MAX_RANK];
    memcpy(sh, t->shape, sizeof(sh));
    memcpy(st, t->strides, sizeof(st));
    sh[d] = length;
    st[d] = t->strides[d] * step;
    int64_t offset = length ? t->offset + start * t->strides[d] : t->offset;
    return make_view(t, t->rank, sh, st, offset, out);
}

mag_status_t mag_tensor_select(mag_tensor_t *t, int64_t dim, int64_t index, mag_tensor_t **out) {
    int64_t d;
    if (t->rank == 0) return mag_error(MAG_ERR_INDEX, "select: cannot index a rank-0 tensor");
    MAG_TRY(tensor_dim("select", t, dim, 0, &d));
    int64_t size = t->shape[d];
    if (index < -size || index >= size)
        return mag_error(MAG_ERR_INDEX, "select: index %lld is out of range for dimension %lld of size %lld (shape %s)",
                         (long long)index, (long long)d, (long long)size, MAG_SHAPE(t));
    if (index < 0) index += size;
    int64_t sh[MAG_MAX_RANK], st[MAG_MAX_RANK], r = 0;
    for (int64_t i = 0; i < t->rank; ++i) {
        if (i == d) continue;
        sh[r] = t->shape[i];
        st[r++] = t->strides[i];
    }
    return make_view(t, r, sh, st, t->offset + index * t->strides[d], out);
}

mag_status_t mag_tensor_unsqueeze(mag_tensor_t *t, int64_t dim, mag_tensor_t **out) {
    if (t->rank >= MAG_MAX_RANK)
        return mag_error(MAG_ERR_VALUE, "unsqueeze: a tensor of rank %lld cannot grow past rank %d", (long long)t->rank,
                         MAG_MAX_RANK);
    int64_t d;
    MAG_TRY(tensor_dim("unsqueeze", t, dim, 1, &d));
    int64_t sh[MAG_MAX_RANK], st[MAG_MAX_RANK];
    for (int64_t i = 0, j = 0; i <= t->rank; ++i) {
        if (i == d) {
            sh[i] = 1;
            st[i] = d < t->rank ? t->strides[d] * t->shape[d] : 1;
            continue;
        }
        sh[i] = t->shape[j];
        st[i] = t->strides[j++];
    }
    return make_view(t, t->rank + 1, sh, st, t->offset, out);
}

mag_status_t mag_tensor_squeeze(mag_tensor_t *t, int64_t ndims, const int64_t *dims, mag_tensor_t **out) {
    bool drop[MAG_MAX_RANK] = {0};
    if (!dims) {
        for (int64_t i = 0; i < t->rank; ++i) drop[i] = t->shape[i] == 1;
    } else {
        for (int64_t i = 0; i < ndims; ++i) {
            int64_t d;
            MAG_TRY(tensor_dim("squeeze", t, dims[i], 0, &d));
            if (t->rank) drop[d] = t->shape[d] == 1;
        }
    }
    int64_t sh[MAG_MAX_RANK], st[MAG_MAX_RANK], r = 0;
    for (int64_t i = 0; i < t->rank; ++i) {
        if (drop[i]) continue;
        sh[r] = t->shape[i];
        st[r++] = t->strides[i];
    }
    return make_view(t, r, sh, st, t->offset, out);
}

mag_status_t mag_tensor_expand(mag_tensor_t *t, int64_t rank, const int64_t *shape, mag_tensor_t **out) {
    if (rank < t->rank || rank > MAG_MAX_RANK)
        return mag_error(MAG_ERR_VALUE, "expand: cannot expand a tensor of shape %s to %s (rank must be in [%lld, %d])",
                         MAG_SHAPE(t), mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape), (long long)t->rank,
                         MAG_MAX_RANK);
    int64_t sh[MAG_MAX_RANK], st[MAG_MAX_RANK], lead = rank - t->rank;
    for (int64_t i = 0; i < rank; ++i) {
        int64_t want = shape[i];
        if (i < lead) {
            if (want < 0)
                return mag_error(MAG_ERR_VALUE, "expand: size %lld is invalid for new leading dimension %lld",
                                 (long long)want, (long long)i);
            sh[i] = want;
            st[i] = 0;
            continue;
        }
        int64_t have = t->shape[i - lead];
        if (want == -1) want = have;
        if (want == have) {
            sh[i] = have;
            st[i] = t->strides[i - lead];
        } else if (have == 1 && want >= 0) {
            sh[i] = want;
            st[i] = 0;
        } else {
            return mag_error(MAG_ERR_VALUE,
                             "expand: the size of dimension %lld (%lld) must match the new size %lld or be 1 (shape "
                             "%s to %s)",
                             (long long)i, (long long)have, (long long)want, MAG_SHAPE(t),
                             mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape));
        }
    }
    int64_t numel;
    MAG_TRY(mag_checked_numel("expand", rank, sh, &numel));
    return make_view(t, rank, sh, st, t->offset, out);
}

mag_status_t mag_tensor_as_strided(mag_tensor_t *t, int64_t rank, const int64_t *shape, const int64_t *strides,
                                   int64_t offset, mag_tensor_t **out) {
    int64_t numel;
    MAG_TRY(mag_checked_numel("as_strided", rank, shape, &numel));
    mag_tensor_t probe = *t; /* check the span of the requested layout against the storage */
    probe.rank = rank;
    probe.offset = offset;
    probe.numel = numel;
    memcpy(probe.shape, shape, (size_t)rank * sizeof(int64_t));
    memcpy(probe.strides, strides, (size_t)rank * sizeof(int64_t));
    if (!mag_layout_in_bounds(&probe, t->storage->nbytes))
        return mag_error(MAG_ERR_VALUE, "as_strided: shape %s at offset %lld reaches outside the storage (%zu bytes)",
                         mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rank, shape), (long long)offset,
                         t->storage->nbytes);
    return make_view(t, rank, shape, strides, offset, out);
}

mag_status_t mag_broadcast_shape(int64_t ra, const int64_t *a, int64_t rb, const int64_t *b, int64_t *rank_out,
                                 int64_t *shape_out) {
    int64_t r = ra > rb ? ra : rb, out[MAG_MAX_RANK];
    if (r > MAG_MAX_RANK) return mag_error(MAG_ERR_VALUE, "broadcast: rank %lld exceeds %d", (long long)r, MAG_MAX_RANK);
    for (int64_t i = 0; i < r; ++i) {
        int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
        int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
        if (da != db && da != 1 && db != 1)
            return mag_error(MAG_ERR_VALUE, "shapes %s and %s cannot be broadcast together (dimension %lld: %lld vs %lld)",
                             mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, ra, a),
                             mag_shape_str((char[MAG_SHAPE_STR_LEN]){0}, rb, b), (long long)i, (long long)da,
                             (long long)db);
        out[i] = da == 1 ? db : da;
    }
    memcpy(shape_out, out, (size_t)r * sizeof(int64_t)); /* shape_out may alias a or b */
    *rank_out = r;
    return MAG_OK;
}
