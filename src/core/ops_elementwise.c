/*
 * Front ends of elementwise ops with attributes: clamp. The bounds are Python-style "weak"
 * scalars: they raise the compute dtype only across categories (an integer tensor clamped to
 * 0.5 computes in float32), then the shared elementwise front end runs the kernel.
 */
#include "op.h"

static int scalar_category(mag_scalar_t v) {
    return v.kind == MAG_SCALAR_FLOAT ? 2 : v.kind == MAG_SCALAR_BOOL ? 0 : 1;
}

static int dtype_category(mag_dtype_t dt) {
    uint32_t f = mag_dtype_info(dt)->flags;
    return (f & MAG_DTF_FLOAT) ? 2 : (f & MAG_DTF_BOOL) ? 0 : 1;
}

/*
 * `v` as an attribute of the kind the kernel of dtype dt reads (float, int or uint), or the
 * dtype's lowest (want_max false) / highest value when the bound is absent. Integer bounds
 * must fit the dtype: wrapping them would clamp to a different value (PyTorch refuses too).
 */
static mag_status_t bound_as(mag_dtype_t dt, bool given, mag_scalar_t v, bool want_max, const char *which,
                             mag_scalar_t *res) {
    const mag_dtype_info_t *info = mag_dtype_info(dt);
    if (info->flags & MAG_DTF_FLOAT) {
        double d = v.kind == MAG_SCALAR_FLOAT ? v.f : v.kind == MAG_SCALAR_UINT ? (double)v.u : (double)v.i;
        *res = mag_scalar_float(given ? d : want_max ? 1.0 / 0.0 : -1.0 / 0.0);
        return MAG_OK;
    }
    unsigned bits = 8u * (unsigned)info->size;
    if (info->flags & MAG_DTF_UNSIGNED_INT) {
        uint64_t hi = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
        bool fits = v.kind == MAG_SCALAR_UINT ? v.u <= hi : v.i >= 0 && (uint64_t)v.i <= hi;
        uint64_t u = v.kind == MAG_SCALAR_UINT ? v.u : (uint64_t)v.i;
        if (given && !fits) goto overflow;
        *res = (mag_scalar_t){.kind = MAG_SCALAR_UINT, .u = given ? u : want_max ? hi : 0};
        return MAG_OK;
    }
    int64_t hi = (int64_t)((UINT64_C(1) << (bits - 1)) - 1), lo = -hi - 1;
    bool fits = v.kind == MAG_SCALAR_UINT ? v.u <= (uint64_t)hi : v.i >= lo && v.i <= hi;
    if (given && !fits) goto overflow;
    *res = mag_scalar_int(given ? v.i : want_max ? hi : lo);
    return MAG_OK;
overflow:
    if (v.kind == MAG_SCALAR_UINT)
        return mag_error(MAG_ERR_VALUE, "clamp: %s %llu does not fit in %s", which, (unsigned long long)v.u, info->name);
    return mag_error(MAG_ERR_VALUE, "clamp: %s %lld does not fit in %s", which, (long long)v.i, info->name);
}

mag_status_t mag_front_clamp(mag_op_t op, mag_tensor_t *const *in, int64_t n_in, const mag_scalar_t *attrs,
                             int64_t n_attrs, mag_tensor_t **out) {
    (void)n_in;
    mag_tensor_t *x = in[0];
    if (n_attrs != 3)
        return mag_error(MAG_ERR_VALUE, "clamp: expected the attributes (min, max, given-mask), got %lld",
                         (long long)n_attrs);
    int64_t given = attrs[2].i;
    if (!(given & 3)) return mag_error(MAG_ERR_VALUE, "clamp: at least one of min and max must be given");
    mag_dtype_t dt = x->dtype;
    for (int k = 0; k < 2; ++k) {
        int cat = scalar_category(attrs[k]);
        if ((given >> k & 1) && cat > dtype_category(dt)) dt = cat == 2 ? MAG_DTYPE_FLOAT32 : MAG_DTYPE_INT64;
    }
    if (!(mag_op_info(op)->dtypes & (1u << dt)))
        return mag_error(MAG_ERR_TYPE, "clamp: unsupported dtype %s (shape %s)", MAG_DTNAME(dt), MAG_SHAPE(x));
    mag_scalar_t bounds[2];
    MAG_TRY(bound_as(dt, given & 1, attrs[0], false, "min", &bounds[0]));
    MAG_TRY(bound_as(dt, given & 2, attrs[1], true, "max", &bounds[1]));
    mag_tensor_t *xc = x;
    if (dt != x->dtype) MAG_TRY(mag_tensor_cast(x, dt, &xc));
    mag_status_t s = mag_front_elementwise(op, &xc, 1, bounds, 2, out);
    if (xc != x) mag_tensor_release(xc);
    return s;
}
