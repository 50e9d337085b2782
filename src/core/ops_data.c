/* Front ends of the data-movement ops (copy/cast) and the factories, plus their C conveniences. */
#include "op.h"

#include <string.h>

mag_status_t mag_front_copy(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                            int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    mag_tensor_t *src = in[0], *dst = *out;
    if (!dst) {
        mag_dtype_t dt = n_attrs > 0 ? (mag_dtype_t)attrs[0].i : src->dtype;
        if (!mag_dtype_info(dt)) return mag_error(MAG_ERR_TYPE, "cast: invalid dtype %d", (int)dt);
        MAG_TRY(mag_tensor_empty(dt, src->rank, src->shape, out));
        mag_status_t s = mag_dispatch(op, dt, *out, &src, 1, NULL, 0, src->numel, false);
        if (s != MAG_OK) {
            mag_tensor_release(*out);
            *out = NULL;
        }
        return s;
    }
    MAG_TRY(mag_check_writable("copy_", dst));
    int64_t rank, shape[MAG_MAX_RANK];
    if (mag_broadcast_shape(src->rank, src->shape, dst->rank, dst->shape, &rank, shape) != MAG_OK || rank != dst->rank ||
        memcmp(shape, dst->shape, (size_t)rank * sizeof(int64_t)))
        return mag_error(MAG_ERR_VALUE, "copy_: a source of shape %s cannot be broadcast to the destination shape %s",
                         MAG_SHAPE(src), MAG_SHAPE(dst));
    if (mag_tensor_same_layout(src, dst)) {
        mag_tensor_bump_version(dst);
        return MAG_OK;
    }
    if (mag_tensors_overlap(src, dst)) { /* copy through a private buffer so reads see the old values */
        mag_tensor_t *tmp = NULL;
        MAG_TRY(mag_front_copy(op, &src, 1, NULL, 0, &tmp));
        mag_status_t s = mag_dispatch(op, dst->dtype, dst, &tmp, 1, NULL, 0, dst->numel, false);
        mag_tensor_release(tmp);
        return s;
    }
    return mag_dispatch(op, dst->dtype, dst, &src, 1, NULL, 0, dst->numel, false);
}

static double scalar_as_double(mag_scalar_t v) {
    return v.kind == MAG_SCALAR_FLOAT ? v.f : v.kind == MAG_SCALAR_UINT ? (double)v.u : (double)v.i;
}

static bool scalar_is_finite(mag_scalar_t v) {
    return v.kind != MAG_SCALAR_FLOAT || (v.f == v.f && v.f - v.f == 0.0);
}

mag_status_t mag_front_factory(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                               int64_t n_attrs, mag_tensor_t **out) {
    (void)in, (void)n_in;
    const mag_op_info_t *info = mag_op_info(op);
    mag_tensor_t *dst = *out;
    if (!dst) return mag_error(MAG_ERR_VALUE, "%s: a destination tensor is required", info->name);
    if (n_attrs != info->n_attrs)
        return mag_error(MAG_ERR_VALUE, "%s: expected %d attributes, got %lld", info->name, info->n_attrs,
                         (long long)n_attrs);
    if (!(info->dtypes & (1u << dst->dtype)))
        return mag_error(MAG_ERR_TYPE, "%s: unsupported dtype %s (tensor of shape %s)", info->name,
                         MAG_DTNAME(dst->dtype), MAG_SHAPE(dst));
    MAG_TRY(mag_check_writable(info->name, dst));
    switch (op) {
    case MAG_OP_ARANGE:
    case MAG_OP_RAND_PERM:
        if (dst->rank != 1)
            return mag_error(MAG_ERR_VALUE, "%s: the destination must have rank 1, got shape %s", info->name,
                             MAG_SHAPE(dst));
        break;
    case MAG_OP_UNIFORM:
    case MAG_OP_NORMAL: {
        if (!scalar_is_finite(attrs[0]) || !scalar_is_finite(attrs[1]))
            return mag_error(MAG_ERR_VALUE, "%s: parameters must be finite (%s tensor of shape %s)", info->name,
                             MAG_DTNAME(dst->dtype), MAG_SHAPE(dst));
        double a0 = scalar_as_double(attrs[0]), a1 = scalar_as_double(attrs[1]);
        const mag_dtype_info_t *di = mag_dtype_info(dst->dtype);
        if (op == MAG_OP_NORMAL && a1 < 0)
            return mag_error(MAG_ERR_VALUE, "normal: std must be >= 0, got %g", a1);
        if (op == MAG_OP_UNIFORM && a0 > a1)
            return mag_error(MAG_ERR_VALUE, "uniform: low (%g) must not exceed high (%g)", a0, a1);
        if (op == MAG_OP_UNIFORM && !(di->flags & MAG_DTF_FLOAT) && (a0 < di->min || a1 > di->max))
            return mag_error(MAG_ERR_VALUE, "uniform: the bounds [%g, %g] exceed the range [%g, %g] of %s", a0, a1,
                             di->min, di->max, di->name);
        break;
    }
    case MAG_OP_BERNOULLI: {
        double p = scalar_as_double(attrs[0]);
        if (!(p >= 0.0 && p <= 1.0)) return mag_error(MAG_ERR_VALUE, "bernoulli: p must be in [0, 1], got %g", p);
        break;
    }
    default: break;
    }
    if (!mag_tensor_is_contiguous(dst)) { /* kernels write contiguous memory: stage, then copy */
        mag_tensor_t *tmp;
        MAG_TRY(mag_tensor_empty(dst->dtype, dst->rank, dst->shape, &tmp));
        mag_status_t s = mag_front_factory(op, in, n_in, attrs, n_attrs, &tmp);
        if (s == MAG_OK) s = mag_tensor_copy_(dst, tmp);
        mag_tensor_release(tmp);
        return s;
    }
    return mag_dispatch(op, dst->dtype, dst, NULL, 0, attrs, n_attrs, dst->numel, op == MAG_OP_RAND_PERM);
}

mag_status_t mag_tensor_fill(mag_tensor_t *t, mag_scalar_t v) { return mag_op(MAG_OP_FILL, NULL, 0, &v, 1, &t); }

mag_status_t mag_tensor_cast(mag_tensor_t *t, mag_dtype_t dt, mag_tensor_t **out) {
    mag_scalar_t a = mag_scalar_int(dt);
    *out = NULL;
    return mag_op(MAG_OP_COPY, &t, 1, &a, 1, out);
}

mag_status_t mag_tensor_contiguous(mag_tensor_t *t, mag_tensor_t **out) {
    if (mag_tensor_is_contiguous(t)) {
        mag_tensor_retain(t);
        *out = t;
        return MAG_OK;
    }
    return mag_tensor_cast(t, t->dtype, out);
}

mag_status_t mag_tensor_copy_(mag_tensor_t *dst, mag_tensor_t *src) { return mag_op(MAG_OP_COPY, &src, 1, NULL, 0, &dst); }

mag_scalar_t mag_scalar_int(int64_t v) { return (mag_scalar_t){.kind = MAG_SCALAR_INT, .i = v}; }
mag_scalar_t mag_scalar_float(double v) { return (mag_scalar_t){.kind = MAG_SCALAR_FLOAT, .f = v}; }
mag_scalar_t mag_scalar_bool(bool v) { return (mag_scalar_t){.kind = MAG_SCALAR_BOOL, .i = v}; }

mag_status_t mag_tensor_get(const mag_tensor_t *t, const int64_t *index, mag_scalar_t *out) {
    int64_t off = 0;
    for (int64_t i = 0; i < t->rank; ++i) {
        if (index[i] < 0 || index[i] >= t->shape[i])
            return mag_error(MAG_ERR_INDEX, "item: index %lld is out of range for dimension %lld of size %lld",
                             (long long)index[i], (long long)i, (long long)t->shape[i]);
        off += index[i] * t->strides[i];
    }
    const uint8_t *p = (const uint8_t *)mag_tensor_data(t) + off * (int64_t)mag_dtype_info(t->dtype)->size;
    switch (t->dtype) {
#define X(id, name, ctype, size, flags, lo, hi)                                                                        \
    case MAG_DTYPE_##id: {                                                                                             \
        ctype v;                                                                                                       \
        memcpy(&v, p, sizeof(v));                                                                                      \
        if (MAG_DTYPE_##id == MAG_DTYPE_FLOAT16) *out = mag_scalar_float(mag_f16_to_f32((uint16_t)v));                 \
        else if (MAG_DTYPE_##id == MAG_DTYPE_BFLOAT16) *out = mag_scalar_float(mag_bf16_to_f32((uint16_t)v));          \
        else if ((flags) & MAG_DTF_FLOAT) *out = mag_scalar_float((double)v);                                           \
        else if ((flags) & MAG_DTF_BOOL) *out = mag_scalar_bool(v != 0);                                               \
        else if (MAG_DTYPE_##id == MAG_DTYPE_UINT64) *out = (mag_scalar_t){.kind = MAG_SCALAR_UINT, .u = (uint64_t)v}; \
        else *out = mag_scalar_int((int64_t)v);                                                                        \
        return MAG_OK;                                                                                                 \
    }
#include "dtypes.def"
#undef X
    default: return mag_error(MAG_ERR_TYPE, "item: invalid dtype");
    }
}
